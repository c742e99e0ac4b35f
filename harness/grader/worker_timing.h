// The worker's "time" mode: the student call, the slot's reference solution, CUB and a device-to-
// device copy measured in the same process with one method (worker_timing.cpp says which).
// Only in builds with SCANGRADE_WORKER_TIMING (the GPU build): the CPU emulation backend has no
// events, CUB or meaningful clocks.
#pragma once

#ifdef SCANGRADE_WORKER_TIMING

#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "scangrade/implementation.h"

namespace scangrade::grader {

/// The student's code failed during the timed runs (it threw, or a CUDA error followed its call).
struct StudentFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Returns the results schema's `timing` object. Throws StudentFault when the student's calls
/// fail, std::runtime_error when the harness cannot set the measurement up.
template <typename T>
nlohmann::json time_slot(const ScanFn<T>& student, Slot slot, ScanKind kind, const std::vector<T>& input);

}  // namespace scangrade::grader

#endif  // SCANGRADE_WORKER_TIMING
