// Slot 4: single-pass inclusive scan with decoupled look-back, the look-back done by a whole warp
// 32 tiles at a time.
//   1. a block takes its tile index from an atomic counter (so it only waits for tiles of blocks
//      that started before it) and computes its tile's total (warp-shuffle block scans);
//   2. warp 0 publishes the total as the tile's aggregate (flag A), then reads the flags of the
//      32 preceding tiles at once; if one of them has an inclusive prefix (flag P), the sum from
//      the closest such tile to the tile just before mine is the prefix; otherwise it adds all 32
//      aggregates and looks at the 32 tiles before those;
//   3. it publishes the tile's inclusive prefix (flag P), and the block writes its tile.
// Values are written before their flag, with __threadfence() between; flags and values are read
// through volatile pointers.
#include <climits>

#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kChunks = 8;
constexpr std::size_t kTile = kThreads * kChunks;  // 2048

enum : unsigned { kEmpty = 0, kAggregate = 1, kPrefix = 2 };

template <typename T>
struct Status {
  unsigned* flag;
  T* aggregate;
  T* prefix;
};

template <typename T>
__device__ void publish(unsigned* flag, T* value_slot, unsigned state, T value) {
  *static_cast<volatile T*>(value_slot) = value;
  __threadfence();
  atomicExch(flag, state);
}

// Warp 0 of the block: the sum of all tiles before `tile`.
template <typename T>
__device__ T warp_look_back(const Status<T>& st, unsigned tile) {
  const unsigned lane = threadIdx.x % ws::kWarp;
  T exclusive = T(0);
  for (long long window_end = tile;; window_end -= ws::kWarp) {
    // lane reads tile j; lane 31 is the closest predecessor. Before tile 0: an empty prefix.
    const long long j = window_end - static_cast<long long>(ws::kWarp) + lane;
    unsigned state = kPrefix;
    T value = T(0);
    if (j >= 0) {
      const volatile unsigned* flag = st.flag + j;
      do {
        state = *flag;
      } while (state == kEmpty);
      __threadfence();
      value = state == kPrefix ? static_cast<const volatile T*>(st.prefix)[j]
                               : static_cast<const volatile T*>(st.aggregate)[j];
    }
    const unsigned has_prefix = __ballot_sync(ws::kFullMask, state == kPrefix);
    // count only the lanes from the closest prefix on (all of them when there is none)
    const int closest = has_prefix != 0 ? 31 - __clz(static_cast<int>(has_prefix)) : 0;
    exclusive = ws::warp_sum(static_cast<int>(lane) >= closest ? value : T(0)) + exclusive;
    if (has_prefix != 0) return exclusive;
  }
}

template <typename T>
__global__ void single_pass_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, Status<T> st) {
  __shared__ T warp_totals[ws::kWarp];
  __shared__ unsigned s_tile;
  __shared__ T s_prefix;

  // 1. dynamic tile index, then the tile's total
  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const std::size_t base = static_cast<std::size_t>(tile) * kTile;
  T total = T(0);
  for (unsigned c = 0; c < kChunks; ++c) {
    const std::size_t i = base + static_cast<std::size_t>(c) * kThreads + threadIdx.x;
    T x = i < n ? in[i] : T(0);
    x = ws::warp_sum(x);
    if (threadIdx.x % ws::kWarp == 0) warp_totals[threadIdx.x / ws::kWarp] = x;
    __syncthreads();
    if (threadIdx.x < ws::kWarp) {
      T w = threadIdx.x < kThreads / ws::kWarp ? warp_totals[threadIdx.x] : T(0);
      w = ws::warp_sum(w);
      total = total + w;  // only warp 0 keeps a meaningful total
    }
    __syncthreads();
  }

  // 2. look-back by warp 0
  if (threadIdx.x < ws::kWarp) {
    T prefix = T(0);
    if (tile == 0) {
      if (threadIdx.x == 0) publish(st.flag, st.prefix, kPrefix, total);
    } else {
      if (threadIdx.x == 0) publish(st.flag + tile, st.aggregate + tile, kAggregate, total);
      prefix = warp_look_back(st, tile);
      if (threadIdx.x == 0) publish(st.flag + tile, st.prefix + tile, kPrefix, prefix + total);
    }
    if (threadIdx.x == 0) s_prefix = prefix;
  }
  __syncthreads();

  // 3. scan the tile again (it is in L2 by now) with the prefix as offset, and store it
  ws::tile_scan<T, kChunks>(in, out, base, n, /*inclusive=*/true, s_prefix, warp_totals);
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ws::ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  // scratch: [counter, 16 B][flags][aggregates][prefixes], each part rounded to 16 bytes
  const std::size_t flag_bytes = ws::ceil_div(tiles * sizeof(unsigned), 16) * 16;
  const std::size_t value_bytes = ws::ceil_div(tiles * sizeof(T), 16) * 16;
  const std::size_t bytes = 16 + flag_bytes + 2 * value_bytes;
  char* scratch = nullptr;
  ws::check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream);
  if (err == cudaSuccess) {
    Status<T> st;
    st.flag = reinterpret_cast<unsigned*>(scratch + 16);
    st.aggregate = reinterpret_cast<T*>(scratch + 16 + flag_bytes);
    st.prefix = reinterpret_cast<T*>(scratch + 16 + flag_bytes + value_bytes);
    single_pass_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), st);
    err = cudaGetLastError();
  }
  cudaFreeAsync(scratch, stream);
  ws::check(err, "single_pass_inclusive");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
