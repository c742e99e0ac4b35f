// Host-side helpers shared by the reference launchers: error checks and a stream-ordered
// temporary that is freed (cudaFreeAsync) on every path out of a launcher, exceptions included.
#pragma once

#include <cstddef>
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

/// Device memory from cudaMallocAsync on `stream`, released with cudaFreeAsync on the same stream
/// when the object goes out of scope.
class StreamBuffer {
 public:
  StreamBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
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
