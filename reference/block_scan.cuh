// Block-level routines of the reference scans: Kogge-Stone and Brent-Kung (Blelloch) block scans,
// the tile exchange between coalesced global order and per-thread order, and the block-wide scan
// of one value per thread. Thread-level helpers come first.
#pragma once

#include <cstddef>

#include "tuning.h"
#include "warp_scan.cuh"

namespace scangrade::reference {

// ---------------------------------------------------------------------------------------------
// thread-level helpers

/// Sum of a thread's items.
template <typename T, int kItems>
__device__ __forceinline__ T thread_reduce(const T (&items)[kItems]) {
  T sum = items[0];
#pragma unroll
  for (int k = 1; k < kItems; ++k) sum += items[k];
  return sum;
}

/// Sequential scan of a thread's items in place, seeded with `prefix` (inclusive or exclusive).
template <typename T, int kItems>
__device__ __forceinline__ void thread_scan(T (&items)[kItems], T prefix, bool exclusive) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const T x = items[k];
    if (exclusive) {
      items[k] = prefix;
      prefix += x;
    } else {
      prefix += x;
      items[k] = prefix;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// bank-conflict-avoiding index padding

/// CONFLICT_FREE_OFFSET-style padding: one extra word after every 32, so that strided accesses
/// (the Blelloch tree, the tile transpose) fall into different banks.
__host__ __device__ constexpr int conflict_free_index(int i) { return i + (i >> tuning::kLogNumBanks); }

/// Shared-memory elements needed to hold `items` padded elements.
__host__ __device__ constexpr int padded_size(int items) { return conflict_free_index(items - 1) + 1; }

// ---------------------------------------------------------------------------------------------
// Kogge-Stone (Hillis-Steele) block scan

/// Inclusive scan of one value per thread across the block (any blockDim.x up to the buffers'
/// length). Double-buffered: each step reads one buffer and writes the other, so one barrier
/// per step is enough and no thread reads a slot that another thread is overwriting.
template <typename T>
__device__ T kogge_stone_inclusive(T value, T* ping, T* pong) {
  const int tid = threadIdx.x;
  T* src = ping;
  T* dst = pong;
  src[tid] = value;
  __syncthreads();
  for (int offset = 1; offset < static_cast<int>(blockDim.x); offset <<= 1) {
    T x = src[tid];
    if (tid >= offset) x += src[tid - offset];
    dst[tid] = x;
    __syncthreads();
    T* t = src;
    src = dst;
    dst = t;
  }
  return src[tid];
}

// ---------------------------------------------------------------------------------------------
// Brent-Kung (Blelloch) block scan

/// Exclusive scan in place of `m = 2 * blockDim.x` elements (m a power of two) held in `s` at
/// padded indices conflict_free_index(i); two elements per thread. The caller fills s (padding
/// past its n with the identity) before the call and reads s after it. Returns the total.
template <typename T>
__device__ T blelloch_exclusive_inplace(T* s) {
  const int tid = threadIdx.x;
  const int m = 2 * static_cast<int>(blockDim.x);
  int stride = 1;

  // up-sweep (reduce): build partial sums in place up the tree
  for (int active = m >> 1; active > 0; active >>= 1) {
    __syncthreads();
    if (tid < active) {
      const int ai = stride * (2 * tid + 1) - 1;
      const int bi = stride * (2 * tid + 2) - 1;
      s[conflict_free_index(bi)] += s[conflict_free_index(ai)];
    }
    stride <<= 1;
  }

  // clear the root (keep the total)
  __syncthreads();
  const T total = s[conflict_free_index(m - 1)];
  __syncthreads();
  if (tid == 0) s[conflict_free_index(m - 1)] = T(0);

  // down-sweep: push prefixes down the tree
  for (int active = 1; active < m; active <<= 1) {
    stride >>= 1;
    __syncthreads();
    if (tid < active) {
      const int ai = conflict_free_index(stride * (2 * tid + 1) - 1);
      const int bi = conflict_free_index(stride * (2 * tid + 2) - 1);
      const T left = s[ai];
      s[ai] = s[bi];
      s[bi] += left;
    }
  }
  __syncthreads();
  return total;
}

// ---------------------------------------------------------------------------------------------
// block-wide scan of one value per thread (warp shuffles + one warp over the warp totals)

/// Exclusive sum of `value` across the block (blockDim.x == kThreads, whole warps). Returns this
/// thread's exclusive prefix and sets `aggregate` (in every thread) to the block's total.
/// `warp_totals` is shared memory of kThreads / 32 elements; call once per kernel.
template <typename T, int kThreads>
__device__ T block_exclusive_sum(T value, T& aggregate, T* warp_totals) {
  constexpr int kWarps = kThreads / tuning::kWarpThreads;
  const int lane = threadIdx.x % tuning::kWarpThreads;
  const int warp = threadIdx.x / tuning::kWarpThreads;

  // scan within each warp
  const T inclusive = warp_inclusive_sum(value);
  if (lane == tuning::kWarpThreads - 1) warp_totals[warp] = inclusive;
  __syncthreads();

  // scan the warp totals in warp 0 (inclusive, in place)
  if (warp == 0) {
    const T total = lane < kWarps ? warp_totals[lane] : T(0);
    const T scanned = warp_inclusive_sum(total);
    if (lane < kWarps) warp_totals[lane] = scanned;
  }
  __syncthreads();

  // combine: earlier warps' totals + earlier lanes of this warp
  T exclusive = __shfl_up_sync(kFullWarpMask, inclusive, 1);
  if (lane == 0) exclusive = T(0);
  aggregate = warp_totals[kWarps - 1];
  return warp == 0 ? exclusive : warp_totals[warp - 1] + exclusive;
}

// ---------------------------------------------------------------------------------------------
// tile exchange: coalesced (striped) global accesses <-> blocked registers

/// Loads tile elements [base, base + kThreads * kItems) into `items` in blocked order (thread t
/// gets elements t * kItems ...), reading global memory striped (coalesced) through the padded
/// shared buffer `exchange` (padded_size(kThreads * kItems) elements). Elements at or past n
/// read as the identity; nothing past n is touched.
template <typename T, int kThreads, int kItems>
__device__ void load_tile_blocked(const T* in, std::size_t base, std::size_t n, T (&items)[kItems], T* exchange) {
  const bool full = base + kThreads * kItems <= n;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = k * kThreads + threadIdx.x;
    exchange[conflict_free_index(i)] = (full || base + i < n) ? in[base + i] : T(0);
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kItems; ++k) items[k] = exchange[conflict_free_index(threadIdx.x * kItems + k)];
  __syncthreads();  // exchange may be reused
}

/// Inverse of load_tile_blocked: writes the blocked `items` to out[base ...], striped, only
/// below n.
template <typename T, int kThreads, int kItems>
__device__ void store_tile_blocked(T* out, std::size_t base, std::size_t n, const T (&items)[kItems], T* exchange) {
  const bool full = base + kThreads * kItems <= n;
#pragma unroll
  for (int k = 0; k < kItems; ++k) exchange[conflict_free_index(threadIdx.x * kItems + k)] = items[k];
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = k * kThreads + threadIdx.x;
    if (full || base + i < n) out[base + i] = exchange[conflict_free_index(i)];
  }
}

