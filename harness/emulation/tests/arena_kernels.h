// Host wrappers around the arena tests' kernels (arena_kernels.cu, compiled through rewrite.py).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace arena_test {

// ---- single accesses (each launch is followed by cudaDeviceSynchronize, whose result is returned)

/// One thread writes p[index] = value.
cudaError_t write_at(int* p, long long index, int value);
/// One thread reads p[index] into *value (through a device int).
cudaError_t read_at(const int* p, long long index, int* value);
/// One block of `threads` threads: thread t writes p[first + t * stride] = value.
cudaError_t write_strided(int* p, long long first, long long stride, int threads, int value);
/// Three blocks of 64 threads wait at a barrier; then thread 5 of block 1 writes p[index].
cudaError_t write_at_after_barrier(int* p, long long index);
/// A device function that recurses `depth` times with a 1 KiB local array per frame.
cudaError_t recurse(int depth);

// ---- slots with the contract's signature (scangrade::ScanFn<std::int32_t>), inclusive scans

/// Gallery-like wrong example: a hierarchical scan of 256-element tiles none of whose kernels check
/// bounds: the last tile reads past d_in and writes up to 255 elements past d_out, and the scan of
/// the block sums writes a tile past its small temporary. (The GPU: out_of_bounds_write.)
void unchecked_tile_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
/// Gallery-like wrong example: a correct single-block scan (n <= 1024) whose host code keeps a copy
/// of the input in a std::vector and "frees" it with cudaFree at the end.
void frees_host_vector(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
/// The same, but the student checks cudaFree's result and clears the error (cudaGetLastError).
void frees_host_vector_checked(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
/// A correct single-block double-buffered Hillis-Steele scan (n <= 1024).
void correct_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
/// An in-place Hillis-Steele scan without double buffering: a data race (forward order: wrong sums).
void racy_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
// a shift count past the width (undefined) makes the thread orders disagree; no race on a GPU
void shifted_pad_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
void shifted_pad_macro_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
/// Writes its block total through a null pointer: an illegal address under every thread order.
void null_write_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);
/// Thread 0 sets a shared offset that the others read with no barrier in between: right under
/// forward order, an index 2^32 elements out of range (an illegal address) under reverse order.
void order_dependent_crash_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t stream);

}  // namespace arena_test
