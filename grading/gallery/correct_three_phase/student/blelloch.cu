// Slot 2: exclusive scan of up to 2048 elements in one block, three-phase: 1024 threads with two
// consecutive elements each, the 1024 pair totals scanned in shared memory (see three_phase.cuh).
#include "three_phase.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kItems = 2;
static_assert(kThreads * kItems == kBlellochMaxN, "one tile covers the slot's limit");

template <typename T>
__global__ void three_phase_exclusive_kernel(const T* in, T* out, std::size_t n) {
  using Block = tp::ThreePhase<T, kThreads, kItems>;
  __shared__ typename Block::Storage sm;
  T items[kItems];
  Block::load(in, 0, n, items, sm);
  T total;
  const T before = Block::local_scan(items, total, sm);
  Block::add_offset(items, before, /*inclusive=*/false);
  Block::store(out, 0, n, items, sm);
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  three_phase_exclusive_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  tp::check(cudaGetLastError(), "three_phase_exclusive_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
