// tile_scan.cuh: the block-level Blelloch scan my blelloch, hierarchical and single_pass slots share.
#ifndef TILE_SCAN_CUH
#define TILE_SCAN_CUH

#include <cuda_runtime.h>

namespace scangrade::student {

// Shared-memory tile of the Blelloch scans: 1024 threads, two elements each.
const unsigned THREADS = 1024;
const unsigned TILE = 2 * THREADS;

// Work-efficient (Blelloch) exclusive scan of the TILE values in s, in place, by a block of
// THREADS threads; every thread must call it. Returns the sum of all TILE values.
template <typename T>
__device__ T blelloch_tile(T* s) {
  const unsigned t = threadIdx.x;
  unsigned stride = 1;
  // up-sweep: build partial sums in a tree; the root ends in s[TILE - 1]
  for (unsigned active = TILE / 2; active > 0; active /= 2) {
    __syncthreads();
    if (t < active) {
      const unsigned left = stride * (2 * t + 1) - 1;
      const unsigned right = stride * (2 * t + 2) - 1;
      s[right] += s[left];
    }
    stride *= 2;
  }
  __syncthreads();
  const T sum = s[TILE - 1];
  __syncthreads();  // everyone has the sum before the root is cleared
  if (t == 0) s[TILE - 1] = T(0);
  // down-sweep: push the prefixes back down the tree
  for (unsigned active = 1; active < TILE; active *= 2) {
    stride /= 2;
    __syncthreads();
    if (t < active) {
      const unsigned left = stride * (2 * t + 1) - 1;
      const unsigned right = stride * (2 * t + 2) - 1;
      const T carried = s[left];
      s[left] = s[right];
      s[right] += carried;
    }
  }
  __syncthreads();
  return sum;
}

}  // namespace scangrade::student

#endif  // TILE_SCAN_CUH
