// Slot 4 reference: single-pass inclusive scan with decoupled look-back.
// Each block takes the next tile index from an atomic counter (so it only ever waits on tiles
// that blocks already running have taken: no deadlock whatever the scheduling order), scans its
// tile, and finds the sum of all earlier tiles from their 64-bit status words:
//   high 32 bits: X (invalid, not yet published) / A (tile aggregate) / P (inclusive prefix)
//   low 32 bits:  the value's bits (int32 as is, float via __float_as_uint)
// written with one 64-bit atomicExch, read with volatile 64-bit loads.
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "block_scan.cuh"
#include "host_utils.h"
#include "reference.h"
#include "tuning.h"
#include "warp_scan.cuh"

// Experiment switches (tools/bench_reference_variants.sh)
#ifndef SCANGRADE_SINGLE_PASS_WIDE
#define SCANGRADE_SINGLE_PASS_WIDE 0  // > 0: the look-back's later windows are 32 x WIDE words
#endif
#ifndef SCANGRADE_SINGLE_PASS_BLOCK_LOOKBACK
#define SCANGRADE_SINGLE_PASS_BLOCK_LOOKBACK 0  // 1: the whole block looks back, kThreads words a step
#endif
#ifndef SCANGRADE_SINGLE_PASS_SHARED_TILE
#define SCANGRADE_SINGLE_PASS_SHARED_TILE 1  // 0: the tile in registers across the look-back
#endif
#ifndef SCANGRADE_SINGLE_PASS_PERSISTENT
#define SCANGRADE_SINGLE_PASS_PERSISTENT 0  // 1: as many blocks as fit at once, each taking tile after tile
#endif
#ifndef SCANGRADE_SINGLE_PASS_SPIN_NS
#define SCANGRADE_SINGLE_PASS_SPIN_NS 0  // > 0: a look-back reader that finds X sleeps this long before reading again
#endif
#ifndef SCANGRADE_SINGLE_PASS_PUBLISH_STORE
#define SCANGRADE_SINGLE_PASS_PUBLISH_STORE 0  // 1: a status word is published with a volatile store, not atomicExch
#endif
#ifndef SCANGRADE_SINGLE_PASS_CLEAR
#define SCANGRADE_SINGLE_PASS_CLEAR 0  // 0: cudaMemsetAsync; 1: clear_kernel; 2: clear_kernel + programmatic dependent launch
#endif
#if SCANGRADE_SINGLE_PASS_CLEAR == 2 && !defined(SCANGRADE_EMULATION)
#define SCANGRADE_SINGLE_PASS_PDL 1
#else
#define SCANGRADE_SINGLE_PASS_PDL 0
#endif

