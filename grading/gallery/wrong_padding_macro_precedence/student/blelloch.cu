// Slot 2: exclusive Blelloch scan of up to 2048 elements, one block of 1024 threads, after GPU Gems 3
// chapter 39: thread t owns elements t and t + 1024, and every shared-memory index is padded by one
// word per 32 so that the tree's strided accesses avoid bank conflicts.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

#define NUM_BANKS 32
#define LOG_NUM_BANKS 5
// BUG: the macro's body is not parenthesized. Most uses below are harmless (`x = OFFSET(i)`,
// `a += OFFSET(a)`), but clearing the root, `temp[kElems - 1 + CONFLICT_FREE_OFFSET(kElems - 1)]`,
// expands to `temp[kElems - 1 + kElems - 1 >> LOG_NUM_BANKS]`, and + binds tighter than >>: that
// is temp[4094 >> 5] = temp[127]. The root keeps the tile's total (which the down-sweep then adds to
// every prefix) and an unrelated node is zeroed.
#define CONFLICT_FREE_OFFSET(n) n >> LOG_NUM_BANKS

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kElems = 2 * kThreads;

template <typename T>
__global__ void prescan_kernel(const T* in, T* out, std::size_t n) {
  __shared__ T temp[kElems + kElems / NUM_BANKS];
  const unsigned thid = threadIdx.x;
  unsigned ai = thid;
  unsigned bi = thid + kThreads;
  const unsigned bank_offset_a = CONFLICT_FREE_OFFSET(ai);
  const unsigned bank_offset_b = CONFLICT_FREE_OFFSET(bi);
  temp[ai + bank_offset_a] = ai < n ? in[ai] : T(0);
  temp[bi + bank_offset_b] = bi < n ? in[bi] : T(0);

  unsigned offset = 1;
  for (unsigned d = kElems >> 1; d > 0; d >>= 1) {  // up-sweep
    __syncthreads();
    if (thid < d) {
      unsigned a = offset * (2 * thid + 1) - 1;
      unsigned b = offset * (2 * thid + 2) - 1;
      a += CONFLICT_FREE_OFFSET(a);
      b += CONFLICT_FREE_OFFSET(b);
      temp[b] += temp[a];
    }
    offset *= 2;
  }
  if (thid == 0) temp[kElems - 1 + CONFLICT_FREE_OFFSET(kElems - 1)] = T(0);
  for (unsigned d = 1; d < kElems; d *= 2) {  // down-sweep
    offset >>= 1;
    __syncthreads();
    if (thid < d) {
      unsigned a = offset * (2 * thid + 1) - 1;
      unsigned b = offset * (2 * thid + 2) - 1;
      a += CONFLICT_FREE_OFFSET(a);
      b += CONFLICT_FREE_OFFSET(b);
      const T t = temp[a];
      temp[a] = temp[b];
      temp[b] += t;
    }
  }
  __syncthreads();
  if (ai < n) out[ai] = temp[ai + bank_offset_a];
  if (bi < n) out[bi] = temp[bi + bank_offset_b];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: n > 2048");
  prescan_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("prescan_kernel: ") + cudaGetErrorString(err));
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
