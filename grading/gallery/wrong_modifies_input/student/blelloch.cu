// Slot 2: exclusive scan, Blelloch (Brent-Kung work-efficient), one thread block.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kBlellochMaxN / 2);  // 1024, two elements each
constexpr unsigned kItems = static_cast<unsigned>(kBlellochMaxN);        // tree of 2048 leaves

// The tree always has 2048 leaves; elements past n are 0, so any n <= 2048 works.
template <typename T>
__global__ void blelloch_kernel(T* in, T* out, std::size_t n) {
  __shared__ T s[kItems];
  const unsigned t = threadIdx.x;
  s[t] = t < n ? in[t] : T(0);
  s[t + kThreads] = t + kThreads < n ? in[t + kThreads] : T(0);

  // up-sweep (reduce)
  unsigned offset = 1;
  for (unsigned d = kItems / 2; d > 0; d /= 2) {
    __syncthreads();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      s[bi] += s[ai];
    }
    offset *= 2;
  }
  // clear the root
  __syncthreads();
  if (t == 0) s[kItems - 1] = T(0);

  // down-sweep
  for (unsigned d = 1; d < kItems; d *= 2) {
    offset /= 2;
    __syncthreads();
    if (t < d) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      const T left = s[ai];
      s[ai] = s[bi];
      s[bi] += left;
    }
  }
  __syncthreads();
  // BUG: the result is written back into the INPUT array (to "save memory") and copied to
  // out afterwards by the host code: d_in is modified, which the contract forbids.
  if (t < n) in[t] = s[t];
  if (t + kThreads < n) in[t + kThreads] = s[t + kThreads];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  // BUG (continued): const_cast lets the kernel overwrite d_in with the scan.
  T* scratch = const_cast<T*>(d_in);
  blelloch_kernel<T><<<1, kThreads, 0, stream>>>(scratch, d_out, n);
  cudaMemcpyAsync(d_out, scratch, n * sizeof(T), cudaMemcpyDeviceToDevice, stream);
  if (cudaGetLastError() != cudaSuccess) throw std::runtime_error("blelloch_kernel: launch failed");
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
