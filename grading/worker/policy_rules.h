// Run-time policy rules: a backend-independent Trace of what one slot call did, and evaluate(), which
// turns it into Findings (policy_monitor.h) with the rules' messages. The backends
// (policy_monitor_cupti.cpp, policy_monitor_emu.cpp) only record; every decision is made here.
//
// Rules (rule ids as in Findings::rule; evaluated in this order, the first one found is `rule`):
//
//   library       a kernel whose name (mangled or demangled) is a library scan's: cub:: / thrust::
//                 (mangled N3cub / N6thrust), ModernGPU (mgpu::), CUDPP, or a CUB DeviceScan kernel.
//                 The name is cut at kNameShown characters in the message.
//   host_compute  (a) a round trip through the host, judged by data flow through every channel: data
//                     that reached the host from the device and then data that reached the device from
//                     the host. Copies count by where their pointers really are (never by the `kind`
//                     label: with unified addressing the runtime copies device<->host whatever it says),
//                     symbol copies count as copies, and uploads by other doors count too: every
//                     memset call carries kMemsetBytes (its value and extent), every kernel launch its
//                     parameter buffer. The bytes counted are the device->host bytes read before the
//                     last upload (what the host could have read before writing back) and the bytes
//                     uploaded after the first read-back (what could depend on them). It is host
//                     compute when more than kRoundTripLimit bytes were read AND more than
//                     upload_limit() bytes were sent back: max(kRoundTripLimit, the case's data bytes /
//                     kUploadFraction). So the size of a copy alone is not evidence: copies in one
//                     direction only are allowed whatever their size (a debug print that copies a few
//                     arrays to the host, an upload of initial flags or sums before any read-back),
//                     round trips of a few scalars (a tile count, a flag) are allowed, and so is a host
//                     that gathers one value per tile of 16 or more elements after reading the output
//                     back (block sums for the next level); a scan computed on the host and written back
//                     sends n values, 16 times over the line.
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

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "policy_monitor.h"

namespace scangrade::grader::policy {

/// Bytes each way of a device->host->device round trip one slot call may make (512 int32 values; a round
/// trip of a few scalars stays under it).
inline constexpr std::int64_t kRoundTripLimit = 2048;
/// After a read-back, the host may send the device one value per this many elements of the case
/// (beyond kRoundTripLimit bytes) before the call counts as host compute.
inline constexpr std::int64_t kUploadFraction = 16;
/// What one memset call can carry to the device (its value and its extent).
inline constexpr std::int64_t kMemsetBytes = 8;
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

  std::int64_t data_bytes = 0;             // the case's input bytes (n * sizeof(T)): sets upload_limit()
  std::map<std::string, Copies> copies;   // by channel: the API name (cudaMemcpy, cudaMemcpyToSymbol,
                                          // cudaMemsetAsync, ...) or "kernel parameters"
  // the round trip (host_compute (a)), in the order of the calls
  std::int64_t d2h_so_far = 0;           // device->host bytes copied so far
  std::int64_t d2h_before_last_h2d = 0;  // device->host bytes copied before the last host->device copy
  std::int64_t h2d_after_first_d2h = 0;  // host->device bytes copied after the first device->host copy
  std::vector<Kernel> kernels;            // in order of first launch, at most kKernelsKept names
  std::int64_t launches = 0;              // every launch
  std::vector<HostUse> host_memory;       // in order, at most kKernelsKept entries
  std::map<std::uintptr_t, Pinned> pinned_live;  // page-locked allocations made during the call, not freed

  void copy(const std::string& api, CopyDirection direction, std::int64_t bytes);
  /// Data sent to the device by a door other than a copy (a memset, a kernel's parameters).
  void upload(const std::string& channel, std::int64_t bytes) { copy(channel, CopyDirection::HostToDevice, bytes); }
  /// What the host may send after a read-back before the call is host compute (bytes, exclusive).
  std::int64_t upload_limit() const { return std::max(kRoundTripLimit, data_bytes / kUploadFraction); }
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
