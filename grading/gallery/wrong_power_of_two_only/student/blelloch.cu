// Slot 2: exclusive scan, Blelloch (Brent-Kung work-efficient), one thread block.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = static_cast<unsigned>(kBlellochMaxN / 2);  // 1024

// Two elements per thread (2t and 2t + 1), the tree built over the n elements themselves.
// BUG: the tree has n leaves and log2(n) levels (rounded down), which is only a complete binary
// tree when n is a power of two. For any other n (1000, 1023, 1500, ...) the up-sweep does not
// reach every element, the root is not s[n - 1], and the down-sweep distributes wrong prefixes.
// The fix: pad the tree with zeros up to the next power of two (or to 2048).
template <typename T>
__global__ void blelloch_kernel(const T* in, T* out, unsigned n) {
  __shared__ T s[kBlellochMaxN];
  const unsigned t = threadIdx.x;
  if (2 * t < n) s[2 * t] = in[2 * t];
  if (2 * t + 1 < n) s[2 * t + 1] = in[2 * t + 1];
  const unsigned levels = 31 - __clz(static_cast<int>(n));  // log2(n), assuming a power of two

  // up-sweep: level l combines pairs 2^l apart; n >> (l + 1) threads work
  for (unsigned l = 0; l < levels; ++l) {
    __syncthreads();
    const unsigned stride = 1u << l;
    if (t < (n >> (l + 1))) {
      const unsigned ai = stride * (2 * t + 1) - 1;
      const unsigned bi = stride * (2 * t + 2) - 1;
      s[bi] += s[ai];
    }
  }
  __syncthreads();
  if (t == 0) s[n - 1] = T(0);  // the root (only for a power of two)

  // down-sweep
  for (unsigned l = levels; l-- > 0;) {
    __syncthreads();
    const unsigned stride = 1u << l;
    if (t < (n >> (l + 1))) {
      const unsigned ai = stride * (2 * t + 1) - 1;
      const unsigned bi = stride * (2 * t + 2) - 1;
      const T left = s[ai];
      s[ai] = s[bi];
      s[bi] += left;
    }
  }
  __syncthreads();
  if (2 * t < n) out[2 * t] = s[2 * t];
  if (2 * t + 1 < n) out[2 * t + 1] = s[2 * t + 1];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  blelloch_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, static_cast<unsigned>(n));
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
