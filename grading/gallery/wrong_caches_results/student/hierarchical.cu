// Slot 3: hierarchical scan, 1024-element tiles scanned in shared memory (one element per thread,
// double-buffered Hillis-Steele), the tile totals scanned recursively, then added as offsets. Correct
// on every call it computes; but it remembers its last calls and returns at once when called again
// with the same buffers and the same first input element.
#include <cstdint>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kTile = 1024;

template <typename T>
__global__ void scan_tiles(const T* in, T* out, std::size_t n, bool exclusive, T* totals) {
  __shared__ T buf[2][kTile];
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  const T x = i < n ? in[i] : T(0);
  int cur = 0;
  buf[cur][threadIdx.x] = x;
  __syncthreads();
  for (unsigned d = 1; d < kTile; d *= 2) {
    buf[1 - cur][threadIdx.x] = threadIdx.x >= d ? buf[cur][threadIdx.x - d] + buf[cur][threadIdx.x] : buf[cur][threadIdx.x];
    __syncthreads();
    cur = 1 - cur;
  }
  if (i < n) out[i] = exclusive ? buf[cur][threadIdx.x] - x : buf[cur][threadIdx.x];
  if (threadIdx.x == kTile - 1) totals[blockIdx.x] = buf[cur][kTile - 1];
}

template <typename T>
__global__ void add_offsets(T* out, std::size_t n, const T* offsets) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  if (blockIdx.x > 0 && i < n) out[i] += offsets[blockIdx.x];
}

template <typename T>
void scan(const T* d_in, T* d_out, std::size_t n, bool exclusive, cudaStream_t stream) {
  const std::size_t tiles = (n + kTile - 1) / kTile;
  T* totals = nullptr;
  if (cudaMallocAsync(&totals, tiles * sizeof(T), stream) != cudaSuccess) throw std::runtime_error("cudaMallocAsync");
  scan_tiles<T><<<static_cast<unsigned>(tiles), kTile, 0, stream>>>(d_in, d_out, n, exclusive, totals);
  if (tiles > 1) {
    scan(totals, totals, tiles, true, stream);  // exclusive offsets, in place (each tile reads before it writes)
    add_offsets<T><<<static_cast<unsigned>(tiles), kTile, 0, stream>>>(d_out, n, totals);
  }
  cudaFreeAsync(totals, stream);
}

// BUG: a cache of the last calls. A repeated call with the same buffers, size, kind and first input
// element is "already done" and returns at once: the grader's timed repetitions would measure
// nothing (215x the reference), unless each timed call gets a poisoned output and is checked.
struct Call {
  const void* in;
  void* out;
  std::size_t n;
  ScanKind kind;
  std::uint32_t first;
};
Call g_seen[4];
unsigned g_next = 0;

template <typename T>
void cached_scan(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  std::uint32_t first = 0;
  cudaMemcpyAsync(&first, d_in, sizeof first, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  for (const Call& c : g_seen)
    if (c.in == d_in && c.out == d_out && c.n == n && c.kind == kind && c.first == first) return;
  scan(d_in, d_out, n, kind == ScanKind::Exclusive, stream);
  g_seen[g_next++ % 4] = Call{d_in, d_out, n, kind, first};
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  cached_scan(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  cached_scan(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
