// Slot 4 reference: single-pass inclusive scan with decoupled look-back.
// Block b scans tile b and finds the sum of all earlier tiles from their 64-bit status words:
//   high 32 bits: X (invalid, not yet published) / A (tile aggregate) / P (inclusive prefix)
//   low 32 bits:  the value's bits (int32 as is, float via __float_as_uint)
// written with one 64-bit atomicExch, read with volatile 64-bit loads.
//
// Progress, whatever order the GPU starts blocks in: CUDA does not promise that block b-1 starts
// before block b, or ever runs while b waits. So a lane waits for a predecessor's status word for at
// most tuning::kSinglePassSpinLimit reads; then the warp sums that tile's items from the input itself
// (tile_sum) and counts it as an A. Blocks are started in increasing index order on NVIDIA GPUs and
// in the emulator, so the limit is never reached in practice (the tests reverse the tile order to
// reach it: single_pass_parts::TileOrder). The other way to progress, tile indices from an atomic
// counter (this kernel's first form), made each block wait for the cleared counter and a round trip
// to L2 before its first load: 3% of the copy's speed at 2^26 on an H100 (0.914x against 0.942x).
//
// A call is two launches: clear_kernel zeroes the status words, and the scan kernel follows it as
// a programmatic dependent launch (compute capability 9.0 and up): its blocks start while
// clear_kernel finishes, load and reduce their tile, and wait for it (cudaGridDependencySynchronize)
// only before their first access to the status words. What each part of a call costs:
// tools/bench_reference.py --parts.
#include <atomic>
#include <climits>
#include <cstdint>
#include <stdexcept>

#include "block_scan.cuh"
#include "host_utils.h"
#include "reference.h"
#include "tuning.h"
#include "warp_scan.cuh"

