// Slot 3: hierarchical scan, two levels.
//   level 1: every block scans a 2048-element tile (Blelloch, 1024 threads) and writes its total;
//   level 2: one block scans the (at most 2048) tile totals, exclusively, in place;
//   then every tile but the first adds the scanned total of the tiles before it.
#include <cassert>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr unsigned kTile = 2 * kThreads;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

template <typename T>
__device__ T blelloch_tile(T* s) {  // exclusive scan of s[0 .. kTile-1] in place; returns the total
  const unsigned t = threadIdx.x;
  unsigned stride = 1;
  for (unsigned active = kTile / 2; active > 0; active /= 2, stride *= 2) {  // up-sweep
    __syncthreads();
    if (t < active) s[stride * (2 * t + 2) - 1] += s[stride * (2 * t + 1) - 1];
  }
  __syncthreads();
  const T total = s[kTile - 1];
  __syncthreads();
  if (t == 0) s[kTile - 1] = T(0);
  for (unsigned active = 1; active < kTile; active *= 2) {  // down-sweep
    stride /= 2;
    __syncthreads();
    if (t < active) {
      const unsigned left = stride * (2 * t + 1) - 1, right = stride * (2 * t + 2) - 1;
      const T l = s[left];
      s[left] = s[right];
      s[right] += l;
    }
  }
  __syncthreads();
  return total;
}

template <typename T>
__global__ void tile_scan_kernel(const T* in, T* out, std::size_t n, bool inclusive, T* totals) {
  __shared__ T s[kTile];
  const std::size_t base = static_cast<std::size_t>(blockIdx.x) * kTile;
  const unsigned a = threadIdx.x, b = threadIdx.x + kThreads;
  const T xa = base + a < n ? in[base + a] : T(0);
  const T xb = base + b < n ? in[base + b] : T(0);
  s[a] = xa;
  s[b] = xb;
  const T total = blelloch_tile(s);
  if (base + a < n) out[base + a] = inclusive ? s[a] + xa : s[a];
  if (base + b < n) out[base + b] = inclusive ? s[b] + xb : s[b];
  if (totals != nullptr && threadIdx.x == 0) totals[blockIdx.x] = total;
}

template <typename T>
__global__ void add_totals_kernel(T* out, std::size_t n, const T* scanned_totals) {
  const std::size_t base = (static_cast<std::size_t>(blockIdx.x) + 1) * kTile;  // tiles 1, 2, ...
  const T offset = scanned_totals[blockIdx.x + 1];
  if (base + threadIdx.x < n) out[base + threadIdx.x] += offset;
  if (base + threadIdx.x + kThreads < n) out[base + threadIdx.x + kThreads] += offset;
}

template <typename T>
void hierarchical(const T* d_in, T* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  if (n == 0) return;
  // BUG: two levels hold at most 2048 * 2048 elements, and instead of a third level (recursion)
  // the limit is asserted: the grader compiles without -DNDEBUG, so for any larger n the assert
  // fires and the process aborts (SIGABRT).
  assert(n <= 2048 * 2048 && "two levels of 2048-element tiles");
  const bool inclusive = kind == ScanKind::Inclusive;
  const unsigned tiles = static_cast<unsigned>((n + kTile - 1) / kTile);
  if (tiles == 1) {
    tile_scan_kernel<T><<<1, kThreads, 0, stream>>>(d_in, d_out, n, inclusive, nullptr);
    check(cudaGetLastError(), "tile_scan_kernel");
    return;
  }
  T* totals = nullptr;
  check(cudaMallocAsync(&totals, tiles * sizeof(T), stream), "cudaMallocAsync");
  tile_scan_kernel<T><<<tiles, kThreads, 0, stream>>>(d_in, d_out, n, inclusive, totals);
  tile_scan_kernel<T><<<1, kThreads, 0, stream>>>(totals, totals, tiles, /*inclusive=*/false, nullptr);
  add_totals_kernel<T><<<tiles - 1, kThreads, 0, stream>>>(d_out, n, totals);
  const cudaError_t err = cudaGetLastError();
  cudaFreeAsync(totals, stream);
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
