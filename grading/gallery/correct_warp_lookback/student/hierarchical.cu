// Slot 3: hierarchical scan for any n over 4096-element tiles: 512 threads, 8 consecutive elements
// each in registers, warp-shuffle block scan (warp_scan.cuh).
//   scan_level(n): every block scans its tile and writes the tile's total; the totals are scanned
//   exclusively, in place, by scan_level itself (2^26 -> 16384 totals -> 4 -> one tile); then every
//   tile after the first adds its scanned total.
// One cudaMallocAsync workspace holds the totals of every level; it is freed on the stream.
#include <climits>

#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 512;
constexpr unsigned kItems = 8;
constexpr unsigned kTile = kThreads * kItems;

// Phase 1. in may equal out: all loads happen before block_scan's first barrier, all stores after
// it, and a block touches only its own tile.
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  __shared__ T warp_sums[kThreads / ws::kWarpSize];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
  T item[kItems];
  ws::load_items(in, base, n, item);
  T chunk_before;
  const T total = ws::block_scan<T, kThreads, kItems>(item, warp_sums, chunk_before);
  const std::size_t first = base + static_cast<std::size_t>(threadIdx.x) * kItems;
  for (unsigned j = 0; j < kItems; ++j) {
    if (first + j < n) out[first + j] = inclusive ? item[j] : (j == 0 ? chunk_before : item[j - 1]);
  }
  if (tile_totals != nullptr && threadIdx.x == 0) tile_totals[blockIdx.x] = total;
}

// Phase 3: block b adds offsets[b + 1], the sum of tiles 0 .. b, to tile b + 1 (coalesced).
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* offsets) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;
  const T offset = offsets[tile];
  for (unsigned k = 0; k < kItems; ++k) {
    const std::size_t i = tile * kTile + k * kThreads + threadIdx.x;
    if (i < n) out[i] += offset;
  }
}

std::size_t workspace_items(std::size_t n) {
  std::size_t items = 0;
  for (std::size_t tiles = ws::ceil_div(n, kTile); tiles > 1; tiles = ws::ceil_div(tiles, kTile)) items += tiles;
  return items;
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = ws::ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  T* totals = tiles > 1 ? workspace : nullptr;
  scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(in, out, n, inclusive, totals);
  ws::check(cudaGetLastError(), "scan_tiles_kernel");
  if (tiles == 1) return;
  scan_level(totals, totals, tiles, /*inclusive=*/false, workspace + tiles, stream);
  add_offsets_kernel<T><<<static_cast<unsigned>(tiles - 1), kThreads, 0, stream>>>(out, n, totals);
  ws::check(cudaGetLastError(), "add_offsets_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t items = workspace_items(n);
  T* workspace = nullptr;
  if (items > 0) ws::check(cudaMallocAsync(&workspace, items * sizeof(T), stream), "cudaMallocAsync");
  try {
    scan_level(d_in, d_out, n, kind == ScanKind::Inclusive, workspace, stream);
  } catch (...) {
    if (workspace != nullptr) cudaFreeAsync(workspace, stream);
    throw;
  }
  if (workspace != nullptr) ws::check(cudaFreeAsync(workspace, stream), "cudaFreeAsync");
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
