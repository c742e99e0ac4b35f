// Shared pieces: error checks and the Blelloch (Brent-Kung) exclusive scan of a 2048-element tile
// held in shared memory by a 1024-thread block.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::bk {

constexpr unsigned kThreads = 1024;       // threads per block
constexpr unsigned kItems = 2 * kThreads;  // elements per tile: two per thread
constexpr unsigned kLogBanks = 5;          // 32 shared-memory banks

// Shared-memory index with one padding word every 32 elements, so that the tree's strided
// accesses do not all land in the same bank.
__host__ __device__ constexpr unsigned pad(unsigned i) { return i + (i >> kLogBanks); }
constexpr unsigned kSharedItems = pad(kItems - 1) + 1;

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Exclusive scan in place of s[pad(0)] .. s[pad(kItems - 1)] (unused elements must hold 0).
// Needs blockDim.x == kThreads; every thread must call it. Returns the tile total to every thread.
template <typename T>
__device__ T blelloch_tile_scan(T* s) {
  const unsigned t = threadIdx.x;
  unsigned offset = 1;
  // up-sweep: build the reduction tree in place
  for (unsigned d = kItems >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      s[pad(bi)] += s[pad(ai)];
    }
    offset <<= 1;
  }
  __syncthreads();
  const T total = s[pad(kItems - 1)];
  __syncthreads();  // everyone has the total before the root is cleared
  if (t == 0) s[pad(kItems - 1)] = T(0);
  // down-sweep: push the prefixes back down the tree
  for (unsigned d = 1; d < kItems; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      const T left = s[pad(ai)];
      s[pad(ai)] = s[pad(bi)];
      s[pad(bi)] += left;
    }
  }
  __syncthreads();
  return total;
}

}  // namespace scangrade::student::bk