namespace scangrade::reference {
namespace {

constexpr int kTileItems = tuning::kSinglePassItems;
constexpr int kTileItemsPerThread = tuning::kSinglePassItemsPerThread;
constexpr int kTileThreads = tuning::kSinglePassThreads;
using StatusWord = unsigned long long;

enum : unsigned { kStatusInvalid = 0, kStatusAggregate = 1, kStatusPrefix = 2 };

__device__ __forceinline__ unsigned value_bits(std::int32_t v) { return static_cast<unsigned>(v); }
__device__ __forceinline__ unsigned value_bits(float v) { return __float_as_uint(v); }
template <typename T> __device__ __forceinline__ T value_from_bits(unsigned bits);
template <> __device__ __forceinline__ std::int32_t value_from_bits<std::int32_t>(unsigned bits) { return static_cast<std::int32_t>(bits); }
template <> __device__ __forceinline__ float value_from_bits<float>(unsigned bits) { return __uint_as_float(bits); }

/// Publishes (flag, value) for `tile` as one 64-bit atomic store. No fence before it: a reader
/// needs nothing but this word (flag and value travel together, and a 64-bit access is never torn),
/// so no earlier write has to be visible first. (A __threadfence here cost 4-5% of the copy's speed
/// at 2^26-2^28 on an H100.)
template <typename T>
__device__ void publish(StatusWord* status, unsigned tile, unsigned flag, T value) {
#if SCANGRADE_SINGLE_PASS_PUBLISH_STORE
  *reinterpret_cast<volatile StatusWord*>(status + tile) = (static_cast<StatusWord>(flag) << 32) | value_bits(value);
#else
  atomicExch(status + tile, (static_cast<StatusWord>(flag) << 32) | value_bits(value));
#endif
}

/// Run by the block's first warp. Publishes the tile's aggregate (A), looks back over the status
/// words of earlier tiles 32 at a time (lane 31 = the closest) until one holds an inclusive prefix
/// (P), publishes the tile's own inclusive prefix (P) and returns the sum of all earlier tiles.
template <typename T>
__device__ T decoupled_lookback(StatusWord* status, unsigned tile, T aggregate) {
  const int lane = threadIdx.x % tuning::kWarpThreads;
  if (tile == 0) {
    if (lane == 0) publish(status, 0, kStatusPrefix, aggregate);
    return T(0);
  }
  if (lane == 0) publish(status, tile, kStatusAggregate, aggregate);

  T exclusive = T(0);
  for (long long window_end = tile;; window_end -= tuning::kWarpThreads) {
    // read predecessor j (spin while invalid); before tile 0 reads as P with the identity
    const long long j = window_end - tuning::kWarpThreads + lane;
    unsigned flag = kStatusPrefix;
    T value = T(0);
    if (j >= 0) {
      const volatile StatusWord* word = status + j;
      StatusWord w;
      while (((w = *word) >> 32) == kStatusInvalid) {
#if SCANGRADE_SINGLE_PASS_SPIN_NS > 0
        __nanosleep(SCANGRADE_SINGLE_PASS_SPIN_NS);
#endif
      }
      flag = static_cast<unsigned>(w >> 32);
      value = value_from_bits<T>(static_cast<unsigned>(w));
    }
    // sum the window from the closest P (highest such lane) to lane 31; all of it if no P
    const unsigned prefix_lanes = __ballot_sync(kFullWarpMask, flag == kStatusPrefix);
    const bool counts = (prefix_lanes >> lane) <= 1u;  // no P lane above this one
    exclusive += warp_sum(counts ? value : T(0));
    if (prefix_lanes != 0) break;
  }
  if (lane == 0) publish(status, tile, kStatusPrefix, exclusive + aggregate);
  return exclusive;
}

/// The look-back with the whole block: like decoupled_lookback, but a window is kThreads status
/// words (thread kThreads - 1 = the closest), each warp sums its part from its closest P on and
/// warp 0 combines the warps' parts. Called by every thread; thread 0 gets the result (the sum of
/// all earlier tiles). `warp_sums` / `warp_prefix`: kThreads / 32 shared elements each, `done` one.
template <typename T, int kThreads>
__device__ T block_lookback(StatusWord* status, unsigned tile, T aggregate, T* warp_sums, unsigned* warp_prefix,
                            unsigned* done) {
  constexpr int kWarps = kThreads / tuning::kWarpThreads;
  const int lane = threadIdx.x % tuning::kWarpThreads;
  const int warp = threadIdx.x / tuning::kWarpThreads;
  if (tile == 0) {
    if (threadIdx.x == 0) publish(status, 0, kStatusPrefix, aggregate);
    return T(0);
  }
  if (threadIdx.x == 0) publish(status, tile, kStatusAggregate, aggregate);

  T exclusive = T(0);
  for (long long window_end = tile;; window_end -= kThreads) {
    const long long j = window_end - kThreads + threadIdx.x;
    unsigned flag = kStatusPrefix;
    T value = T(0);
    if (j >= 0) {
      const volatile StatusWord* word = status + j;
      StatusWord w;
      do {
        w = *word;
      } while ((w >> 32) == kStatusInvalid);
      flag = static_cast<unsigned>(w >> 32);
      value = value_from_bits<T>(static_cast<unsigned>(w));
    }
    const unsigned prefix_lanes = __ballot_sync(kFullWarpMask, flag == kStatusPrefix);
    const T part = warp_sum((prefix_lanes >> lane) <= 1u ? value : T(0));
    if (lane == 0) {
      warp_sums[warp] = part;
      warp_prefix[warp] = prefix_lanes != 0;
    }
    __syncthreads();
    if (warp == 0) {
      const bool has = lane < kWarps && warp_prefix[lane] != 0;
      const unsigned prefix_warps = __ballot_sync(kFullWarpMask, has);
      const T sum = warp_sum(lane < kWarps && (prefix_warps >> lane) <= 1u ? warp_sums[lane] : T(0));
      if (lane == 0) {
        exclusive += sum;
        done[0] = prefix_warps != 0;
      }
    }
    __syncthreads();
    if (done[0] != 0) break;
  }
  if (threadIdx.x == 0) publish(status, tile, kStatusPrefix, exclusive + aggregate);
  return exclusive;
}

/// One step of the look-back over the window of 32 x kWords status words that ends before
/// `window_end` (lane l reads kWords consecutive words, all loads issued at once, then again the
/// ones still X; a word before tile 0 reads as P with the identity). Adds the window's sum from its
/// closest P on (all of it if none) to `exclusive`; returns whether the window held a P.
template <int kWords, typename T>
__device__ __forceinline__ bool lookback_window(const StatusWord* status, long long window_end, T& exclusive) {
  constexpr long long kWindow = static_cast<long long>(tuning::kWarpThreads) * kWords;
  const int lane = threadIdx.x % tuning::kWarpThreads;
  const long long first = window_end - kWindow + static_cast<long long>(lane) * kWords;
  StatusWord w[kWords];
#pragma unroll
  for (int k = 0; k < kWords; ++k)
    w[k] = first + k < 0 ? static_cast<StatusWord>(kStatusPrefix) << 32
                         : *reinterpret_cast<const volatile StatusWord*>(status + first + k);
#pragma unroll
  for (int k = 0; k < kWords; ++k)
    while ((w[k] >> 32) == kStatusInvalid) w[k] = *reinterpret_cast<const volatile StatusWord*>(status + first + k);
  unsigned flag = kStatusAggregate;
  T value = T(0);
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const T v = value_from_bits<T>(static_cast<unsigned>(w[k]));
    if ((w[k] >> 32) == kStatusPrefix) {
      flag = kStatusPrefix;
      value = v;
    } else {
      value += v;
    }
  }
  const unsigned prefix_lanes = __ballot_sync(kFullWarpMask, flag == kStatusPrefix);
  exclusive += warp_sum((prefix_lanes >> lane) <= 1u ? value : T(0));  // lanes from the closest P on
  return prefix_lanes != 0;
}

/// decoupled_lookback with a window that widens after the first step: 32 words first (a tile's
/// closest predecessors, where a P usually is), then 32 x SCANGRADE_SINGLE_PASS_WIDE words a step.
template <typename T>
__device__ T widening_lookback(StatusWord* status, unsigned tile, T aggregate) {
  constexpr int kWide = SCANGRADE_SINGLE_PASS_WIDE;
  const int lane = threadIdx.x % tuning::kWarpThreads;
  if (tile == 0) {
    if (lane == 0) publish(status, 0, kStatusPrefix, aggregate);
    return T(0);
  }
  if (lane == 0) publish(status, tile, kStatusAggregate, aggregate);
  T exclusive = T(0);
  long long window_end = tile;
  if (!lookback_window<1>(status, window_end, exclusive)) {
    window_end -= tuning::kWarpThreads;
    while (!lookback_window<kWide>(status, window_end, exclusive)) window_end -= tuning::kWarpThreads * kWide;
  }
  if (lane == 0) publish(status, tile, kStatusPrefix, exclusive + aggregate);
  return exclusive;
}

#if SCANGRADE_SINGLE_PASS_MIN_BLOCKS > 0
#define SCANGRADE_SINGLE_PASS_BOUNDS __launch_bounds__(tuning::kSinglePassThreads, tuning::kSinglePassMinBlocks)
#else
#define SCANGRADE_SINGLE_PASS_BOUNDS
#endif

__global__ void clear_kernel(StatusWord* words, std::size_t count) {
#if SCANGRADE_SINGLE_PASS_PDL && defined(__CUDA_ARCH__)
  cudaTriggerProgrammaticLaunchCompletion();
#endif
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) words[i] = 0;
}

