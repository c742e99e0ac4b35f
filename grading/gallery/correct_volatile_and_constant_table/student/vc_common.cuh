// Helpers shared by my four slots: error checks and a block-wide inclusive scan in shared memory.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::vc {

constexpr unsigned kThreads = 1024;  // every kernel runs 1024-thread blocks, one element per thread

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(err));
}

inline std::size_t blocks_for(std::size_t n) { return (n + kThreads - 1) / kThreads; }

// Inclusive scan of one value per thread across the block (Hillis-Steele over two shared arrays:
// each step reads `from` and writes `to`, so no thread overwrites a value another still reads).
// scratch holds 2 * kThreads values. Returns the inclusive prefix and sets `exclusive` to the sum of
// the values before this thread's. Every thread of the block must call it.
template <typename T>
__device__ T block_inclusive_scan(T value, T* scratch, T& exclusive) {
  const unsigned t = threadIdx.x;
  T* from = scratch;
  T* to = scratch + kThreads;
  from[t] = value;
  __syncthreads();
  for (unsigned step = 1; step < kThreads; step *= 2) {
    to[t] = t >= step ? from[t - step] + from[t] : from[t];
    __syncthreads();
    T* swap = from;
    from = to;
    to = swap;
  }
  const T result = from[t];
  exclusive = t > 0 ? from[t - 1] : T(0);
  __syncthreads();  // scratch may be reused once everyone has its result
  return result;
}

}  // namespace scangrade::student::vc
