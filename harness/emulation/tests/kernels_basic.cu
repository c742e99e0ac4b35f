// Test kernels: indices, templates, launch syntax, static and dynamic shared memory.
#include <algorithm>

#include "test_kernels.h"

namespace emu_test {
namespace {

template <class T>
std::vector<T> to_host(const T* d, std::size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

__global__ void indices_kernel(ThreadRecord* out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  out[block * per_block + thread] =
      ThreadRecord{threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z, blockDim.x, gridDim.x};
}

template <typename T>
__global__ void fill_kernel(T* out, T value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + static_cast<T>(i);
}

__global__ void __launch_bounds__(128) affine_kernel(const int* __restrict__ in, int* __restrict__ out, int n,
                                                      int scale, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * scale + offset;
}

__global__ void static_shared_kernel(int* first_seen, int* counts) {
  __shared__ int counter;
  __shared__ int seen[1];
  if (threadIdx.x == 0) {
    seen[0] = counter;  // read before any write: fresh (poisoned) storage in every block
    counter = 0;
  }
  __syncthreads();
  atomicAdd(&counter, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    first_seen[blockIdx.x] = seen[0];
    counts[blockIdx.x] = counter + 1000 * blockIdx.x;
  }
}

__global__ void reverse_kernel(const int* in, int* out) {
  extern __shared__ int tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = tile[blockDim.x - 1 - threadIdx.x];
}

template <typename T, int N>
__global__ void rotate_kernel(T* out) {
  __shared__ T buf[N];
  __shared__ T twice[2][N];
  buf[threadIdx.x] = static_cast<T>(threadIdx.x) + T(0.5);
  twice[1][threadIdx.x] = buf[threadIdx.x] * 2;
  __syncthreads();
  out[threadIdx.x] = buf[(threadIdx.x + 1) % N] + twice[1][threadIdx.x];
}

template <typename T>
__device__ T block_sum(T v) {
  __shared__ T partial[256];
  partial[threadIdx.x] = v;
  __syncthreads();
  T total = 0;
  for (unsigned i = 0; i < blockDim.x; ++i) total += partial[i];
  __syncthreads();
  return total;
}

__global__ void two_types_kernel(int* out) {
  int a = block_sum<int>(static_cast<int>(threadIdx.x));
  float b = block_sum<float>(1.5f);
  out[threadIdx.x] = a * 10 + static_cast<int>(b);
}

__global__ void overflow_kernel(int* out) {
  extern __shared__ int tile[];
  tile[threadIdx.x] = 1;
  __syncthreads();
  if (threadIdx.x == 0) tile[blockDim.x] = 2;  // one past the end
  out[threadIdx.x] = tile[threadIdx.x];
}

}  // namespace

__shared__ int g_block_total;  // file-scope static shared memory

namespace {
__global__ void file_scope_shared_kernel(int* out) {
  if (threadIdx.x == 0) g_block_total = 0;
  __syncthreads();
  atomicAdd(&g_block_total, static_cast<int>(threadIdx.x));
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = g_block_total;
}
}  // namespace

std::vector<ThreadRecord> record_indices(dim3 grid, dim3 block) {
  std::size_t n = std::size_t(grid.x) * grid.y * grid.z * block.x * block.y * block.z;
  ThreadRecord* d = nullptr;
  cudaMalloc(&d, n * sizeof(ThreadRecord));
  indices_kernel<<<grid, block>>>(d);
  auto h = to_host(d, n);
  cudaFree(d);
  return h;
}

std::vector<float> fill_deduced(int n, float value) {
  float* d = nullptr;
  cudaMalloc(&d, n * sizeof(float));
  fill_kernel<<<(n + 63) / 64, 64>>>(d, value, n);  // T deduced as float
  auto h = to_host(d, n);
  cudaFree(d);
  return h;
}

std::vector<double> fill_explicit(int n, int value) {
  double* d = nullptr;
  cudaMalloc(&d, n * sizeof(double));
  fill_kernel<double><<<(n + 63) / 64, 64, 0, 0>>>(d, value, n);  // int converts to double
  auto h = to_host(d, n);
  cudaFree(d);
  return h;
}

std::vector<int> multi_line_launch(int n) {
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i;
  int *d_in = nullptr, *d_out = nullptr;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, n * sizeof(int));
  cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  affine_kernel<<<dim3((n + 127) / 128),
                  dim3(128),  /* block */
                  0,
                  stream>>>(d_in,
                            d_out,  // comment with <<< and ) inside
                            n,
                            (3 * (1 + 0)),
                            std::max(1, 2) + 5);
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  auto h = to_host(d_out, n);
  cudaFree(d_in);
  cudaFree(d_out);
  return h;
}

std::vector<int> static_shared_per_block(int blocks, int threads) {
  int *d_seen = nullptr, *d_counts = nullptr;
  cudaMalloc(&d_seen, blocks * sizeof(int));
  cudaMalloc(&d_counts, blocks * sizeof(int));
  static_shared_kernel<<<blocks, threads>>>(d_seen, d_counts);
  auto seen = to_host(d_seen, blocks);
  auto counts = to_host(d_counts, blocks);
  cudaFree(d_seen);
  cudaFree(d_counts);
  seen.insert(seen.end(), counts.begin(), counts.end());
  return seen;
}

std::vector<int> extern_shared_reverse(int blocks, int threads) {
  int n = blocks * threads;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i;
  int *d_in = nullptr, *d_out = nullptr;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, n * sizeof(int));
  cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  reverse_kernel<<<blocks, threads, threads * sizeof(int)>>>(d_in, d_out);
  auto h = to_host(d_out, n);
  cudaFree(d_in);
  cudaFree(d_out);
  return h;
}

std::vector<double> templated_static_shared(int threads) {
  double* d_double = nullptr;
  int* d_int = nullptr;
  cudaMalloc(&d_double, 64 * sizeof(double));
  cudaMalloc(&d_int, 64 * sizeof(int));
  rotate_kernel<double, 64><<<1, 64>>>(d_double);
  rotate_kernel<int, 64><<<1, 64>>>(d_int);
  auto a = to_host(d_double, 64);
  auto b = to_host(d_int, 64);
  cudaFree(d_double);
  cudaFree(d_int);
  a.insert(a.end(), b.begin(), b.end());
  a.resize(static_cast<std::size_t>(threads) * 2);
  return a;
}

std::vector<int> shared_in_device_templates(int threads) {
  int* d = nullptr;
  cudaMalloc(&d, threads * sizeof(int));
  two_types_kernel<<<1, threads>>>(d);
  auto h = to_host(d, threads);
  cudaFree(d);
  return h;
}

void overflow_dynamic_shared(int threads) {
  int* d = nullptr;
  cudaMalloc(&d, threads * sizeof(int));
  overflow_kernel<<<1, threads, threads * sizeof(int)>>>(d);
  cudaFree(d);
}

std::vector<int> file_scope_shared(int blocks, int threads) {
  int* d = nullptr;
  cudaMalloc(&d, blocks * threads * sizeof(int));
  file_scope_shared_kernel<<<blocks, threads>>>(d);
  auto h = to_host(d, blocks * threads);
  cudaFree(d);
  return h;
}

}  // namespace emu_test
