// Warp-level routines of the reference scans (shuffle-based, no shared memory).
#pragma once

#include "tuning.h"

namespace scangrade::reference {

inline constexpr unsigned kFullWarpMask = 0xffffffffu;

/// Inclusive sum across the 32 lanes of a full warp (Kogge-Stone over __shfl_up_sync).
template <typename T>
__device__ __forceinline__ T warp_inclusive_sum(T value) {
  const int lane = threadIdx.x % tuning::kWarpThreads;
#pragma unroll
  for (int offset = 1; offset < tuning::kWarpThreads; offset <<= 1) {
    const T other = __shfl_up_sync(kFullWarpMask, value, offset);
    if (lane >= offset) value += other;
  }
  return value;
}

/// Sum over the 32 lanes of a full warp, returned to every lane.
template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
  return __shfl_sync(kFullWarpMask, warp_inclusive_sum(value), tuning::kWarpThreads - 1);
}

}  // namespace scangrade::reference
