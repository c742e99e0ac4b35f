// Slot 3: hierarchical scan for any n. Tiles of 1024 elements (one per thread) are scanned with
// the Kogge-Stone block scan; the tile totals are scanned the same way, recursively (2^26
// elements: 65536 tiles -> 64 -> 1), and each tile then adds the total of the tiles before it.
#include <climits>

#include "kogge_stone.cuh"

namespace scangrade::student {
namespace {

constexpr std::size_t kTile = ks::kBlockThreads;

// Phase 1: scan one tile per block (inclusive or exclusive) and record the tile's total.
// in may equal out: each thread reads only its own element, before it writes it.
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  __shared__ T buf[2 * ks::kBlockThreads];
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  const T x = i < n ? in[i] : T(0);
  T exclusive, total;
  const T incl = ks::block_scan(x, buf, exclusive, total);
  if (i < n) out[i] = inclusive ? incl : exclusive;
  if (tile_totals != nullptr && threadIdx.x == 0) tile_totals[blockIdx.x] = total;
}

// Phase 3: tile b (b >= 1) adds the inclusive scan of the totals up to tile b - 1.
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* scanned_totals) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;  // tile 0 needs nothing
  const std::size_t i = tile * kTile + threadIdx.x;
  if (i < n) out[i] += scanned_totals[tile - 1];
}

// Workspace for every level below the top: one total per tile, level after level.
std::size_t workspace_elements(std::size_t n) {
  std::size_t total = 0;
  for (std::size_t tiles = ks::ceil_div(n, kTile); tiles > 1; tiles = ks::ceil_div(tiles, kTile)) total += tiles;
  return total;
}

// Scans n > 0 elements of in into out; workspace holds workspace_elements(n) elements.
template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = ks::ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  if (tiles == 1) {
    scan_tiles_kernel<T><<<1, ks::kBlockThreads, 0, stream>>>(in, out, n, inclusive, nullptr);
    ks::check(cudaGetLastError(), "scan_tiles_kernel");
    return;
  }
  T* totals = workspace;
  // phase 1: scan every tile
  scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), ks::kBlockThreads, 0, stream>>>(in, out, n, inclusive, totals);
  ks::check(cudaGetLastError(), "scan_tiles_kernel");
  // phase 2: inclusive scan of the tile totals, in place (recursion)
  scan_level(totals, totals, tiles, /*inclusive=*/true, workspace + tiles, stream);
  // phase 3: add the offsets
  add_offsets_kernel<T><<<static_cast<unsigned>(tiles - 1), ks::kBlockThreads, 0, stream>>>(out, n, totals);
  ks::check(cudaGetLastError(), "add_offsets_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const bool inclusive = kind == ScanKind::Inclusive;
  const std::size_t ws = workspace_elements(n);
  T* workspace = nullptr;
  if (ws > 0) ks::check(cudaMallocAsync(&workspace, ws * sizeof(T), stream), "cudaMallocAsync");
  try {
    scan_level(d_in, d_out, n, inclusive, workspace, stream);
  } catch (...) {
    if (workspace != nullptr) cudaFreeAsync(workspace, stream);
    throw;
  }
  if (workspace != nullptr) ks::check(cudaFreeAsync(workspace, stream), "cudaFreeAsync");
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
