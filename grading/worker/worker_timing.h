// The worker's "time" mode: the student call, the slot's reference solution, CUB and a device-to-
// device copy measured in the same process with one method (worker_timing.cpp says which). The
// three baselines can instead come from the batch's baseline cache (judge --baseline-cache): then
// only the student's call is measured, and the method says so.
// Only in builds with SCANGRADE_WORKER_TIMING (the GPU build): the CPU emulation backend has no
// events, CUB or meaningful clocks.
#pragma once

#ifdef SCANGRADE_WORKER_TIMING

#include <optional>
#include <cstddef>
#include <stdexcept>

#include "messages.h"
#include "scangrade/implementation.h"

namespace scangrade::grader {

/// The student's code failed during the timed runs (it threw, or a CUDA error followed its call).
struct StudentFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A timed repetition's output was outside its acceptance band: the call did not compute its
/// result (it returned a remembered one, or nothing).
struct WrongTimedOutput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The device copy of a case's acceptance band (check.h): every timed output is checked against it.
template <typename T>
struct DeviceBand {
  const T* lo = nullptr;
  const T* hi = nullptr;
};

/// Returns the results schema's `timing` object (messages.h). With `cached`, the baselines are taken from it
/// instead of being measured; `used` receives the baselines the timing object was computed with.
/// Throws StudentFault when the student's calls fail, std::runtime_error when the harness cannot
/// set the measurement up.
/// `input` holds n elements, in host memory or (on_device) in device memory. Every call of the
/// student's (warm-ups too) writes into a freshly poisoned output, the buffers alternating between
/// two address pairs, and its output is checked against `band` before any time counts: throws
/// WrongTimedOutput when it is not inside.
template <typename T>
Timing time_slot(const ScanFn<T>& student, Slot slot, ScanKind kind, const T* input, std::size_t n, bool on_device,
                 const DeviceBand<T>& band, const std::optional<Baselines>& cached, Baselines& used);

}  // namespace scangrade::grader

#endif  // SCANGRADE_WORKER_TIMING
