// Warp-shuffle scans used by all my slots: a warp scans 32 values in registers with
// __shfl_up_sync; a block scans one value per thread as warp scans + a scan of the warp totals by
// the first warp. Blocks must be whole warps (blockDim.x a multiple of 32) and every thread must
// call the block routines.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::ws {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned kWarp = 32;

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Inclusive scan of one value per lane (Kogge-Stone over registers, 5 shuffles).
template <typename T>
__device__ T warp_inclusive_scan(T x) {
  const unsigned lane = threadIdx.x % kWarp;
#pragma unroll
  for (unsigned d = 1; d < kWarp; d <<= 1) {
    const T y = __shfl_up_sync(kFullMask, x, d);
    if (lane >= d) x = y + x;
  }
  return x;
}

// Sum over the warp, every lane gets it.
template <typename T>
__device__ T warp_sum(T x) {
#pragma unroll
  for (unsigned d = kWarp / 2; d > 0; d >>= 1) x += __shfl_xor_sync(kFullMask, x, d);
  return x;
}

// Block-wide scan of one value per thread; warp_totals is __shared__ T[32].
// Returns the inclusive prefix, sets the exclusive prefix and the block total.
template <typename T>
__device__ T block_scan(T x, T* warp_totals, T& exclusive, T& total) {
  const unsigned lane = threadIdx.x % kWarp;
  const unsigned warp = threadIdx.x / kWarp;
  const unsigned warps = blockDim.x / kWarp;
  // scan within each warp
  const T in_warp = warp_inclusive_scan(x);
  if (lane == kWarp - 1) warp_totals[warp] = in_warp;
  __syncthreads();
  // the first warp scans the warp totals
  if (warp == 0) {
    const T w = lane < warps ? warp_totals[lane] : T(0);
    warp_totals[lane] = warp_inclusive_scan(w);
  }
  __syncthreads();
  // add the totals of the earlier warps
  const T warp_offset = warp > 0 ? warp_totals[warp - 1] : T(0);
  const T in_warp_exclusive = __shfl_up_sync(kFullMask, in_warp, 1);
  exclusive = lane > 0 ? warp_offset + in_warp_exclusive : warp_offset;
  total = warp_totals[warps - 1];
  __syncthreads();  // warp_totals may be reused
  return warp_offset + in_warp;
}

// A tile of CHUNKS * blockDim.x elements scanned as CHUNKS consecutive block-wide chunks
// (chunk c is elements c*blockDim.x .. (c+1)*blockDim.x - 1: coalesced loads and stores),
// carrying the running total from chunk to chunk. Writes out[base + i] for base + i < n with
// offset + (inclusive or exclusive prefix). Returns the tile total.
// in may equal out: a chunk is read before it is written and chunks do not overlap.
template <typename T, unsigned CHUNKS>
__device__ T tile_scan(const T* in, T* out, std::size_t base, std::size_t n, bool inclusive, T offset,
                       T* warp_totals) {
  T carry = T(0);
#pragma unroll 1
  for (unsigned c = 0; c < CHUNKS; ++c) {
    const std::size_t i = base + static_cast<std::size_t>(c) * blockDim.x + threadIdx.x;
    const T x = i < n ? in[i] : T(0);
    T exclusive, total;
    const T incl = block_scan(x, warp_totals, exclusive, total);
    if (i < n) out[i] = offset + (carry + (inclusive ? incl : exclusive));
    carry = carry + total;
  }
  return carry;
}

}  // namespace scangrade::student::ws
