// Shared pieces of my scans: error checks and a block-wide Kogge-Stone scan (one value per thread).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::ks {

constexpr unsigned kBlockThreads = 1024;  // every kernel of mine uses full 1024-thread blocks

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Kogge-Stone scan of one value per thread over the whole block.
// buf must hold 2 * blockDim.x elements of shared memory: step d reads one half and writes the
// other (double buffering), so a thread never reads a slot another thread is writing in the same
// step; one __syncthreads() per step. Returns the inclusive prefix; also gives the exclusive
// prefix and the block total. Every thread of the block must call it.
template <typename T>
__device__ T block_scan(T x, T* buf, T& exclusive, T& total) {
  const unsigned t = threadIdx.x;
  const unsigned width = blockDim.x;
  T* src = buf;
  T* dst = buf + width;
  src[t] = x;
  __syncthreads();
  for (unsigned d = 1; d < width; d <<= 1) {
    T v = src[t];
    if (t >= d) v = src[t - d] + v;
    dst[t] = v;
    __syncthreads();
    T* tmp = src;  // swap the buffers
    src = dst;
    dst = tmp;
  }
  const T inclusive = src[t];
  exclusive = t > 0 ? src[t - 1] : T(0);
  total = src[width - 1];
  __syncthreads();  // everyone has read buf: the caller may reuse it
  return inclusive;
}

}  // namespace scangrade::student::ks
