// Interposed cudaMalloc/cudaFree that count live bytes (alloc_tracker.h). Linked into the
// executables themselves, so that their definitions win over the shared CUDA runtime's.
#include "scangrade/alloc_tracker.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include <cuda_runtime_api.h>

namespace {

std::mutex g_mutex;
std::unordered_map<void*, std::size_t> g_live;
std::size_t g_live_bytes = 0;

template <typename Fn>
Fn next_symbol(const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (!symbol) {
    std::fprintf(stderr, "scangrade: cannot find the CUDA runtime's %s (%s): please report\n", name, dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(symbol);
}

}  // namespace

extern "C" cudaError_t cudaMalloc(void** dev_ptr, std::size_t size) {
  static const auto real = next_symbol<cudaError_t (*)(void**, std::size_t)>("cudaMalloc");
  const cudaError_t err = real(dev_ptr, size);
  if (err == cudaSuccess && dev_ptr && *dev_ptr) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_live[*dev_ptr] = size;
    g_live_bytes += size;
  }
  return err;
}

extern "C" cudaError_t cudaFree(void* dev_ptr) {
  static const auto real = next_symbol<cudaError_t (*)(void*)>("cudaFree");
  const cudaError_t err = real(dev_ptr);
  if (err == cudaSuccess && dev_ptr) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (const auto it = g_live.find(dev_ptr); it != g_live.end()) {
      g_live_bytes -= it->second;
      g_live.erase(it);
    }
  }
  return err;
}

namespace scangrade {

std::size_t tracked_device_bytes() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_live_bytes;
}

}  // namespace scangrade
