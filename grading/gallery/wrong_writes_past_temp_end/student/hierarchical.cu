// Slot 3: hierarchical scan for any n (inclusive or exclusive), tiles of 1024 elements.
//   1. each block scans its tile (Kogge-Stone, double-buffered) and writes the tile's total;
//   2. the totals are scanned exclusively: one block when they fit in one, else this scan again;
//   3. every tile adds the exclusive scan of the totals at its index.
#include <stdexcept>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;  // one element per thread: a tile is 1024 elements

template <typename T>
__device__ T block_inclusive(T v, T* a, T* b) {
  const unsigned t = threadIdx.x;
  a[t] = v;
  __syncthreads();
  for (unsigned d = 1; d < kThreads; d *= 2) {
    b[t] = t >= d ? a[t] + a[t - d] : a[t];
    __syncthreads();
    T* swap = a;
    a = b;
    b = swap;
  }
  return a[t];
}

template <typename T>
__global__ void tiles(const T* in, T* out, T* totals, std::size_t n, bool inclusive) {
  __shared__ T a[kThreads];
  __shared__ T b[kThreads];
  const std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x;
  const T x = i < n ? in[i] : T(0);
  const T prefix = block_inclusive(x, a, b);
  if (i < n) out[i] = inclusive ? prefix : prefix - x;
  if (totals != nullptr && threadIdx.x == kThreads - 1) totals[blockIdx.x] = prefix;
}

/// Exclusive scan of at most 1024 totals: the inclusive one, shifted right by one.
template <typename T>
__global__ void scan_totals(const T* totals, T* excl, std::size_t count) {
  __shared__ T a[kThreads];
  __shared__ T b[kThreads];
  const unsigned t = threadIdx.x;
  const T prefix = block_inclusive(t < count ? totals[t] : T(0), a, b);
  if (t == 0) excl[0] = T(0);
  // BUG: thread count - 1 writes excl[count], one element past the end of the count-element buffer (the
  // guard should be t + 1 < count). The values are right; on a GPU the write lands in mapped memory.
  if (t < count) excl[t + 1] = prefix;
}

template <typename T>
__global__ void add_offsets(T* out, const T* excl, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) out[i] += excl[blockIdx.x];
}

template <typename T>
void scan(const T* in, T* out, std::size_t n, bool inclusive, cudaStream_t stream) {
  const std::size_t count = (n + kThreads - 1) / kThreads;
  if (count == 1) {
    tiles<T><<<1, kThreads, 0, stream>>>(in, out, nullptr, n, inclusive);
    return;
  }
  T* totals = nullptr;
  T* excl = nullptr;
  if (cudaMalloc(&totals, count * sizeof(T)) != cudaSuccess || cudaMalloc(&excl, count * sizeof(T)) != cudaSuccess)
    throw std::runtime_error("hierarchical_scan: cudaMalloc failed");
  tiles<T><<<count, kThreads, 0, stream>>>(in, out, totals, n, inclusive);
  if (count <= kThreads) scan_totals<T><<<1, kThreads, 0, stream>>>(totals, excl, count);
  else scan(totals, excl, count, false, stream);
  add_offsets<T><<<count, kThreads, 0, stream>>>(out, excl, n);
  cudaStreamSynchronize(stream);
  cudaFree(totals);
  cudaFree(excl);
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  scan(d_in, d_out, n, kind == ScanKind::Inclusive, stream);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("hierarchical_scan: a launch failed");
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
