// Slot 3: hierarchical scan for any n, written as a loop over levels instead of recursion.
// Tiles of 1024 elements (256 threads x 4 chunks, warp-shuffle block scans).
//   down: level 0 scans d_in into d_out (inclusive or exclusive) and writes one total per tile
//         into level 1; each further level scans its totals exclusively in place and writes its
//         own totals into the next level, until a level fits in one tile (2^26: 65536, 64, 1).
//   up:   from the top level down, tile b of each level adds element b of the level above.
#include <climits>
#include <vector>

#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kChunks = 4;
constexpr std::size_t kTile = kThreads * kChunks;  // 1024

template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  __shared__ T warp_totals[ws::kWarp];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
  const T total = ws::tile_scan<T, kChunks>(in, out, base, n, inclusive, T(0), warp_totals);
  if (tile_totals != nullptr && threadIdx.x == 0) tile_totals[blockIdx.x] = total;
}

// Tile b (b >= 1) of data adds offsets[b] (the exclusive scan of the tile totals).
template <typename T>
__global__ void add_offsets_kernel(T* data, std::size_t n, const T* offsets) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;
  const T offset = offsets[tile];
  for (unsigned c = 0; c < kChunks; ++c) {
    const std::size_t i = tile * kTile + c * kThreads + threadIdx.x;
    if (i < n) data[i] += offset;
  }
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  // sizes of the levels: sizes[0] = n, sizes[l+1] = tiles of level l, until one tile
  std::vector<std::size_t> sizes{n};
  while (sizes.back() > kTile) sizes.push_back(ws::ceil_div(sizes.back(), kTile));
  if (ws::ceil_div(n, kTile) > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  std::size_t ws_elems = 0;
  for (std::size_t l = 1; l < sizes.size(); ++l) ws_elems += sizes[l];

  T* workspace = nullptr;
  if (ws_elems > 0) ws::check(cudaMallocAsync(&workspace, ws_elems * sizeof(T), stream), "cudaMallocAsync");
  std::vector<T*> level(sizes.size());  // level[0] = d_out, level[l] = totals of level l-1
  level[0] = d_out;
  for (std::size_t l = 1, used = 0; l < sizes.size(); used += sizes[l], ++l) level[l] = workspace + used;

  cudaError_t err = cudaSuccess;
  // down: scan every level, collecting the totals of its tiles in the next level
  for (std::size_t l = 0; l < sizes.size() && err == cudaSuccess; ++l) {
    const std::size_t tiles = ws::ceil_div(sizes[l], kTile);
    const T* src = l == 0 ? d_in : level[l];
    const bool inclusive = l == 0 ? kind == ScanKind::Inclusive : false;
    T* totals = l + 1 < sizes.size() ? level[l + 1] : nullptr;
    scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(src, level[l], sizes[l], inclusive, totals);
    err = cudaGetLastError();
  }
  // up: propagate the offsets from the top level down to the output
  for (std::size_t l = sizes.size() - 1; l-- > 0 && err == cudaSuccess;) {
    const std::size_t tiles = ws::ceil_div(sizes[l], kTile);
    add_offsets_kernel<T><<<static_cast<unsigned>(tiles - 1), kThreads, 0, stream>>>(level[l], sizes[l], level[l + 1]);
    err = cudaGetLastError();
  }
  if (workspace != nullptr) cudaFreeAsync(workspace, stream);
  ws::check(err, "hierarchical_scan");
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
