// Slot 1: inclusive scan of up to 1024 elements in one block, "warp-synchronous" style:
// each warp scans its 32 elements in shared memory, warp 0 scans the 32 warp totals the same way,
// and every element adds the total of the warps before it.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kHillisSteeleMaxN);  // 1024
constexpr unsigned kWarp = 32;

// Inclusive scan of s[base .. base + 31] by the 32 lanes of one warp, in place.
// BUG: relies on the lanes of a warp running in lockstep: there is no __syncwarp() between one
// step's reads and the next step's writes (volatile only stops the compiler from caching the
// values in registers). Since Volta, lanes of a warp are scheduled independently, so lane i may
// read s[i - d] before or after lane i - d has updated it: an intra-warp data race.
template <typename T>
__device__ T warp_scan_in_shared(volatile T* s, unsigned lane) {
  if (lane >= 1) s[lane] = s[lane - 1] + s[lane];
  if (lane >= 2) s[lane] = s[lane - 2] + s[lane];
  if (lane >= 4) s[lane] = s[lane - 4] + s[lane];
  if (lane >= 8) s[lane] = s[lane - 8] + s[lane];
  if (lane >= 16) s[lane] = s[lane - 16] + s[lane];
  return s[lane];
}

template <typename T>
__global__ void warp_sync_scan_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T s[kThreads];
  __shared__ T warp_totals[kWarp];
  const unsigned t = threadIdx.x;
  const unsigned lane = t % kWarp;
  const unsigned warp = t / kWarp;

  // scan within each warp
  s[t] = t < n ? in[t] : T(0);
  const T in_warp = warp_scan_in_shared(s + warp * kWarp, lane);
  if (lane == kWarp - 1) warp_totals[warp] = in_warp;
  __syncthreads();

  // warp 0 scans the warp totals
  if (warp == 0) warp_scan_in_shared(warp_totals, lane);
  __syncthreads();

  // add the totals of the earlier warps
  const T offset = warp > 0 ? warp_totals[warp - 1] : T(0);
  if (t < n) out[t] = offset + in_warp;
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  warp_sync_scan_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("warp_sync_scan_kernel: launch failed");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
