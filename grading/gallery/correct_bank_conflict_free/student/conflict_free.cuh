// Shared pieces of this submission: error checks, the bank-conflict-free shared-memory index and the
// Blelloch (work-efficient) exclusive scan of a 2048-element tile by a block of 1024 threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::cf {

constexpr unsigned kThreads = 1024;           // threads per block
constexpr unsigned kTileItems = 2 * kThreads;  // elements per tile: two per thread
constexpr unsigned kLogNumBanks = 5;          // 32 shared-memory banks of 4 bytes

// Padded shared-memory index (GPU Gems 3, 39.2.3, with the second term of its errata): one extra
// word after every 32 elements and one more after every 1024, so that the tree's accesses at
// stride 2^k fall into different banks. A function rather than the book's macro: `i + offset(i)`
// cannot lose its parentheses.
__host__ __device__ constexpr unsigned padded(unsigned i) {
  return i + (i >> kLogNumBanks) + (i >> (2 * kLogNumBanks));
}
constexpr unsigned kPaddedItems = padded(kTileItems - 1) + 1;  // shared words of one tile

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Exclusive scan, in place, of temp[padded(0)] .. temp[padded(kTileItems - 1)]; unused elements
// must hold 0. Every thread of a kThreads-thread block calls it; it returns the tile's total to all.
template <typename T>
__device__ T blelloch_tile(T* temp) {
  const unsigned t = threadIdx.x;
  unsigned offset = 1;
  // up-sweep: after level k, node offset * (2t + 2) - 1 holds the sum of its 2^k-element subtree
  for (unsigned active = kTileItems / 2; active > 0; active /= 2) {
    __syncthreads();
    if (t < active) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      temp[padded(bi)] += temp[padded(ai)];
    }
    offset *= 2;
  }
  __syncthreads();
  const T total = temp[padded(kTileItems - 1)];
  __syncthreads();  // every thread has read the total before the root is cleared
  if (t == 0) temp[padded(kTileItems - 1)] = T(0);
  // down-sweep: each node passes its prefix to its left child and prefix + left sum to its right
  for (unsigned active = 1; active < kTileItems; active *= 2) {
    offset /= 2;
    __syncthreads();
    if (t < active) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      const T left = temp[padded(ai)];
      temp[padded(ai)] = temp[padded(bi)];
      temp[padded(bi)] += left;
    }
  }
  __syncthreads();
  return total;
}

}  // namespace scangrade::student::cf
