// Slot 3: hierarchical scan for any n. Tiles of 1024 elements (one per thread) are scanned in
// shared memory with a double-buffered Kogge-Stone scan; the tile totals are scanned the same way,
// recursively, and each tile then adds the total of the tiles before it.
#include <climits>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Phase 1: scan one tile per block and record its total.
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  // BUG: the scan runs in a float buffer for every element type: int32 sums above 2^24 lose their low bits.
  __shared__ float buf[2][kThreads];
  const unsigned t = threadIdx.x;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + t;
  int src = 0;
  buf[src][t] = i < n ? static_cast<float>(in[i]) : 0.0f;
  __syncthreads();
  for (unsigned d = 1; d < kThreads; d <<= 1) {
    float v = buf[src][t];
    if (t >= d) v += buf[src][t - d];
    buf[1 - src][t] = v;
    __syncthreads();
    src = 1 - src;
  }
  const float exclusive = t > 0 ? buf[src][t - 1] : 0.0f;
  if (i < n) out[i] = static_cast<T>(inclusive ? buf[src][t] : exclusive);
  if (tile_totals != nullptr && t == 0) tile_totals[blockIdx.x] = static_cast<T>(buf[src][kThreads - 1]);
}

// Phase 3: tile b (b >= 1) adds the inclusive scan of the totals up to tile b - 1.
template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* scanned_totals) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;
  const std::size_t i = tile * kThreads + threadIdx.x;
  if (i < n) out[i] += scanned_totals[tile - 1];
}

std::size_t workspace_elements(std::size_t n) {
  std::size_t total = 0;
  for (std::size_t tiles = ceil_div(n, kThreads); tiles > 1; tiles = ceil_div(tiles, kThreads)) total += tiles;
  return total;
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, T* workspace, cudaStream_t stream) {
  const std::size_t tiles = ceil_div(n, kThreads);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  if (tiles == 1) {
    scan_tiles_kernel<T><<<1, kThreads, 0, stream>>>(in, out, n, inclusive, nullptr);
    check(cudaGetLastError(), "scan_tiles_kernel");
    return;
  }
  T* totals = workspace;
  scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(in, out, n, inclusive, totals);
  check(cudaGetLastError(), "scan_tiles_kernel");
  scan_level(totals, totals, tiles, /*inclusive=*/true, workspace + tiles, stream);
  add_offsets_kernel<T><<<static_cast<unsigned>(tiles - 1), kThreads, 0, stream>>>(out, n, totals);
  check(cudaGetLastError(), "add_offsets_kernel");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t ws = workspace_elements(n);
  T* workspace = nullptr;
  if (ws > 0) check(cudaMallocAsync(&workspace, ws * sizeof(T), stream), "cudaMallocAsync");
  scan_level(d_in, d_out, n, kind == ScanKind::Inclusive, workspace, stream);
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
