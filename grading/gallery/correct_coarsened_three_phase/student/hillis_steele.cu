// Slot 1: inclusive scan of up to 1024 elements in one block: 256 threads, 4 consecutive elements
// each, the coarsened three phases with a Hillis-Steele (Kogge-Stone, double-buffered) scan of the
// 256 chunk totals in the middle.
#include "coarsened.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kItems = 4;  // kThreads * kItems == kHillisSteeleMaxN
constexpr unsigned kWords = coarse::tile_words(kThreads, kItems);
static_assert(kThreads * kItems == kHillisSteeleMaxN, "one tile holds the largest input");

template <typename T>
__global__ void hillis_steele_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T tile[kWords];
  __shared__ T scratch[2 * kThreads];
  coarse::load_tile<T, kThreads, kItems>(in, 0, n, tile);
  coarse::three_phase_tile<T, kThreads, kItems, coarse::Middle::KoggeStone>(tile, scratch);
  coarse::store_tile<T, kThreads, kItems>(tile, 0, n, /*inclusive=*/true, T(0), out);
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  hillis_steele_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  coarse::check(cudaGetLastError(), "hillis_steele_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
