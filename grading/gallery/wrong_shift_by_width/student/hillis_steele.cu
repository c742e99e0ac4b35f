// Slot 1: inclusive scan of up to 1024 elements in one block of n threads: each warp scans its
// elements with __shfl_up_sync among the lanes that hold one, then warp 0 scans the warp totals.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kWarp = 32;

// The lanes of warp `warp` that hold one of the n elements, as the mask of the _sync intrinsics.
// BUG: a full warp has 32 lanes, and 1u << 32 is undefined in C++ (the shift count must be below
// 32). The GPU's shift instruction clamps the count (1u << 32 is 0, the mask 0xffffffff: right by
// luck); a CPU takes the count modulo 32 (1u << 32 is 1, the mask 0). Meant: lanes == 32 ? ~0u : ...
__device__ inline unsigned lane_mask(unsigned n, unsigned warp) {
  const unsigned first = warp * kWarp;
  const unsigned lanes = n - first < kWarp ? n - first : kWarp;
  return (1u << lanes) - 1u;
}

template <typename T>
__device__ T warp_inclusive_scan(T x, unsigned mask, unsigned lane) {
  for (unsigned d = 1; d < kWarp; d *= 2) {
    const T y = __shfl_up_sync(mask, x, d);
    if (lane >= d) x += y;
  }
  return x;
}

template <typename T>
__global__ void warp_scan_kernel(const T* in, T* out, unsigned n) {
  __shared__ T totals[kWarp];
  const unsigned t = threadIdx.x;
  const unsigned lane = t % kWarp;
  const unsigned warp = t / kWarp;
  const unsigned warps = (n + kWarp - 1) / kWarp;
  T x = warp_inclusive_scan(in[t], lane_mask(n, warp), lane);
  const unsigned last = (n - warp * kWarp < kWarp ? n - warp * kWarp : kWarp) - 1;
  if (lane == last) totals[warp] = x;
  __syncthreads();
  if (warp == 0 && lane < warps) totals[lane] = warp_inclusive_scan(totals[lane], lane_mask(warps, 0), lane);
  __syncthreads();
  if (warp > 0) x += totals[warp - 1];
  out[t] = x;
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: at most 1024 elements");
  warp_scan_kernel<T><<<1, static_cast<unsigned>(n), 0, stream>>>(d_in, d_out, static_cast<unsigned>(n));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("warp_scan_kernel: ") + cudaGetErrorString(err));
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
