// ScanGrade CPU emulator: host-side runtime API (errors, device, memory, pools, streams, events).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "arena.h"
#include "cuda_runtime.h"
#include "internal.h"

struct CUstream_st {
  unsigned int flags;
};
struct CUevent_st {
  unsigned int flags;
};
struct CUmemPoolHandle_st {
  std::uint64_t release_threshold;
};

namespace scangrade::emu::detail {
namespace {

constexpr std::size_t kAlignment = 256;
constexpr std::size_t kDefaultMemory = std::size_t(8) << 30;

// How memory entered the device map: device memory (cudaMalloc, cudaMallocAsync) counts in the balance;
// managed, mapped and registered host memory is only made acceptable to kernels and copies.
enum class Memory { Device, Managed, Mapped, Registered };

struct Allocation {
  std::size_t size;
  bool from_pool;
  Memory memory = Memory::Device;
  bool in_arena = true;  // the emulator's own memory (arena.h); adopted and registered memory is not
  bool case_buffer = false;  // the harness's buffers of a case (adopt_memory, map_shared_memory): device memory
};

struct Runtime {
  ErrorState errors;
  Stats stats;
  bool poison = true;
  std::size_t memory_limit = kDefaultMemory;
  std::size_t dynamic_shared_limit = kSharedPerBlock;
  std::map<std::uintptr_t, Allocation> device;  // base address -> allocation
  std::map<void*, std::size_t> host;             // cudaMallocHost / cudaHostAlloc: pointer -> size
  std::map<std::uintptr_t, std::size_t> freed;   // bases freed and not handed out again -> size (messages)
  std::map<void*, std::size_t> shared;           // map_shared_memory: pointer -> size (kept by reset())
  bool tracing = false;                          // trace_begin() .. trace_end()
  Trace trace;
  std::size_t in_use = 0;
  std::size_t pool_in_use = 0;
  std::size_t pool_high = 0;
  std::set<cudaStream_t> streams;
  std::set<cudaEvent_t> events;
  CUmemPoolHandle_st default_pool{0};
};

Runtime& rt() {
  static Runtime* r = new Runtime;  // never destroyed: allocations may outlive static destructors
  return *r;
}

std::string ptr_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

/// The allocation containing [p, p + count), or nullptr.
const Allocation* find_device(const void* p, std::size_t count) {
  auto& device = rt().device;
  auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = device.upper_bound(a);
  if (it == device.begin()) return nullptr;
  --it;
  if (a + count > it->first + it->second.size || a + count < a) return nullptr;
  return &it->second;
}

/// A new span at p: freed allocations whose range it reuses are forgotten.
void forget_freed(const void* p, std::size_t size) {
  auto& freed = rt().freed;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t end = begin + arena_mapped_size(size) + kGuard;
  auto it = freed.lower_bound(begin);
  if (it != freed.begin()) {
    auto prev = std::prev(it);
    if (prev->first + arena_mapped_size(prev->second) + kGuard > begin) it = prev;
  }
  while (it != freed.end() && it->first < end) it = freed.erase(it);
}

/// Remembers a freed base for later messages (double free, use after free); bounded.
void remember_freed(std::uintptr_t base, std::size_t size) {
  auto& freed = rt().freed;
  if (freed.size() >= 4096) freed.clear();
  freed[base] = size;
}

cudaError_t allocate(void** ptr, std::size_t size, bool from_pool, const char* api) {
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  if (ptr == nullptr) return api_error(cudaErrorInvalidValue, std::string(api) + ": the pointer argument is null");
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  if (r.in_use > r.memory_limit || size > r.memory_limit - r.in_use) {
    return api_error(cudaErrorMemoryAllocation, std::string(api) + "(" + std::to_string(size) +
                                                    " bytes): out of emulated device memory (" +
                                                    std::to_string(r.in_use) + " of " +
                                                    std::to_string(r.memory_limit) + " bytes in use)");
  }
  void* p = arena_map(size);
  if (p == nullptr) {
    return api_error(cudaErrorMemoryAllocation, std::string(api) + "(" + std::to_string(size) +
                                                    " bytes): the emulated device's address space is exhausted");
  }
  if (r.poison) std::memset(p, 0xFF, (size + kAlignment - 1) / kAlignment * kAlignment);
  forget_freed(p, size);
  r.device[reinterpret_cast<std::uintptr_t>(p)] = Allocation{size, from_pool};
  r.in_use += size;
  if (from_pool) {
    r.pool_in_use += size;
    r.pool_high = std::max(r.pool_high, r.pool_in_use);
  }
  ++r.stats.allocations;
  *ptr = p;
  return cudaSuccess;
}

/// Why `ptr` cannot be freed by `api` (cudaFree and cudaFreeAsync: device or managed memory;
/// cudaFreeHost: page-locked host memory).
std::string not_freeable(const void* ptr, bool host_api) {
  Runtime& r = rt();
  const auto a = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = r.device.upper_bound(a);
  if (it != r.device.begin()) {
    --it;
    const bool inside = a < it->first + it->second.size;
    if (inside && it->first != a) {
      return "points " + std::to_string(a - it->first) + " bytes into the " + std::to_string(it->second.size) +
             "-byte allocation at " + ptr_text(reinterpret_cast<void*>(it->first)) +
             ": free the pointer the allocation returned";
    }
    if (inside && (it->second.memory == Memory::Registered)) {
      return "is memory registered with cudaHostRegister (or the harness's own): it is not the slot's to free";
    }
  }
  if (r.freed.count(a) != 0) return "was already freed (a double free)";
  if (!host_api && r.host.count(const_cast<void*>(ptr)) != 0) {
    return "is page-locked host memory (cudaMallocHost/cudaHostAlloc): free it with cudaFreeHost";
  }
  if (host_api && r.device.count(a) != 0) return "is device memory: free it with cudaFree";
  return host_api ? "was not returned by cudaMallocHost/cudaHostAlloc"
                  : "was not returned by cudaMalloc, cudaMallocAsync or cudaMallocManaged (a host pointer, or one "
                    "never allocated?)";
}

/// The GPU's answer to freeing something that is not a live allocation: cudaErrorInvalidValue,
/// recorded as the last error (not sticky); nothing is freed.
cudaError_t invalid_free(const void* ptr, const char* api, bool host_api) {
  return api_error(cudaErrorInvalidValue, std::string(api) + "(" + ptr_text(ptr) + "): the pointer " +
                                              not_freeable(ptr, host_api) +
                                              "; the call returned cudaErrorInvalidValue and freed nothing");
}

cudaError_t release(void* ptr, const char* api) {
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  if (ptr == nullptr) return cudaSuccess;
  auto it = r.device.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == r.device.end() || it->second.memory == Memory::Mapped || it->second.memory == Memory::Registered) {
    return invalid_free(ptr, api, false);
  }
  if (it->second.memory == Memory::Device) {
    r.in_use -= it->second.size;
    if (it->second.from_pool) r.pool_in_use -= it->second.size;
  }
  arena_unmap(ptr, it->second.size);
  remember_freed(it->first, it->second.size);
  r.device.erase(it);
  return cudaSuccess;
}

bool is_device(const void* p) { return find_device(p, 1) != nullptr; }

/// Where a pointer really is, for the policy's trace: device (or managed) memory; host memory the
/// device can address (page-locked, mapped, registered) is host memory, as the GPU's pointer
/// attributes say.
bool is_device_side(const void* p) {
  const Allocation* a = find_device(p, 1);
  return a != nullptr && (a->memory == Memory::Device || a->memory == Memory::Managed || a->case_buffer);
}

std::string size_text(std::size_t bytes) { return std::to_string(bytes) + "-byte"; }

}  // namespace

