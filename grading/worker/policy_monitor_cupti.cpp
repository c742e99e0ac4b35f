// Run-time policy monitor, GPU backend (policy_monitor.h): CUPTI callbacks on the runtime and driver
// APIs fill a policy::Trace while a window (begin .. end) is open; evaluate() (policy_rules.h) decides.
//
// * libcupti is opened with dlopen at install(), so the worker links nothing more (toolchain.json's
//   link line is unchanged) and a grader without CUPTI reports why instead of failing to link.
// * Only the callbacks below are enabled (cuptiEnableCallback, not whole domains): every other API
//   call runs without CUPTI's dispatch, and the timed calls pay nothing outside these few APIs.
// * Each API is recorded once: a driver call made inside a runtime call we watch (cudaMemcpy ->
//   cuMemcpy..., cudaMallocHost -> cuMemHostAlloc, cudaLaunchKernel -> cuLaunchKernel) is skipped;
//   a per-thread depth counter of the watched runtime calls says when.
// * Copies record on API exit when the call succeeded, by where their pointers really are, never by
//   their `kind` label (with unified addressing the runtime copies device<->host whatever the label
//   says): the case's buffers (named by the worker at begin()) and cuPointerGetAttribute (the driver:
//   it never touches the runtime's last error, which the student's code may be about to read). Array
//   copies, peer copies, graphs and cudaMemcpy3DBatchAsync are not followed (the build refuses them).
// * Other doors to the device count as uploads: every memset call (kMemsetBytes) and every launch's
//   parameter buffer (its size from the runtime's cudaFuncGetParamInfo, else the driver's
//   cuFuncGetParamInfo; once per kernel).
// * In-process monitoring can be tampered with by code in the same process: evidence, not proof.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>  // CUDA 13: already includes generated_cuda_runtime_api_meta.h and generated_cuda_meta.h
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "policy_monitor.h"
#include "policy_rules.h"

