// Slot 3: recursive hierarchical scan over 1024-element Brent-Kung tiles (512 threads, two elements
// each). Every level of the recursion owns its block sums: allocated with cudaMallocAsync on the
// stream, freed with cudaFreeAsync on the stream after the last kernel that reads them is enqueued
// (stream order keeps them alive until then). 2^26 elements: 65536 -> 64 -> 1 block sums, three
// levels.
#include <climits>

#include "tile_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 512;
constexpr unsigned kTile = 2 * kThreads;

// Phase 1. in may equal out: every thread reads its two elements before the first barrier, and a
// block touches only its own tile.
template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* block_sums) {
  __shared__ T s[kTile];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
  const unsigned a = threadIdx.x;
  const unsigned b = threadIdx.x + kThreads;
  s[a] = base + a < n ? in[base + a] : T(0);
  s[b] = base + b < n ? in[base + b] : T(0);
  rma::brent_kung_inclusive<T, kThreads>(s);
  if (base + a < n) out[base + a] = inclusive ? s[a] : (a > 0 ? s[a - 1] : T(0));
  if (base + b < n) out[base + b] = inclusive ? s[b] : s[b - 1];
  if (block_sums != nullptr && threadIdx.x == 0) block_sums[blockIdx.x] = s[kTile - 1];
}

// Phase 3: block b adds scanned_sums[b + 1], the sum of tiles 0 .. b, to tile b + 1.
template <typename T>
__global__ void add_block_sums_kernel(T* out, std::size_t n, const T* scanned_sums) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;
  const T offset = scanned_sums[tile];
  const std::size_t a = tile * kTile + threadIdx.x;
  if (a < n) out[a] += offset;
  if (a + kThreads < n) out[a + kThreads] += offset;
}

// Scans in[0 .. n-1] (n >= 1) into out; may be in place.
template <typename T>
void scan_recursive(const T* in, T* out, std::size_t n, bool inclusive, cudaStream_t stream) {
  const std::size_t tiles = rma::ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  if (tiles == 1) {
    scan_tiles_kernel<T><<<1, kThreads, 0, stream>>>(in, out, n, inclusive, nullptr);
    rma::check(cudaGetLastError(), "scan_tiles_kernel");
    return;
  }
  T* block_sums = nullptr;
  rma::check(cudaMallocAsync(&block_sums, tiles * sizeof(T), stream), "cudaMallocAsync");
  try {
    scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(in, out, n, inclusive, block_sums);
    rma::check(cudaGetLastError(), "scan_tiles_kernel");
    scan_recursive(block_sums, block_sums, tiles, /*inclusive=*/false, stream);  // exclusive, in place
    add_block_sums_kernel<T><<<static_cast<unsigned>(tiles - 1), kThreads, 0, stream>>>(out, n, block_sums);
    rma::check(cudaGetLastError(), "add_block_sums_kernel");
  } catch (...) {
    cudaFreeAsync(block_sums, stream);
    throw;
  }
  rma::check(cudaFreeAsync(block_sums, stream), "cudaFreeAsync");
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;  // nothing to scan: launch nothing
  scan_recursive(d_in, d_out, n, kind == ScanKind::Inclusive, stream);
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
