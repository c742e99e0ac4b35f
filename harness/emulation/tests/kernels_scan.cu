// Test kernels: a two-level (block scan, scan of block sums, add) exclusive scan for the benchmark,
// and slots that leak temporaries.
#include "test_kernels.h"

namespace emu_test {
namespace {

constexpr int kThreads = 1024;
constexpr int kTile = 2 * kThreads;  // two elements per thread

// Blelloch exclusive scan of one tile in shared memory; writes the tile total to sums (if given)
template <typename T>
__global__ void block_scan_kernel(const T* in, T* out, T* sums, std::size_t n) {
  __shared__ T s[kTile];
  std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
  int t = threadIdx.x;
  for (int k = t; k < kTile; k += kThreads) s[k] = base + k < n ? in[base + k] : T(0);
  __syncthreads();
  // up-sweep
  int offset = 1;
  for (int d = kTile / 2; d > 0; d /= 2) {
    if (t < d) {
      int a = offset * (2 * t + 1) - 1;
      int b = offset * (2 * t + 2) - 1;
      s[b] += s[a];
    }
    offset *= 2;
    __syncthreads();
  }
  if (t == 0) {
    if (sums != nullptr) sums[blockIdx.x] = s[kTile - 1];
    s[kTile - 1] = 0;
  }
  __syncthreads();
  // down-sweep
  for (int d = 1; d < kTile; d *= 2) {
    offset /= 2;
    if (t < d) {
      int a = offset * (2 * t + 1) - 1;
      int b = offset * (2 * t + 2) - 1;
      T v = s[a];
      s[a] = s[b];
      s[b] += v;
    }
    __syncthreads();
  }
  for (int k = t; k < kTile; k += kThreads) {
    if (base + k < n) out[base + k] = s[k];
  }
}

template <typename T>
__global__ void add_offsets_kernel(T* out, const T* offsets, std::size_t n) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  T offset = offsets[blockIdx.x];
  if (i < n) out[i] += offset;
  if (i + kThreads < n) out[i + kThreads] += offset;
}

template <typename T>
void two_level(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  std::size_t tiles = (n + kTile - 1) / kTile;  // at most kTile: one level of block sums
  T* sums = nullptr;
  cudaMallocAsync(&sums, tiles * sizeof(T), stream);
  block_scan_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(d_in, d_out, sums, n);
  block_scan_kernel<T><<<1, kThreads, 0, stream>>>(sums, sums, static_cast<T*>(nullptr), tiles);
  add_offsets_kernel<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(d_out, static_cast<const T*>(sums), n);
  cudaFreeAsync(sums, stream);
}

}  // namespace

void two_level_exclusive_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  two_level(d_in, d_out, n, stream);
}

void leak_malloc(std::size_t bytes) {
  void* p = nullptr;
  cudaMalloc(&p, bytes);
}

void leak_malloc_async(std::size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  cudaMallocAsync(&p, bytes, stream);
}

void no_leak(std::size_t bytes, cudaStream_t stream) {
  void *a = nullptr, *b = nullptr;
  cudaMalloc(&a, bytes);
  cudaMallocAsync(&b, bytes, stream);
  cudaFreeAsync(b, stream);
  cudaFree(a);
}

}  // namespace emu_test
