// Slot 1 reference: Hillis-Steele (Kogge-Stone) inclusive scan, one block, one element per thread.
#include <stdexcept>

#include "block_scan.cuh"
#include "host_utils.h"
#include "reference.h"
#include "tuning.h"

namespace scangrade::reference {
namespace {

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, int n) {
  __shared__ T ping[tuning::kHillisSteeleMaxThreads];
  __shared__ T pong[tuning::kHillisSteeleMaxThreads];
  const int tid = threadIdx.x;
  const T scanned = kogge_stone_inclusive(tid < n ? in[tid] : T(0), ping, pong);
  if (tid < n) out[tid] = scanned;
}

template <typename T>
void launch_hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > kHillisSteeleMaxN");
  // whole warps; threads past n carry the identity
  const int threads = static_cast<int>(detail::ceil_div(n, tuning::kWarpThreads) * tuning::kWarpThreads);
  hillis_steele_kernel<T><<<1, threads, 0, stream>>>(d_in, d_out, static_cast<int>(n));
  detail::check_launch("hillis_steele_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  launch_hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  launch_hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::reference
