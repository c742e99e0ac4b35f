// ScanGrade CPU emulator: stands in for the CUDA toolkit's cuda_runtime.h.
//
// Put harness/emulation/include first on the include path (the scangrade_emu CMake target does)
// and host code that includes <cuda_runtime.h> compiles unchanged against the emulator; student
// .cu files get it through rewrite.py. See scangrade/emu.h for the execution model.
#pragma once

#ifndef __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_H__
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda_runtime_api.h"
#include "scangrade/emu.h"
#include "scangrade/emu_device.h"

// ---- launch API ---------------------------------------------------------------------------------
// `kernel<<<grid, block, smem, stream>>>(args)` (through rewrite.py), cudaLaunchKernel,
// cudaLaunchKernelEx and cudaLaunchKernelExC all end in the same launcher (scangrade/emu_device.h).

namespace scangrade::emu::detail {

/// What rewrite.py turns `<<<grid, block, smem, stream>>>` into: nvcc's launch configuration call,
/// whose block defaults to 1 (`k<<<g>>>(...)` is accepted by nvcc).
inline LaunchConfig launch_config(dim3 grid, dim3 block = 1, std::size_t shared_bytes = 0,
                                  cudaStream_t stream = 0) {
  return LaunchConfig(grid, block, shared_bytes, stream);
}

/// A launch still waiting for its arguments: what rewrite.py makes of a #define body that ends with
/// `>>>` (`#define LAUNCH k<<<g, b>>>`, used as `LAUNCH(x, n)`).
template <class Call>
struct PendingLaunch {
  const char* file;
  int line;
  Call call;
  LaunchConfig config;

  template <class... Args>
  void operator()(Args&&... args) {
    launch(file, line, call, config, std::forward<Args>(args)...);
  }
};

template <class Call>
inline PendingLaunch<std::decay_t<Call>> pending_launch(const char* file, int line, Call&& call,
                                                         const LaunchConfig& config) {
  return {file, line, std::forward<Call>(call), config};
}

/// The status a launch API call returns: success when the launch ran, else the error it recorded
/// (an invalid configuration or stream, or the sticky kernel error).
template <class Run>
inline cudaError_t launch_status(Run&& run) {
  const std::uint64_t before = ::scangrade::emu::stats().launches;
  run();
  return ::scangrade::emu::stats().launches != before ? cudaSuccess : cudaPeekAtLastError();
}

// ---- kernels launched through void** argument arrays ----

using ErasedKernel = void (*)();
using LaunchFromArgs = void (*)(ErasedKernel kernel, const LaunchConfig& config, void** args,
                                const char* file, int line);

template <class... P, std::size_t... I>
inline void launch_unpacked(void (*kernel)(P...), const LaunchConfig& config, void** args, const char* file,
                            int line, std::index_sequence<I...>) {
  (void)args;  // no parameters: never read
  launch(file, line, kernel, config, *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}

/// Launches `kernel` (of type void(P...), erased) with args[i] pointing at its i-th argument.
template <class... P>
inline void launch_from_args(ErasedKernel kernel, const LaunchConfig& config, void** args, const char* file,
                             int line) {
  launch_unpacked(reinterpret_cast<void (*)(P...)>(kernel), config, args, file, line,
                  std::index_sequence_for<P...>{});
}

template <class... P>
inline LaunchFromArgs launcher_for(void (*)(P...)) {
  return &launch_from_args<P...>;
}

/// A kernel a `const void*` can name: its address, and how to launch it from a void** array.
struct KernelRecord {
  const void* address;
  ErasedKernel kernel;
  LaunchFromArgs launch;
  const KernelRecord* next;
};

inline const KernelRecord*& kernel_records() {
  static const KernelRecord* head = nullptr;
  return head;
}

inline const KernelRecord* find_kernel(const void* address) {
  for (const KernelRecord* r = kernel_records(); r != nullptr; r = r->next) {
    if (r->address == address) return r;
  }
  return nullptr;
}

template <auto Kernel>
inline bool add_kernel_record() {
  static KernelRecord record{reinterpret_cast<const void*>(Kernel), reinterpret_cast<ErasedKernel>(Kernel),
                             launcher_for(Kernel), nullptr};
  record.next = kernel_records();
  kernel_records() = &record;
  return true;
}

/// rewrite.py starts the body of every __global__ function it sees defined with
/// `(void)&kernel_registered<static_cast<void (*)(params)>(&kernel)>;`: the variable's initializer
/// (run before main, once per kernel, and for a template kernel once per instantiation that is
/// used) adds the kernel to the records that cudaLaunchKernel((void*)kernel, ...) searches.
template <auto Kernel>
inline const bool kernel_registered = add_kernel_record<Kernel>();

/// cudaLaunchKernelEx's configuration, with the caller's file:line (the launch site in diagnostics).
struct LaunchConfigAtSite {
  const cudaLaunchConfig_t* config;
  const char* file;
  int line;
  LaunchConfigAtSite(const cudaLaunchConfig_t* c, const char* f = __builtin_FILE(), int l = __builtin_LINE())
      : config(c), file(f), line(l) {}
};

inline cudaFuncAttributes emulated_func_attributes() {
  cudaFuncAttributes a{};
  a.maxThreadsPerBlock = 1024;
  a.ptxVersion = 90;
  a.binaryVersion = 90;
  a.maxDynamicSharedSizeBytes = 48 * 1024;
  a.preferredShmemCarveout = -1;
  return a;
}

}  // namespace scangrade::emu::detail

/// cudaLaunchKernel with the kernel as `const void*`: args[i] points at the kernel's i-th argument.
/// The kernel must be one that rewrite.py saw defined (every __global__ function of the rewritten
/// files; a template kernel's instantiation once it is named, as in `(void*)kernel<int>`); any
/// other address gives cudaErrorInvalidDeviceFunction. Returns the launch's configuration error
/// (also left for cudaGetLastError, as a <<<>>> launch does), or the sticky kernel error.
inline cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, std::size_t shared_bytes,
                                    cudaStream_t stream, const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
  using namespace ::scangrade::emu::detail;
  const KernelRecord* record = find_kernel(func);
  if (record == nullptr) return cudaErrorInvalidDeviceFunction;
  return launch_status(
      [&] { record->launch(record->kernel, LaunchConfig(grid, block, shared_bytes, stream), args, file, line); });
}

