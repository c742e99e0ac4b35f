// The worker's device-side check of a timed repetition's output: every element inside its
// acceptance band (check.h, acceptance_band), so that a call is timed only when it computed its
// result (a slot that returns a remembered result at once gets no time).
#pragma once



#include <cstddef>
#include <optional>

#include <cuda_runtime.h>

namespace scangrade::grader {

/// The first index i < n with d_out[i] outside [d_lo[i], d_hi[i]] (NaN is outside), or nullopt.
/// Runs on `stream` and waits for it; `d_first` is one unsigned long long of device scratch.
template <typename T>
std::optional<std::size_t> first_outside(const T* d_out, const T* d_lo, const T* d_hi, std::size_t n,
                                         unsigned long long* d_first, cudaStream_t stream);

}  // namespace scangrade::grader


