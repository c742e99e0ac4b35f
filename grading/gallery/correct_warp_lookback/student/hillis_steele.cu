// Slot 1: inclusive scan of up to 1024 elements in one block of 1024 threads, Hillis-Steele at two
// levels: every warp scans its 32 elements with __shfl_up_sync (log2 32 = 5 steps, no shared memory,
// no race), warp 0 scans the 32 warp totals the same way, and each warp adds the totals before it.
#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kHillisSteeleMaxN);  // one element per thread
constexpr unsigned kWarps = kThreads / ws::kWarpSize;

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T warp_totals[kWarps];
  const unsigned t = threadIdx.x;
  const unsigned lane = t % ws::kWarpSize;
  const unsigned warp = t / ws::kWarpSize;
  T v = ws::warp_inclusive(t < n ? in[t] : T(0));
  if (lane == ws::kWarpSize - 1) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) warp_totals[lane] = ws::warp_inclusive(warp_totals[lane]);
  __syncthreads();
  if (warp > 0) v += warp_totals[warp - 1];
  if (t < n) out[t] = v;
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  hillis_steele_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
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
