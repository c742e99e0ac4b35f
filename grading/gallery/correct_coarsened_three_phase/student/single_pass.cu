// Slot 4: single-pass inclusive scan with decoupled look-back over coarsened three-phase tiles of
// 256 threads x 16 elements (4096 per block).
// A block takes its tile index from an atomic counter, scans its tile and publishes the tile's
// aggregate (flag A). Thread 0 then walks back over the earlier tiles, adding their aggregates until
// it meets an inclusive prefix (flag P), and publishes its own (flag P). Flags and values live in
// separate arrays: a value is stored (volatile), then __threadfence(), then its flag (atomicExch);
// a reader loads the flag (volatile), then __threadfence(), then the value.
#include <climits>

#include "coarsened.cuh"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kItems = 16;
constexpr unsigned kTile = kThreads * kItems;
constexpr unsigned kWords = coarse::tile_words(kThreads, kItems);

enum : unsigned { kNotReady = 0, kAggregate = 1, kPrefix = 2 };

template <typename T>
struct LookBack {
  unsigned* flags;  // one per tile
  T* aggregates;    // valid once flags[t] >= kAggregate
  T* prefixes;      // valid once flags[t] == kPrefix
};

template <typename T>
__device__ void publish(unsigned* flag, T* value_slot, unsigned state, T value) {
  *static_cast<volatile T*>(value_slot) = value;
  __threadfence();  // the value is visible before the flag that announces it
  atomicExch(flag, state);
}

// Thread 0 only: the sum of tiles 0 .. tile-1.
template <typename T>
__device__ T look_back(const LookBack<T>& lb, unsigned tile) {
  T exclusive = T(0);
  for (long long j = static_cast<long long>(tile) - 1; j >= 0; --j) {
    unsigned state;
    do {
      state = *static_cast<const volatile unsigned*>(lb.flags + j);
    } while (state == kNotReady);
    __threadfence();  // read the value only after its flag
    if (state == kPrefix) return *static_cast<const volatile T*>(lb.prefixes + j) + exclusive;
    exclusive = *static_cast<const volatile T*>(lb.aggregates + j) + exclusive;
  }
  return exclusive;  // not reached: tile 0 publishes a prefix
}

template <typename T>
__global__ void single_pass_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, LookBack<T> lb) {
  __shared__ T tile[kWords];
  __shared__ T scratch[2 * kThreads];
  __shared__ unsigned s_tile;
  __shared__ T s_exclusive;

  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned t = s_tile;
  const std::size_t base = static_cast<std::size_t>(t) * kTile;
  coarse::load_tile<T, kThreads, kItems>(in, base, n, tile);
  const T total = coarse::three_phase_tile<T, kThreads, kItems, coarse::Middle::KoggeStone>(tile, scratch);

  if (threadIdx.x == 0) {
    T exclusive = T(0);
    if (t == 0) {
      publish(lb.flags, lb.prefixes, kPrefix, total);
    } else {
      publish(lb.flags + t, lb.aggregates + t, kAggregate, total);
      exclusive = look_back(lb, t);
      publish(lb.flags + t, lb.prefixes + t, kPrefix, exclusive + total);
    }
    s_exclusive = exclusive;
  }
  __syncthreads();
  coarse::store_tile<T, kThreads, kItems>(tile, base, n, /*inclusive=*/true, s_exclusive, out);
}

std::size_t round_up(std::size_t bytes) { return coarse::ceil_div(bytes, 256) * 256; }

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = coarse::ceil_div(n, kTile);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  // scratch, zeroed: [tile counter][flags][aggregates][prefixes], each part 256-byte aligned
  const std::size_t flags_at = 256;
  const std::size_t aggregates_at = flags_at + round_up(tiles * sizeof(unsigned));
  const std::size_t prefixes_at = aggregates_at + round_up(tiles * sizeof(T));
  const std::size_t bytes = prefixes_at + round_up(tiles * sizeof(T));
  char* scratch = nullptr;
  coarse::check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream);
  if (err == cudaSuccess) {
    LookBack<T> lb{reinterpret_cast<unsigned*>(scratch + flags_at), reinterpret_cast<T*>(scratch + aggregates_at),
                   reinterpret_cast<T*>(scratch + prefixes_at)};
    single_pass_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), lb);
    err = cudaGetLastError();
  }
  const cudaError_t freed = cudaFreeAsync(scratch, stream);
  coarse::check(err, "single_pass_kernel");
  coarse::check(freed, "cudaFreeAsync");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
