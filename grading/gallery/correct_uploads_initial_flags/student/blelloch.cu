// Slot 2: exclusive scan of up to 2048 elements in one block, two elements per thread.
// Kogge-Stone flavour: each thread adds its pair, the block scans the 1024 pair sums with the
// double-buffered Kogge-Stone scan, and each thread expands its pair's exclusive prefix.
#include "kogge_stone.cuh"

namespace scangrade::student {
namespace {

template <typename T>
__global__ void pair_scan_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T buf[2 * ks::kBlockThreads];
  const std::size_t i0 = 2 * static_cast<std::size_t>(threadIdx.x);
  const std::size_t i1 = i0 + 1;
  // load my pair (0 past n)
  const T a = i0 < n ? in[i0] : T(0);
  const T b = i1 < n ? in[i1] : T(0);
  // scan the pair sums
  T pair_prefix, total;
  ks::block_scan(a + b, buf, pair_prefix, total);
  // expand: out[i0] = everything before the pair, out[i1] = that plus a
  if (i0 < n) out[i0] = pair_prefix;
  if (i1 < n) out[i1] = pair_prefix + a;
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  pair_scan_kernel<T><<<1, ks::kBlockThreads, 0, stream>>>(d_in, d_out, n);
  ks::check(cudaGetLastError(), "pair_scan_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
