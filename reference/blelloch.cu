// Slot 2 reference: Blelloch (Brent-Kung) exclusive scan, one block, two elements per thread.
#include <stdexcept>

#include "block_scan.cuh"
#include "host_utils.h"
#include "reference.h"
#include "tuning.h"

namespace scangrade::reference {
namespace {

template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, int n) {
  __shared__ T s[padded_size(tuning::kBlellochMaxItems)];
  // load two elements per thread (a in the lower half, b in the upper half: conflict-free);
  // positions past n, up to the power of two, hold the identity
  const int a = threadIdx.x;
  const int b = threadIdx.x + blockDim.x;
  s[conflict_free_index(a)] = a < n ? in[a] : T(0);
  s[conflict_free_index(b)] = b < n ? in[b] : T(0);
  blelloch_exclusive_inplace(s);
  if (a < n) out[a] = s[conflict_free_index(a)];
  if (b < n) out[b] = s[conflict_free_index(b)];
}

template <typename T>
void launch_blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > kBlellochMaxN");
  int items = 2;  // the tree's width: the next power of two >= n
  while (static_cast<std::size_t>(items) < n) items <<= 1;
  blelloch_kernel<T><<<1, items / 2, 0, stream>>>(d_in, d_out, static_cast<int>(n));
  detail::check_launch("blelloch_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  launch_blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  launch_blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::reference
