// The judge: grades one submission by driving worker processes (which link the student's code)
// and writes results.json (grading/results.schema.json). The judge itself never links student code
// nor the CUDA runtime. Command line: judge_main.cpp / usage_text().
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "scangrade/slots.h"

namespace scangrade::grader {

/// Exit codes of scangrade_judge (also results.json's exit_code).
enum ExitCode : int {
  kAllPassed = 0,      // graded, every case passed
  kSomeFailed = 1,     // graded, some case did not pass
  kBadInput = 2,       // usage, malformed suite or build file: message on stderr, no results written
  kInternalError = 3,  // harness fault: outcome not_graded, `errors` filled (please report)
};

struct Options {
  std::string worker;                     // worker executable; may be empty only when the build failed
  std::string out;                        // results.json
  std::string submission_name, submission_path;
  std::string backend;                    // "gpu" or "emulate"
  std::vector<std::string> suites;        // seeds used as written
  std::vector<std::string> hidden_suites; // the secret is mixed into their seeds
  std::optional<std::string> secret;
  std::string build_json;
  double budget_s = 900;
  double timeout_scale = 1.0;
  bool sanitizer = true;                  // --sanitizer auto|off
  std::string compute_sanitizer;          // explicit path; else looked up in PATH
  std::optional<Slot> only_slot;
  std::optional<std::size_t> max_n;       // grade only cases with n <= max_n
  std::size_t log_limit = 65536;
  std::string gpu_lock;                   // --gpu-lock FILE: shared around GPU use, exclusive around timing
  std::string baseline_cache;             // --baseline-cache FILE: baselines timed once per batch and GPU
  bool verbose = false;
  bool help = false;
};

/// Bad command line: the message says what and how to fix it.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

std::string usage_text();
/// Parses the command line (reads --secret-file). Throws UsageError.
Options parse_args(const std::vector<std::string>& args);

/// Grades and writes the results; returns the exit code.
int run_judge(const Options& options);

}  // namespace scangrade::grader
