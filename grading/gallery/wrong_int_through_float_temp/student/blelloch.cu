// Slot 2: exclusive Blelloch scan in one block of 1024 threads: a 2048-leaf tree (two leaves per
// thread, padded with zeros), up-sweep, clear the root, down-sweep.
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
  // up-sweep
  unsigned offset = 1;
  for (unsigned d = kLeaves / 2; d > 0; d /= 2) {
    __syncthreads();
    if (t < d) tree[offset * (2 * t + 2) - 1] += tree[offset * (2 * t + 1) - 1];
    offset *= 2;
  }
  if (t == 0) tree[kLeaves - 1] = T(0);
  // down-sweep
  for (unsigned d = 1; d < kLeaves; d *= 2) {
    offset /= 2;
    __syncthreads();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      // BUG: the swap's temporary is a float for every element type: int32 sums above 2^24 lose their low bits.
      const float left = tree[ai];
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