std::string describe_address(const void* addr) {
  Runtime& r = rt();
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  if (a < 65536) return "through a null pointer (or a small offset from one)";
  auto freed = r.freed.upper_bound(a);
  if (freed != r.freed.begin()) {
    --freed;
    if (a < freed->first + arena_mapped_size(freed->second)) {
      return "in the " + size_text(freed->second) + " allocation at " + ptr_text(reinterpret_cast<void*>(freed->first)) +
             ", which was freed (used after cudaFree?)";
    }
  }
  // the nearest allocation at or below, and the next one above: whichever edge is nearer
  auto above = r.device.upper_bound(a);
  std::string past, before;
  std::uintptr_t past_by = ~std::uintptr_t{0}, before_by = ~std::uintptr_t{0};
  if (above != r.device.begin()) {
    auto below = std::prev(above);
    const std::uintptr_t base = below->first;
    const Allocation& al = below->second;
    if (a < base + al.size) return "inside the " + size_text(al.size) + " allocation at " + ptr_text(reinterpret_cast<void*>(base));
    const std::size_t mapped = arena_mapped_size(al.size);
    if (al.in_arena && a < base + mapped + kGuard) {
      past_by = a - (base + al.size);
      past = std::to_string(past_by) + " bytes past the end of the " + size_text(al.size) + " allocation at " +
             ptr_text(reinterpret_cast<void*>(base)) + ", beyond the " + std::to_string(mapped >> 20) +
             " MiB mapped for it (the slack up to there is silent, as on a GPU; the rest is unmapped)";
    }
  }
  if (above != r.device.end() && above->second.in_arena && a + kGuard >= above->first) {
    before_by = above->first - a;
    before = std::to_string(before_by) + " bytes before the start of the " + size_text(above->second.size) +
             " allocation at " + ptr_text(reinterpret_cast<void*>(above->first));
  }
  if (!past.empty() || !before.empty()) return past_by <= before_by ? past : before;
  if (arena_contains(addr)) return "in device memory where nothing is allocated (an index far out of range?)";
  return "outside device memory (a host pointer, an uninitialized pointer, or an index far out of range?)";
}

