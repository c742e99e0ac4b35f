// Slot 4 (bonus): single-pass inclusive scan, chained: each tile waits for the inclusive prefix
// of the tile before it (adjacent synchronization), adds it, and publishes its own.
#include "scangrade/student_api.h"

namespace scangrade::student {
namespace {

constexpr unsigned kThreads = 1024;
constexpr std::size_t kTile = kThreads;  // one element per thread

template <typename T>
__global__ void single_pass_kernel(const T* in, T* out, std::size_t n, unsigned* tile_counter, int* flags,
                                   T* prefixes) {
  __shared__ T buf[2][kThreads];
  __shared__ unsigned s_tile;
  __shared__ T s_prefix;
  const unsigned t = threadIdx.x;

  // dynamic tile index: tiles are handed out in the order blocks start
  if (t == 0) s_tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const std::size_t tile = s_tile;
  const std::size_t i = tile * kTile + t;

  // scan the tile: double-buffered Hillis-Steele
  int cur = 0;
  buf[cur][t] = i < n ? in[i] : T(0);
  __syncthreads();
  for (unsigned d = 1; d < kThreads; d *= 2) {
    buf[1 - cur][t] = t >= d ? buf[cur][t - d] + buf[cur][t] : buf[cur][t];
    __syncthreads();
    cur = 1 - cur;
  }

  // thread 0 waits for the previous tile's prefix, then publishes this tile's prefix
  if (t == 0) {
    T prefix = T(0);
    if (tile > 0) {
      // BUG: waits for its OWN flag (tile) instead of the previous tile's (tile - 1). This flag
      // is only set below, by this same thread, after the loop: for n > 1024 every tile after
      // the first spins forever.
      const volatile int* flag = flags + tile;
      while (*flag == 0) {
      }
      __threadfence();
      prefix = static_cast<volatile T*>(prefixes)[tile - 1];
    }
    static_cast<volatile T*>(prefixes)[tile] = prefix + buf[cur][kThreads - 1];
    __threadfence();
    atomicExch(&flags[tile], 1);
    s_prefix = prefix;
  }
  __syncthreads();
  if (i < n) out[i] = s_prefix + buf[cur][t];
}

template <typename T>
void single_pass(const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t tiles = (n + kTile - 1) / kTile;
  // scratch: the tile counter, one flag per tile, one prefix per tile; zeroed on the stream
  const std::size_t bytes = 16 + tiles * sizeof(int) + tiles * sizeof(T) + 16;
  char* scratch = nullptr;
  cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream);
  cudaMemsetAsync(scratch, 0, bytes, stream);
  unsigned* counter = reinterpret_cast<unsigned*>(scratch);
  int* flags = reinterpret_cast<int*>(scratch + 16);
  T* prefixes = reinterpret_cast<T*>(scratch + 16 + ((tiles * sizeof(int) + 15) / 16) * 16);
  single_pass_kernel<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(d_in, d_out, n, counter, flags, prefixes);
  cudaError_t err = cudaGetLastError();
  cudaFreeAsync(scratch, stream);
  if (err != cudaSuccess) throw std::runtime_error("single_pass_kernel: launch failed");
}

}  // namespace

void single_pass_inclusive(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}
void single_pass_inclusive(const float* d_in, float* d_out, std::size_t n, cudaStream_t stream) {
  single_pass(d_in, d_out, n, stream);
}

}  // namespace scangrade::student
