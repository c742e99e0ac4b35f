// Slot 1: inclusive Hillis-Steele scan of up to 1024 elements in one block, one element per thread.
// Double-buffered: step d reads one buffer and writes the other, with a barrier between steps, so no
// thread reads a value that another thread is overwriting.
#include "conflict_free.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kN = static_cast<unsigned>(kHillisSteeleMaxN);

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T buf[2][kN];
  const unsigned t = threadIdx.x;
  unsigned src = 0;
  buf[src][t] = t < n ? in[t] : T(0);
  for (unsigned d = 1; d < kN; d *= 2) {
    __syncthreads();
    buf[1 - src][t] = t >= d ? buf[src][t - d] + buf[src][t] : buf[src][t];
    src = 1 - src;
  }
  if (t < n) out[t] = buf[src][t];  // a thread's own last write: no barrier needed
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  hillis_steele_kernel<T><<<1, kN, 0, stream>>>(d_in, d_out, n);
  cf::check(cudaGetLastError(), "hillis_steele_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