namespace {

// ---- trace (scangrade::emu::trace_begin / trace_end) ----

constexpr std::size_t kTraceKept = 4096;  // kernels and host-memory events kept per trace
constexpr std::size_t kMemsetBytes = 8;  // what one memset call carries (grading/worker/policy_rules.h kMemsetBytes)

void trace_copy(const char* api, std::size_t count, bool to_device) {
  Runtime& r = rt();
  if (!r.tracing) return;
  auto& copies = r.trace.copies;
  auto it = std::find_if(copies.begin(), copies.end(), [&](const Trace::Copies& c) { return c.api == api; });
  if (it == copies.end()) it = copies.insert(copies.end(), Trace::Copies{api});
  (to_device ? it->h2d_bytes : it->d2h_bytes) += count;
  it->largest = std::max<std::uint64_t>(it->largest, count);
  ++it->count;
  Trace& t = r.trace;
  if (!to_device) {
    t.d2h_so_far += count;
  } else if (t.d2h_so_far > 0) {
    t.h2d_after_first_d2h += count;
    t.d2h_before_last_h2d = t.d2h_so_far;
  }
}

/// Data sent to the device by a door other than a copy (a memset, a kernel's parameters), for the
/// policy's round-trip rule (grading/worker/policy_rules.h: the same accounting as a copy).
void trace_upload(const char* channel, std::size_t bytes) {
  if (bytes > 0) trace_copy(channel, bytes, true);
}

void trace_host(Trace::HostKind kind, const char* api, const void* ptr, std::size_t bytes, unsigned flags) {
  Runtime& r = rt();
  if (r.tracing && r.trace.host.size() < kTraceKept) r.trace.host.push_back(Trace::HostEvent{kind, api, ptr, bytes, flags});
}

/// Host memory the device may address: entered in the device map so that kernels and copies accept it.
void add_host_visible(void* ptr, std::size_t size, Memory memory) {
  rt().device[reinterpret_cast<std::uintptr_t>(ptr)] =
      Allocation{std::max<std::size_t>(size, 1), false, memory, memory != Memory::Registered};
}

cudaError_t copy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, const char* api) {
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return api_error(cudaErrorInvalidValue, std::string(api) + ": null pointer");
  bool dst_dev, src_dev;
  switch (kind) {
    case cudaMemcpyHostToHost: dst_dev = src_dev = false; break;
    case cudaMemcpyHostToDevice: dst_dev = true; src_dev = false; break;
    case cudaMemcpyDeviceToHost: dst_dev = false; src_dev = true; break;
    case cudaMemcpyDeviceToDevice: dst_dev = src_dev = true; break;
    case cudaMemcpyDefault:
      dst_dev = is_device(dst);
      src_dev = is_device(src);
      break;
    default: return api_error(cudaErrorInvalidMemcpyDirection, std::string(api) + ": invalid cudaMemcpyKind");
  }
  if (dst_dev && find_device(dst, count) == nullptr) {
    return api_error(cudaErrorInvalidValue, std::string(api) + ": destination [" + ptr_text(dst) + ", +" +
                                                std::to_string(count) + ") is not inside one device allocation");
  }
  if (src_dev && find_device(src, count) == nullptr) {
    return api_error(cudaErrorInvalidValue, std::string(api) + ": source [" + ptr_text(src) + ", +" +
                                                std::to_string(count) + ") is not inside one device allocation");
  }
  std::memmove(dst, src, count);
  if (dst_dev && src_dev) r.stats.bytes_d2d += count;
  else if (dst_dev) r.stats.bytes_h2d += count;
  else if (src_dev) r.stats.bytes_d2h += count;
  // the trace follows where the pointers really are, never the label: with unified addressing the GPU's
  // runtime copies device<->host whatever the kind says (cudaMemcpyHostToHost included)
  if (const bool to_device = is_device_side(dst); to_device != is_device_side(src)) trace_copy(api, count, to_device);
  return cudaSuccess;
}

cudaError_t fill(void* ptr, int value, std::size_t count, const char* api) {
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  if (count == 0) return cudaSuccess;
  if (find_device(ptr, count) == nullptr) {
    return api_error(cudaErrorInvalidValue, std::string(api) + ": [" + ptr_text(ptr) + ", +" + std::to_string(count) +
                                                ") is not inside one device allocation");
  }
  std::memset(ptr, value, count);
  trace_upload(api, kMemsetBytes);  // what one call can carry to the device: its value and its extent
  return cudaSuccess;
}

cudaError_t check_stream(cudaStream_t stream, const char* api) {
  if (!stream_is_valid(stream)) {
    return api_error(cudaErrorInvalidResourceHandle, std::string(api) + ": invalid stream " + ptr_text(stream));
  }
  return cudaSuccess;
}

}  // namespace

ErrorState& errors() { return rt().errors; }

void trace_launch(const char* file, int line, std::uint64_t blocks, std::size_t param_bytes) {
  Runtime& r = rt();
  if (!r.tracing) return;
  trace_upload("kernel parameters", param_bytes);
  ++r.trace.launches;
  std::string name = "<kernel at " + std::string(file) + ":" + std::to_string(line) + ">";
  auto& kernels = r.trace.kernels;
  auto it = std::find_if(kernels.begin(), kernels.end(), [&](const Trace::Kernel& k) { return k.name == name; });
  if (it == kernels.end()) {
    if (kernels.size() >= kTraceKept) return;
    it = kernels.insert(kernels.end(), Trace::Kernel{name});
  }
  ++it->launches;
  it->max_blocks = std::max(it->max_blocks, blocks);
}
namespace {
struct LaunchedKernel {
  std::string site;  // file:line of the launch
  std::string text;
};
std::vector<LaunchedKernel> g_launched;
}  // namespace

