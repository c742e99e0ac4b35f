// Slot 1: inclusive Hillis-Steele scan in one block of 1024 threads, one element per thread,
// double-buffered in shared memory (a barrier after every step).
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T buf[2][kThreads];
  const unsigned t = threadIdx.x;
  int src = 0;
  buf[src][t] = t < n ? in[t] : T(0);
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    // BUG: the step's sum is kept in an unsigned temporary: right for int32 (the bits wrap back), but a float loses its fraction and a negative float has no unsigned value.
    unsigned sum = buf[src][t];
    if (t >= stride) sum += buf[src][t - stride];
    buf[1 - src][t] = sum;
    __syncthreads();
    src = 1 - src;
  }
  if (t < n) out[t] = buf[src][t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  hillis_steele_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("hillis_steele_kernel: ") + cudaGetErrorString(err));
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
