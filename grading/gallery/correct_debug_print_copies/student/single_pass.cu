// Slot 4: single-pass inclusive scan with adjacent synchronization (a chained scan).
// Each block takes the next tile index from an atomic counter, scans its 1024-element tile with
// the Kogge-Stone block scan, then thread 0 waits until the previous tile has published its
// inclusive prefix, publishes its own (prefix + tile total), and the block adds the prefix.
// Because tile indices are handed out in the order blocks start, a block only waits for a tile
// that a running (or finished) block owns: no deadlock.
#include <climits>

#include "kogge_stone.cuh"

namespace scangrade::student {
namespace {

constexpr std::size_t kTile = ks::kBlockThreads;

template <typename T>
__global__ void chained_scan_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, int* ready,
                                    T* inclusive_prefix) {
  __shared__ T buf[2 * ks::kBlockThreads];
  __shared__ unsigned s_tile;
  __shared__ T s_prefix;

  // dynamic tile index
  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const std::size_t i = static_cast<std::size_t>(tile) * kTile + threadIdx.x;

  // scan my tile
  const T x = i < n ? in[i] : T(0);
  T exclusive, total;
  const T incl = ks::block_scan(x, buf, exclusive, total);

  // adjacent synchronization: wait for tile - 1, publish tile
  if (threadIdx.x == 0) {
    T prefix = T(0);
    if (tile > 0) {
      const volatile int* flag = ready + (tile - 1);
      while (*flag == 0) {
      }
      __threadfence();  // read the value only after seeing the flag
      prefix = static_cast<const volatile T*>(inclusive_prefix)[tile - 1];
    }
    static_cast<volatile T*>(inclusive_prefix)[tile] = prefix + total;
    __threadfence();  // the value is visible before the flag
    atomicExch(ready + tile, 1);
    s_prefix = prefix;
  }
  __syncthreads();

  if (i < n) out[i] = s_prefix + incl;
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ks::ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  // one scratch allocation: [counter: 16 bytes][ready flags: tiles ints, rounded up][prefixes: tiles T]
  const std::size_t flag_bytes = ks::ceil_div(tiles * sizeof(int), 16) * 16;
  const std::size_t bytes = 16 + flag_bytes + tiles * sizeof(T);
  char* scratch = nullptr;
  ks::check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream);
  if (err == cudaSuccess) {
    chained_scan_kernel<T><<<static_cast<unsigned>(tiles), ks::kBlockThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), reinterpret_cast<int*>(scratch + 16),
        reinterpret_cast<T*>(scratch + 16 + flag_bytes));
    err = cudaGetLastError();
  }
  cudaFreeAsync(scratch, stream);
  ks::check(err, "single_pass_inclusive");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