void note_launch(const char* file, int line, const char* kernel, const char* kernel_file, int kernel_line) {
  std::string site = std::string(file) + ":" + std::to_string(line);
  for (const LaunchedKernel& k : g_launched)
    if (k.site == site) return;
  if (g_launched.size() >= 8) return;
  std::string text = kernel != nullptr ? "`" + std::string(kernel) + "` (" + kernel_file + ":" +
                                             std::to_string(kernel_line) + ") launched at " + site
                                       : "the kernel launched at " + site;
  g_launched.push_back(LaunchedKernel{std::move(site), std::move(text)});
}
Stats& mutable_stats() { return rt().stats; }
bool poison_enabled() { return rt().poison; }
std::size_t dynamic_shared_limit() { return rt().dynamic_shared_limit; }

cudaError_t api_error(cudaError_t error, std::string diagnostic) {
  ErrorState& e = errors();
  if (e.sticky != cudaSuccess) return e.sticky;
  e.last = error;
  e.diagnostic = std::move(diagnostic);
  return error;
}

void kernel_fault(std::string diagnostic, cudaError_t code) {
  ErrorState& e = errors();
  e.sticky = code;
  e.last = code;
  e.diagnostic = std::move(diagnostic);
}

cudaError_t api_result(cudaError_t result) {
  ErrorState& e = errors();
  if (e.sticky != cudaSuccess) return e.sticky;
  if (result != cudaSuccess) e.last = result;
  return result;
}

bool stream_is_valid(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread ||
         rt().streams.count(stream) != 0;
}

void reset_scheduler_limits() { rt().dynamic_shared_limit = kSharedPerBlock; }

}  // namespace scangrade::emu::detail

using scangrade::emu::detail::api_error;
using scangrade::emu::detail::api_result;
using scangrade::emu::detail::rt;

// ---- errors -------------------------------------------------------------------------------------

cudaError_t cudaGetLastError() {
  auto& e = rt().errors;
  if (e.sticky != cudaSuccess) return e.sticky;
  cudaError_t last = e.last;
  e.last = cudaSuccess;
  return last;
}

cudaError_t cudaPeekAtLastError() {
  auto& e = rt().errors;
  return e.sticky != cudaSuccess ? e.sticky : e.last;
}

namespace {
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrorTexts[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidPitchValue, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};
const ErrorText* find_error(cudaError_t e) {
  for (const ErrorText& t : kErrorTexts) {
    if (t.code == e) return &t;
  }
  return nullptr;
}
}  // namespace

const char* cudaGetErrorString(cudaError_t error) {
  const ErrorText* t = find_error(error);
  return t != nullptr ? t->text : "unrecognized error code";
}

const char* cudaGetErrorName(cudaError_t error) {
  const ErrorText* t = find_error(error);
  return t != nullptr ? t->name : "cudaErrorUnknown";
}

// ---- device -------------------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return api_error(cudaErrorInvalidValue, "cudaGetDeviceCount: null pointer");
  *count = 1;
  return api_result(cudaSuccess);
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return api_error(cudaErrorInvalidValue, "cudaGetDevice: null pointer");
  *device = 0;
  return api_result(cudaSuccess);
}

cudaError_t cudaSetDevice(int device) {
  if (device != 0) return api_error(cudaErrorInvalidDevice, "cudaSetDevice: the emulator has one device, 0");
  return api_result(cudaSuccess);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  using namespace scangrade::emu::detail;
  if (prop == nullptr) return api_error(cudaErrorInvalidValue, "cudaGetDeviceProperties: null pointer");
  if (device != 0) return api_error(cudaErrorInvalidDevice, "cudaGetDeviceProperties: the emulator has one device, 0");
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", "ScanGrade CPU emulator");
  prop->totalGlobalMem = rt().memory_limit;
  prop->sharedMemPerBlock = kSharedPerBlock;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = std::size_t(1) << 31;
  prop->maxThreadsPerBlock = kMaxThreadsPerBlock;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->clockRate = 1980000;
  prop->totalConstMem = 65536;
  prop->major = 9;
  prop->minor = 0;
  prop->textureAlignment = 512;
  prop->deviceOverlap = 1;
  prop->multiProcessorCount = kMultiProcessors;
  prop->concurrentKernels = 1;
  prop->asyncEngineCount = 2;
  prop->unifiedAddressing = 1;
  prop->memoryClockRate = 2619000;
  prop->memoryBusWidth = 5120;
  prop->l2CacheSize = 50 * 1024 * 1024;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->sharedMemPerMultiprocessor = 228 * 1024;
  prop->regsPerMultiprocessor = 65536;
  prop->managedMemory = 1;
  prop->sharedMemPerBlockOptin = kSharedPerBlockOptin;
  prop->maxBlocksPerMultiProcessor = 32;
  prop->cooperativeLaunch = 1;
  return api_result(cudaSuccess);
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  using namespace scangrade::emu::detail;
  if (value == nullptr) return api_error(cudaErrorInvalidValue, "cudaDeviceGetAttribute: null pointer");
  if (device != 0) return api_error(cudaErrorInvalidDevice, "cudaDeviceGetAttribute: the emulator has one device, 0");
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = kMaxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = 1024; break;
    case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = 0x7fffffff; break;
    case cudaDevAttrMaxGridDimY: *value = 65535; break;
    case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(kSharedPerBlock); break;
    case cudaDevAttrTotalConstantMemory: *value = 65536; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = 65536; break;
    case cudaDevAttrClockRate: *value = 1980000; break;
    case cudaDevAttrMultiProcessorCount: *value = kMultiProcessors; break;
    case cudaDevAttrL2CacheSize: *value = 50 * 1024 * 1024; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = 228 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(kSharedPerBlockOptin); break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = 32; break;
    default: return api_error(cudaErrorInvalidValue, "cudaDeviceGetAttribute: attribute not emulated");
  }
  return api_result(cudaSuccess);
}

