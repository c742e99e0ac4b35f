// Arena test kernels: single accesses around allocations, and small slots (correct, racy, crashing,
// and two gallery-like wrong examples) for the thread-order rule of emulated_run.
#include <vector>

#include "arena_kernels.h"

namespace arena_test {
namespace {

// ---- single accesses ----------------------------------------------------------------------------

__global__ void write_kernel(int* p, long long index, int value) { p[index] = value; }

__global__ void read_kernel(const int* p, long long index, int* value) { *value = p[index]; }

__global__ void write_strided_kernel(int* p, long long first, long long stride, int value) {
  p[first + threadIdx.x * stride] = value;
}

__global__ void write_after_barrier_kernel(int* p, long long index) {
  __syncthreads();
  if (blockIdx.x == 1 && threadIdx.x == 5) p[index] = 1;
  __syncthreads();
}

// each frame keeps 1 KiB alive and passes it down, so the compiler cannot turn this into a loop
__device__ int deep(int depth, volatile int* parent) {
  volatile int local[256];
  local[0] = parent[0] + 1;
  local[255] = depth;
  if (depth == 0) return local[0];
  return deep(depth - 1, local);
}

__global__ void recurse_kernel(int depth, int* result) {
  volatile int first[1] = {0};
  *result = deep(depth, first);
}

// ---- slots --------------------------------------------------------------------------------------

constexpr int kThreads = 1024;
constexpr int kTile = 256;

// double-buffered Hillis-Steele over one block (n <= 1024)
__global__ void hillis_steele_kernel(const int* in, int* out, int n) {
  __shared__ int buf[2][kThreads];
  int t = threadIdx.x;
  buf[0][t] = t < n ? in[t] : 0;
  __syncthreads();
  int src = 0;
  for (int d = 1; d < kThreads; d *= 2) {
    int v = buf[src][t];
    if (t >= d) v += buf[src][t - d];
    buf[1 - src][t] = v;
    src = 1 - src;
    __syncthreads();
  }
  if (t < n) out[t] = buf[src][t];
}

// in place: thread t reads s[t - d] while thread t - d may already have updated it
__global__ void racy_kernel(const int* in, int* out, int n) {
  __shared__ int s[kThreads];
  int t = threadIdx.x;
  s[t] = t < n ? in[t] : 0;
  __syncthreads();
  for (int d = 1; d < kThreads; d *= 2) {
    if (t >= d) s[t] += s[t - d];
    __syncthreads();
  }
  if (t < n) out[t] = s[t];
}

// a double-buffered scan whose load goes through a padded tile with pad(t) = t >> (16 + t % 32): a shift
// count of 32 or more once t % 32 >= 16, undefined in C++ (0 on the GPU: no padding, a right scan; x86
// takes the count modulo 32, so some threads' slots collide and which write lands depends on the order).
// In the kernel's body the emulator computes the GPU's value (rewrite.py); behind an object-like macro,
// which rewrite.py leaves alone, the CPU's.
#define SHIFTED_PAD_OF_T (t >> (16 + t % 32))
template <bool kBehindObjectMacro>
__global__ void shifted_pad_kernel(const int* in, int* out, int n) {
  __shared__ int tile[2 * kThreads];
  __shared__ int buf[2][kThreads];
  int t = threadIdx.x;
  int pad = kBehindObjectMacro ? SHIFTED_PAD_OF_T : t >> (16 + t % 32);  // arena_kernels.cu:86
  tile[t + pad] = t < n ? in[t] : 0;
  __syncthreads();
  int src = 0;
  buf[src][t] = tile[t + pad];
  __syncthreads();
  for (int d = 1; d < kThreads; d *= 2) {
    int v = buf[src][t];
    if (t >= d) v += buf[src][t - d];
    buf[1 - src][t] = v;
    src = 1 - src;
    __syncthreads();
  }
  if (t < n) out[t] = buf[src][t];
}

__global__ void null_write_kernel(const int* in, int* out, int* block_sums, int n) {
  int t = threadIdx.x;
  if (t < n) out[t] = in[t];
  if (t == 0) block_sums[blockIdx.x] = in[0];  // block_sums is nullptr
}

__global__ void order_dependent_kernel(const int* in, int* out, int n) {
  __shared__ unsigned offset;
  __shared__ int buf[2][kThreads];
  int t = threadIdx.x;
  if (t == 0) offset = 0;
  unsigned o = offset;  // no barrier since thread 0's write: poison (0xFFFFFFFF) unless thread 0 ran first
  buf[0][t] = t < n ? in[t] : 0;
  __syncthreads();
  int src = 0;
  for (int d = 1; d < kThreads; d *= 2) {
    int v = buf[src][t];
    if (t >= d) v += buf[src][t - d];
    buf[1 - src][t] = v;
    src = 1 - src;
    __syncthreads();
  }
  if (t < n) out[static_cast<std::size_t>(o) + t] = buf[src][t];
}

// no bounds checks anywhere: the last tile reads past `in` and writes past `out`
__global__ void tile_scan_unchecked(const int* in, int* out, int* sums) {
  __shared__ int buf[2][kTile];
  int t = threadIdx.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + t;
  buf[0][t] = in[i];
  __syncthreads();
  int src = 0;
  for (int d = 1; d < kTile; d *= 2) {
    int v = buf[src][t];
    if (t >= d) v += buf[src][t - d];
    buf[1 - src][t] = v;
    src = 1 - src;
    __syncthreads();
  }
  out[i] = buf[src][t];
  if (sums != nullptr && t == kTile - 1) sums[blockIdx.x] = buf[src][t];
}

__global__ void add_offsets_unchecked(int* out, const int* scanned_sums) {
  if (blockIdx.x == 0) return;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * kTile + threadIdx.x;
  out[i] += scanned_sums[blockIdx.x - 1];
}

void unchecked_level(const int* in, int* out, std::size_t n, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((n + kTile - 1) / kTile);
  if (blocks <= 1) {
    tile_scan_unchecked<<<1, kTile, 0, stream>>>(in, out, nullptr);
    return;
  }
  int* sums = nullptr;
  int* scanned = nullptr;
  cudaMalloc(&sums, blocks * sizeof(int));
  cudaMalloc(&scanned, blocks * sizeof(int));
  tile_scan_unchecked<<<blocks, kTile, 0, stream>>>(in, out, sums);
  unchecked_level(sums, scanned, blocks, stream);  // writes a tile past `scanned`
  add_offsets_unchecked<<<blocks, kTile, 0, stream>>>(out, scanned);
  cudaFree(sums);
  cudaFree(scanned);
}

}  // namespace

cudaError_t write_at(int* p, long long index, int value) {
  write_kernel<<<1, 1>>>(p, index, value);
  return cudaDeviceSynchronize();
}

cudaError_t read_at(const int* p, long long index, int* value) {
  int* d = nullptr;
  if (cudaError_t e = cudaMalloc(&d, sizeof(int)); e != cudaSuccess) return e;
  read_kernel<<<1, 1>>>(p, index, d);
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(value, d, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  return e;
}

cudaError_t write_strided(int* p, long long first, long long stride, int threads, int value) {
  write_strided_kernel<<<1, threads>>>(p, first, stride, value);
  return cudaDeviceSynchronize();
}

cudaError_t write_at_after_barrier(int* p, long long index) {
  write_after_barrier_kernel<<<3, 64>>>(p, index);
  return cudaDeviceSynchronize();
}

cudaError_t recurse(int depth) {
  int* d = nullptr;
  if (cudaError_t e = cudaMalloc(&d, sizeof(int)); e != cudaSuccess) return e;
  recurse_kernel<<<1, 1>>>(depth, d);
  cudaError_t e = cudaDeviceSynchronize();
  cudaFree(d);
  return e;
}

void unchecked_tile_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  unchecked_level(in, out, n, stream);
}

void frees_host_vector(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  std::vector<int> copy(n);
  cudaMemcpy(copy.data(), in, n * sizeof(int), cudaMemcpyDeviceToHost);
  hillis_steele_kernel<<<1, kThreads, 0, stream>>>(in, out, static_cast<int>(n));
  cudaFree(copy.data());  // the bug: host memory, never allocated with cudaMalloc
}

void frees_host_vector_checked(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  std::vector<int> copy(n);
  cudaMemcpy(copy.data(), in, n * sizeof(int), cudaMemcpyDeviceToHost);
  hillis_steele_kernel<<<1, kThreads, 0, stream>>>(in, out, static_cast<int>(n));
  if (cudaFree(copy.data()) != cudaSuccess) cudaGetLastError();  // noticed and cleared
}

void correct_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  hillis_steele_kernel<<<1, kThreads, 0, stream>>>(in, out, static_cast<int>(n));
}

void racy_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  racy_kernel<<<1, kThreads, 0, stream>>>(in, out, static_cast<int>(n));
}

void shifted_pad_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  shifted_pad_kernel<false><<<1, kThreads, 0, stream>>>(in, out, static_cast<int>(n));
}

void shifted_pad_macro_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  shifted_pad_kernel<true><<<1, kThreads, 0, stream>>>(in, out, static_cast<int>(n));
}

void null_write_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  null_write_kernel<<<1, kThreads, 0, stream>>>(in, out, nullptr, static_cast<int>(n));
}

void order_dependent_crash_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream) {
  order_dependent_kernel<<<1, kThreads, 0, stream>>>(in, out, static_cast<int>(n));
}

}  // namespace arena_test
