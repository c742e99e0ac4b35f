// Slot 3: hierarchical scan for any n, "scan then propagate" with tiles of 1024 elements (one per
// block of 1024 threads):
//   1. every block scans its tile inclusively, warp by warp, and writes the tile's total;
//   2. the tile totals are scanned inclusively with this same procedure (recursion);
//   3. every element of tile t > 0 adds the scanned total of tile t - 1.
// An exclusive scan shifts the inclusive one by one element when it stores it.
#include <climits>
#include <stdexcept>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kWarp = 32;
constexpr std::size_t kTile = kThreads;

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Inclusive scan of the 32 values at s[0..31] by the 32 lanes of one warp, in place.
// BUG: relies on the lanes of a warp running in lockstep (the pre-Volta idiom): no __syncwarp()
// separates one step's reads of s[lane - d] from the next step's writes; volatile only keeps the
// values out of registers. Lanes are scheduled independently since Volta: an intra-warp data race
// (compute-sanitizer racecheck reports it; the hardware usually gives the right sums).
template <typename T>
__device__ T warp_scan(volatile T* s, unsigned lane) {
  if (lane >= 1) s[lane] = s[lane - 1] + s[lane];
  if (lane >= 2) s[lane] = s[lane - 2] + s[lane];
  if (lane >= 4) s[lane] = s[lane - 4] + s[lane];
  if (lane >= 8) s[lane] = s[lane - 8] + s[lane];
  if (lane >= 16) s[lane] = s[lane - 16] + s[lane];
  return s[lane];
}

// Step 1: the inclusive scan of each tile into scanned[], and the tile's total into totals[tile].
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* scanned, std::size_t n, T* totals) {
  __shared__ T s[kThreads];
  __shared__ T warp_totals[kWarp];
  const unsigned t = threadIdx.x, lane = t % kWarp, warp = t / kWarp;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + t;
  s[t] = i < n ? in[i] : T(0);
  const T in_warp = warp_scan(s + warp * kWarp, lane);
  if (lane == kWarp - 1) warp_totals[warp] = in_warp;
  __syncthreads();
  if (warp == 0) warp_scan(warp_totals, lane);
  __syncthreads();
  const T value = (warp > 0 ? warp_totals[warp - 1] : T(0)) + in_warp;
  if (i < n) scanned[i] = value;
  if (totals != nullptr && t == kThreads - 1) totals[blockIdx.x] = value;
}

// Step 3: out[i] = scanned[i] plus the scanned total of the tiles before i's, shifted by one element
// for an exclusive scan.
template <typename T>
__global__ void finish_kernel(const T* scanned, T* out, std::size_t n, const T* tile_sums, bool inclusive) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  if (i >= n) return;
  const std::size_t j = inclusive ? i : i - 1;  // the inclusive value out[i] takes
  if (!inclusive && i == 0) {
    out[0] = T(0);
    return;
  }
  const std::size_t tile = j / kTile;
  out[i] = scanned[j] + (tile > 0 && tile_sums != nullptr ? tile_sums[tile - 1] : T(0));
}

// scan_level's workspace: the scanned tiles, and with more than one tile their totals, the scanned
// totals and the level below's workspace
std::size_t workspace_elements(std::size_t n) {
  const std::size_t tiles = ceil_div(n, kTile);
  return n + (tiles > 1 ? 2 * tiles + workspace_elements(tiles) : 0);
}

// The inclusive (or exclusive) scan of in[0..n) into out, with workspace for the levels below.
template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  const unsigned grid = static_cast<unsigned>(tiles);
  T* scanned = workspace;
  T* totals = tiles > 1 ? workspace + n : nullptr;
  T* tile_sums = tiles > 1 ? totals + tiles : nullptr;
  scan_tiles_kernel<T><<<grid, kThreads, 0, stream>>>(in, scanned, n, totals);
  check(cudaGetLastError(), "scan_tiles_kernel");
  if (tiles > 1) scan_level<T>(totals, tile_sums, tiles, /*inclusive=*/true, tile_sums + tiles, stream);
  finish_kernel<T><<<grid, kThreads, 0, stream>>>(scanned, out, n, tile_sums, inclusive);
  check(cudaGetLastError(), "finish_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  T* workspace = nullptr;
  check(cudaMallocAsync(&workspace, workspace_elements(n) * sizeof(T), stream), "cudaMallocAsync");
  try {
    scan_level(d_in, d_out, n, kind == ScanKind::Inclusive, workspace, stream);
  } catch (...) {
    cudaFreeAsync(workspace, stream);
    throw;
  }
  check(cudaFreeAsync(workspace, stream), "cudaFreeAsync");
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
