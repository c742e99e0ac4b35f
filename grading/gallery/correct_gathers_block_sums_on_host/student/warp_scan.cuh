// Pieces my slots share: an error check and a 1024-thread block scan built from warp shuffles.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::ws {

constexpr unsigned kThreads = 1024;  // one element per thread, 32 warps
constexpr unsigned kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t tiles_for(std::size_t n, std::size_t tile) { return (n + tile - 1) / tile; }

// Inclusive scan of x across one warp (every lane must take part).
template <typename T>
__device__ T warp_inclusive(T x) {
  const unsigned lane = threadIdx.x % 32;
  for (unsigned d = 1; d < 32; d *= 2) {
    const T lower = __shfl_up_sync(kFullMask, x, d);
    if (lane >= d) x = lower + x;
  }
  return x;
}

// Inclusive scan of one value per thread over a block of kThreads threads. warp_sums is shared
// memory for kWarps values. Also gives the block's total. Every thread must call it.
template <typename T>
__device__ T block_inclusive(T x, T* warp_sums, T& total) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  x = warp_inclusive(x);
  if (lane == 31) warp_sums[warp] = x;
  __syncthreads();
  if (warp == 0) warp_sums[lane] = warp_inclusive(warp_sums[lane]);  // kWarps == 32: one per lane
  __syncthreads();
  if (warp > 0) x = warp_sums[warp - 1] + x;
  total = warp_sums[kWarps - 1];
  __syncthreads();  // everyone has read warp_sums: it may be reused
  return x;
}

}  // namespace scangrade::student::ws
