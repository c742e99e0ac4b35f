// Slot 3: hierarchical scan for any n with bank-conflict-free Blelloch tiles of 2048 elements.
//   scan_level(n): every block scans one tile (exclusive; inclusive adds the element back) and
//   writes the tile's total; scan_level scans the totals exclusively, in place (recursion: 2^26 ->
//   32768 totals -> 16 -> one tile); then tile b adds the scanned total b.
// One cudaMallocAsync workspace holds the totals of every level; it is freed on the stream.
#include <climits>

#include "conflict_free.cuh"

namespace scangrade::student {
namespace {

using cf::kThreads;
using cf::kTileItems;

// Phase 1. in may equal out (the totals are scanned in place): each thread reads its two elements
// before the block's first barrier, and a block touches only its own tile.
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  __shared__ T temp[cf::kPaddedItems];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTileItems;
  const unsigned a = threadIdx.x;
  const unsigned b = threadIdx.x + kThreads;
  const T xa = base + a < n ? in[base + a] : T(0);
  const T xb = base + b < n ? in[base + b] : T(0);
  temp[cf::padded(a)] = xa;
  temp[cf::padded(b)] = xb;
  const T total = cf::blelloch_tile(temp);
  if (base + a < n) out[base + a] = inclusive ? temp[cf::padded(a)] + xa : temp[cf::padded(a)];
  if (base + b < n) out[base + b] = inclusive ? temp[cf::padded(b)] + xb : temp[cf::padded(b)];
  if (tile_totals != nullptr && threadIdx.x == 0) tile_totals[blockIdx.x] = total;
}

// Phase 3: block b adds offsets[b + 1] (the sum of tiles 0 .. b) to tile b + 1.
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* offsets) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;
  const T offset = offsets[tile];
  const std::size_t a = tile * kTileItems + threadIdx.x;
  if (a < n) out[a] += offset;
  if (a + kThreads < n) out[a + kThreads] += offset;
}

// Elements of the workspace: the totals of every level that has more than one tile.
std::size_t workspace_items(std::size_t n) {
  std::size_t items = 0;
  for (std::size_t tiles = cf::ceil_div(n, kTileItems); tiles > 1; tiles = cf::ceil_div(tiles, kTileItems)) {
    items += tiles;
  }
  return items;
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = cf::ceil_div(n, kTileItems);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  T* totals = tiles > 1 ? workspace : nullptr;
  scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(in, out, n, inclusive, totals);
  cf::check(cudaGetLastError(), "scan_tiles_kernel");
  if (tiles == 1) return;
  scan_level(totals, totals, tiles, /*inclusive=*/false, workspace + tiles, stream);
  add_offsets_kernel<T><<<static_cast<unsigned>(tiles - 1), kThreads, 0, stream>>>(out, n, totals);
  cf::check(cudaGetLastError(), "add_offsets_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t items = workspace_items(n);
  T* workspace = nullptr;
  if (items > 0) cf::check(cudaMallocAsync(&workspace, items * sizeof(T), stream), "cudaMallocAsync");
  try {
    scan_level(d_in, d_out, n, kind == ScanKind::Inclusive, workspace, stream);
  } catch (...) {
    if (workspace != nullptr) cudaFreeAsync(workspace, stream);
    throw;
  }
  if (workspace != nullptr) cf::check(cudaFreeAsync(workspace, stream), "cudaFreeAsync");
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