cudaError_t cudaDeviceSynchronize() { return api_result(cudaSuccess); }

cudaError_t cudaDeviceReset() {
  scangrade::emu::reset();
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  if (free == nullptr || total == nullptr) return api_error(cudaErrorInvalidValue, "cudaMemGetInfo: null pointer");
  *total = rt().memory_limit;
  *free = rt().memory_limit > rt().in_use ? rt().memory_limit - rt().in_use : 0;
  return api_result(cudaSuccess);
}

// ---- memory -------------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** ptr, std::size_t size) {
  return scangrade::emu::detail::allocate(ptr, size, false, "cudaMalloc");
}

cudaError_t cudaFree(void* ptr) { return scangrade::emu::detail::release(ptr, "cudaFree"); }

cudaError_t cudaMallocAsync(void** ptr, std::size_t size, cudaStream_t stream) {
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaMallocAsync"); e != cudaSuccess) return e;
  return scangrade::emu::detail::allocate(ptr, size, true, "cudaMallocAsync");
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, std::size_t size, cudaMemPool_t pool, cudaStream_t stream) {
  if (pool != &rt().default_pool) {
    return api_error(cudaErrorInvalidValue, "cudaMallocFromPoolAsync: not a memory pool (the emulator has the "
                                            "default pool only: cudaDeviceGetDefaultMemPool)");
  }
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaMallocFromPoolAsync"); e != cudaSuccess) return e;
  return scangrade::emu::detail::allocate(ptr, size, true, "cudaMallocFromPoolAsync");
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaFreeAsync"); e != cudaSuccess) return e;
  return scangrade::emu::detail::release(ptr, "cudaFreeAsync");
}

namespace scangrade::emu::detail {
namespace {
// cudaMallocHost and cudaHostAlloc: page-locked host memory is ordinary host memory here; mapped
// memory (cudaHostAllocMapped) is also entered in the device map, so kernels and copies accept it.
cudaError_t host_alloc(void** ptr, std::size_t size, unsigned flags, const char* api) {
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  if (ptr == nullptr) return api_error(cudaErrorInvalidValue, std::string(api) + ": null pointer");
  *ptr = arena_map(size);  // like device memory: a kernel's wild write faults instead of hitting the heap
  if (*ptr == nullptr) return api_error(cudaErrorMemoryAllocation, std::string(api) + ": host allocation failed");
  forget_freed(*ptr, size);
  r.host[*ptr] = size;
  const bool mapped = (flags & cudaHostAllocMapped) != 0;
  if (mapped) add_host_visible(*ptr, size, Memory::Mapped);
  trace_host(mapped ? Trace::HostKind::Mapped : Trace::HostKind::Pinned, api, *ptr, size, flags);
  return api_result(cudaSuccess);
}
}  // namespace
}  // namespace scangrade::emu::detail

cudaError_t cudaMallocHost(void** ptr, std::size_t size) {
  return scangrade::emu::detail::host_alloc(ptr, size, cudaHostAllocDefault, "cudaMallocHost");
}

cudaError_t cudaHostAlloc(void** ptr, std::size_t size, unsigned int flags) {
  return scangrade::emu::detail::host_alloc(ptr, size, flags, "cudaHostAlloc");
}

