// Slot 3: hierarchical scan for any n. Each block scans a 2048-element tile (Blelloch, as in my
// Blelloch slot) and writes the tile's sum; the tile sums are scanned the same way, recursively,
// until one tile holds them all; then every tile after the first adds the scanned sum of the tiles
// before it.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>
#include <time.h>
#include <sys/time.h>

#include <iostream>

#include <cuda.h>

#include "scangrade/student_api.h"
#include "check_cuda.cuh"
#include "tile_scan.cuh"

namespace scangrade::student {
namespace {

static double hier_last_call_seconds = 0.0;  // how long my last call took on the host (for my own tuning)

// One tile per block. in may be the same array as out: each element is read by the thread that
// writes it, before the block's first barrier.
template <typename T>
__global__ void scan_tile_kernel(const T* in, T* out, size_t n, bool inclusive, T* tile_sums) {
  __shared__ T s[TILE];
  const unsigned t = threadIdx.x;
  const size_t base = (size_t)blockIdx.x * TILE;
  const size_t a = base + t, b = base + t + THREADS;
  const T xa = a < n ? in[a] : T(0);
  const T xb = b < n ? in[b] : T(0);
  s[t] = xa;
  s[t + THREADS] = xb;
  const T sum = blelloch_tile(s);
  if (a < n) out[a] = inclusive ? s[t] + xa : s[t];
  if (b < n) out[b] = inclusive ? s[t + THREADS] + xb : s[t + THREADS];
  if (tile_sums != NULL && t == 0) tile_sums[blockIdx.x] = sum;
}

// Tile blockIdx.x + 1 adds scanned[blockIdx.x + 1], the sum of all tiles before it (tile 0 adds nothing).
template <typename T>
__global__ void add_tile_offsets_kernel(T* out, size_t n, const T* scanned) {
  const size_t tile = (size_t)blockIdx.x + 1;
  const T offset = scanned[tile];
  for (size_t k = threadIdx.x; k < TILE; k += blockDim.x) {
    const size_t i = tile * TILE + k;
    if (i < n) out[i] += offset;
  }
}

template <typename T>
void scan_recursive(const T* in, T* out, size_t n, bool inclusive, cudaStream_t stream) {
  assert(n > 0);
  const double tiles_d = ceil((double)n / (double)TILE);  // exact: n < 2^53
  if (tiles_d > 2147483647.0) {
    std::cerr << "hierarchical_scan: n = " << n << " needs too many blocks" << std::endl;
    exit(EXIT_FAILURE);
  }
  const unsigned tiles = (unsigned)tiles_d;
  if (tiles == 1) {
    scan_tile_kernel<T><<<1, THREADS, 0, stream>>>(in, out, n, inclusive, (T*)NULL);
    CHECK_CUDA(cudaGetLastError());
    return;
  }
  T* sums = NULL;
  CHECK_CUDA(cudaMallocAsync((void**)&sums, (size_t)tiles * sizeof(T), stream));
  scan_tile_kernel<T><<<tiles, THREADS, 0, stream>>>(in, out, n, inclusive, sums);
  CHECK_CUDA(cudaGetLastError());
  // exclusive scan of the tile sums, in place: sums[k] = everything before tile k
  scan_recursive<T>(sums, sums, tiles, false, stream);
  add_tile_offsets_kernel<T><<<tiles - 1, THREADS, 0, stream>>>(out, n, sums);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFreeAsync(sums, stream));
}

template <typename T>
void run_hierarchical(const T* d_in, T* d_out, size_t n, ScanKind kind, cudaStream_t stream) {
  const double start = wall_seconds();
  if (n == 0) return;
  scan_recursive<T>(d_in, d_out, n, kind == ScanKind::Inclusive, stream);
  hier_last_call_seconds = wall_seconds() - start;
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  run_hierarchical(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  run_hierarchical(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
