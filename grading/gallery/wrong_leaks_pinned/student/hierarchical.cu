// Slot 3: hierarchical scan on the device, any n (inclusive or exclusive).
//   phase 1: each block scans a 1024-element tile (double-buffered Hillis-Steele in shared memory)
//            and writes the tile's total;
//   phase 2: the tile totals are scanned (exclusive, in place) by the same function, recursively;
//   phase 3: each tile adds the sum of the earlier tiles.
// Temporaries from cudaMallocAsync, freed with cudaFreeAsync on the stream. Besides, every call takes
// a page-locked host buffer (a leftover debugging aid) and never gives it back.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kTile = 1024;  // elements per tile = threads per block

template <typename T>
__global__ void scan_tiles(const T* in, T* out, T* tile_sums, std::size_t n, bool inclusive) {
  __shared__ T ping[kTile], pong[kTile];
  const unsigned t = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * kTile + t;
  T* src = ping;
  T* dst = pong;
  src[t] = i < n ? in[i] : T(0);
  __syncthreads();
  for (unsigned step = 1; step < kTile; step <<= 1) {
    dst[t] = t >= step ? src[t] + src[t - step] : src[t];
    __syncthreads();
    T* swap = src;
    src = dst;
    dst = swap;
  }
  if (i < n) out[i] = inclusive ? src[t] : (t > 0 ? src[t - 1] : T(0));
  if (t == kTile - 1 && tile_sums != nullptr) tile_sums[blockIdx.x] = src[t];
}

template <typename T>
__global__ void add_offsets(T* out, const T* scanned_tile_sums, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * kTile + threadIdx.x;
  if (i < n) out[i] += scanned_tile_sums[blockIdx.x];
}

template <typename T>
void scan(const T* in, T* out, std::size_t n, bool inclusive, cudaStream_t stream) {
  const std::size_t tiles = (n + kTile - 1) / kTile;
  if (tiles == 1) {
    scan_tiles<T><<<1, kTile, 0, stream>>>(in, out, nullptr, n, inclusive);
    return;
  }
  T* tile_sums = nullptr;
  if (cudaMallocAsync(&tile_sums, tiles * sizeof(T), stream) != cudaSuccess) {
    throw std::runtime_error("hierarchical_scan: cudaMallocAsync failed");
  }
  scan_tiles<T><<<unsigned(tiles), kTile, 0, stream>>>(in, out, tile_sums, n, inclusive);
  scan(tile_sums, tile_sums, tiles, /*inclusive=*/false, stream);
  add_offsets<T><<<unsigned(tiles), kTile, 0, stream>>>(out, tile_sums, n);
  cudaFreeAsync(tile_sums, stream);
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  void* staging = nullptr;
  // BUG: 4 KiB of page-locked host memory per call, never released with cudaFreeHost.
  cudaMallocHost(&staging, 4096);
  scan(d_in, d_out, n, kind == ScanKind::Inclusive, stream);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("hierarchical_scan: launch failed");
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
