// Slot 4: single-pass scan (chained scan). A block takes the next tile from an atomic counter,
// scans its 2048 elements in shared memory (Blelloch, 1024 threads), then thread 0 waits for the
// previous tile's inclusive prefix, publishes its own (value, __threadfence, flag) and the block
// adds the prefix to its tile.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kTile = 2 * kThreads;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

template <typename T>
__global__ void chained_scan_kernel(const T* in, T* out, std::size_t n, unsigned* counter, unsigned* ready,
                                    T* prefixes) {
  __shared__ T s[kTile];
  __shared__ unsigned s_tile;
  __shared__ T s_before;
  const unsigned t = threadIdx.x;
  if (t == 0) s_tile = atomicAdd(counter, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const std::size_t base = static_cast<std::size_t>(tile) * kTile;
  s[t] = base + t < n ? in[base + t] : T(0);
  s[t + kThreads] = base + t + kThreads < n ? in[base + t + kThreads] : T(0);

  // up-sweep
  unsigned offset = 1;
  for (unsigned d = kTile / 2; d > 0; d /= 2, offset *= 2) {
    __syncthreads();
    if (t < d) s[offset * (2 * t + 2) - 1] += s[offset * (2 * t + 1) - 1];
  }
  __syncthreads();
  const T total = s[kTile - 1];
  __syncthreads();
  if (t == 0) s[kTile - 1] = T(0);
  // down-sweep
  for (unsigned d = 1; d < kTile; d *= 2) {
    offset /= 2;
    __syncthreads();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      const T left = s[ai];
      s[ai] = s[bi];
      s[bi] += left;
    }
  }

  // chain: wait for tile - 1, publish this tile's inclusive prefix
  if (t == 0) {
    T before = T(0);
    if (tile > 0) {
      while (*static_cast<volatile unsigned*>(ready + tile - 1) == 0) {
      }
      __threadfence();
      before = *static_cast<volatile T*>(prefixes + tile - 1);
    }
    *static_cast<volatile T*>(prefixes + tile) = before + total;
    __threadfence();
    atomicExch(ready + tile, 1u);
    s_before = before;
  }
  __syncthreads();

  // BUG: s[] holds the EXCLUSIVE scan of the tile (Blelloch's down-sweep), and the element itself
  // is never added back: the slot returns the exclusive scan where it must return the inclusive.
  if (base + t < n) out[base + t] = s_before + s[t];
  if (base + t + kThreads < n) out[base + t + kThreads] = s_before + s[t + kThreads];
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = (n + kTile - 1) / kTile;
  // scratch: the tile counter, then one ready flag and one prefix per tile
  const std::size_t flags_at = 256, values_at = flags_at + ((tiles * sizeof(unsigned) + 255) / 256) * 256;
  const std::size_t bytes = values_at + tiles * sizeof(T);
  char* scratch = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream);
  if (err == cudaSuccess) {
    chained_scan_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), reinterpret_cast<unsigned*>(scratch + flags_at),
        reinterpret_cast<T*>(scratch + values_at));
    err = cudaGetLastError();
  }
  cudaFreeAsync(scratch, stream);
  check(err, "single_pass_inclusive");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
