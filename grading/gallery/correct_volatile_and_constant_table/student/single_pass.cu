// Slot 4: single-pass inclusive scan, chained (adjacent synchronization). Blocks take tile numbers
// from an atomic counter in the order they start; a tile's thread 0 waits for the previous tile's
// flag, reads its inclusive prefix, publishes its own and raises its flag. Flags and prefixes are
// `volatile int*` / `volatile T*` arrays from cudaMalloc, zeroed with cudaMemsetAsync.
#include <climits>

#include "vc_common.cuh"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void chained_scan_kernel(const T* __restrict__ in, T* __restrict__ out, const std::size_t n,
                                    unsigned* next_tile, volatile int* ready, volatile T* prefix_of) {
  __shared__ T scratch[2 * vc::kThreads];
  __shared__ unsigned s_tile;
  __shared__ T s_before;
  if (threadIdx.x == 0) s_tile = atomicAdd(next_tile, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const std::size_t i = static_cast<std::size_t>(tile) * vc::kThreads + threadIdx.x;
  const T x = i < n ? in[i] : T(0);
  T excl;
  const T incl = vc::block_inclusive_scan(x, scratch, excl);
  if (threadIdx.x == vc::kThreads - 1) {
    const T tile_total = incl;
    T before = T(0);
    if (tile > 0) {
      while (ready[tile - 1] == 0) {
      }
      __threadfence();  // the prefix is read after the flag was seen
      before = prefix_of[tile - 1];
    }
    prefix_of[tile] = before + tile_total;
    __threadfence();  // the prefix is visible before the flag
    ready[tile] = 1;
    s_before = before;
  }
  __syncthreads();
  if (i < n) out[i] = s_before + incl;
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = vc::blocks_for(n);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  volatile int* ready = nullptr;
  volatile T* prefix_of = nullptr;
  unsigned* next_tile = nullptr;
  cudaError_t err = cudaMalloc(&ready, tiles * sizeof(int));
  if (err == cudaSuccess) err = cudaMalloc(&prefix_of, tiles * sizeof(T));
  if (err == cudaSuccess) err = cudaMalloc(&next_tile, sizeof(unsigned));
  if (err == cudaSuccess) err = cudaMemsetAsync(const_cast<int*>(ready), 0, tiles * sizeof(int), stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(next_tile, 0, sizeof(unsigned), stream);
  if (err == cudaSuccess) {
    chained_scan_kernel<T><<<static_cast<unsigned>(tiles), vc::kThreads, 0, stream>>>(d_in, d_out, n, next_tile,
                                                                                     ready, prefix_of);
    err = cudaGetLastError();
  }
  // cudaFree waits for the device: the kernel is done with the arrays
  cudaFree((void*)ready);
  cudaFree((void*)prefix_of);
  cudaFree(next_tile);
  vc::check(err, "single_pass_inclusive");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
