// The GPU lock (--gpu-lock FILE): how judges that share a GPU take turns.
#pragma once

#include <string>

namespace scangrade::grader {

/// The lock of one GPU shared by several judges (--gpu-lock FILE), held while the object lives:
/// Shared around every use of the GPU that is not timed (functional runs, compute-sanitizer runs),
/// Exclusive around a submission's timed cases, so that timings are taken with the GPU to one
/// judge. Every acquisition first passes a turnstile (an exclusive flock on FILE.gate, held until
/// FILE is granted), so a judge waiting to time holds back new shared holders instead of waiting
/// for a moment when none is left. flock(2) locks: the descriptors are close-on-exec, so a worker
/// started while one is held cannot keep it, and the kernel releases them when the process dies,
/// so a killed judge never leaves the GPU taken. The constructor blocks until the lock is granted
/// and throws std::runtime_error when a file cannot be opened or locked.
class GpuLock {
 public:
  enum Mode { Shared, Exclusive };
  GpuLock(const std::string& path, Mode mode);
  ~GpuLock();
  GpuLock(const GpuLock&) = delete;
  GpuLock& operator=(const GpuLock&) = delete;
  /// Seconds the constructor waited for the lock.
  double waited_s() const { return waited_s_; }

 private:
  int fd_ = -1;
  double waited_s_ = 0;
};

}  // namespace scangrade::grader
