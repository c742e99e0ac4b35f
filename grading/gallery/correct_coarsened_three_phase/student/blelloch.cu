// Slot 2: exclusive scan of up to 2048 elements in one block: 1024 threads, two consecutive elements
// each (phase 1: the pair's sum), a Blelloch up-sweep/down-sweep over the 1024 pair sums (phase 2),
// and the pair's prefix added back (phase 3).
#include "coarsened.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kItems = 2;
constexpr unsigned kWords = coarse::tile_words(kThreads, kItems);
static_assert(kThreads * kItems == kBlellochMaxN, "one tile holds the largest input");

template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T tile[kWords];
  __shared__ T scratch[kThreads];
  coarse::load_tile<T, kThreads, kItems>(in, 0, n, tile);
  coarse::three_phase_tile<T, kThreads, kItems, coarse::Middle::Blelloch>(tile, scratch);
  coarse::store_tile<T, kThreads, kItems>(tile, 0, n, /*inclusive=*/false, T(0), out);
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  blelloch_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  coarse::check(cudaGetLastError(), "blelloch_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
