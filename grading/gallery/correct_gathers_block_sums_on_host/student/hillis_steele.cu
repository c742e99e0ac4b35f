// Slot 1: Hillis-Steele inclusive scan, one block, one element per thread, one shared array:
// every step first reads the partner's value into a register, the block waits, then adds it.
#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T s[ws::kThreads];
  const unsigned t = threadIdx.x;
  s[t] = t < n ? in[t] : T(0);
  __syncthreads();
  for (unsigned d = 1; d < ws::kThreads; d *= 2) {
    const T partner = t >= d ? s[t - d] : T(0);
    __syncthreads();  // all reads of this step before any write
    if (t >= d) s[t] = partner + s[t];
    __syncthreads();
  }
  if (t < n) out[t] = s[t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  hillis_steele_kernel<T><<<1, ws::kThreads, 0, stream>>>(d_in, d_out, n);
  ws::check(cudaGetLastError(), "hillis_steele_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
