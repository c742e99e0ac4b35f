// Slot 1: inclusive scan, Hillis-Steele (Kogge-Stone), one thread block.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kHillisSteeleMaxN);  // 1024

// One thread per element, scanned in place in shared memory: step d adds element i - d to i.
template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T s[kThreads];
  const unsigned t = threadIdx.x;
  s[t] = t < n ? in[t] : T(0);  // pad with 0 past n
  __syncthreads();
  for (unsigned d = 1; d < kThreads; d *= 2) {
    // BUG: in place without double buffering and without a barrier between the read of s[t - d]
    // and the write of s[t]: thread t - d may already have updated s[t - d] in this step (a
    // read-after-write race between threads). The barrier after the write does not help.
    if (t >= d) s[t] += s[t - d];
    __syncthreads();
  }
  if (t < n) out[t] = s[t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  hillis_steele_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("hillis_steele_kernel: launch failed");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