cudaError_t cudaFreeHost(void* ptr) {
  using namespace scangrade::emu::detail;
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  if (ptr == nullptr) return api_result(cudaSuccess);
  auto h = r.host.find(ptr);
  if (h == r.host.end()) return invalid_free(ptr, "cudaFreeHost", true);
  const std::size_t size = h->second;
  r.host.erase(h);
  auto it = r.device.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it != r.device.end() && it->second.memory == Memory::Mapped) r.device.erase(it);
  trace_host(scangrade::emu::Trace::HostKind::FreeHost, "cudaFreeHost", ptr, 0, 0);
  arena_unmap(ptr, size);
  remember_freed(reinterpret_cast<std::uintptr_t>(ptr), size);
  return api_result(cudaSuccess);
}

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int flags) {
  using namespace scangrade::emu::detail;
  if (device_ptr == nullptr) return api_error(cudaErrorInvalidValue, "cudaHostGetDevicePointer: null pointer");
  // page-locked (any cudaHostAlloc/cudaMallocHost block, as with unified addressing) or registered memory
  bool known = false;
  auto& host = rt().host;
  auto h = host.upper_bound(host_ptr);
  if (h != host.begin()) {
    --h;
    known = static_cast<char*>(host_ptr) < static_cast<char*>(h->first) + std::max<std::size_t>(h->second, 1);
  }
  if (!known) known = find_device(host_ptr, 1) != nullptr;
  if (!known) {
    return api_error(cudaErrorInvalidValue, "cudaHostGetDevicePointer(" + ptr_text(host_ptr) +
                                                "): not page-locked host memory (cudaHostAlloc, cudaHostRegister)");
  }
  trace_host(scangrade::emu::Trace::HostKind::DevicePointer, "cudaHostGetDevicePointer", host_ptr, 0, flags);
  *device_ptr = host_ptr;  // one address space
  return api_result(cudaSuccess);
}

cudaError_t cudaHostRegister(void* ptr, std::size_t size, unsigned int flags) {
  using namespace scangrade::emu::detail;
  if (ptr == nullptr || size == 0) return api_error(cudaErrorInvalidValue, "cudaHostRegister: null pointer or size 0");
  if (find_device(ptr, 1) != nullptr) {
    return api_error(cudaErrorInvalidValue, "cudaHostRegister(" + ptr_text(ptr) + "): already registered or device memory");
  }
  add_host_visible(ptr, size, Memory::Registered);
  trace_host(scangrade::emu::Trace::HostKind::Registered, "cudaHostRegister", ptr, size, flags);
  return api_result(cudaSuccess);
}

cudaError_t cudaHostUnregister(void* ptr) {
  using namespace scangrade::emu::detail;
  auto it = rt().device.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == rt().device.end() || it->second.memory != Memory::Registered) {
    return api_error(cudaErrorInvalidValue, "cudaHostUnregister(" + ptr_text(ptr) + "): not registered");
  }
  rt().device.erase(it);
  return api_result(cudaSuccess);
}

cudaError_t cudaMallocManaged(void** ptr, std::size_t size, unsigned int flags) {
  using namespace scangrade::emu::detail;
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  if (ptr == nullptr) return api_error(cudaErrorInvalidValue, "cudaMallocManaged: null pointer");
  *ptr = nullptr;
  if (size == 0) return api_error(cudaErrorInvalidValue, "cudaMallocManaged: size 0");
  void* p = arena_map(size);
  if (p == nullptr) return api_error(cudaErrorMemoryAllocation, "cudaMallocManaged: the emulated address space is exhausted");
  forget_freed(p, size);
  add_host_visible(p, size, Memory::Managed);  // freed by cudaFree
  trace_host(scangrade::emu::Trace::HostKind::Managed, "cudaMallocManaged", p, size, flags);
  *ptr = p;
  return api_result(cudaSuccess);
}

cudaError_t cudaSetDeviceFlags(unsigned int) { return api_result(cudaSuccess); }

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind) {
  return scangrade::emu::detail::copy(dst, src, count, kind, "cudaMemcpy");
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaMemcpyAsync"); e != cudaSuccess) return e;
  return scangrade::emu::detail::copy(dst, src, count, kind, "cudaMemcpyAsync");
}

cudaError_t cudaMemset(void* ptr, int value, std::size_t count) {
  return scangrade::emu::detail::fill(ptr, value, count, "cudaMemset");
}

cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t count, cudaStream_t stream) {
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaMemsetAsync"); e != cudaSuccess) return e;
  return scangrade::emu::detail::fill(ptr, value, count, "cudaMemsetAsync");
}

// ---- memory pools -------------------------------------------------------------------------------

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  if (pool == nullptr) return api_error(cudaErrorInvalidValue, "cudaDeviceGetDefaultMemPool: null pointer");
  if (device != 0) return api_error(cudaErrorInvalidDevice, "cudaDeviceGetDefaultMemPool: the emulator has one device, 0");
  *pool = &rt().default_pool;
  return api_result(cudaSuccess);
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) { return cudaDeviceGetDefaultMemPool(pool, device); }

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  auto& r = rt();
  if (pool != &r.default_pool || value == nullptr) {
    return api_error(cudaErrorInvalidValue, "cudaMemPoolGetAttribute: unknown pool or null value pointer");
  }
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies: *static_cast<int*>(value) = 1; break;
    case cudaMemPoolAttrReleaseThreshold: *static_cast<std::uint64_t*>(value) = r.default_pool.release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent: *static_cast<std::uint64_t*>(value) = r.pool_in_use; break;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh: *static_cast<std::uint64_t*>(value) = r.pool_high; break;
    default: return api_error(cudaErrorInvalidValue, "cudaMemPoolGetAttribute: unknown attribute");
  }
  return api_result(cudaSuccess);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  auto& r = rt();
  if (pool != &r.default_pool || value == nullptr) {
    return api_error(cudaErrorInvalidValue, "cudaMemPoolSetAttribute: unknown pool or null value pointer");
  }
  if (attr == cudaMemPoolAttrReleaseThreshold) r.default_pool.release_threshold = *static_cast<std::uint64_t*>(value);
  if (attr == cudaMemPoolAttrUsedMemHigh || attr == cudaMemPoolAttrReservedMemHigh) r.pool_high = r.pool_in_use;
  return api_result(cudaSuccess);
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, std::size_t) {
  if (pool != &rt().default_pool) return api_error(cudaErrorInvalidValue, "cudaMemPoolTrimTo: unknown pool");
  return api_result(cudaSuccess);
}

