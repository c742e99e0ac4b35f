// Kernels for trace_test.cpp: launches and symbol copies the emulator's trace must record.
#include "trace_kernels.h"

namespace {

__device__ int g_symbol[64];

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

}  // namespace emu_trace_test
