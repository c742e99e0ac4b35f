// Slot 1: inclusive scan, Hillis-Steele (Kogge-Stone), one thread block.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kHillisSteeleMaxN);  // 1024

// One thread per element. Step d: element i adds element i - d. Two shared buffers: each step
// reads one and writes the other, then __syncthreads() and swap.
template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T buf[2][kThreads];
  const unsigned t = threadIdx.x;
  int cur = 0;
  buf[cur][t] = t < n ? in[t] : T(0);  // pad with 0 past n
  __syncthreads();
  for (unsigned d = 1; d < kThreads; d *= 2) {
    const int next = 1 - cur;
    buf[next][t] = t >= d ? buf[cur][t - d] + buf[cur][t] : buf[cur][t];
    __syncthreads();
    cur = next;
  }
  // BUG: `<=` instead of `<`: thread n (there is one whenever n < 1024) also writes out[n],
  // one element past the end of the output.
  if (t <= n) out[t] = buf[cur][t];
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