template <typename T>
__global__ void SCANGRADE_SINGLE_PASS_BOUNDS single_pass_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, StatusWord* status) {
#if SCANGRADE_SINGLE_PASS_PDL && defined(__CUDA_ARCH__)
  cudaGridDependencySynchronize();
#endif
  __shared__ T exchange[padded_size(kTileItems)];
  __shared__ T warp_totals[kTileThreads / tuning::kWarpThreads];
  __shared__ unsigned tile_index[2];
  __shared__ T tile_prefix[1];
  const std::size_t tiles = (n + kTileItems - 1) / kTileItems;

  // dynamic tile index
  if (threadIdx.x == 0) tile_index[0] = atomicAdd(tile_counter, 1u);
  __syncthreads();
  unsigned tile = tile_index[0];
#if SCANGRADE_SINGLE_PASS_PERSISTENT
  for (int round = 1; tile < tiles; ++round) {
#endif
  const std::size_t base = static_cast<std::size_t>(tile) * kTileItems;

  // scan the tile locally
#if SCANGRADE_SINGLE_PASS_SHARED_TILE
  // the tile stays in shared memory (no registers held across the look-back)
  load_tile_shared<T, kTileThreads, kTileItemsPerThread>(in, base, n, exchange);
  T thread_total = T(0);
#pragma unroll
  for (int k = 0; k < kTileItemsPerThread; ++k) thread_total += exchange[conflict_free_index(threadIdx.x * kTileItemsPerThread + k)];
  T aggregate;
  const T thread_prefix = block_exclusive_sum<T, kTileThreads>(thread_total, aggregate, warp_totals);
#else
  T items[kTileItemsPerThread];
  load_tile_blocked<T, kTileThreads>(in, base, n, items, exchange);
  T aggregate;
  const T thread_prefix = block_exclusive_sum<T, kTileThreads>(thread_reduce(items), aggregate, warp_totals);
#endif

  // decoupled look-back for the sum of the earlier tiles
#if SCANGRADE_SINGLE_PASS_BLOCK_LOOKBACK
  __shared__ T lookback_sums[kTileThreads / tuning::kWarpThreads];
  __shared__ unsigned lookback_prefix[kTileThreads / tuning::kWarpThreads];
  __shared__ unsigned lookback_done[1];
  {
    const T prefix = block_lookback<T, kTileThreads>(status, tile, aggregate, lookback_sums, lookback_prefix, lookback_done);
    if (threadIdx.x == 0) {
      tile_prefix[0] = prefix;
#if SCANGRADE_SINGLE_PASS_PERSISTENT
      tile_index[round % 2] = atomicAdd(tile_counter, 1u);
#endif
    }
  }
#else
  if (threadIdx.x < tuning::kWarpThreads) {
#if SCANGRADE_SINGLE_PASS_WIDE > 0
    const T prefix = widening_lookback(status, tile, aggregate);
#else
    const T prefix = decoupled_lookback(status, tile, aggregate);
#endif
    if (threadIdx.x == 0) {
      tile_prefix[0] = prefix;
#if SCANGRADE_SINGLE_PASS_PERSISTENT
      tile_index[round % 2] = atomicAdd(tile_counter, 1u);
#endif
    }
  }
#endif
  __syncthreads();

  // final scan and store
#if SCANGRADE_SINGLE_PASS_SHARED_TILE
  T running = tile_prefix[0] + thread_prefix;
#pragma unroll
  for (int k = 0; k < kTileItemsPerThread; ++k) {
    const int i = conflict_free_index(threadIdx.x * kTileItemsPerThread + k);
    running += exchange[i];
    exchange[i] = running;
  }
  store_tile_shared<T, kTileThreads, kTileItemsPerThread>(out, base, n, exchange);
#else
  thread_scan(items, tile_prefix[0] + thread_prefix, /*exclusive=*/false);
  store_tile_blocked<T, kTileThreads>(out, base, n, items, exchange);
#endif
#if SCANGRADE_SINGLE_PASS_PERSISTENT
  tile = tile_index[round % 2];
  __syncthreads();  // exchange, warp_totals and tile_prefix are written again
  }
#endif
  (void)tiles;
}

