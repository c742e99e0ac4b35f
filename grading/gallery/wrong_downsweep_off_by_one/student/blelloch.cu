// Slot 2: exclusive Blelloch scan of up to 2048 elements in one block of 1024 threads, two elements
// per thread. The tree always has 2048 leaves; elements past n are zeros, so any n works.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kLeaves = 2 * kThreads;

template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T tree[kLeaves];
  const unsigned t = threadIdx.x;
  tree[2 * t] = 2 * t < n ? in[2 * t] : T(0);
  tree[2 * t + 1] = 2 * t + 1 < n ? in[2 * t + 1] : T(0);

  // up-sweep: partial sums at the right child of every subtree
  unsigned offset = 1;
  for (unsigned d = kLeaves >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      tree[bi] += tree[ai];
    }
    offset *= 2;
  }
  if (t == 0) tree[kLeaves - 1] = T(0);

  // down-sweep: swap and add, from the root to the leaves
  for (unsigned d = 1; d < kLeaves; d *= 2) {
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      // BUG: off by one: the left child is offset * (2t + 1) - 1, as in the up-sweep. Without the
      // - 1, ai points one element to the right (at offset 1 it even equals bi), so the prefixes
      // are pushed into the wrong nodes and the scan is wrong for every n.
      const unsigned ai = offset * (2 * t + 1);
      const unsigned bi = offset * (2 * t + 2) - 1;
      const T left = tree[ai];
      tree[ai] = tree[bi];
      tree[bi] += left;
    }
  }
  __syncthreads();
  if (2 * t < n) out[2 * t] = tree[2 * t];
  if (2 * t + 1 < n) out[2 * t + 1] = tree[2 * t + 1];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  blelloch_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("blelloch_kernel: ") + cudaGetErrorString(err));
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
