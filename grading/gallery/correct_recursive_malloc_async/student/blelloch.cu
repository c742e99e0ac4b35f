// Slot 2: exclusive Blelloch scan of up to 2048 elements: one block of 1024 threads, thread t owns
// the adjacent leaves 2t and 2t + 1 of a 2048-leaf tree (zeros past n, so any n works).
#include "tile_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kLeaves = 2 * kThreads;

template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T tree[kLeaves];
  const unsigned t = threadIdx.x;
  const unsigned left = 2 * t;
  const unsigned right = 2 * t + 1;
  tree[left] = left < n ? in[left] : T(0);
  tree[right] = right < n ? in[right] : T(0);
  // up-sweep
  unsigned offset = 1;
  for (unsigned active = kThreads; active > 0; active /= 2) {
    __syncthreads();
    if (t < active) tree[offset * (2 * t + 2) - 1] += tree[offset * (2 * t + 1) - 1];
    offset *= 2;
  }
  // clear the root (thread 0 wrote it last, in the final up-sweep step)
  if (t == 0) tree[kLeaves - 1] = T(0);
  // down-sweep
  for (unsigned active = 1; active <= kThreads; active *= 2) {
    offset /= 2;
    __syncthreads();
    if (t < active) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      const T l = tree[ai];
      tree[ai] = tree[bi];
      tree[bi] += l;
    }
  }
  __syncthreads();
  if (left < n) out[left] = tree[left];
  if (right < n) out[right] = tree[right];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  blelloch_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  rma::check(cudaGetLastError(), "blelloch_kernel");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
