// Slot 1: inclusive scan of up to 1024 elements in one block: warp-shuffle scans plus a scan of
// the 32 warp totals (see warp_scan.cuh). The block is rounded up to whole warps.
#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void warp_scan_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T warp_totals[ws::kWarp];
  const unsigned t = threadIdx.x;
  const T x = t < n ? in[t] : T(0);
  T exclusive, total;
  const T inclusive = ws::block_scan(x, warp_totals, exclusive, total);
  if (t < n) out[t] = inclusive;
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  const unsigned threads = static_cast<unsigned>(ws::ceil_div(n, ws::kWarp) * ws::kWarp);  // whole warps
  warp_scan_kernel<T><<<1, threads, 0, stream>>>(d_in, d_out, n);
  ws::check(cudaGetLastError(), "warp_scan_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
