// Three-phase block scan (thread coarsening), used by all four of my slots:
//   phase 1: each thread scans its own ITEMS consecutive elements sequentially, in registers;
//   phase 2: the block scans the THREADS per-thread totals (Kogge-Stone in shared memory);
//   phase 3: each thread adds the total of the threads before it to its elements.
// Loads and stores go through shared memory so that global accesses stay coalesced.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "scangrade/student_api.h"

namespace scangrade::student::tp {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// One padding element every 32, so that thread t reading elements t*ITEMS .. t*ITEMS+ITEMS-1
// does not hit the same bank as its neighbours.
__host__ __device__ constexpr unsigned pad(unsigned i) { return i + (i >> 5); }

template <typename T, unsigned THREADS, unsigned ITEMS>
struct ThreePhase {
  static constexpr unsigned kTileItems = THREADS * ITEMS;
  static constexpr unsigned kStageItems = pad(kTileItems - 1) + 1;  // size of the staging array

  // Shared memory the block needs.
  struct Storage {
    T stage[kStageItems];
    T totals[THREADS];
  };

  // Loads in[base .. base + kTileItems) (0 past n) so that items[k] = element t*ITEMS + k.
  __device__ static void load(const T* in, std::size_t base, std::size_t n, T (&items)[ITEMS], Storage& sm) {
    const unsigned t = threadIdx.x;
#pragma unroll
    for (unsigned k = 0; k < ITEMS; ++k) {
      const unsigned idx = k * THREADS + t;  // coalesced global read
      sm.stage[pad(idx)] = base + idx < n ? in[base + idx] : T(0);
    }
    __syncthreads();
#pragma unroll
    for (unsigned k = 0; k < ITEMS; ++k) items[k] = sm.stage[pad(t * ITEMS + k)];
    __syncthreads();  // the staging array may be reused
  }

  // Writes items back (items[k] is element t*ITEMS + k), only indices < n.
  __device__ static void store(T* out, std::size_t base, std::size_t n, const T (&items)[ITEMS], Storage& sm) {
    const unsigned t = threadIdx.x;
#pragma unroll
    for (unsigned k = 0; k < ITEMS; ++k) sm.stage[pad(t * ITEMS + k)] = items[k];
    __syncthreads();
#pragma unroll
    for (unsigned k = 0; k < ITEMS; ++k) {
      const unsigned idx = k * THREADS + t;  // coalesced global write
      if (base + idx < n) out[base + idx] = sm.stage[pad(idx)];
    }
    __syncthreads();
  }

  // Phases 1-2 on the tile in registers: items become the inclusive scan of the tile without the
  // offset of earlier threads; returns that offset (the exclusive prefix of this thread's run)
  // and the tile total in `tile_total`.
  __device__ static T local_scan(T (&items)[ITEMS], T& tile_total, Storage& sm) {
    const unsigned t = threadIdx.x;
    // phase 1: sequential scan of my run
#pragma unroll
    for (unsigned k = 1; k < ITEMS; ++k) items[k] = items[k - 1] + items[k];
    // phase 2: Kogge-Stone over the run totals, in place: read, barrier, write, barrier
    sm.totals[t] = items[ITEMS - 1];
    __syncthreads();
    for (unsigned d = 1; d < THREADS; d <<= 1) {
      const T add = t >= d ? sm.totals[t - d] : T(0);
      __syncthreads();
      if (t >= d) sm.totals[t] = add + sm.totals[t];
      __syncthreads();
    }
    const T before = t > 0 ? sm.totals[t - 1] : T(0);
    tile_total = sm.totals[THREADS - 1];
    __syncthreads();  // totals may be reused
    return before;
  }

  // Phase 3: add `offset` (earlier threads and earlier tiles) to every item; exclusive shifts by one.
  __device__ static void add_offset(T (&items)[ITEMS], T offset, bool inclusive) {
    if (inclusive) {
#pragma unroll
      for (unsigned k = 0; k < ITEMS; ++k) items[k] = offset + items[k];
    } else {
#pragma unroll
      for (unsigned k = ITEMS - 1; k > 0; --k) items[k] = offset + items[k - 1];
      items[0] = offset;
    }
  }
};

}  // namespace scangrade::student::tp
