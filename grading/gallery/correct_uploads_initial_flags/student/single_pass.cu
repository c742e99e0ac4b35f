// Slot 4: single-pass inclusive scan with adjacent synchronization (a chained scan).
// Each block takes the next tile index from an atomic counter, scans its 1024-element tile with
// the Kogge-Stone block scan, then thread 0 waits until the previous tile has published its
// inclusive prefix, publishes its own (prefix + tile total), and the block adds the prefix.
// Because tile indices are handed out in the order blocks start, a block only waits for a tile
// that a running (or finished) block owns: no deadlock.
// The flags and prefixes start from values made on the host and uploaded: slot 0 is a tile before
// the first one, already published with prefix 0, so tile t waits on slot t and publishes slot t + 1.
#include <climits>
#include <vector>

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

  // adjacent synchronization: wait for slot tile (tile - 1's, or the initial one), publish slot tile + 1
  if (threadIdx.x == 0) {
    const volatile int* flag = ready + tile;
    while (*flag == 0) {
    }
    __threadfence();  // read the value only after seeing the flag
    const T prefix = static_cast<const volatile T*>(inclusive_prefix)[tile];
    static_cast<volatile T*>(inclusive_prefix)[tile + 1] = prefix + total;
    __threadfence();  // the value is visible before the flag
    atomicExch(ready + tile + 1, 1);
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
  // one scratch allocation: [counter: 16 bytes][ready flags: tiles + 1 ints, rounded up][prefixes: tiles + 1 T]
  const std::size_t flag_bytes = ks::ceil_div((tiles + 1) * sizeof(int), 16) * 16;
  const std::size_t bytes = 16 + flag_bytes + (tiles + 1) * sizeof(T);
  char* scratch = nullptr;
  ks::check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  // initial values, made on the host: slot 0 ready with prefix 0, every other slot not ready
  std::vector<int> flags(tiles + 1, 0);
  flags[0] = 1;
  const std::vector<T> prefixes(tiles + 1, T(0));
  cudaError_t err = cudaMemsetAsync(scratch, 0, 16, stream);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(scratch + 16, flags.data(), flags.size() * sizeof(int), cudaMemcpyHostToDevice, stream);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(scratch + 16 + flag_bytes, prefixes.data(), prefixes.size() * sizeof(T),
                          cudaMemcpyHostToDevice, stream);
  if (err == cudaSuccess) {
    chained_scan_kernel<T><<<static_cast<unsigned>(tiles), ks::kBlockThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), reinterpret_cast<int*>(scratch + 16),
        reinterpret_cast<T*>(scratch + 16 + flag_bytes));
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);  // the host vectors must outlive the copies
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
