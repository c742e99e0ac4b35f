// Run-time policy rules: a backend-independent Trace of what one slot call did, and evaluate(), which
// turns it into Findings (policy_monitor.h) with the rules' messages. The backends
// (policy_monitor_cupti.cpp, policy_monitor_emu.cpp) only record; every decision is made here.
//
// Rules (rule ids as in Findings::rule; evaluated in this order, the first one found is `rule`):
//
//   library       a kernel whose name (mangled or demangled) is a library scan's: cub:: / thrust::
//                 (mangled N3cub / N6thrust), ModernGPU (mgpu::), CUDPP, or a CUB DeviceScan kernel.
//                 The name is cut at kNameShown characters in the message.
//   host_compute  (a) a round trip through the host: data copied device->host and then data copied
//                     host->device, each way more than kRoundTripLimit bytes. The bytes counted are the
//                     device->host bytes copied before the last host->device copy (what the host could
//                     have read before writing back) and the host->device bytes copied after the first
//                     device->host copy (what could depend on them). The size of a copy is not evidence:
//                     copies in one direction only are allowed whatever their size (a debug print that
//                     copies a few arrays to the host, an upload of initial flags or sums before any
//                     read-back), and so are round trips of a few scalars (a tile count, a flag);
//                 (b) any use of host memory the device can address or the host can read without a
//                     copy: managed memory (cudaMallocManaged, cuMemAllocManaged), mapped memory
//                     (cudaHostAlloc with cudaHostAllocMapped, cuMemHostAlloc with
//                     CU_MEMHOSTALLOC_DEVICEMAP, cudaHostGetDevicePointer, cuMemHostGetDevicePointer),
//                     registered memory (cudaHostRegister, cuMemHostRegister, any flags: a slot gets
//                     device pointers and has no host buffer of its own to register). Host reads of
//                     managed memory make no API call, so the allocation itself is the evidence.
//                 Plain page-locked allocations (cudaMallocHost, cudaHostAlloc without
//                 cudaHostAllocMapped, cuMemAllocHost, cuMemHostAlloc without DEVICEMAP) are NOT
//                 evidence by themselves: a staging buffer is harmless, and such a buffer that is not
//                 freed is a leak (pinned_leaked_bytes; the worker's `leak` verdict), not a policy
//                 violation. They are named in (a)'s message when the copies went over the limit.
//                 Known blind spot: with unified addressing every page-locked allocation is device-
//                 accessible, so a kernel that writes a cudaMallocHost buffer directly (no copy, no
//                 mapping call) is not seen.
//   launch        Slot::HillisSteele and Slot::Blelloch are single-block scans (student_api.h: "Launch
//                 exactly one block"): every kernel they launch must have a grid of exactly one block.
//
// Pinned leak (not a violation): page-locked host memory allocated during the call (cudaMallocHost,
// cudaHostAlloc, cuMemAllocHost, cuMemHostAlloc) and not freed by its end (cudaFreeHost, cuMemFreeHost).
// Only allocations made inside the call count; freeing an older allocation changes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "policy_monitor.h"

namespace scangrade::grader::policy {

/// Bytes each way of a device->host->device round trip one slot call may make (512 int32 values; a round
/// trip of a few scalars stays under it).
inline constexpr std::int64_t kRoundTripLimit = 2048;
/// Characters of a kernel name quoted in a message.
inline constexpr std::size_t kNameShown = 120;
/// Distinct kernel names kept per call (later ones only add to the launch count).
inline constexpr std::size_t kKernelsKept = 256;

enum class CopyDirection { DeviceToHost, HostToDevice, Other };

/// How host memory was made visible to the device or page-locked.
enum class HostMemory {
  Pinned,         // page-locked, not mapped: cudaMallocHost, cudaHostAlloc(no Mapped), cuMemAllocHost, ...
  Mapped,         // cudaHostAlloc(cudaHostAllocMapped), cuMemHostAlloc(DEVICEMAP)
  DevicePointer,  // cudaHostGetDevicePointer, cuMemHostGetDevicePointer
  Managed,        // cudaMallocManaged, cuMemAllocManaged
  Registered,     // cudaHostRegister, cuMemHostRegister
};

/// What was seen during one slot call. Backends call the recording functions (not thread-safe: the
/// backend serializes them); evaluate() reads the fields.
struct Trace {
  struct Copies {
    std::int64_t d2h_bytes = 0, h2d_bytes = 0;
    std::int64_t largest = 0;  // largest single device<->host copy
    std::int64_t count = 0;    // device<->host copies
  };
  struct Kernel {
    std::string name;
    std::int64_t launches = 0;
    std::int64_t max_blocks = 0;  // largest grid (x*y*z blocks) it was launched with
  };
  struct HostUse {
    HostMemory kind;
    std::string api;
    std::int64_t bytes;  // 0 when the API does not say (cudaHostGetDevicePointer)
  };
  struct Pinned {
    std::string api;
    std::int64_t bytes;
  };

  std::map<std::string, Copies> copies;   // by API name (cudaMemcpy, cudaMemcpyAsync, cuMemcpyDtoH_v2, ...)
  // the round trip (host_compute (a)), in the order of the calls
  std::int64_t d2h_so_far = 0;           // device->host bytes copied so far
  std::int64_t d2h_before_last_h2d = 0;  // device->host bytes copied before the last host->device copy
  std::int64_t h2d_after_first_d2h = 0;  // host->device bytes copied after the first device->host copy
  std::vector<Kernel> kernels;            // in order of first launch, at most kKernelsKept names
  std::int64_t launches = 0;              // every launch
  std::vector<HostUse> host_memory;       // in order, at most kKernelsKept entries
  std::map<std::uintptr_t, Pinned> pinned_live;  // page-locked allocations made during the call, not freed

  void copy(const std::string& api, CopyDirection direction, std::int64_t bytes);
  void launch(const std::string& kernel, std::int64_t blocks);
  void host_use(HostMemory kind, const std::string& api, std::int64_t bytes);
  /// A page-locked allocation made during the call (also call host_use for it).
  void pinned_alloc(const void* ptr, std::int64_t bytes, const std::string& api);
  /// cudaFreeHost/cuMemFreeHost: forgets ptr if it was allocated during the call.
  void pinned_free(const void* ptr);
};

/// True when a kernel name is a library scan's (see "library" above).
bool is_library_kernel(const std::string& name);

/// The rules above applied to one call's trace.
Findings evaluate(const Trace& trace, Slot slot);

}  // namespace scangrade::grader::policy
