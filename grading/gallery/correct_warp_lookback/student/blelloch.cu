// Slot 2: exclusive Blelloch scan of up to 2048 elements in one block of 1024 threads: thread t loads
// elements t and t + 1024 (coalesced) into a 2048-leaf tree (zeros past n), up-sweep, clear the
// root, down-sweep.
#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kLeaves = 2 * kThreads;

template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T tree[kLeaves];
  const unsigned t = threadIdx.x;
  tree[t] = t < n ? in[t] : T(0);
  tree[t + kThreads] = t + kThreads < n ? in[t + kThreads] : T(0);
  unsigned step = 1;
  // up-sweep: pairs at distance step, from the leaves to the root
  for (unsigned pairs = kLeaves / 2; pairs > 0; pairs /= 2, step *= 2) {
    __syncthreads();
    if (t < pairs) tree[step * (2 * t + 2) - 1] += tree[step * (2 * t + 1) - 1];
  }
  __syncthreads();
  if (t == 0) tree[kLeaves - 1] = T(0);
  // down-sweep: from the root to the leaves
  for (unsigned pairs = 1; pairs < kLeaves; pairs *= 2) {
    step /= 2;
    __syncthreads();
    if (t < pairs) {
      const unsigned left = step * (2 * t + 1) - 1;
      const unsigned right = step * (2 * t + 2) - 1;
      const T l = tree[left];
      tree[left] = tree[right];
      tree[right] += l;
    }
  }
  __syncthreads();
  if (t < n) out[t] = tree[t];
  if (t + kThreads < n) out[t + kThreads] = tree[t + kThreads];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  blelloch_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  ws::check(cudaGetLastError(), "blelloch_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
