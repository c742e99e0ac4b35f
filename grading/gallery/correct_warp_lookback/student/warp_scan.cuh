// Shared pieces of this submission: error checks, the warp-level inclusive scan (Hillis-Steele over
// the 32 lanes with __shfl_up_sync) and a block-level scan of a tile held in registers, kItems
// consecutive elements per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::ws {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned kWarpSize = 32;

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Inclusive scan over the 32 lanes of a warp; every lane must call it.
template <typename T>
__device__ T warp_inclusive(T v) {
  const unsigned lane = threadIdx.x % kWarpSize;
  for (unsigned d = 1; d < kWarpSize; d *= 2) {
    const T up = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// Sum over the 32 lanes of a warp, returned to every lane.
template <typename T>
__device__ T warp_sum(T v) {
  for (unsigned d = kWarpSize / 2; d > 0; d /= 2) v += __shfl_down_sync(kFullMask, v, d);
  return __shfl_sync(kFullMask, v, 0);
}

// Loads elements base + t * kItems .. + kItems - 1 of in (zeros past n) into item[].
template <typename T, unsigned kItems>
__device__ void load_items(const T* in, std::size_t base, std::size_t n, T (&item)[kItems]) {
  const std::size_t first = base + static_cast<std::size_t>(threadIdx.x) * kItems;
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) item[j] = first + j < n ? in[first + j] : T(0);
}

// Inclusive scan of a tile of kThreads * kItems elements, thread t holding elements t * kItems ..
// t * kItems + kItems - 1 in item[]: on return item[j] is the tile's inclusive scan there and
// chunk_before the sum of the elements before my chunk (so the exclusive scan of my element j is
// chunk_before for j == 0, item[j - 1] otherwise). Returns the tile total to every thread.
// warp_sums: kThreads / 32 elements of shared memory. Every thread of the block calls it
// (blockDim.x == kThreads, a multiple of 32, at most 1024).
template <typename T, unsigned kThreads, unsigned kItems>
__device__ T block_scan(T (&item)[kItems], T* warp_sums, T& chunk_before) {
  constexpr unsigned kWarps = kThreads / kWarpSize;
  static_assert(kThreads % kWarpSize == 0 && kWarps <= kWarpSize, "whole warps, at most 32 of them");
  const unsigned lane = threadIdx.x % kWarpSize;
  const unsigned warp = threadIdx.x / kWarpSize;
  // my chunk, sequentially
#pragma unroll
  for (unsigned j = 1; j < kItems; ++j) item[j] += item[j - 1];
  // the chunk totals across my warp; the lane below me holds the sum of the chunks before mine
  const T inclusive = warp_inclusive(item[kItems - 1]);
  T before = __shfl_up_sync(kFullMask, inclusive, 1);
  if (lane == 0) before = T(0);
  if (lane == kWarpSize - 1) warp_sums[warp] = inclusive;
  __syncthreads();
  // the warp totals, by warp 0
  if (warp == 0) {
    T w = lane < kWarps ? warp_sums[lane] : T(0);
    w = warp_inclusive(w);
    if (lane < kWarps) warp_sums[lane] = w;
  }
  __syncthreads();
  if (warp > 0) before += warp_sums[warp - 1];
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) item[j] = before + item[j];
  chunk_before = before;
  const T total = warp_sums[kWarps - 1];
  __syncthreads();  // warp_sums may be reused by the caller
  return total;
}

}  // namespace scangrade::student::ws
