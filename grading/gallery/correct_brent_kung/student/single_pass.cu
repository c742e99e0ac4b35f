// Slot 4: single-pass inclusive scan with decoupled look-back.
// A block takes its tile index from an atomic counter, scans its 2048-element tile (Blelloch),
// publishes the tile's aggregate at once (flag A), then thread 0 walks back over the earlier
// tiles: it adds each aggregate it finds until it reaches a tile with an inclusive prefix (flag P),
// and publishes its own inclusive prefix (flag P). Tiles are handed out in the order blocks start,
// so every tile a block waits on belongs to a block that is already running.
#include <climits>

#include "brent_kung.cuh"

namespace scangrade::student {
namespace {

using bk::kItems;
using bk::kThreads;

enum : unsigned { kNotReady = 0, kAggregate = 1, kPrefix = 2 };

// Per-tile status: flag[t], and the two values it can point at. A value is written, then
// __threadfence(), then the flag (atomicExch), so a reader that sees the flag sees the value.
template <typename T>
struct TileStatus {
  unsigned* flag;
  T* aggregate;
  T* prefix;
};

template <typename T>
__device__ void publish(unsigned* flag, T* slot, unsigned state, T value) {
  *static_cast<volatile T*>(slot) = value;
  __threadfence();
  atomicExch(flag, state);
}

// Thread 0 only: the sum of all tiles before `tile`.
template <typename T>
__device__ T look_back(TileStatus<T> st, unsigned tile) {
  T exclusive = T(0);
  for (long long j = static_cast<long long>(tile) - 1; j >= 0; --j) {
    const volatile unsigned* flag = st.flag + j;
    unsigned state;
    do {
      state = *flag;
    } while (state == kNotReady);
    __threadfence();  // the value was written before the flag
    if (state == kPrefix) return static_cast<const volatile T*>(st.prefix)[j] + exclusive;
    exclusive = static_cast<const volatile T*>(st.aggregate)[j] + exclusive;
  }
  return exclusive;  // not reached: tile 0 always publishes a prefix
}

template <typename T>
__global__ void single_pass_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, TileStatus<T> st) {
  __shared__ T s[bk::kSharedItems];
  __shared__ unsigned s_tile;
  __shared__ T s_prefix;

  // dynamic tile index
  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const std::size_t base = static_cast<std::size_t>(tile) * kItems;

  // local exclusive scan of the tile
  const unsigned a = threadIdx.x;
  const unsigned b = threadIdx.x + kThreads;
  const T xa = base + a < n ? in[base + a] : T(0);
  const T xb = base + b < n ? in[base + b] : T(0);
  s[bk::pad(a)] = xa;
  s[bk::pad(b)] = xb;
  const T total = bk::blelloch_tile_scan(s);

  // decoupled look-back
  if (threadIdx.x == 0) {
    T prefix = T(0);
    if (tile == 0) {
      publish(st.flag, st.prefix, kPrefix, total);
    } else {
      publish(st.flag + tile, st.aggregate + tile, kAggregate, total);
      prefix = look_back(st, tile);
      publish(st.flag + tile, st.prefix + tile, kPrefix, prefix + total);
    }
    s_prefix = prefix;
  }
  __syncthreads();

  // inclusive result = earlier tiles + exclusive prefix in the tile + own element
  if (base + a < n) out[base + a] = s_prefix + (s[bk::pad(a)] + xa);
  if (base + b < n) out[base + b] = s_prefix + (s[bk::pad(b)] + xb);
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = bk::ceil_div(n, kItems);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  // scratch: [counter][flags x tiles][aggregates x tiles][prefixes x tiles], 16-byte aligned parts
  const std::size_t counter_bytes = 16;
  const std::size_t flag_bytes = bk::ceil_div(tiles * sizeof(unsigned), 16) * 16;
  const std::size_t value_bytes = bk::ceil_div(tiles * sizeof(T), 16) * 16;
  const std::size_t bytes = counter_bytes + flag_bytes + 2 * value_bytes;
  char* scratch = nullptr;
  bk::check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream);
  if (err == cudaSuccess) {
    TileStatus<T> st;
    st.flag = reinterpret_cast<unsigned*>(scratch + counter_bytes);
    st.aggregate = reinterpret_cast<T*>(scratch + counter_bytes + flag_bytes);
    st.prefix = reinterpret_cast<T*>(scratch + counter_bytes + flag_bytes + value_bytes);
    single_pass_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), st);
    err = cudaGetLastError();
  }
  cudaFreeAsync(scratch, stream);
  bk::check(err, "single_pass_inclusive");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
