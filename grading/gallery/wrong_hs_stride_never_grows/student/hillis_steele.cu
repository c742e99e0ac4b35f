// Slot 1: inclusive Hillis-Steele scan in one block of 1024 threads, one element per thread,
// double-buffered in shared memory (a barrier after every step).
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;

template <typename T>
__global__ void scan_steps(const T* in, T* out, std::size_t n) {
  __shared__ T ping[kThreads];
  __shared__ T pong[kThreads];
  T* from = ping;
  T* to = pong;
  const unsigned t = threadIdx.x;
  from[t] = t < n ? in[t] : T(0);
  __syncthreads();
  // BUG: the update is `d * 2`, not `d *= 2`: d stays 1, the loop never ends for n >= 2 (n = 1 never enters it).
  for (unsigned d = 1; d < n; d * 2) {
    to[t] = t >= d ? from[t] + from[t - d] : from[t];
    __syncthreads();
    T* swap = from;
    from = to;
    to = swap;
  }
  if (t < n) out[t] = from[t];
}

template <typename T>
void run(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  scan_steps<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess)
    throw std::runtime_error(std::string("scan_steps: ") + cudaGetErrorString(err));
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  run(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  run(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
