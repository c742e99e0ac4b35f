// Slot 2: exclusive Blelloch scan of up to 2048 elements in one block of 1024 threads. Leaf i lives
// in shared slot i + i / 32 (one pad per 32 leaves against bank conflicts); the slot of every leaf
// comes from a __constant__ table uploaded with cudaMemcpyToSymbol on each call.
#include "vc_common.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kLeaves = 2 * vc::kThreads;
constexpr unsigned kPadded = kLeaves + kLeaves / 32;
__constant__ unsigned short c_slot[kLeaves];

template <typename T>
__global__ void blelloch_kernel(const T* __restrict__ in, T* __restrict__ out, const std::size_t n) {
  __shared__ T tree[kPadded];
  const unsigned t = threadIdx.x;
  const unsigned lo = t;
  const unsigned hi = t + vc::kThreads;
  tree[c_slot[lo]] = lo < n ? in[lo] : T(0);
  tree[c_slot[hi]] = hi < n ? in[hi] : T(0);

  // up-sweep: after it, the last leaf holds the total
  unsigned width = 1;
  for (unsigned active = vc::kThreads; active > 0; active /= 2) {
    __syncthreads();
    if (t < active) {
      const unsigned left = width * (2 * t + 1) - 1;
      const unsigned right = width * (2 * t + 2) - 1;
      tree[c_slot[right]] += tree[c_slot[left]];
    }
    width *= 2;
  }
  // down-sweep from a zero root
  if (t == 0) tree[c_slot[kLeaves - 1]] = T(0);
  for (unsigned active = 1; active <= vc::kThreads; active *= 2) {
    width /= 2;
    __syncthreads();
    if (t < active) {
      const unsigned left = width * (2 * t + 1) - 1;
      const unsigned right = width * (2 * t + 2) - 1;
      const T left_sum = tree[c_slot[left]];
      tree[c_slot[left]] = tree[c_slot[right]];
      tree[c_slot[right]] += left_sum;
    }
  }
  __syncthreads();
  if (lo < n) out[lo] = tree[c_slot[lo]];
  if (hi < n) out[hi] = tree[c_slot[hi]];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  unsigned short slots[kLeaves];
  for (unsigned i = 0; i < kLeaves; ++i) slots[i] = static_cast<unsigned short>(i + i / 32);
  vc::check(cudaMemcpyToSymbol(c_slot, slots, sizeof slots), "cudaMemcpyToSymbol(c_slot)");
  // the copy ran on the legacy default stream; `stream` may be a non-blocking one
  vc::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  blelloch_kernel<T><<<1, vc::kThreads, 0, stream>>>(d_in, d_out, n);
  vc::check(cudaGetLastError(), "blelloch_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
