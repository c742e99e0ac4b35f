// Shared pieces of this submission: the coarsened three-phase block scan (Kirk & Hwu, "Programming
// Massively Parallel Processors", 11.5) and two block-wide scans of one value per thread for its
// middle phase.
//
// A tile of kThreads * kItems elements lives in shared memory; thread t owns the kItems consecutive
// elements t * kItems .. t * kItems + kItems - 1.
//   phase 1: every thread scans its own chunk sequentially (inclusive, in place);
//   phase 2: the block scans the chunk totals (one per thread; Kogge-Stone or Blelloch);
//   phase 3: every thread adds the sum of the earlier chunks to its chunk.
// Afterwards the tile holds its inclusive scan; the exclusive scan of element i is element i - 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::coarse {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Shared-memory index of tile element i when chunks are kItems long: one padding word per chunk, so
// that the threads of a warp, walking their chunks in step (stride kItems + 1, an odd number), hit
// 32 different banks.
template <unsigned kItems>
__host__ __device__ constexpr unsigned slot(unsigned i) {
  return i + i / kItems;
}
// Shared words of a padded tile: kThreads * kItems elements + one padding word per chunk.
constexpr unsigned tile_words(unsigned threads, unsigned items) { return threads * items + threads; }

// Middle phase, Kogge-Stone: returns the sum of the values of threads 0 .. t-1 (exclusive).
// buf holds 2 * kThreads elements. Every thread of the block calls it.
template <typename T, unsigned kThreads>
__device__ T kogge_stone_exclusive(T value, T* buf) {
  const unsigned t = threadIdx.x;
  unsigned src = 0;
  buf[t] = value;
  for (unsigned d = 1; d < kThreads; d *= 2) {
    __syncthreads();
    buf[(1 - src) * kThreads + t] = t >= d ? buf[src * kThreads + t] + buf[src * kThreads + t - d]
                                           : buf[src * kThreads + t];
    src = 1 - src;
  }
  __syncthreads();
  const T before = t > 0 ? buf[src * kThreads + t - 1] : T(0);
  __syncthreads();  // buf may be reused by the caller
  return before;
}

// Middle phase, Blelloch (up-sweep, then down-sweep): returns the sum of the values of threads
// 0 .. t-1. buf holds kThreads elements (a power of two). Every thread of the block calls it.
template <typename T, unsigned kThreads>
__device__ T blelloch_exclusive(T value, T* buf) {
  const unsigned t = threadIdx.x;
  buf[t] = value;
  unsigned offset = 1;
  for (unsigned active = kThreads / 2; active > 0; active /= 2) {  // up-sweep
    __syncthreads();
    if (t < active) buf[offset * (2 * t + 2) - 1] += buf[offset * (2 * t + 1) - 1];
    offset *= 2;
  }
  __syncthreads();
  if (t == 0) buf[kThreads - 1] = T(0);
  for (unsigned active = 1; active < kThreads; active *= 2) {  // down-sweep
    offset /= 2;
    __syncthreads();
    if (t < active) {
      const unsigned ai = offset * (2 * t + 1) - 1;
      const unsigned bi = offset * (2 * t + 2) - 1;
      const T left = buf[ai];
      buf[ai] = buf[bi];
      buf[bi] += left;
    }
  }
  __syncthreads();
  const T before = buf[t];
  __syncthreads();  // buf may be reused by the caller
  return before;
}

enum class Middle { KoggeStone, Blelloch };

// The three phases over tile[slot(0)] .. tile[slot(kThreads * kItems - 1)] (unused elements 0).
// scratch: 2 * kThreads elements for the middle phase. Returns the tile's total to every thread.
template <typename T, unsigned kThreads, unsigned kItems, Middle kMiddle>
__device__ T three_phase_tile(T* tile, T* scratch) {
  const unsigned first = threadIdx.x * kItems;
  // phase 1: sequential inclusive scan of my chunk
  __syncthreads();  // the tile was loaded by other threads
  T running = T(0);
  for (unsigned j = 0; j < kItems; ++j) {
    running += tile[slot<kItems>(first + j)];
    tile[slot<kItems>(first + j)] = running;
  }
  // phase 2: the chunk totals, scanned across the block
  const T before = kMiddle == Middle::KoggeStone ? kogge_stone_exclusive<T, kThreads>(running, scratch)
                                                 : blelloch_exclusive<T, kThreads>(running, scratch);
  // phase 3: add the earlier chunks' sum to my chunk
  for (unsigned j = 0; j < kItems; ++j) tile[slot<kItems>(first + j)] += before;
  __syncthreads();
  return tile[slot<kItems>(kThreads * kItems - 1)];
}

// Coalesced load of tile elements [base, base + kThreads * kItems) of in (zeros past n), and store.
template <typename T, unsigned kThreads, unsigned kItems>
__device__ void load_tile(const T* in, std::size_t base, std::size_t n, T* tile) {
  for (unsigned k = 0; k < kItems; ++k) {
    const unsigned i = k * kThreads + threadIdx.x;
    tile[slot<kItems>(i)] = base + i < n ? in[base + i] : T(0);
  }
}

// Stores the tile's inclusive scan (or, exclusive, element i - 1; 0 for i == 0) plus `offset`.
template <typename T, unsigned kThreads, unsigned kItems>
__device__ void store_tile(const T* tile, std::size_t base, std::size_t n, bool inclusive, T offset, T* out) {
  for (unsigned k = 0; k < kItems; ++k) {
    const unsigned i = k * kThreads + threadIdx.x;
    if (base + i >= n) continue;
    const T local = inclusive ? tile[slot<kItems>(i)] : (i > 0 ? tile[slot<kItems>(i - 1)] : T(0));
    out[base + i] = offset + local;
  }
}

}  // namespace scangrade::student::coarse
