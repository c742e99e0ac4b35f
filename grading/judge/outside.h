// What the judge sees of a worker from outside its process: the device memory the driver says the
// worker's process tree holds (NVML, loaded at run time: the judge links no CUDA library).
//
// Measured on an H200 (tools/probe_outside.cu, `PROBE_OUTSIDE=1 tools/gpu-check.sh`): NVML lists a
// process by its pid as the judge sees it, also when the process runs under bubblewrap in its own pid
// namespace as another uid; a CUDA context holds 518 MiB; cudaMalloc shows at once and cudaFree gives
// it back at once (1000 allocations of 4 KiB: +4 MiB, back to 518 after freeing); a default pool that
// keeps freed memory shows it until cudaMemPoolTrimTo; device memory another process created and
// this one imported (the case buffers) is not counted. The worker trims its pools after each checked
// call, so what grows between two checked calls is what the call left allocated, plus the driver's
// one-time reservations (a kernel's local memory, loaded modules).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace scangrade::grader {

class DeviceMemoryView {
 public:
  /// The view of this process (NVML is loaded and initialised at the first call).
  static const DeviceMemoryView& get();
  bool available() const { return processes_ != nullptr; }
  const std::string& why_not() const { return why_; }
  /// Bytes of device memory that `root` and its descendants hold on every GPU, or -1 when NVML is
  /// not available or cannot say.
  std::int64_t held_by_tree(pid_t root) const;

 private:
  DeviceMemoryView();
  using Processes = int (*)(void*, unsigned int*, void*);
  Processes processes_ = nullptr;
  void* devices_[16] = {};
  unsigned int device_count_ = 0;
  std::string why_;
};

/// The pids of `root` and all its descendants (root first): from the children files of the tree's
/// threads, or where the kernel has none, from every process's parent.
std::vector<pid_t> process_tree(pid_t root);
/// The same from every process's parent (/proc/<pid>/stat), whatever the kernel has.
std::vector<pid_t> process_tree_from_parents(pid_t root);

}  // namespace scangrade::grader