// ---- streams and events -------------------------------------------------------------------------

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (stream == nullptr) return api_error(cudaErrorInvalidValue, "cudaStreamCreate: null pointer");
  *stream = new CUstream_st{flags};
  rt().streams.insert(*stream);
  return api_result(cudaSuccess);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (rt().streams.erase(stream) == 0) {
    return api_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: not a live stream");
  }
  delete stream;
  return api_result(cudaSuccess);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaStreamSynchronize"); e != cudaSuccess) return e;
  return api_result(cudaSuccess);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return cudaStreamSynchronize(stream); }

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return api_error(cudaErrorInvalidValue, "cudaEventCreate: null pointer");
  *event = new CUevent_st{flags};
  rt().events.insert(*event);
  return api_result(cudaSuccess);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (rt().events.erase(event) == 0) return api_error(cudaErrorInvalidResourceHandle, "cudaEventDestroy: not a live event");
  delete event;
  return api_result(cudaSuccess);
}

namespace {
cudaError_t check_event(cudaEvent_t event, const char* api) {
  if (rt().events.count(event) == 0) {
    return api_error(cudaErrorInvalidResourceHandle, std::string(api) + ": not a live event");
  }
  return api_result(cudaSuccess);
}
}  // namespace

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaEventRecord"); e != cudaSuccess) return e;
  return check_event(event, "cudaEventRecord");
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) { return check_event(event, "cudaEventSynchronize"); }
cudaError_t cudaEventQuery(cudaEvent_t event) { return check_event(event, "cudaEventQuery"); }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return api_error(cudaErrorInvalidValue, "cudaEventElapsedTime: null pointer");
  if (cudaError_t e = check_event(start, "cudaEventElapsedTime"); e != cudaSuccess) return e;
  if (cudaError_t e = check_event(end, "cudaEventElapsedTime"); e != cudaSuccess) return e;
  *ms = 0.0f;
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (cudaError_t e = scangrade::emu::detail::check_stream(stream, "cudaStreamWaitEvent"); e != cudaSuccess) return e;
  return check_event(event, "cudaStreamWaitEvent");
}

namespace {
const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
  }
  return "an invalid cudaMemcpyKind";
}
}  // namespace

// What the CUDA runtime returned for each case, measured on an H200 (CUDA 13.0 runtime and driver): see
// cuda_runtime_api.h. The errors are not sticky and stay for cudaGetLastError, as there.
cudaError_t scangrade_emu_symbol_copy(const char* api, void* symbol, std::size_t symbol_size, std::size_t offset,
                                      void* other, std::size_t count, cudaMemcpyKind kind, bool to_symbol,
                                      cudaStream_t stream) {
  using namespace scangrade::emu::detail;
  Runtime& r = rt();
  if (r.errors.sticky != cudaSuccess) return r.errors.sticky;
  const std::string name = api;
  const bool direction_ok = to_symbol ? (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice ||
                                         kind == cudaMemcpyDefault)
                                      : (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice ||
                                         kind == cudaMemcpyDefault);
  if (!direction_ok) {
    return api_error(cudaErrorInvalidMemcpyDirection,
                     name + ": " + kind_name(kind) + " is not a direction of this copy (" +
                         (to_symbol ? "to a symbol: cudaMemcpyHostToDevice, cudaMemcpyDeviceToDevice"
                                    : "from a symbol: cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice") +
                         " or cudaMemcpyDefault); the call returned cudaErrorInvalidMemcpyDirection and copied nothing");
  }
  if (symbol == nullptr) {
    return api_error(cudaErrorInvalidSymbol,
                     name + ": the symbol argument is not a __device__ or __constant__ variable that can be " +
                         (to_symbol ? "written" : "read") +
                         " (a temporary such as &table, a string, or a variable declared const); pass the variable "
                         "itself: cudaMemcpyToSymbol(table, ...)");
  }
  if (offset > symbol_size || count > symbol_size - offset) {
    return api_error(cudaErrorInvalidValue, name + ": offset " + std::to_string(offset) + " + count " +
                                                std::to_string(count) + " bytes is past the end of the " +
                                                std::to_string(symbol_size) + "-byte symbol");
  }
  if (cudaError_t e = check_stream(stream, api); e != cudaSuccess) return e;
  if (count == 0) return api_result(cudaSuccess);
  if (other == nullptr) return api_error(cudaErrorInvalidValue, name + ": null pointer");
  if (kind == cudaMemcpyDeviceToDevice && find_device(other, count) == nullptr) {
    return api_error(cudaErrorInvalidValue, name + ": cudaMemcpyDeviceToDevice, but the " +
                                                (to_symbol ? "source [" : "destination [") + ptr_text(other) +
                                                ", +" + std::to_string(count) +
                                                ") is not inside one device allocation");
  }
  char* at = static_cast<char*>(symbol) + offset;
  if (to_symbol) {
    std::memmove(at, other, count);
  } else {
    std::memmove(other, at, count);
  }
  // the symbol is device memory; where `other` really is decides the direction, as for every copy
  const bool other_device = is_device_side(other);
  if (other_device) {
    r.stats.bytes_d2d += count;
  } else {
    (to_symbol ? r.stats.bytes_h2d : r.stats.bytes_d2h) += count;
    trace_copy(api, count, to_symbol);
  }
  return api_result(cudaSuccess);
}