namespace scangrade::grader::policy {
namespace {

struct Cupti {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};
using PointerGetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
using FuncGetParamInfo = CUresult (*)(CUfunction, size_t, size_t*, size_t*);

Cupti g_cupti;
PointerGetAttribute g_pointer_attribute = nullptr;
FuncGetParamInfo g_param_info = nullptr;
std::vector<DeviceRange> g_device;                            // the case's buffers (begin)
std::unordered_map<const void*, std::int64_t> g_param_bytes;  // kernel -> parameter bytes (under g_mutex)
CUpti_SubscriberHandle g_subscriber = nullptr;
std::string g_unavailable = "install() was not called";
bool g_installed = false;

std::atomic<bool> g_open{false};
std::mutex g_mutex;  // guards g_trace and g_slot
Trace g_trace;
Slot g_slot = Slot::Hierarchical;

thread_local int t_runtime_depth = 0;    // watched runtime calls this thread is inside
thread_local bool t_in_callback = false;  // our own driver calls (cuPointerGetAttribute) are not the student's

/// True when p is host memory (pageable, page-locked or unknown to CUDA), false for device/managed memory.
bool is_host(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  for (const DeviceRange& r : g_device) {
    if (a >= reinterpret_cast<std::uintptr_t>(r.ptr) && a - reinterpret_cast<std::uintptr_t>(r.ptr) < r.bytes) return false;
  }
  if (g_pointer_attribute == nullptr) return false;
  unsigned int type = 0;
  CUresult r = g_pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
  if (r != CUDA_SUCCESS) return true;  // not a CUDA allocation: plain host memory
  return type == CU_MEMORYTYPE_HOST;
}

CopyDirection direction(bool dst_host, bool src_host) {
  if (dst_host && !src_host) return CopyDirection::DeviceToHost;
  if (!dst_host && src_host) return CopyDirection::HostToDevice;
  return CopyDirection::Other;
}

/// A runtime copy's direction by its pointers; the `kind` label is not evidence (a copy labelled
/// cudaMemcpyHostToHost between device and host memory still moves the data).
CopyDirection runtime_direction(cudaMemcpyKind, const void* dst, const void* src) {
  return direction(is_host(dst), is_host(src));
}

/// Bytes of a kernel's parameter buffer (0 when the driver cannot say), once per kernel.
std::int64_t param_bytes(const void* key, CUfunction f) {
  if (auto it = g_param_bytes.find(key); it != g_param_bytes.end()) return it->second;
  std::int64_t bytes = 0;
  if (g_param_info != nullptr && f != nullptr) {
    std::size_t offset = 0, size = 0;
    for (std::size_t i = 0; i < 4096 && g_param_info(f, i, &offset, &size) == CUDA_SUCCESS; ++i) {
      bytes = std::max<std::int64_t>(bytes, std::int64_t(offset + size));
    }
  }
  g_param_bytes.emplace(key, bytes);
  return bytes;
}

/// A runtime launch's parameter bytes (func is the host stub nvcc registered), once per kernel: the
/// runtime's cudaFuncGetParamInfo, asked index by index until it says there is none. Its error for
/// the index past the last parameter would be the student's next cudaGetLastError: it is asked only
/// when no error of the student's is pending, and its own error is cleared after.
std::int64_t runtime_param_bytes(const void* func) {
  if (auto it = g_param_bytes.find(func); it != g_param_bytes.end()) return it->second;
  if (cudaPeekAtLastError() != cudaSuccess) return 0;  // the student's error: not ours to clear (asked again later)
  std::int64_t bytes = 0;
  std::size_t offset = 0, size = 0, i = 0;
  for (; i < 4096 && cudaFuncGetParamInfo(func, i, &offset, &size) == cudaSuccess; ++i) {
    bytes = std::max<std::int64_t>(bytes, std::int64_t(offset + size));
  }
  cudaGetLastError();  // ours (the index past the last parameter)
  if (i == 0) {        // the runtime could not say: the driver's view of the same kernel
    cudaFunction_t f = nullptr;
    const bool found = cudaGetFuncBySymbol(&f, func) == cudaSuccess;
    cudaGetLastError();
    g_param_bytes.erase(func);
    return param_bytes(func, found ? reinterpret_cast<CUfunction>(f) : nullptr);
  }
  g_param_bytes.emplace(func, bytes);
  return bytes;
}

void record_launch(Trace& t, const CUpti_CallbackData* cb, const std::string& api, std::int64_t grid,
                   std::int64_t params) {
  t.launch(cb->symbolName != nullptr ? cb->symbolName : api, grid);
  t.upload("kernel parameters", params);
}

std::int64_t blocks(std::uint64_t x, std::uint64_t y, std::uint64_t z) { return std::int64_t(x * y * z); }

// ---- runtime API (recorded on exit, while a window is open, under g_mutex) ------------------------

/// The runtime's copies to and from a symbol. False when `cbid` is none of them.
bool runtime_symbol_copy_exit(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const std::string& api, Trace& t) {
  const void* p = cb->functionParams;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000: {
      auto* a = static_cast<const cudaMemcpyToSymbol_v3020_params*>(p);
      if (is_host(a->src)) t.copy(api, CopyDirection::HostToDevice, std::int64_t(a->count));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000: {
      auto* a = static_cast<const cudaMemcpyToSymbolAsync_v3020_params*>(p);
      if (is_host(a->src)) t.copy(api, CopyDirection::HostToDevice, std::int64_t(a->count));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000: {
      auto* a = static_cast<const cudaMemcpyFromSymbol_v3020_params*>(p);
      if (is_host(a->dst)) t.copy(api, CopyDirection::DeviceToHost, std::int64_t(a->count));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000: {
      auto* a = static_cast<const cudaMemcpyFromSymbolAsync_v3020_params*>(p);
      if (is_host(a->dst)) t.copy(api, CopyDirection::DeviceToHost, std::int64_t(a->count));
      break;
    }
    default: return false;
  }
  return true;
}

/// The runtime's copies. False when `cbid` is none of them.
bool runtime_copy_exit(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const std::string& api, Trace& t) {
  const void* p = cb->functionParams;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
      auto* a = static_cast<const cudaMemcpy_v3020_params*>(p);
      t.copy(api, runtime_direction(a->kind, a->dst, a->src), std::int64_t(a->count));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      auto* a = static_cast<const cudaMemcpyAsync_v3020_params*>(p);
      t.copy(api, runtime_direction(a->kind, a->dst, a->src), std::int64_t(a->count));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000: {
      auto* a = static_cast<const cudaMemcpy2D_v3020_params*>(p);
      t.copy(api, runtime_direction(a->kind, a->dst, a->src), std::int64_t(a->width * a->height));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000: {
      auto* a = static_cast<const cudaMemcpy2DAsync_v3020_params*>(p);
      t.copy(api, runtime_direction(a->kind, a->dst, a->src), std::int64_t(a->width * a->height));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000: {
      // both structs start with the cudaMemcpy3DParms pointer
      const cudaMemcpy3DParms* m = static_cast<const cudaMemcpy3D_v3020_params*>(p)->p;
      if (m == nullptr) break;
      const std::int64_t bytes = std::int64_t(m->extent.width * m->extent.height * m->extent.depth);
      t.copy(api, runtime_direction(m->kind, m->dstPtr.ptr, m->srcPtr.ptr), bytes);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000: {
      auto* a = static_cast<const cudaMemcpyBatchAsync_v13000_params*>(p);
      if (a->dsts == nullptr || a->srcs == nullptr || a->sizes == nullptr) break;
      for (std::size_t i = 0; i < a->count && i < 4096; ++i) {
        t.copy(api, direction(is_host(a->dsts[i]), is_host(a->srcs[i])), std::int64_t(a->sizes[i]));
      }
      break;
    }
    default: return false;
  }
  return true;
}

/// The runtime's launches. False when `cbid` is none of them.
bool runtime_launch_exit(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const std::string& api, Trace& t) {
  const void* p = cb->functionParams;
  switch (cbid) {
    // launches (the driver's callback, if the runtime reaches it, is skipped: depth > 0)
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000: {
      auto* a = static_cast<const cudaLaunchKernel_v7000_params*>(p);
      record_launch(t, cb, api, blocks(a->gridDim.x, a->gridDim.y, a->gridDim.z), runtime_param_bytes(a->func));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      auto* a = static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(p);
      record_launch(t, cb, api, blocks(a->gridDim.x, a->gridDim.y, a->gridDim.z), runtime_param_bytes(a->func));
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      auto* a = static_cast<const cudaLaunchKernelExC_v11060_params*>(p);
      if (a->config == nullptr) break;
      const dim3 g = a->config->gridDim;
      record_launch(t, cb, api, blocks(g.x, g.y, g.z), runtime_param_bytes(a->func));
      break;
    }
    default: return false;
  }
  return true;
}

/// The runtime's host memory calls. False when `cbid` is none of them.
bool runtime_host_memory_exit(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const std::string& api, Trace& t) {
  const void* p = cb->functionParams;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      auto* a = static_cast<const cudaMallocHost_v3020_params*>(p);
      t.host_use(HostMemory::Pinned, api, std::int64_t(a->size));
      if (a->ptr != nullptr) t.pinned_alloc(*a->ptr, std::int64_t(a->size), api);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      auto* a = static_cast<const cudaHostAlloc_v3020_params*>(p);
      const bool mapped = (a->flags & cudaHostAllocMapped) != 0;
      t.host_use(mapped ? HostMemory::Mapped : HostMemory::Pinned, mapped ? api + "(cudaHostAllocMapped)" : api,
                 std::int64_t(a->size));
      if (a->pHost != nullptr) t.pinned_alloc(*a->pHost, std::int64_t(a->size), api);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      t.pinned_free(static_cast<const cudaFreeHost_v3020_params*>(p)->ptr);
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000:
      t.host_use(HostMemory::Managed, api, std::int64_t(static_cast<const cudaMallocManaged_v6000_params*>(p)->size));
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000:
      t.host_use(HostMemory::Registered, api, std::int64_t(static_cast<const cudaHostRegister_v4000_params*>(p)->size));
      break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostGetDevicePointer_v3020: t.host_use(HostMemory::DevicePointer, api, 0); break;
    default: return false;
  }
  return true;
}

/// The runtime's memsets: each call is an upload of kMemsetBytes. False when `cbid` is none of them.
bool runtime_memset_exit(CUpti_CallbackId cbid, const std::string& api, Trace& t) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000: t.upload(api, kMemsetBytes); return true;
    default: return false;
  }
}

void runtime_exit(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, Trace& t) {
  const std::string api = cb->functionName != nullptr ? cb->functionName : "cuda?";
  if (runtime_memset_exit(cbid, api, t)) return;
  if (!runtime_copy_exit(cbid, cb, api, t) && !runtime_symbol_copy_exit(cbid, cb, api, t) &&
      !runtime_launch_exit(cbid, cb, api, t))
    runtime_host_memory_exit(cbid, cb, api, t);
}

// ---- driver API (only calls made directly, not from inside a watched runtime call) ---------------

std::int64_t launch_blocks_driver(CUpti_CallbackId cbid, const void* p) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      auto* a = static_cast<const cuLaunchKernel_params*>(p);
      return blocks(a->gridDimX, a->gridDimY, a->gridDimZ);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      auto* a = static_cast<const cuLaunchCooperativeKernel_params*>(p);
      return blocks(a->gridDimX, a->gridDimY, a->gridDimZ);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto* a = static_cast<const cuLaunchKernelEx_params*>(p);
      return a->config == nullptr ? 0 : blocks(a->config->gridDimX, a->config->gridDimY, a->config->gridDimZ);
    }
    default: return 0;
  }
}

