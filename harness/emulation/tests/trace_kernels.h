// Host wrappers around the kernels of kernels_trace.cu (the emulator's trace: scangrade::emu::trace_begin).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace emu_trace_test {

/// Adds 1 to data[0..n) with `blocks` blocks of 256 threads; returns the launch's __LINE__.
int add_one(int* data, std::size_t n, unsigned blocks);
/// cudaMemcpyToSymbol / cudaMemcpyFromSymbol of `count` ints (count <= 64) through a __device__ array.
cudaError_t symbol_round_trip(const int* in, int* out, std::size_t count);

}  // namespace emu_trace_test
