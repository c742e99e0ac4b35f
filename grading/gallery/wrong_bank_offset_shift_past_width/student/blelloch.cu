// Slot 2: exclusive Blelloch scan of up to 2048 elements in one block of 1024 threads. Thread t loads
// elements t and t + 1024 into a shared tile that is padded against bank conflicts (GPU Gems 3,
// chapter 39): every tree index i is stored at i + pad(i).
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr int kBanks = 16;
constexpr int kLogBanks = 4;
constexpr int kThreads = 1024;
constexpr int kTile = 2 * kThreads;
constexpr int kPadded = kTile + (kTile >> kLogBanks) + (kTile >> (2 * kLogBanks));

// BUG: meant (i >> kLogBanks) + (i >> (2 * kLogBanks)), but it shifts by kBanks, not kLogBanks, and
// `+` binds tighter than `>>`: this is (i >> (16 + i)) >> 8, a shift by 16 + i bits, which is
// undefined in C++ once i >= 16. The GPU's shift instruction clamps the count to 32 (the result is 0,
// so no padding at all: correct, just bank conflicts); a CPU uses the count modulo 32 (x86), so some
// indices get a nonzero pad and land on another index's slot.
__device__ inline int pad(int i) { return i >> kBanks + i >> (2 * kLogBanks); }

template <typename T>
__global__ void blelloch_tile(const T* in, T* out, int n) {
  __shared__ T tile[kPadded];
  const int t = threadIdx.x;
  const int lo = t;
  const int hi = t + kThreads;
  tile[lo + pad(lo)] = lo < n ? in[lo] : T(0);
  tile[hi + pad(hi)] = hi < n ? in[hi] : T(0);

  // up-sweep: build the sum tree in place
  int stride = 1;
  for (int active = kTile / 2; active > 0; active /= 2) {
    __syncthreads();
    if (t < active) {
      int left = stride * (2 * t + 1) - 1;
      int right = stride * (2 * t + 2) - 1;
      left += pad(left);
      right += pad(right);
      tile[right] += tile[left];
    }
    stride *= 2;
  }
  if (t == 0) tile[kTile - 1 + pad(kTile - 1)] = T(0);

  // down-sweep: push the prefixes back down the tree
  for (int active = 1; active < kTile; active *= 2) {
    stride /= 2;
    __syncthreads();
    if (t < active) {
      int left = stride * (2 * t + 1) - 1;
      int right = stride * (2 * t + 2) - 1;
      left += pad(left);
      right += pad(right);
      const T carried = tile[left];
      tile[left] = tile[right];
      tile[right] += carried;
    }
  }
  __syncthreads();
  if (lo < n) out[lo] = tile[lo + pad(lo)];
  if (hi < n) out[hi] = tile[hi + pad(hi)];
}

template <typename T>
void blelloch(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n > kBlellochMaxN) throw std::invalid_argument("blelloch_exclusive: at most 2048 elements");
  blelloch_tile<T><<<1, kThreads, 0, stream>>>(d_in, d_out, static_cast<int>(n));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("blelloch_tile: ") + cudaGetErrorString(err));
}

}  // namespace

void blelloch_exclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}
void blelloch_exclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  blelloch(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
