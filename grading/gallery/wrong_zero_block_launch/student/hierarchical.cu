// Slot 3: hierarchical scan for any n (inclusive or exclusive), many thread blocks.
//   phase 1: each block scans a 1024-element tile (Kogge-Stone, double-buffered in shared memory)
//            and writes the tile's total;
//   phase 2: the tile totals are scanned exclusively, in place, by the same function (recursion);
//   phase 3: each block adds the scanned total of the earlier tiles to its tile.
// One workspace, allocated once per call, holds the totals of every level.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kTile = 1024;  // one element per thread, one tile per block

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Phase 1. in may equal out: every thread reads its element before the first barrier.
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  __shared__ T buf[2][kTile];
  const unsigned t = threadIdx.x;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + t;
  buf[0][t] = i < n ? in[i] : T(0);
  unsigned src = 0;
  for (unsigned d = 1; d < kTile; d <<= 1) {
    __syncthreads();
    buf[src ^ 1][t] = t >= d ? buf[src][t - d] + buf[src][t] : buf[src][t];
    src ^= 1;
  }
  __syncthreads();
  if (i < n) out[i] = inclusive ? buf[src][t] : (t > 0 ? buf[src][t - 1] : T(0));
  if (tile_totals != nullptr && t == kTile - 1) tile_totals[blockIdx.x] = buf[src][t];
}

// Phase 3: every element of tile b gets offsets[b], the sum of tiles 0 .. b-1.
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* offsets) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  if (i < n) out[i] += offsets[blockIdx.x];
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = ceil_div(n, kTile);
  T* totals = tiles > 1 ? workspace : nullptr;
  scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), kTile, 0, stream>>>(in, out, n, inclusive, totals);
  check(cudaGetLastError(), "scan_tiles_kernel");
  if (tiles <= 1) return;
  scan_level(totals, totals, tiles, /*inclusive=*/false, workspace + tiles, stream);
  add_offsets_kernel<T><<<static_cast<unsigned>(tiles), kTile, 0, stream>>>(out, n, totals);
  check(cudaGetLastError(), "add_offsets_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  // BUG: no `if (n == 0) return;`. With n == 0 there are ceil(0 / 1024) = 0 tiles, and
  // scan_level launches scan_tiles_kernel with a grid of 0 blocks: cudaErrorInvalidConfiguration.
  std::size_t workspace_size = 0;
  for (std::size_t tiles = ceil_div(n, kTile); tiles > 1; tiles = ceil_div(tiles, kTile)) workspace_size += tiles;
  T* workspace = nullptr;
  if (workspace_size > 0) check(cudaMallocAsync(&workspace, workspace_size * sizeof(T), stream), "cudaMallocAsync");
  try {
    scan_level(d_in, d_out, n, kind == ScanKind::Inclusive, workspace, stream);
  } catch (...) {
    if (workspace != nullptr) cudaFreeAsync(workspace, stream);
    throw;
  }
  if (workspace != nullptr) check(cudaFreeAsync(workspace, stream), "cudaFreeAsync");
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  hierarchical(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  hierarchical(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
