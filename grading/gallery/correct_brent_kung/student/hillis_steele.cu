// Slot 1: inclusive scan of up to 1024 elements in one block, Brent-Kung style: a reduction tree
// (up-sweep) followed by a distribution tree that completes the inclusive prefixes in place.
// Every step of both trees is separated by __syncthreads(); no thread reads a slot written in the
// same step.
#include "brent_kung.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kN = static_cast<unsigned>(kHillisSteeleMaxN);  // 1024, one element per thread

template <typename T>
__global__ void brent_kung_inclusive_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T s[kN];
  const unsigned t = threadIdx.x;
  s[t] = t < n ? in[t] : T(0);
  // reduction tree: s[k*2*stride - 1] += s[k*2*stride - 1 - stride]
  for (unsigned stride = 1; stride < kN; stride <<= 1) {
    __syncthreads();
    const unsigned idx = (t + 1) * 2 * stride - 1;
    if (idx < kN) s[idx] += s[idx - stride];
  }
  // distribution tree: push partial sums to the right
  for (unsigned stride = kN / 4; stride > 0; stride >>= 1) {
    __syncthreads();
    const unsigned idx = (t + 1) * 2 * stride - 1;
    if (idx + stride < kN) s[idx + stride] += s[idx];
  }
  __syncthreads();
  if (t < n) out[t] = s[t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  brent_kung_inclusive_kernel<T><<<1, kN, 0, stream>>>(d_in, d_out, n);
  bk::check(cudaGetLastError(), "brent_kung_inclusive_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
