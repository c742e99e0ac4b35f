// Slot 3: hierarchical scan for any n. Each 1024-element tile is scanned by one block, which also
// writes the tile's total into a `volatile T*` array from cudaMalloc; the totals are scanned the same
// way (recursively: 2^26 elements -> 65536 totals -> 64 -> 1) and tile b then adds the scanned total
// of tile b - 1.
#include <climits>

#include "vc_common.cuh"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void scan_tiles_kernel(const T* in, T* out, const std::size_t n, const bool inclusive,
                                  volatile T* totals) {
  __shared__ T scratch[2 * vc::kThreads];
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * vc::kThreads + threadIdx.x;
  const T x = i < n ? in[i] : T(0);
  T excl;
  const T incl = vc::block_inclusive_scan(x, scratch, excl);
  if (i < n) out[i] = inclusive ? incl : excl;
  if (totals != nullptr && threadIdx.x == vc::kThreads - 1) totals[blockIdx.x] = incl;
}

template <typename T>
__global__ void add_totals_kernel(T* out, const std::size_t n, const volatile T* scanned_totals) {
  const std::size_t tile = static_cast<std::size_t>(blockIdx.x) + 1;  // tile 0 adds nothing
  const std::size_t i = tile * vc::kThreads + threadIdx.x;
  if (i < n) out[i] += scanned_totals[tile - 1];
}

template <typename T>
void scan_level(const T* in, T* out, std::size_t n, bool inclusive, cudaStream_t stream) {
  const std::size_t tiles = vc::blocks_for(n);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("hierarchical_scan: n too large");
  if (tiles == 1) {
    scan_tiles_kernel<T><<<1, vc::kThreads, 0, stream>>>(in, out, n, inclusive, nullptr);
    vc::check(cudaGetLastError(), "scan_tiles_kernel");
    return;
  }
  volatile T* totals = nullptr;
  vc::check(cudaMalloc(&totals, tiles * sizeof(T)), "cudaMalloc(totals)");
  try {
    scan_tiles_kernel<T><<<static_cast<unsigned>(tiles), vc::kThreads, 0, stream>>>(in, out, n, inclusive, totals);
    vc::check(cudaGetLastError(), "scan_tiles_kernel");
    T* plain = const_cast<T*>(totals);  // the next level reads and writes it as ordinary memory
    scan_level<T>(plain, plain, tiles, /*inclusive=*/true, stream);
    add_totals_kernel<T><<<static_cast<unsigned>(tiles - 1), vc::kThreads, 0, stream>>>(out, n, totals);
    vc::check(cudaGetLastError(), "add_totals_kernel");
  } catch (...) {
    cudaFree(const_cast<T*>(totals));
    throw;
  }
  // cudaFree waits for the device, so the kernels above are done with the totals
  vc::check(cudaFree(const_cast<T*>(totals)), "cudaFree(totals)");
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
