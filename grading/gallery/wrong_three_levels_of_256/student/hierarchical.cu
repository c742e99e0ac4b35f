// Slot 3: hierarchical scan with three fixed levels of 256-element tiles.
//   level 1: the input, in tiles of 256 (one element per thread), tile totals to sums1;
//   level 2: sums1, scanned exclusively in place in tiles of 256, tile totals to sums2;
//   level 3: sums2, scanned exclusively in place by one block;
//   then the scanned sums2 are added to the level-2 tiles and the scanned sums1 to the input tiles.
// Each tile is scanned with warp shuffles: an inclusive scan in every warp, then the 8 warp totals.
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kTile = 256;
constexpr unsigned kWarps = kTile / 32;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

template <typename T>
__device__ T warp_inclusive(T v) {
  const unsigned lane = threadIdx.x % 32;
  for (unsigned d = 1; d < 32; d *= 2) {
    const T up = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// One tile per block. in may equal out: each thread reads its element before anything is written.
template <typename T>
__global__ void scan_tile_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* tile_totals) {
  __shared__ T warp_totals[kWarps];
  __shared__ T scanned[kTile];
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + t;
  const T x = i < n ? in[i] : T(0);
  T v = warp_inclusive(x);
  if (lane == 31) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < kWarps ? warp_totals[lane] : T(0);
    w = warp_inclusive(w);
    if (lane < kWarps) warp_totals[lane] = w;
  }
  __syncthreads();
  if (warp > 0) v += warp_totals[warp - 1];
  scanned[t] = v;
  __syncthreads();
  if (i < n) out[i] = inclusive ? v : (t > 0 ? scanned[t - 1] : T(0));
  if (tile_totals != nullptr && t == kTile - 1) tile_totals[blockIdx.x] = v;
}

template <typename T>
__global__ void add_offsets_kernel(T* out, std::size_t n, const T* offsets) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  if (i < n) out[i] += offsets[blockIdx.x];
}

std::size_t tiles_of(std::size_t n) { return (n + kTile - 1) / kTile; }

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  const bool inclusive = kind == ScanKind::Inclusive;
  const std::size_t tiles1 = tiles_of(n);
  const std::size_t tiles2 = tiles_of(tiles1);
  T* sums1 = nullptr;
  T* sums2 = nullptr;
  if (tiles1 > 1) check(cudaMallocAsync(&sums1, (tiles1 + tiles2) * sizeof(T), stream), "cudaMallocAsync");
  if (tiles1 > 1) sums2 = sums1 + tiles1;
  // level 1
  scan_tile_kernel<T><<<static_cast<unsigned>(tiles1), kTile, 0, stream>>>(d_in, d_out, n, inclusive, sums1);
  if (tiles1 > 1) {
    // level 2
    scan_tile_kernel<T><<<static_cast<unsigned>(tiles2), kTile, 0, stream>>>(sums1, sums1, tiles1, false,
                                                                                tiles2 > 1 ? sums2 : nullptr);
    if (tiles2 > 1) {
      // level 3
      // BUG: one block of 256 threads scans sums2, but sums2 has tiles2 = ceil(n / 65536) entries:
      // more than 256 when n > 256^3 = 16777216, and entries 256 and later are never scanned (a
      // fourth level is missing). Wrong for every n > 2^24 (public: 2^26).
      scan_tile_kernel<T><<<1, kTile, 0, stream>>>(sums2, sums2, tiles2, false, nullptr);
      add_offsets_kernel<T><<<static_cast<unsigned>(tiles2), kTile, 0, stream>>>(sums1, tiles1, sums2);
    }
    add_offsets_kernel<T><<<static_cast<unsigned>(tiles1), kTile, 0, stream>>>(d_out, n, sums1);
  }
  const cudaError_t err = cudaGetLastError();
  if (sums1 != nullptr) cudaFreeAsync(sums1, stream);
  check(err, "hierarchical_scan");
}

}  // namespace

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  hierarchical(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  hierarchical(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
