// Slot 4: single-pass inclusive scan with decoupled look-back over bank-conflict-free Blelloch tiles.
// A block takes its tile index from an atomic counter (so it only waits for tiles whose blocks have
// started), scans its 2048 elements, and publishes the tile's aggregate at once. Thread 0 then walks
// back over the earlier tiles, adding aggregates until it meets an inclusive prefix, and publishes
// the tile's own inclusive prefix.
//
// Each tile's status is ONE 64-bit word: the flag in the high half, the value's bits in the low half,
// written with a single atomicExch and read with a single volatile 64-bit load. A reader therefore
// never sees a flag without its value, and no fence is needed between them.
#include <climits>
#include <cstring>

#include "conflict_free.cuh"

namespace scangrade::student {
namespace {

using cf::kThreads;
using cf::kTileItems;
using Status = unsigned long long;

enum : unsigned { kEmpty = 0, kAggregate = 1, kPrefix = 2 };

// The 32 bits of a value, and back (int32 and float are both 4 bytes).
template <typename T>
__device__ unsigned value_bits(T v) {
  static_assert(sizeof(T) == sizeof(unsigned), "4-byte values only");
  unsigned bits;
  memcpy(&bits, &v, sizeof bits);
  return bits;
}
template <typename T>
__device__ T bits_value(unsigned bits) {
  T v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

template <typename T>
__device__ void publish(Status* status, unsigned flag, T value) {
  atomicExch(status, (static_cast<Status>(flag) << 32) | value_bits(value));
}

// Thread 0 only: the sum of all tiles before `tile` (tile > 0).
template <typename T>
__device__ T look_back(const Status* status, unsigned tile) {
  T exclusive = T(0);
  for (long long j = static_cast<long long>(tile) - 1; j >= 0; --j) {
    Status word;
    do {
      word = *static_cast<const volatile Status*>(status + j);
    } while (static_cast<unsigned>(word >> 32) == kEmpty);
    const T value = bits_value<T>(static_cast<unsigned>(word));
    exclusive = value + exclusive;
    if (static_cast<unsigned>(word >> 32) == kPrefix) break;  // tile 0 always publishes a prefix
  }
  return exclusive;
}

template <typename T>
__global__ void single_pass_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, Status* status) {
  __shared__ T temp[cf::kPaddedItems];
  __shared__ unsigned s_tile;
  __shared__ T s_exclusive;

  // dynamic tile index: tiles are handed out in the order blocks start
  if (threadIdx.x == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned tile = s_tile;
  const std::size_t base = static_cast<std::size_t>(tile) * kTileItems;

  // local scan
  const unsigned a = threadIdx.x;
  const unsigned b = threadIdx.x + kThreads;
  const T xa = base + a < n ? in[base + a] : T(0);
  const T xb = base + b < n ? in[base + b] : T(0);
  temp[cf::padded(a)] = xa;
  temp[cf::padded(b)] = xb;
  const T total = cf::blelloch_tile(temp);

  // decoupled look-back
  if (threadIdx.x == 0) {
    T exclusive = T(0);
    if (tile == 0) {
      publish(status, kPrefix, total);
    } else {
      publish(status + tile, kAggregate, total);
      exclusive = look_back<T>(status, tile);
      publish(status + tile, kPrefix, exclusive + total);
    }
    s_exclusive = exclusive;
  }
  __syncthreads();

  if (base + a < n) out[base + a] = s_exclusive + (temp[cf::padded(a)] + xa);
  if (base + b < n) out[base + b] = s_exclusive + (temp[cf::padded(b)] + xb);
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = cf::ceil_div(n, kTileItems);
  if (tiles > static_cast<std::size_t>(INT_MAX)) throw std::invalid_argument("single_pass_inclusive: n too large");
  // scratch: the tile counter (its own 256 bytes), then one status word per tile; all zero (kEmpty)
  const std::size_t status_at = 256;
  const std::size_t bytes = status_at + tiles * sizeof(Status);
  char* scratch = nullptr;
  cf::check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream), "cudaMallocAsync");
  cudaError_t err = cudaMemsetAsync(scratch, 0, bytes, stream);
  if (err == cudaSuccess) {
    single_pass_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
        d_in, d_out, n, reinterpret_cast<unsigned*>(scratch), reinterpret_cast<Status*>(scratch + status_at));
    err = cudaGetLastError();
  }
  const cudaError_t freed = cudaFreeAsync(scratch, stream);
  cf::check(err, "single_pass_kernel");
  cf::check(freed, "cudaFreeAsync");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
