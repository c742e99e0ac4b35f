// Slot 1: inclusive Hillis-Steele scan of up to 1024 elements in one block, one element per thread,
// in a single shared buffer: each step reads its operand, passes a barrier, then writes, and passes
// another barrier before the next step reads (no double buffer, no race).
#include "tile_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kN = static_cast<unsigned>(kHillisSteeleMaxN);

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T s[kN];
  const unsigned t = threadIdx.x;
  s[t] = t < n ? in[t] : T(0);
  for (unsigned d = 1; d < kN; d *= 2) {
    __syncthreads();
    const T left = t >= d ? s[t - d] : T(0);  // read ...
    __syncthreads();
    s[t] += left;  // ... then write
  }
  if (t < n) out[t] = s[t];
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  hillis_steele_kernel<T><<<1, kN, 0, stream>>>(d_in, d_out, n);
  rma::check(cudaGetLastError(), "hillis_steele_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
