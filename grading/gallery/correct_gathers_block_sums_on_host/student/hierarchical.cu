// Slot 3: hierarchical scan for any n, with the block sums gathered on the host.
//   1. every 1024-element tile is scanned on the device (inclusive, warp-shuffle block scan);
//   2. the whole output is copied to the host, where each tile's last element (the tile's total)
//      is picked into a std::vector: n / 1024 values;
//   3. those totals go back to the device, where they are scanned exclusively by this same
//      function (recursion: 2^26 elements -> 65536 totals -> 64 -> one tile);
//   4. on the device, each tile adds the scanned total of the tiles before it (and, for an
//      exclusive scan, takes its neighbour's inclusive value).
// The host only gathers values; every sum of the scan is computed on the device.
#include <climits>
#include <vector>

#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr std::size_t kTile = ws::kThreads;

// Scans each tile of in into out (inclusive or exclusive within the tile). in may be out: every
// thread reads its element before the block's first barrier and writes it after the last one.
template <typename T>
__global__ void tile_scan_kernel(const T* in, T* out, std::size_t n, bool inclusive) {
  __shared__ T warp_sums[ws::kWarps];
  __shared__ T scanned[kTile];
  const unsigned t = threadIdx.x;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + t;
  const T x = i < n ? in[i] : T(0);
  T total;
  scanned[t] = ws::block_inclusive(x, warp_sums, total);
  __syncthreads();
  // exclusive: the inclusive value of the thread before (exact, also for floats)
  const T v = inclusive ? scanned[t] : (t > 0 ? scanned[t - 1] : T(0));
  if (i < n) out[i] = v;
}

// out holds each tile's inclusive scan; before[b] is the sum of all tiles before tile b. Makes out
// the scan of the whole array: inclusive, or exclusive (shifted by one inside the tile).
template <typename T>
__global__ void finish_kernel(T* out, std::size_t n, const T* before, bool inclusive) {
  __shared__ T tile[kTile];
  const std::size_t b = blockIdx.x;
  const unsigned t = threadIdx.x;
  const std::size_t i = b * kTile + t;
  tile[t] = i < n ? out[i] : T(0);
  __syncthreads();  // the whole tile is read before anyone writes
  T v;
  if (inclusive) {
    v = tile[t];
  } else {
    v = t > 0 ? tile[t - 1] : T(0);
  }
  if (b > 0) v = before[b] + v;
  if (i < n) out[i] = v;
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, cudaStream_t stream) {
  const std::size_t tiles = ws::tiles_for(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  if (tiles == 1) {
    tile_scan_kernel<T><<<1, ws::kThreads, 0, stream>>>(in, out, n, inclusive);
    ws::check(cudaGetLastError(), "tile_scan_kernel");
    return;
  }
  // 1. inclusive scan of every tile
  tile_scan_kernel<T><<<static_cast<unsigned>(tiles), ws::kThreads, 0, stream>>>(in, out, n, true);
  ws::check(cudaGetLastError(), "tile_scan_kernel");

  // 2. the whole output to the host; each tile's last element is its total
  std::vector<T> h_out(n);
  ws::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  ws::check(cudaMemcpy(h_out.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy (output)");
  std::vector<T> h_totals(tiles);
  for (std::size_t b = 0; b < tiles; ++b) {
    const std::size_t last = b + 1 < tiles ? (b + 1) * kTile - 1 : n - 1;
    h_totals[b] = h_out[last];
  }

  // 3. the totals back to the device, scanned there (exclusive: totals[b] = the tiles before b)
  T* totals = nullptr;
  ws::check(cudaMallocAsync(&totals, tiles * sizeof(T), stream), "cudaMallocAsync");
  cudaError_t err = cudaMemcpyAsync(totals, h_totals.data(), tiles * sizeof(T), cudaMemcpyHostToDevice, stream);
  try {
    ws::check(err, "cudaMemcpyAsync (tile totals)");
    scan_level<T>(totals, totals, tiles, false, stream);
    // 4. add the offsets (and shift, for an exclusive scan)
    finish_kernel<T><<<static_cast<unsigned>(tiles), ws::kThreads, 0, stream>>>(out, n, totals, inclusive);
    ws::check(cudaGetLastError(), "finish_kernel");
  } catch (...) {
    cudaFreeAsync(totals, stream);
    throw;
  }
  ws::check(cudaFreeAsync(totals, stream), "cudaFreeAsync");
  ws::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // h_totals outlives its copy
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  scan_level(d_in, d_out, n, kind == ScanKind::Inclusive, stream);
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
