// Slot 1: inclusive scan of up to 1024 elements in one block, three-phase: 256 threads with 4
// consecutive elements each (see three_phase.cuh).
#include "three_phase.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kItems = 4;
static_assert(kThreads * kItems == kHillisSteeleMaxN, "one tile covers the slot's limit");

template <typename T>
__global__ void three_phase_kernel(const T* in, T* out, std::size_t n) {
  using Block = tp::ThreePhase<T, kThreads, kItems>;
  __shared__ typename Block::Storage sm;
  T items[kItems];
  Block::load(in, 0, n, items, sm);
  T total;
  const T before = Block::local_scan(items, total, sm);
  Block::add_offset(items, before, /*inclusive=*/true);
  Block::store(out, 0, n, items, sm);
}

template <typename T>
void hillis_steele(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kHillisSteeleMaxN) throw std::invalid_argument("hillis_steele_inclusive: n > 1024");
  three_phase_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  tp::check(cudaGetLastError(), "three_phase_kernel");
}

}  // namespace

void hillis_steele_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}
void hillis_steele_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  hillis_steele(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
