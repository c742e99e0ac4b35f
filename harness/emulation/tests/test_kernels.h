// Host wrappers around the test kernels in tests/*.cu (compiled through rewrite.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

namespace emu_test {

// kernels_basic.cu
struct ThreadRecord {
  unsigned tx, ty, tz, bx, by, bz, bdx, gdx;
};
std::vector<ThreadRecord> record_indices(dim3 grid, dim3 block);
std::vector<float> fill_deduced(int n, float value);
std::vector<double> fill_explicit(int n, int value);
std::vector<int> multi_line_launch(int n);
std::vector<int> static_shared_per_block(int blocks, int threads);
std::vector<int> extern_shared_reverse(int blocks, int threads);
std::vector<double> templated_static_shared(int threads);
std::vector<int> shared_in_device_templates(int threads);
std::vector<int> file_scope_shared(int blocks, int threads);
void overflow_dynamic_shared(int threads);

// kernels_sync.cu
std::vector<int> neighbour_after_barrier(int threads);
std::vector<int> barrier_votes(int threads);
std::vector<int> warp_shuffles(int threads);
std::vector<int> partial_mask_shuffles();
std::vector<unsigned> warp_votes();
std::vector<long long> atomics(int blocks, int threads);
std::vector<int> look_back_scan(const std::vector<int>& in, int threads);
cudaError_t divergent_barrier(int* line);
cudaError_t warp_barrier_deadlock(int* line);
cudaError_t shuffle_with_exited_lanes(int* line);
cudaError_t early_exit_then_barrier(std::vector<int>* out);
cudaError_t launch_threads(dim3 grid, dim3 block, std::size_t smem);

// kernels_races.cu
std::vector<int> hillis_steele_in_place(const std::vector<int>& in);
std::vector<int> hillis_steele_double_buffered(const std::vector<int>& in);
int warp_reduce_without_syncwarp(const std::vector<int>& in);
std::vector<int> warp_scan_without_syncwarp(const std::vector<int>& in);  // each warp's 32 elements
std::vector<int> volatile_in_place_scan(const std::vector<int>& in);      // the whole block, racy
std::vector<int> ticket_race_scan(const std::vector<int>& in);  // tiles of 256 by ticket, racy total

// kernels_undefined.cu: operations C++ leaves undefined
struct Shifted {
  std::vector<int> left;
  std::vector<unsigned> right_unsigned;
  std::vector<int> right_signed;
};
Shifted shift(const std::vector<int>& in, int amount);
struct Converted {
  std::vector<int> as_int;
  std::vector<unsigned> as_unsigned;
};
Converted convert(const std::vector<float>& in);
struct Divided {
  cudaError_t status;
  std::vector<int> quotient, remainder;
  std::vector<unsigned> unsigned_quotient;
};
Divided divide(const std::vector<int>& a, const std::vector<int>& b);

// kernels_scan.cu
void two_level_exclusive_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, cudaStream_t stream);
void leak_malloc(std::size_t bytes);
void leak_malloc_async(std::size_t bytes, cudaStream_t stream);
void no_leak(std::size_t bytes, cudaStream_t stream);

}  // namespace emu_test
