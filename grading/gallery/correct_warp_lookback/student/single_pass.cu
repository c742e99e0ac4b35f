// Slot 4: single-pass inclusive scan with decoupled look-back, the look-back done by a whole warp.
// A block takes its tile index from an atomic counter (so it only ever waits for tiles whose blocks
// have started), scans its 4096 elements (512 threads x 8, warp_scan.cuh), and lane 0 publishes the
// tile's aggregate (flag A). Then warp 0 looks back 32 tiles at a time: lane k reads the status of
// tile (window end - 32 + k), the warp waits until none of the 32 is still empty (__any_sync),
// finds the nearest tile with an inclusive prefix (flag P: the highest lane in a __ballot_sync),
// and adds up the values from there to the window's end (__shfl_down_sync). Without a P in the
// window it adds all 32 aggregates and moves the window 32 tiles back. Lane 0 then publishes the
// tile's inclusive prefix (flag P).
//
// Each tile's status is ONE 64-bit word, the flag in the high half and the value's 32 bits in the
// low half, written with one atomicExch and read with one volatile 64-bit load: a reader never sees
// a flag without its value, and no fence is needed between them.
#include <climits>
#include <cstring>

#include "warp_scan.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 512;
constexpr unsigned kItems = 8;
constexpr unsigned kTile = kThreads * kItems;

using Status = unsigned long long;
enum : unsigned { kEmpty = 0, kAggregate = 1, kPrefix = 2 };

__device__ unsigned flag_of(Status word) { return static_cast<unsigned>(word >> 32); }

template <typename T>
__device__ T value_of(Status word) {
  static_assert(sizeof(T) == 4, "4-byte values only");
  const unsigned bits = static_cast<unsigned>(word);
  T value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

template <typename T>
__device__ void publish(Status* status, unsigned flag, T value) {
  unsigned bits;
  memcpy(&bits, &value, sizeof bits);
  atomicExch(status, (static_cast<Status>(flag) << 32) | bits);
}

// Warp 0, all 32 lanes: the sum of tiles 0 .. tile-1 (tile > 0), returned to every lane.
template <typename T>
__device__ T warp_look_back(const Status* status, unsigned tile) {
  const unsigned lane = threadIdx.x % ws::kWarpSize;
  T exclusive = T(0);
  for (long long window_end = tile;; window_end -= ws::kWarpSize) {
    const long long j = window_end - static_cast<long long>(ws::kWarpSize) + lane;  // lane 31: nearest
    Status word;
    bool empty;
    do {
      // a "tile" before tile 0 reads as an inclusive prefix of 0 (tile 0 publishes P anyway)
      word = j >= 0 ? *static_cast<const volatile Status*>(status + j) : static_cast<Status>(kPrefix) << 32;
      empty = flag_of(word) == kEmpty;
    } while (__any_sync(ws::kFullMask, empty));
    const unsigned prefix_lanes = __ballot_sync(ws::kFullMask, flag_of(word) == kPrefix);
    // the nearest inclusive prefix: tiles before it are already in it
    const int first_needed = prefix_lanes != 0 ? 31 - __clz(static_cast<int>(prefix_lanes)) : 0;
    const T mine = static_cast<int>(lane) >= first_needed ? value_of<T>(word) : T(0);
    exclusive = ws::warp_sum(mine) + exclusive;
    if (prefix_lanes != 0) return exclusive;
  }
}

template <typename T>
__global__ void single_pass_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, Status* status) {
  __shared__ unsigned s_tile;
  __shared__ T warp_sums[kThreads / ws::kWarpSize];
  __shared__ T s_exclusive;
  const unsigned lane = threadIdx.x % ws::kWarpSize;
  const unsigned warp = threadIdx.x / ws::kWarpSize;

  // dynamic tile index
  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const std::size_t base = static_cast<std::size_t>(tile) * kTile;

  // local scan
  T item[kItems];
  ws::load_items(in, base, n, item);
  T chunk_before;
  const T total = ws::block_scan<T, kThreads, kItems>(item, warp_sums, chunk_before);

  // decoupled look-back by warp 0
  if (warp == 0) {
    T exclusive = T(0);
    if (tile == 0) {
      if (lane == 0) publish(status, kPrefix, total);
    } else {
      if (lane == 0) publish(status + tile, kAggregate, total);
      exclusive = warp_look_back<T>(status, tile);
      if (lane == 0) publish(status + tile, kPrefix, exclusive + total);
    }
    if (lane == 0) s_exclusive = exclusive;
  }
  __syncthreads();

  const std::size_t first = base + static_cast<std::size_t>(threadIdx.x) * kItems;
  for (unsigned j = 0; j < kItems; ++j) {
    if (first + j < n) out[first + j] = s_exclusive + item[j];
  }
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = ws::ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  // scratch, zeroed: the tile counter (256 bytes), then one status word per tile (kEmpty)
  const std::size_t status_at = 256;
  const std::size_t bytes = status_at + tiles * sizeof(Status);
  char* scratch = nullptr;
  ws::check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream);
  if (err == cudaSuccess) {
    single_pass_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), reinterpret_cast<Status*>(scratch + status_at));
    err = cudaGetLastError();
  }
  const cudaError_t freed = cudaFreeAsync(scratch, stream);
  ws::check(err, "single_pass_kernel");
  ws::check(freed, "cudaFreeAsync");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