// ---- kernel attributes --------------------------------------------------------------------------

cudaError_t scangrade_emu_func_set_attribute(cudaFuncAttribute attr, int value) {
  using namespace scangrade::emu::detail;
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || std::size_t(value) > kSharedPerBlockOptin) {
      return api_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: dynamic shared memory of " +
                                                  std::to_string(value) + " bytes exceeds the opt-in limit of " +
                                                  std::to_string(kSharedPerBlockOptin));
    }
    rt().dynamic_shared_limit = std::max(rt().dynamic_shared_limit, std::size_t(value));
  }
  return api_result(cudaSuccess);
}

cudaError_t scangrade_emu_occupancy(int* num_blocks, int block_size, std::size_t dynamic_smem) {
  if (num_blocks == nullptr || block_size <= 0) {
    return api_error(cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessor: invalid argument");
  }
  int by_threads = block_size > 1024 ? 0 : 2048 / block_size;
  int by_smem = dynamic_smem == 0 ? 32 : int(228 * 1024 / dynamic_smem);
  *num_blocks = std::min({32, by_threads, by_smem});
  return api_result(cudaSuccess);
}

// ---- scangrade::emu API -------------------------------------------------------------------------

namespace scangrade::emu {

const char* last_diagnostic() { return rt().errors.diagnostic.c_str(); }

void clear_error() { rt().errors = detail::ErrorState{}; }

void reset() {
  auto& r = rt();
  for (auto& [base, alloc] : r.device) {
    // mapped blocks are freed with the host map; registered memory is the caller's
    if (alloc.memory == detail::Memory::Device || alloc.memory == detail::Memory::Managed) {
      detail::arena_unmap(reinterpret_cast<void*>(base), alloc.size);
    }
  }
  r.device.clear();
  for (auto& [p, size] : r.host) detail::arena_unmap(p, size);
  r.host.clear();
  r.freed.clear();
  for (cudaStream_t s : r.streams) delete s;
  r.streams.clear();
  for (cudaEvent_t e : r.events) delete e;
  r.events.clear();
  r.in_use = r.pool_in_use = r.pool_high = 0;
  r.errors = detail::ErrorState{};
  r.stats = Stats{};
  detail::reset_scheduler_limits();
}

Stats stats() { return rt().stats; }
void reset_stats() { rt().stats = Stats{}; }
std::size_t bytes_in_use() { return rt().in_use; }
std::size_t pool_bytes_in_use() { return rt().pool_in_use; }
void set_memory_limit(std::size_t bytes) { rt().memory_limit = bytes; }
std::size_t mapped_bytes(std::size_t size) { return detail::arena_mapped_size(size); }
void set_poison(bool enabled) { rt().poison = enabled; }

void trace_begin() {
  rt().trace = Trace{};
  rt().tracing = true;
}

Trace trace_end() {
  rt().tracing = false;
  Trace t = std::move(rt().trace);
  rt().trace = Trace{};
  return t;
}

std::vector<std::string> launched_kernels() {
  std::vector<std::string> out;
  for (const detail::LaunchedKernel& k : detail::g_launched) out.push_back(k.text);
  return out;
}
void clear_launched_kernels() { detail::g_launched.clear(); }

void adopt_memory(void* ptr, std::size_t size) {
  if (ptr != nullptr && size > 0) detail::rt().device[reinterpret_cast<std::uintptr_t>(ptr)] =
      detail::Allocation{size, false, detail::Memory::Registered, false, true};  // never freed here, in no balance
}
void forget_memory(void* ptr) { detail::rt().device.erase(reinterpret_cast<std::uintptr_t>(ptr)); }

void* map_shared_memory(int fd, std::size_t size) {
  void* p = detail::arena_map_file(fd, size);
  if (p != nullptr) {
    detail::rt().device[reinterpret_cast<std::uintptr_t>(p)] =
        detail::Allocation{std::max<std::size_t>(size, 1), false, detail::Memory::Registered, true, true};
    detail::rt().shared[p] = size;
  }
  return p;
}

void unmap_shared_memory(void* ptr) {
  auto& r = detail::rt();
  auto it = r.shared.find(ptr);
  if (it == r.shared.end()) return;
  auto d = r.device.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (d != r.device.end() && d->second.memory == detail::Memory::Registered) r.device.erase(d);
  detail::arena_unmap(ptr, it->second);
  r.shared.erase(it);
}

}  // namespace scangrade::emu
