// Slot 3 reference: hierarchical (scan-then-propagate) scan for any n.
//   level 0: each block scans one tile of d_in into d_out and writes the tile's total;
//   the tile totals are scanned (exclusive, in place) by the same procedure, recursively;
//   then each tile after the first gets its offset (the scanned total of the tiles before it).
#include <climits>
#include <stdexcept>

#include "block_scan.cuh"
#include "host_utils.h"
#include "reference.h"
#include "tuning.h"

namespace scangrade::reference {
namespace {

using tuning::kTileItems;
using tuning::kTileItemsPerThread;
using tuning::kTileThreads;

/// One block per tile: scan the tile (inclusive or exclusive), write its total to tile_sums.
/// in may equal out (blocks touch disjoint tiles and read their tile before writing it).
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool exclusive, T* tile_sums) {
  __shared__ T exchange[padded_size(kTileItems)];
  __shared__ T warp_totals[kTileThreads / tuning::kWarpThreads];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTileItems;

  T items[kTileItemsPerThread];
  load_tile_blocked<T, kTileThreads>(in, base, n, items, exchange);
  T tile_total;
  const T prefix = block_exclusive_sum<T, kTileThreads>(thread_reduce(items), tile_total, warp_totals);
  thread_scan(items, prefix, exclusive);
  store_tile_blocked<T, kTileThreads>(out, base, n, items, exchange);
  if (tile_sums != nullptr && threadIdx.x == 0) tile_sums[blockIdx.x] = tile_total;
}

/// One block per tile after the first: out[i] += offsets[tile of i].
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* offsets) {
  const unsigned tile = blockIdx.x + 1;
  const std::size_t base = static_cast<std::size_t>(tile) * kTileItems;
  const T offset = offsets[tile];
#pragma unroll
  for (int k = 0; k < kTileItemsPerThread; ++k) {
    const std::size_t i = base + k * kTileThreads + threadIdx.x;
    if (i < n) out[i] += offset;
  }
}

/// Elements of workspace all levels below n need: one tile total per tile, level after level.
std::size_t workspace_items(std::size_t n) {
  std::size_t total = 0;
  for (std::size_t tiles = detail::ceil_div(n, kTileItems); tiles > 1; tiles = detail::ceil_div(tiles, kTileItems))
    total += tiles;
  return total;
}

/// Scans n > 0 elements of in into out; `workspace` holds workspace_items(n) elements.
template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool exclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = detail::ceil_div(n, kTileItems);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  const unsigned grid = static_cast<unsigned>(tiles);
  if (tiles == 1) {  // top level: one block, no totals
    scan_tiles_kernel<T><<<1, kTileThreads, 0, stream>>>(in, out, n, exclusive, nullptr);
    detail::check_launch("scan_tiles_kernel");
    return;
  }
  T* tile_sums = workspace;
  // scan each tile
  scan_tiles_kernel<T><<<grid, kTileThreads, 0, stream>>>(in, out, n, exclusive, tile_sums);
  detail::check_launch("scan_tiles_kernel");
  // scan the tile totals (exclusive, in place): offsets of the tiles
  scan_level(tile_sums, tile_sums, tiles, /*exclusive=*/true, workspace + tiles, stream);
  // add the offsets to every tile after the first
  add_offsets_kernel<T><<<grid - 1, kTileThreads, 0, stream>>>(out, n, tile_sums);
  detail::check_launch("add_offsets_kernel");
}

template <typename T>
void launch_hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const bool exclusive = kind == ScanKind::Exclusive;
  const std::size_t items = workspace_items(n);
  if (items == 0) {
    scan_level<T>(d_in, d_out, n, exclusive, nullptr, stream);
    return;
  }
  detail::StreamBuffer workspace(items * sizeof(T), stream);
  scan_level(d_in, d_out, n, exclusive, workspace.as<T>(), stream);
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  launch_hierarchical(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  launch_hierarchical(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::reference
