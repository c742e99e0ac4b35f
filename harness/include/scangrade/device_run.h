// Running one slot call on the device with every guard in place (used by `make test` and the
// grader's worker). Only CUDA runtime API calls: the same code runs over the emulation backend.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scangrade/check.h"
#include "scangrade/implementation.h"

namespace scangrade {

/// Why kernels cannot run in this process (no device, no driver), or nullopt when they can.
/// Evaluated once.
std::optional<std::string> device_unavailable();

/// One line naming the device ("NVIDIA H100 80GB HBM3, sm_90, driver 13.0, runtime 13.0").
std::string device_description();

/// Throws std::runtime_error "<stage> failed at <what>: <error name>: <error text>" when a CUDA call
/// of the harness (not the student's) fails.
void check_cuda(cudaError_t err, const char* what, const char* stage = "harness setup");

/// Device memory owned by the harness (at least one byte), freed with the object. Throws as
/// check_cuda when cudaMalloc fails.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes, const char* stage = "harness setup");
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

/// Runs fn(d_in, d_out, n, stream) once:
///   d_out sits between two guard zones of kGuardElements filled with the canary pattern and is
///   poisoned before the call; the input is copied back afterwards; the device memory this
///   process holds is measured before and after (alloc_tracker.h).
/// Throws std::runtime_error only when the harness itself cannot set the run up.
template <typename T>
RunRecord<T> run_on_device(const ScanFn<T>& fn, const std::vector<T>& input);

/// The call itself, on buffers someone else set up (the grader's trusted side owns them and reads
/// them afterwards): fn(d_in, d_out, n, stream) on a fresh stream, the whole device synchronized,
/// the memory balance measured. The record's output, guards and input_after stay empty.
template <typename T>
RunRecord<T> run_in_place(const ScanFn<T>& fn, const T* d_in, T* d_out, std::size_t n);

}  // namespace scangrade
