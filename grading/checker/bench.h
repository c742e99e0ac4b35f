// The checker's own timings: the slot's reference solution, CUB and a device-to-device copy, with
// the method of timing_method.h (CUDA events around each call), in this trusted process. The
// student's calls are timed by the judge through the worker (timing.cpp in grading/judge).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include <cuda_runtime.h>

#include "messages.h"
#include "scangrade/implementation.h"

namespace scangrade::grader {

/// 2 x the L2 size of the current device: what a flush writes.
std::size_t l2_flush_bytes();

using Call = std::function<void(const void*, void*, cudaStream_t)>;

/// How median_call_ms times: `prepare` (when set) is enqueued before the start event, with the
/// input's restore; `hide_host` holds the stream (a host function) until the call and the stop
/// event are enqueued, so that the time excludes the host's enqueueing (the grader's own timing
/// includes it: the stream is idle when the start event is recorded).
struct CallTiming {
  Call prepare;
  bool hide_host = false;
};

/// The median (ms) of `call(in, out, stream)` on a fresh copy of `d_input` (bytes) before every
/// call, the output poisoned and L2 flushed: the method every baseline is timed with.
double median_call_ms(std::size_t bytes, const void* d_input, const Call& call, const CallTiming& how = {});

/// The slot's reference solution timed one call at a time with the method of median_call_ms (the
/// pristine input restored, the output poisoned, L2 flushed, CUDA events around the call), for a
/// series that pairs each reference call with one of the student's: drift of the GPU's clocks or
/// load between the calls touches both alike. kWarmup calls are made when it is made.
class ReferenceCalls {
 public:
  template <typename T>
  static std::unique_ptr<ReferenceCalls> make(Slot slot, ScanKind kind, const T* d_input, std::size_t n);
  virtual ~ReferenceCalls() = default;
  /// One more call's time (ms). Throws std::runtime_error when the call fails.
  virtual double next_ms() = 0;
};

/// Medians (ms) of the reference, CUB and a copy on `d_input` (n elements on the device); without
/// `with_reference`, reference_ms is 0 (the timing pass pairs the reference with the student's
/// calls instead: ReferenceCalls). Throws std::runtime_error when a baseline fails.
template <typename T>
Baselines measure_baselines(Slot slot, ScanKind kind, const T* d_input, std::size_t n, bool with_reference = true);

}  // namespace scangrade::grader