/// cudaLaunchKernel(kernel, ...) with the kernel's own type (the CUDA C++ API); `(void*)kernel`
/// goes to the `const void*` form above.
template <class T>
inline cudaError_t cudaLaunchKernel(T* func, dim3 grid, dim3 block, void** args, std::size_t shared_bytes = 0,
                                    cudaStream_t stream = 0, const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
  using namespace ::scangrade::emu::detail;
  if constexpr (std::is_function_v<T>) {
    return launch_status([&] {
      launcher_for(func)(reinterpret_cast<ErasedKernel>(func), LaunchConfig(grid, block, shared_bytes, stream),
                         args, file, line);
    });
  } else {
    return cudaLaunchKernel(static_cast<const void*>(func), grid, block, args, shared_bytes, stream, file, line);
  }
}

/// cudaLaunchKernelExC: cudaLaunchKernel with a cudaLaunchConfig_t (its attributes are ignored).
inline cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args,
                                       const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  if (config == nullptr) return cudaErrorInvalidValue;
  return cudaLaunchKernel(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes, config->stream,
                          file, line);
}

/// cudaLaunchKernelEx(&config, kernel, args...): the arguments convert to the kernel's parameter
/// types as in a call (CUDA's template does the same); attributes are ignored.
template <class... ExpTypes, class... ActTypes>
inline cudaError_t cudaLaunchKernelEx(::scangrade::emu::detail::LaunchConfigAtSite config,
                                      void (*kernel)(ExpTypes...), ActTypes&&... args) {
  using namespace ::scangrade::emu::detail;
  if (config.config == nullptr) return cudaErrorInvalidValue;
  const cudaLaunchConfig_t& c = *config.config;
  return [&](ExpTypes... coerced) {
    return launch_status([&] {
      launch(config.file, config.line, kernel, LaunchConfig(c.gridDim, c.blockDim, c.dynamicSmemBytes, c.stream),
             coerced...);
    });
  }(std::forward<ActTypes>(args)...);
}

/// cudaFuncGetAttributes: the same values for every kernel (see cudaFuncAttributes).
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return cudaErrorInvalidValue;
  if (::scangrade::emu::detail::find_kernel(func) == nullptr) return cudaErrorInvalidDeviceFunction;
  *attr = ::scangrade::emu::detail::emulated_func_attributes();
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, T* entry) {
  if constexpr (std::is_function_v<T>) {
    if (attr == nullptr) return cudaErrorInvalidValue;
    *attr = ::scangrade::emu::detail::emulated_func_attributes();
    return cudaSuccess;
  } else {
    return cudaFuncGetAttributes(attr, static_cast<const void*>(entry));
  }
}
