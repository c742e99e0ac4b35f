// Kernels for trace_test.cpp: launches and symbol copies the emulator's trace must record.
#include "trace_kernels.h"

namespace {

__device__ int g_symbol[64];
__constant__ float c_table[1024];

// Writes i + 1 to p[i] through a volatile pointer, as a student's flag array would be written.
__global__ void fill_volatile_kernel(volatile int* p, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) p[i] = static_cast<int>(i + 1);
}

__global__ void add_one_kernel(int* data, std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

}  // namespace

namespace emu_trace_test {

int add_one(int* data, std::size_t n, unsigned blocks) {
  add_one_kernel<<<blocks, 256>>>(data, n); const int line = __LINE__;
  return line;
}

cudaError_t symbol_round_trip(const int* in, int* out, std::size_t count) {
  if (cudaError_t e = cudaMemcpyToSymbol(g_symbol, in, count * sizeof(int)); e != cudaSuccess) return e;
  return cudaMemcpyFromSymbol(out, g_symbol, count * sizeof(int));
}

cudaError_t to_table(const void* src, std::size_t bytes, std::size_t offset, cudaMemcpyKind kind, bool async) {
  return async ? cudaMemcpyToSymbolAsync(c_table, src, bytes, offset, kind, nullptr)
               : cudaMemcpyToSymbol(c_table, src, bytes, offset, kind);
}

cudaError_t from_table(void* dst, std::size_t bytes, std::size_t offset, cudaMemcpyKind kind, bool async) {
  return async ? cudaMemcpyFromSymbolAsync(dst, c_table, bytes, offset, kind, nullptr)
               : cudaMemcpyFromSymbol(dst, c_table, bytes, offset, kind);
}

cudaError_t to_table_through_temporary(const float* src) {
  return cudaMemcpyToSymbol(&c_table, src, sizeof(float));  // the address of the table, not the table
}

std::size_t table_size() {
  std::size_t size = 0;
  return cudaGetSymbolSize(&size, c_table) == cudaSuccess ? size : 0;
}

cudaError_t volatile_allocations(std::size_t n, int* out) {
  // nvcc accepts each of these (CUDA's templates take T** with a cv-qualified T)
  volatile int* flags = nullptr;
  volatile float* values = nullptr;
  const volatile unsigned* counter = nullptr;
  const int* read_only = nullptr;
  cudaMemPool_t pool = nullptr;
  if (cudaError_t e = cudaMalloc(&flags, n * sizeof(int)); e != cudaSuccess) return e;
  if (cudaError_t e = cudaMalloc(&values, n * sizeof(float)); e != cudaSuccess) return e;
  if (cudaError_t e = cudaMallocAsync(&counter, sizeof(unsigned), nullptr); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetDefaultMemPool(&pool, 0); e != cudaSuccess) return e;
  if (cudaError_t e = cudaMallocAsync(&read_only, n * sizeof(int), pool, nullptr); e != cudaSuccess) return e;
  if (flags == nullptr || values == nullptr || counter == nullptr || read_only == nullptr) return cudaErrorUnknown;
  fill_volatile_kernel<<<1, 256>>>(flags, n);
  cudaError_t e = cudaMemcpy(out, const_cast<int*>(flags), n * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(const_cast<int*>(flags));
  cudaFree((void*)values);
  cudaFreeAsync(const_cast<unsigned*>(counter), nullptr);
  cudaFreeAsync(const_cast<int*>(read_only), nullptr);
  return e;
}

}  // namespace emu_trace_test
