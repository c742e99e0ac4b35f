// Slot 4: single-pass inclusive scan, chained. Each 1024-element tile has one 64-bit status word:
// bit 32 says "ready", the low 32 bits hold the bits of the tile's inclusive prefix. The word is
// published with one atomicExch, so a reader sees the flag and the value together. A block takes
// its tile number from an atomic counter (in the order blocks start) and waits only for the tile
// before it, which a running or finished block owns.
#include <climits>

#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr std::size_t kTile = ws::kThreads;
constexpr unsigned long long kReadyBit = 1ull << 32;

__device__ unsigned value_bits(std::int32_t v) { return static_cast<unsigned>(v); }
__device__ unsigned value_bits(float v) { return __float_as_uint(v); }
template <typename T>
__device__ T from_value_bits(unsigned bits);
template <>
__device__ std::int32_t from_value_bits<std::int32_t>(unsigned bits) { return static_cast<std::int32_t>(bits); }
template <>
__device__ float from_value_bits<float>(unsigned bits) { return __uint_as_float(bits); }

template <typename T>
__global__ void chained_kernel(const T* in, T* out, std::size_t n, unsigned* next_tile, unsigned long long* status) {
  __shared__ T warp_sums[ws::kWarps];
  __shared__ unsigned s_tile;
  __shared__ T s_before;
  if (threadIdx.x == 0) s_tile = atomicAdd(next_tile, 1u);
  __syncthreads();
  const std::size_t tile = s_tile;
  const std::size_t i = tile * kTile + threadIdx.x;
  const T x = i < n ? in[i] : T(0);
  T total;
  const T incl = ws::block_inclusive(x, warp_sums, total);
  if (threadIdx.x == 0) {
    T before = T(0);
    if (tile > 0) {
      const volatile unsigned long long* word = status + (tile - 1);
      unsigned long long w = *word;
      while ((w & kReadyBit) == 0) w = *word;
      before = from_value_bits<T>(static_cast<unsigned>(w));
    }
    atomicExch(status + tile, kReadyBit | value_bits(before + total));
    s_before = before;
  }
  __syncthreads();
  if (i < n) out[i] = s_before + incl;
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ws::tiles_for(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  // word 0 holds the tile counter, words 1 .. tiles the status words; all start at zero
  unsigned long long* words = nullptr;
  const std::size_t bytes = (tiles + 1) * sizeof(unsigned long long);
  ws::check(cudaMallocAsync(&words, bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(words, 0, bytes, stream);
  if (err == cudaSuccess) {
    chained_kernel<T><<<static_cast<unsigned>(tiles), ws::kThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(words), words + 1);
    err = cudaGetLastError();
  }
  cudaFreeAsync(words, stream);
  ws::check(err, "single_pass_inclusive");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
