// Device-side check of a timed output (output_check.h).
#include "output_check.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace scangrade::grader {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned long long kNone = std::numeric_limits<unsigned long long>::max();

template <typename T>
__global__ void first_outside_kernel(const T* out, const T* lo, const T* hi, std::size_t n, unsigned long long* first) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const T v = out[i];
    if (!(v >= lo[i] && v <= hi[i])) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string("checking a timed output: ") + what + ": " + cudaGetErrorString(err));
}

}  // namespace

template <typename T>
std::optional<std::size_t> first_outside(const T* d_out, const T* d_lo, const T* d_hi, std::size_t n,
                                         unsigned long long* d_first, cudaStream_t stream) {
  if (n == 0) return std::nullopt;
  unsigned long long first = kNone;
  check(cudaMemcpyAsync(d_first, &first, sizeof first, cudaMemcpyHostToDevice, stream), "resetting the index");
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  first_outside_kernel<T><<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(
      d_out, d_lo, d_hi, n, d_first);
  check(cudaGetLastError(), "launching the check");
  check(cudaMemcpyAsync(&first, d_first, sizeof first, cudaMemcpyDeviceToHost, stream), "reading the index");
  check(cudaStreamSynchronize(stream), "waiting for the check");
  if (first == kNone) return std::nullopt;
  return static_cast<std::size_t>(first);
}

template std::optional<std::size_t> first_outside<std::int32_t>(const std::int32_t*, const std::int32_t*,
                                                                const std::int32_t*, std::size_t, unsigned long long*,
                                                                cudaStream_t);
template std::optional<std::size_t> first_outside<float>(const float*, const float*, const float*, std::size_t,
                                                         unsigned long long*, cudaStream_t);

}  // namespace scangrade::grader