CUfunction launch_function(CUpti_CallbackId cbid, const void* p) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: return static_cast<const cuLaunchKernel_params*>(p)->f;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return static_cast<const cuLaunchCooperativeKernel_params*>(p)->f;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: return static_cast<const cuLaunchKernelEx_params*>(p)->f;
    default: return nullptr;
  }
}

void driver_exit(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, Trace& t) {
  const std::string api = cb->functionName != nullptr ? cb->functionName : "cu?";
  const void* p = cb->functionParams;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
      t.copy(api, CopyDirection::DeviceToHost, std::int64_t(static_cast<const cuMemcpyDtoH_v2_params*>(p)->ByteCount));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
      t.copy(api, CopyDirection::DeviceToHost,
             std::int64_t(static_cast<const cuMemcpyDtoHAsync_v2_params*>(p)->ByteCount));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
      t.copy(api, CopyDirection::HostToDevice, std::int64_t(static_cast<const cuMemcpyHtoD_v2_params*>(p)->ByteCount));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
      t.copy(api, CopyDirection::HostToDevice,
             std::int64_t(static_cast<const cuMemcpyHtoDAsync_v2_params*>(p)->ByteCount));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: {
      auto* a = static_cast<const cuMemcpy_params*>(p);
      t.copy(api, direction(is_host(reinterpret_cast<const void*>(a->dst)), is_host(reinterpret_cast<const void*>(a->src))),
             std::int64_t(a->ByteCount));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
      auto* a = static_cast<const cuMemcpyAsync_params*>(p);
      t.copy(api, direction(is_host(reinterpret_cast<const void*>(a->dst)), is_host(reinterpret_cast<const void*>(a->src))),
             std::int64_t(a->ByteCount));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    {
      CUfunction f = launch_function(cbid, p);
      record_launch(t, cb, api, launch_blocks_driver(cbid, p), param_bytes(f, f));
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: t.upload(api, kMemsetBytes); break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      auto* a = static_cast<const cuMemAllocHost_v2_params*>(p);
      t.host_use(HostMemory::Pinned, api, std::int64_t(a->bytesize));
      if (a->pp != nullptr) t.pinned_alloc(*a->pp, std::int64_t(a->bytesize), api);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2: {  // same parameters (pp, bytesize, Flags)
      auto* a = static_cast<const cuMemHostAlloc_params*>(p);
      const bool mapped = (a->Flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0;
      t.host_use(mapped ? HostMemory::Mapped : HostMemory::Pinned, mapped ? api + "(CU_MEMHOSTALLOC_DEVICEMAP)" : api,
                 std::int64_t(a->bytesize));
      if (a->pp != nullptr) t.pinned_alloc(*a->pp, std::int64_t(a->bytesize), api);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost: t.pinned_free(static_cast<const cuMemFreeHost_params*>(p)->p); break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      t.host_use(HostMemory::Managed, api, std::int64_t(static_cast<const cuMemAllocManaged_params*>(p)->bytesize));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2:
      t.host_use(HostMemory::Registered, api,
                 std::int64_t(static_cast<const cuMemHostRegister_v2_params*>(p)->bytesize));
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostGetDevicePointer_v2: t.host_use(HostMemory::DevicePointer, api, 0); break;
    default: break;
  }
}

constexpr CUpti_CallbackId kRuntimeCallbacks[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostGetDevicePointer_v3020,
};

constexpr CUpti_CallbackId kDriverCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostGetDevicePointer_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
};

bool succeeded(CUpti_CallbackDomain domain, const CUpti_CallbackData* cb) {
  if (cb->functionReturnValue == nullptr) return false;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return *static_cast<const cudaError_t*>(cb->functionReturnValue) == cudaSuccess;
  return *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (t_in_callback) return;  // our own cuPointerGetAttribute
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
      ++t_runtime_depth;
      return;
    }
    --t_runtime_depth;
  } else if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_EXIT || t_runtime_depth > 0) {
    return;  // a driver call made by a watched runtime call is recorded by that call
  }
  if (!g_open.load(std::memory_order_acquire) || !succeeded(domain, cb)) return;
  t_in_callback = true;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_open.load(std::memory_order_relaxed)) {
      if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) runtime_exit(cbid, cb, g_trace);
      else driver_exit(cbid, cb, g_trace);
    }
  }
  t_in_callback = false;
}