/// Workspace layout: word 0 holds the tile counter (its low 4 bytes), words 1..tiles the status
/// words; all of it must be zero (X) before the kernel runs.
std::size_t tile_count(std::size_t n) {
  const std::size_t tiles = detail::ceil_div(n, kTileItems);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  return tiles;
}

/// Blocks to launch for `tiles` tiles: one per tile, or (persistent) no more than fit at once.
unsigned grid_size(std::size_t tiles) {
#if SCANGRADE_SINGLE_PASS_PERSISTENT
  static const std::size_t resident = [] {
    int device = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, single_pass_kernel<int>, kTileThreads, 0) != cudaSuccess ||
        sms * per_sm <= 0) {
      cudaGetLastError();
      return std::size_t{1} << 30;
    }
    return static_cast<std::size_t>(sms) * per_sm;
  }();
  return static_cast<unsigned>(tiles < resident ? tiles : resident);
#else
  return static_cast<unsigned>(tiles);
#endif
}

template <typename T>
void launch_kernel(const T* d_in, T* d_out, std::size_t n, void* workspace, cudaStream_t stream) {
  StatusWord* words = static_cast<StatusWord*>(workspace);
#if SCANGRADE_SINGLE_PASS_PDL
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid_size(tile_count(n)));
  config.blockDim = dim3(kTileThreads);
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  detail::check(cudaLaunchKernelEx(&config, single_pass_kernel<T>, d_in, d_out, n, reinterpret_cast<unsigned*>(words), words + 1),
                "single_pass_kernel");