namespace scangrade::reference {
namespace {

constexpr int kTileItems = tuning::kSinglePassItems;
constexpr int kTileItemsPerThread = tuning::kSinglePassItemsPerThread;
constexpr int kTileThreads = tuning::kSinglePassThreads;
constexpr int kClearThreads = 256;
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
/// at 2^26-2^28 on an H100; a volatile store instead of the atomic, 25%: readers saw it later.)
template <typename T>
__device__ void publish(StatusWord* status, unsigned tile, unsigned flag, T value) {
  atomicExch(status + tile, (static_cast<StatusWord>(flag) << 32) | value_bits(value));
}

/// The sum of a whole tile's items, computed by one warp from the input: what that tile's block
/// publishes as its aggregate, for a look-back that waited too long for it. (Earlier tiles are
/// whole: only the last can be partial.)
template <typename T>
__device__ T tile_sum(const T* in, long long tile) {
  const T* items = in + static_cast<std::size_t>(tile) * kTileItems;
  T sum = T(0);
#pragma unroll 4
  for (int i = threadIdx.x % tuning::kWarpThreads; i < kTileItems; i += tuning::kWarpThreads) sum += items[i];
  return warp_sum(sum);
}

/// Run by the block's first warp. Publishes the tile's aggregate (A), looks back over the status
/// words of earlier tiles 32 at a time (lane 31 = the closest) until one holds an inclusive prefix
/// (P), publishes the tile's own inclusive prefix (P) and returns the sum of all earlier tiles.
/// A predecessor still invalid (X) after kSinglePassSpinLimit reads is summed from `in` instead.
template <typename T>
__device__ T decoupled_lookback(const T* in, StatusWord* status, unsigned tile, T aggregate) {
  const int lane = threadIdx.x % tuning::kWarpThreads;
  if (tile == 0) {
    if (lane == 0) publish(status, 0, kStatusPrefix, aggregate);
    return T(0);
  }
  if (lane == 0) publish(status, tile, kStatusAggregate, aggregate);

  T exclusive = T(0);
  for (long long window_end = tile;; window_end -= tuning::kWarpThreads) {
    // read predecessor j (spin while invalid, up to the limit); before tile 0 reads as P with the identity
    const long long window_start = window_end - tuning::kWarpThreads;
    const long long j = window_start + lane;
    unsigned flag = kStatusPrefix;
    T value = T(0);
    if (j >= 0) {
      const volatile StatusWord* word = status + j;
      StatusWord w = *word;
      for (int reads = 1; (w >> 32) == kStatusInvalid && reads < tuning::kSinglePassSpinLimit; ++reads) w = *word;
      flag = static_cast<unsigned>(w >> 32);
      value = value_from_bits<T>(static_cast<unsigned>(w));
    }
    // predecessors still invalid: the warp sums each from the input, one after another
    for (unsigned waiting = __ballot_sync(kFullWarpMask, flag == kStatusInvalid); waiting != 0; waiting &= waiting - 1) {
      const int owner = __ffs(waiting) - 1;
      const T sum = tile_sum(in, window_start + owner);
      if (lane == owner) {
        flag = kStatusAggregate;
        value = sum;
      }
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

/// Programmatic dependent launch, on devices that have it (compute capability 9.0 and up; the
/// emulation backend runs kernels one after another, so there both calls return at once).
__device__ __forceinline__ void let_dependent_launch_start() {
#if defined(SCANGRADE_EMULATION) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(SCANGRADE_EMULATION) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
  cudaGridDependencySynchronize();
#endif
}

/// Zeroes the workspace: every status word (X).
__global__ void clear_kernel(StatusWord* words, std::size_t count) {
  let_dependent_launch_start();  // the scan kernel may start; it waits for this one to finish
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) words[i] = 0;
}

#if SCANGRADE_SINGLE_PASS_MIN_BLOCKS > 0
#define SCANGRADE_SINGLE_PASS_BOUNDS __launch_bounds__(tuning::kSinglePassThreads, tuning::kSinglePassMinBlocks)
#else
#define SCANGRADE_SINGLE_PASS_BOUNDS
#endif

/// The tile stays in shared memory from its load to its store: a thread holds no items in registers
/// across the look-back (with the items in registers, 32 registers spilled 36 bytes a thread).
template <typename T>
__global__ void SCANGRADE_SINGLE_PASS_BOUNDS single_pass_kernel(const T* in, T* out, std::size_t n, StatusWord* status,
                                                               bool reversed) {
  __shared__ T exchange[padded_size(kTileItems)];
  __shared__ T warp_totals[kTileThreads / tuning::kWarpThreads];
  __shared__ T tile_prefix[1];

  const unsigned tile = reversed ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const std::size_t base = static_cast<std::size_t>(tile) * kTileItems;

  // scan the tile locally: each thread sums its kTileItemsPerThread consecutive elements
  load_tile_shared<T, kTileThreads, kTileItemsPerThread>(in, base, n, exchange);
  T thread_total = T(0);
#pragma unroll
  for (int k = 0; k < kTileItemsPerThread; ++k) thread_total += exchange[conflict_free_index(threadIdx.x * kTileItemsPerThread + k)];
  T aggregate;
  const T thread_prefix = block_exclusive_sum<T, kTileThreads>(thread_total, aggregate, warp_totals);

  // decoupled look-back for the sum of the earlier tiles
  if (threadIdx.x < tuning::kWarpThreads) {
    wait_for_previous_kernel();  // clear_kernel has zeroed the status words
    const T prefix = decoupled_lookback(in, status, tile, aggregate);
    if (threadIdx.x == 0) tile_prefix[0] = prefix;
  }
  __syncthreads();

  // final scan of each thread's elements in place, and store
  T running = tile_prefix[0] + thread_prefix;
#pragma unroll
  for (int k = 0; k < kTileItemsPerThread; ++k) {
    const int i = conflict_free_index(threadIdx.x * kTileItemsPerThread + k);
    running += exchange[i];
    exchange[i] = running;
  }
  store_tile_shared<T, kTileThreads, kTileItemsPerThread>(out, base, n, exchange);
}

/// The workspace holds one status word per tile; all must be zero (X) before the kernel runs.
std::size_t tile_count(std::size_t n) {
  const std::size_t tiles = detail::ceil_div(n, kTileItems);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  return tiles;
}

/// Whether the current device can start a kernel as a programmatic dependent launch (compute
/// capability 9.0 and up), asked once per device.
bool dependent_launch_supported() {
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices];  // 0: not asked yet, 1: no, 2: yes
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) {
    cudaGetLastError();
    return false;
  }
  int state = known[device].load(std::memory_order_relaxed);
  if (state == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) cudaGetLastError();
    state = major >= 9 ? 2 : 1;
    known[device].store(state, std::memory_order_relaxed);
  }
  return state == 2;
}

template <typename T>
void launch_kernel(const T* d_in, T* d_out, std::size_t n, void* workspace, cudaStream_t stream,
                   single_pass_parts::TileOrder order = single_pass_parts::TileOrder::ByBlock) {
  cudaLaunchAttribute attribute[1] = {};
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(tile_count(n)));
  config.blockDim = dim3(kTileThreads);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = dependent_launch_supported() ? 1 : 0;
  detail::check(cudaLaunchKernelEx(&config, single_pass_kernel<T>, d_in, d_out, n, static_cast<StatusWord*>(workspace),
                                   order == single_pass_parts::TileOrder::Reversed),
                "single_pass_kernel");
}

template <typename T>
void launch_single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  detail::StreamBuffer workspace(single_pass_parts::workspace_bytes(n), stream);
  single_pass_parts::clear_workspace(workspace.as<void>(), n, stream);
  launch_kernel(d_in, d_out, n, workspace.as<void>(), stream);
}

}  // namespace

namespace single_pass_parts {
std::size_t workspace_bytes(std::size_t n) { return tile_count(n) * sizeof(StatusWord); }
void clear_workspace(void* workspace, std::size_t n, cudaStream_t stream) {
  const std::size_t count = workspace_bytes(n) / sizeof(StatusWord);
  clear_kernel<<<static_cast<unsigned>(detail::ceil_div(count, kClearThreads)), kClearThreads, 0, stream>>>(
      static_cast<StatusWord*>(workspace), count);
  detail::check_launch("clear_kernel");
}
void scan_kernel(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, void* workspace, cudaStream_t stream,
                 TileOrder order) {
  launch_kernel(d_in, d_out, n, workspace, stream, order);
}
void scan_kernel(const float* d_in, float* d_out, std::size_t n, void* workspace, cudaStream_t stream, TileOrder order) {
  launch_kernel(d_in, d_out, n, workspace, stream, order);
}
}  // namespace single_pass_parts

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  launch_single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  launch_single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::reference
