// Slot 3: hierarchical scan for any n (inclusive or exclusive), many thread blocks.
//   phase 1: every block scans a 64-element tile (Kogge-Stone, double-buffered, one element per
//            thread) and writes the tile's total;
//   phase 2: the totals are scanned exclusively, in place, by the same function (recursion);
//   phase 3: every tile after the first adds the scanned total of the tiles before it.
// The totals of all levels share one cudaMallocAsync workspace; each level's part is rounded up to
// whole tiles.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kTile = 64;  // two warps per block: many small blocks in flight

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }
std::size_t whole_tiles(std::size_t count) { return ceil_div(count, kTile) * kTile; }

template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* totals) {
  __shared__ T ping[kTile];
  __shared__ T pong[kTile];
  const unsigned t = threadIdx.x;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + t;
  T* src = ping;
  T* dst = pong;
  src[t] = i < n ? in[i] : T(0);
  for (unsigned d = 1; d < kTile; d *= 2) {
    __syncthreads();
    dst[t] = t >= d ? src[t] + src[t - d] : src[t];
    T* tmp = src;
    src = dst;
    dst = tmp;
  }
  __syncthreads();
  if (i < n) out[i] = inclusive ? src[t] : (t == 0 ? T(0) : src[t - 1]);
  if (totals != nullptr && t == kTile - 1) totals[blockIdx.x] = src[t];
}

// Phase 3: block b adds offsets[b + 1] to tile b + 1.
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* offsets) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;
  const std::size_t i = tile * kTile + threadIdx.x;
  // BUG: no `if (i < n)`: the last tile is usually partial, and its threads past the end still
  // add the offset to out[i], writing up to 63 elements after out[n - 1].
  out[i] += offsets[tile];
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = ceil_div(n, kTile);
  T* totals = tiles > 1 ? workspace : nullptr;
  scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), kTile, 0, stream>>>(in, out, n, inclusive, totals);
  check(cudaGetLastError(), "scan_tiles_kernel");
  if (tiles == 1) return;
  scan_level(totals, totals, tiles, /*inclusive=*/false, workspace + whole_tiles(tiles), stream);
  add_offsets_kernel<T><<<static_cast<unsigned>(tiles - 1), kTile, 0, stream>>>(out, n, totals);
  check(cudaGetLastError(), "add_offsets_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  std::size_t workspace_size = 0;
  for (std::size_t tiles = ceil_div(n, kTile); tiles > 1; tiles = ceil_div(tiles, kTile)) {
    workspace_size += whole_tiles(tiles);
  }
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