#else
  single_pass_kernel<T><<<grid_size(tile_count(n)), kTileThreads, 0, stream>>>(
      d_in, d_out, n, reinterpret_cast<unsigned*>(words), words + 1);
#endif
  detail::check_launch("single_pass_kernel");
}

template <typename T>
void launch_single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t bytes = single_pass_parts::workspace_bytes(n);
  detail::StreamBuffer workspace(bytes, stream);
  single_pass_parts::clear_workspace(workspace.as<void>(), n, stream);
  launch_kernel(d_in, d_out, n, workspace.as<void>(), stream);
}

}  // namespace

namespace single_pass_parts {
std::size_t workspace_bytes(std::size_t n) { return (tile_count(n) + 1) * sizeof(StatusWord); }
void clear_workspace(void* workspace, std::size_t n, cudaStream_t stream) {
#if SCANGRADE_SINGLE_PASS_CLEAR == 0
  detail::check(cudaMemsetAsync(workspace, 0, workspace_bytes(n), stream), "cudaMemsetAsync");
#else
  const std::size_t count = workspace_bytes(n) / sizeof(StatusWord);
  clear_kernel<<<static_cast<unsigned>(detail::ceil_div(count, 256)), 256, 0, stream>>>(static_cast<StatusWord*>(workspace), count);
  detail::check_launch("clear_kernel");
#endif
}
void scan_kernel(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, void* workspace, cudaStream_t stream) {
  launch_kernel(d_in, d_out, n, workspace, stream);
}
void scan_kernel(const float* d_in, float* d_out, std::size_t n, void* workspace, cudaStream_t stream) {
  launch_kernel(d_in, d_out, n, workspace, stream);
}
}  // namespace single_pass_parts

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  launch_single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  launch_single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::reference