/// Loads tile elements [base, base + kThreads * kItems) into the padded shared buffer `exchange`
/// (element i at conflict_free_index(i)), reading global memory striped (coalesced); elements at or
/// past n read as the identity, nothing past n is touched. Ends with a barrier: every thread may
/// then work on any element (blocked: thread t's are t * kItems ...).
template <typename T, int kThreads, int kItems>
__device__ void load_tile_shared(const T* in, std::size_t base, std::size_t n, T* exchange) {
  constexpr int kTile = kThreads * kItems;
  const T* tile = in + base;
  const int valid = n - base < kTile ? static_cast<int>(n - base) : kTile;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = k * kThreads + threadIdx.x;
    exchange[conflict_free_index(i)] = i < valid ? tile[i] : T(0);
  }
  __syncthreads();
}

/// Writes the tile held in `exchange` (as load_tile_shared left it) to out[base ...], striped,
/// only below n. Begins with a barrier (the threads' last writes to exchange).
template <typename T, int kThreads, int kItems>
__device__ void store_tile_shared(T* out, std::size_t base, std::size_t n, const T* exchange) {
  constexpr int kTile = kThreads * kItems;
  T* tile = out + base;
  const int valid = n - base < kTile ? static_cast<int>(n - base) : kTile;
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = k * kThreads + threadIdx.x;
    if (i < valid) tile[i] = exchange[conflict_free_index(i)];
  }
}

}  // namespace scangrade::reference
