// Slot 2: Blelloch exclusive scan of up to 2048 elements, 1024 threads, thread t loads elements
// 2t and 2t + 1. The tree is written by node width: at width w (2, 4, ..., 2048) thread t owns the
// node ending at (t + 1) * w - 1, whose left half ends w / 2 earlier.
#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kLeaves = 2 * ws::kThreads;

template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T s[kLeaves];
  const unsigned t = threadIdx.x;
  const std::size_t i0 = 2 * static_cast<std::size_t>(t), i1 = i0 + 1;
  s[i0] = i0 < n ? in[i0] : T(0);
  s[i1] = i1 < n ? in[i1] : T(0);
  // up-sweep (reduce)
  for (unsigned w = 2; w <= kLeaves; w *= 2) {
    __syncthreads();
    const unsigned right = (t + 1) * w - 1;
    if (right < kLeaves) s[right] = s[right - w / 2] + s[right];
  }
  __syncthreads();
  if (t == 0) s[kLeaves - 1] = T(0);
  // down-sweep
  for (unsigned w = kLeaves; w >= 2; w /= 2) {
    __syncthreads();
    const unsigned right = (t + 1) * w - 1;
    if (right < kLeaves) {
      const T left_sum = s[right - w / 2];
      s[right - w / 2] = s[right];
      s[right] = s[right] + left_sum;
    }
  }
  __syncthreads();
  if (i0 < n) out[i0] = s[i0];
  if (i1 < n) out[i1] = s[i1];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  blelloch_kernel<T><<<1, ws::kThreads, 0, stream>>>(d_in, d_out, n);
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
