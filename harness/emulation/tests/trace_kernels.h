// Host wrappers around the kernels of kernels_trace.cu (the emulator's trace: scangrade::emu::trace_begin).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace emu_trace_test {

/// Adds 1 to data[0..n) with `blocks` blocks of 256 threads; returns the launch's __LINE__.
int add_one(int* data, std::size_t n, unsigned blocks);
/// cudaMemcpyToSymbol / cudaMemcpyFromSymbol of `count` ints (count <= 64) through a __device__ array.
cudaError_t symbol_round_trip(const int* in, int* out, std::size_t count);
/// cudaMemcpyToSymbol(Async) of `bytes` into a `__constant__ float[1024]` at `offset`, with `kind`.
cudaError_t to_table(const void* src, std::size_t bytes, std::size_t offset, cudaMemcpyKind kind, bool async);
/// cudaMemcpyFromSymbol(Async) of `bytes` out of the same table.
cudaError_t from_table(void* dst, std::size_t bytes, std::size_t offset, cudaMemcpyKind kind, bool async);
/// cudaMemcpyToSymbol(&table, src, 4): a temporary (the table's address) where the symbol belongs.
cudaError_t to_table_through_temporary(const float* src);
/// cudaGetSymbolSize of the table (4096).
std::size_t table_size();
/// cudaMalloc / cudaMallocAsync (stream and pool forms) into volatile and const pointers, a kernel
/// writing i + 1 through the volatile int pointer, copied into out[0..n) (n <= 256), all freed.
cudaError_t volatile_allocations(std::size_t n, int* out);

}  // namespace emu_trace_test
