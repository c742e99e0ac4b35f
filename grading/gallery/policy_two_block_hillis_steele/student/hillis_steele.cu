// Slot 1, split over several blocks: each block scans a 512-element tile with a double-buffered
// Hillis-Steele (Kogge-Stone) scan and adds the sum of all earlier elements, which it reduces itself
// from d_in. The values are right, but the slot's contract is one block ("Launch exactly one block").
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kTile = 512;

template <typename T>
__global__ void scan_tile(const T* in, T* out, std::size_t n) {
  __shared__ T ping[kTile], pong[kTile];
  __shared__ T partial[kTile];
  const unsigned t = threadIdx.x;
  const std::size_t base = std::size_t(blockIdx.x) * kTile;

  // sum of the elements before this tile (tree reduction over a strided partial sum)
  T mine = T(0);
  for (std::size_t i = t; i < base; i += kTile) mine += in[i];
  partial[t] = mine;
  __syncthreads();
  for (unsigned half = kTile / 2; half > 0; half >>= 1) {
    if (t < half) partial[t] += partial[t + half];
    __syncthreads();
  }
  const T offset = partial[0];

  // Hillis-Steele over the tile: read one buffer, write the other, barrier, swap
  T* src = ping;
  T* dst = pong;
  src[t] = base + t < n ? in[base + t] : T(0);
  __syncthreads();
  for (unsigned step = 1; step < kTile; step <<= 1) {
    dst[t] = t >= step ? src[t] + src[t - step] : src[t];
    __syncthreads();
    T* swap = src;
    src = dst;
    dst = swap;
  }
  if (base + t < n) out[base + t] = offset + src[t];
}

template <typename T>
void run(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  // BUG: a grid of ceil(n / 512) blocks: two blocks for n > 512, where the slot must launch exactly one.
  const unsigned blocks = unsigned((n + kTile - 1) / kTile);
  scan_tile<T><<<blocks, kTile, 0, stream>>>(d_in, d_out, n);
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  run(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  run(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
