// Shared pieces of this submission: error checks and the Brent-Kung inclusive scan of a tile of
// 2 * kThreads elements in shared memory (a reduction tree, then a distribution tree).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::rma {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Inclusive scan, in place, of s[0 .. 2 * kThreads - 1]. Every thread of a kThreads-thread block
// calls it; on return s holds the scan (the tile's total is its last element).
template <typename T, unsigned kThreads>
__device__ void brent_kung_inclusive(T* s) {
  constexpr unsigned kTile = 2 * kThreads;
  const unsigned t = threadIdx.x;
  // reduction tree: after the step with stride d, s[k * 2d - 1] holds the sum of its 2d elements
  for (unsigned d = 1; d < kTile; d *= 2) {
    __syncthreads();
    const unsigned i = (t + 1) * 2 * d - 1;
    if (i < kTile) s[i] += s[i - d];
  }
  // distribution tree: complete the prefixes between the tree's nodes
  for (unsigned d = kTile / 4; d > 0; d /= 2) {
    __syncthreads();
    const unsigned i = (t + 1) * 2 * d - 1;
    if (i + d < kTile) s[i + d] += s[i];
  }
  __syncthreads();
}

}  // namespace scangrade::student::rma
