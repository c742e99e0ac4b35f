// Host-side helpers shared by the reference launchers: error checks and a stream-ordered
// temporary that is freed (cudaFreeAsync) on every path out of a launcher, exceptions included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

namespace scangrade::reference::detail {

/// Throws std::runtime_error("<what>: <CUDA message>") when `status` is an error.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

/// Checks the last kernel launch (cudaGetLastError).
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

inline constexpr std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

/// Once per process: the device's default memory pool keeps what cudaFreeAsync gives back for the
/// next cudaMallocAsync instead of returning it to the driver at every synchronization (its release
/// threshold is 0 by default). Without it, each call of a scan whose caller synchronizes between
/// calls maps its temporaries anew: about 0.08 ms per call on an H100, more than a copy of 2^22
/// elements takes. What the pool keeps is not in use (cudaMemPoolAttrUsedMemCurrent, what the
/// harness's memory balance counts). A failure only costs that time: its error is cleared.
inline void keep_pool_memory() {
  static const bool kept = [] {
    int device = 0;
    cudaMemPool_t pool = nullptr;
    std::uint64_t keep = ~std::uint64_t{0};
    const bool ok = cudaGetDevice(&device) == cudaSuccess &&
                    cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
                    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess;
    if (!ok) cudaGetLastError();
    return ok;
  }();
  (void)kept;
}

/// Device memory from cudaMallocAsync on `stream`, released with cudaFreeAsync on the same stream
/// when the object goes out of scope (the pool keeps it for the next one: keep_pool_memory).
class StreamBuffer {
 public:
  StreamBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    keep_pool_memory();
    check(cudaMallocAsync(&ptr_, bytes, stream), "cudaMallocAsync");
  }
  ~StreamBuffer() {
    if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);
  }
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;

  template <typename U>
  U* as() const { return static_cast<U*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace scangrade::reference::detail
