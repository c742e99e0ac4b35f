// Slot 3: hierarchical scan for any n with Blelloch tile scans of 2048 elements.
//   scan_level(n): every block scans one tile (exclusive Blelloch; inclusive = exclusive + x) and
//   writes the tile total; the totals are scanned exclusively, in place, by scan_level itself
//   (recursion: 2^26 -> 32768 totals -> 16 -> done); then tile b adds the scanned total b.
#include <climits>

#include "brent_kung.cuh"

namespace scangrade::student {
namespace {

using bk::kItems;
using bk::kThreads;

// Phase 1. in may equal out: a thread reads its two elements before the block writes anything.
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  __shared__ T s[bk::kSharedItems];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kItems;
  const unsigned a = threadIdx.x;
  const unsigned b = threadIdx.x + kThreads;
  const T xa = base + a < n ? in[base + a] : T(0);
  const T xb = base + b < n ? in[base + b] : T(0);
  s[bk::pad(a)] = xa;
  s[bk::pad(b)] = xb;
  const T total = bk::blelloch_tile_scan(s);
  const T ya = inclusive ? s[bk::pad(a)] + xa : s[bk::pad(a)];
  const T yb = inclusive ? s[bk::pad(b)] + xb : s[bk::pad(b)];
  if (base + a < n) out[base + a] = ya;
  if (base + b < n) out[base + b] = yb;
  if (tile_totals != nullptr && threadIdx.x == 0) tile_totals[blockIdx.x] = total;
}

// Phase 3: tile b (b >= 1) adds offsets[b], the sum of tiles 0 .. b-1.
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* offsets) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;
  const T offset = offsets[tile];
  const std::size_t i = tile * kItems + threadIdx.x;
  if (i < n) out[i] += offset;
  if (i + kThreads < n) out[i + kThreads] += offset;
}

std::size_t workspace_elements(std::size_t n) {
  std::size_t total = 0;
  for (std::size_t tiles = bk::ceil_div(n, kItems); tiles > 1; tiles = bk::ceil_div(tiles, kItems)) total += tiles;
  return total;
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = bk::ceil_div(n, kItems);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  const unsigned grid = static_cast<unsigned>(tiles);
  T* totals = tiles > 1 ? workspace : nullptr;
  // phase 1: scan each tile
  scan_tiles_kernel<T><<<grid, kThreads, 0, stream>>>(in, out, n, inclusive, totals);
  bk::check(cudaGetLastError(), "scan_tiles_kernel");
  if (tiles == 1) return;
  // phase 2: exclusive scan of the totals, in place
  scan_level(totals, totals, tiles, /*inclusive=*/false, workspace + tiles, stream);
  // phase 3: add offsets to tiles 1 .. tiles-1
  add_offsets_kernel<T><<<grid - 1, kThreads, 0, stream>>>(out, n, totals);
  bk::check(cudaGetLastError(), "add_offsets_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t ws = workspace_elements(n);
  T* workspace = nullptr;
  if (ws > 0) bk::check(cudaMallocAsync(&workspace, ws * sizeof(T), stream), "cudaMallocAsync");
  try {
    scan_level(d_in, d_out, n, kind == ScanKind::Inclusive, workspace, stream);
  } catch (...) {
    if (workspace != nullptr) cudaFreeAsync(workspace, stream);
    throw;
  }
  if (workspace != nullptr) bk::check(cudaFreeAsync(workspace, stream), "cudaFreeAsync");
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