std::string cupti_error(const char* what, CUptiResult r) {
  const char* text = nullptr;
  if (g_cupti.result_string != nullptr) g_cupti.result_string(r, &text);
  return std::string(what) + " failed: " + (text != nullptr ? text : "CUPTI error " + std::to_string(int(r)));
}

std::string do_install() {
  if (const char* env = std::getenv("SCANGRADE_POLICY_MONITOR"); env != nullptr && std::strcmp(env, "off") == 0) {
    return "run-time policy monitoring is off (SCANGRADE_POLICY_MONITOR=off)";
  }
  void* lib = nullptr;
  std::string tried;
  const char* candidates[] = {
#ifdef SCANGRADE_CUPTI_LIBRARY
      SCANGRADE_CUPTI_LIBRARY,
#endif
      "libcupti.so.13", "libcupti.so"};
  for (const char* name : candidates) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    tried += tried.empty() ? name : std::string(", ") + name;
  }
  if (lib == nullptr) return "run-time policy monitoring is unavailable: CUPTI could not be loaded (tried " + tried + ")";
  g_cupti.subscribe = reinterpret_cast<decltype(&cuptiSubscribe)>(dlsym(lib, "cuptiSubscribe"));
  g_cupti.enable_callback = reinterpret_cast<decltype(&cuptiEnableCallback)>(dlsym(lib, "cuptiEnableCallback"));
  g_cupti.result_string = reinterpret_cast<decltype(&cuptiGetResultString)>(dlsym(lib, "cuptiGetResultString"));
  if (g_cupti.subscribe == nullptr || g_cupti.enable_callback == nullptr) {
    return "run-time policy monitoring is unavailable: the CUPTI library lacks cuptiSubscribe/cuptiEnableCallback";
  }
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); cuda != nullptr) {
    g_pointer_attribute = reinterpret_cast<PointerGetAttribute>(dlsym(cuda, "cuPointerGetAttribute"));
    g_param_info = reinterpret_cast<FuncGetParamInfo>(dlsym(cuda, "cuFuncGetParamInfo"));
  }
  if (CUptiResult r = g_cupti.subscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_api), nullptr);
      r != CUPTI_SUCCESS) {
    return "run-time policy monitoring is unavailable: " + cupti_error("cuptiSubscribe", r) +
           " (another CUPTI client, such as a profiler or compute-sanitizer, may hold the subscription)";
  }
  for (CUpti_CallbackId id : kRuntimeCallbacks) {
    if (CUptiResult r = g_cupti.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id); r != CUPTI_SUCCESS) {
      return "run-time policy monitoring is unavailable: " + cupti_error("cuptiEnableCallback (runtime API)", r);
    }
  }
  for (CUpti_CallbackId id : kDriverCallbacks) {
    if (CUptiResult r = g_cupti.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id); r != CUPTI_SUCCESS) {
      return "run-time policy monitoring is unavailable: " + cupti_error("cuptiEnableCallback (driver API)", r);
    }
  }
  return "";
}

}  // namespace

std::string install() {
  if (!g_installed) {
    g_unavailable = do_install();
    g_installed = true;
  }
  return g_unavailable;
}

void begin(Slot slot, std::int64_t data_bytes, std::vector<DeviceRange> device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_trace = Trace{};
  g_trace.data_bytes = data_bytes;
  g_device = std::move(device);
  g_slot = slot;
  g_open.store(g_installed && g_unavailable.empty(), std::memory_order_release);
}

Findings end() {
  Trace trace;
  Slot slot;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_open.store(false, std::memory_order_release);
    trace = std::move(g_trace);
    g_trace = Trace{};
    slot = g_slot;
  }
  if (!g_installed || !g_unavailable.empty()) return Findings{};
  return evaluate(trace, slot);
}

}  // namespace scangrade::grader::policy
