// The judge's command line: its options, --help and their parsing (`scangrade_judge --help`).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "scangrade/slots.h"

namespace scangrade::grader {

struct Options {
  std::string worker;                     // worker executable; may be empty only when the build failed
  std::string checker;                    // scangrade_checker (gpu backend)
  std::string reference_worker;           // --reference-worker BIN|none: calibrates the judge's clock (gpu backend)
  std::string out;                        // results.json
  std::string submission_name, submission_path;
  std::string backend;                    // "gpu" or "emulate"
  std::vector<std::string> suites;        // seeds used as written
  std::vector<std::string> hidden_suites; // the secret is mixed into their seeds
  std::optional<std::string> secret;
  std::string build_json;
  double budget_s = 900;
  std::size_t stop_after_timeouts = 3;    // a slot's remaining cases are not run after this many timeouts in a row (0: never)
  std::size_t stop_after_crashes = 5;     // after this many crashes in a row, the slot's cases of those types up to that n are not run (0: never)
  double timeout_scale = 1.0;
  bool sanitizer = true;                  // --sanitizer auto|off
  std::string compute_sanitizer;          // explicit path; else looked up in PATH
  std::optional<Slot> only_slot;
  std::optional<std::size_t> max_n;       // grade only cases with n <= max_n (emulate: kEmulationMaxN by default)
  std::size_t log_limit = 65536;
  std::string gpu_lock;                   // --gpu-lock FILE: shared around GPU use, exclusive around timing
  std::string baseline_cache;             // --baseline-cache FILE: baselines timed once per batch and GPU
  std::string case_cache;                 // --case-cache DIR: inputs and oracle outputs made once per batch (case_data.h)
  std::string sandbox = "auto";           // --sandbox auto|require|off (grading/sandbox/sandbox.h)
  std::string bwrap = "bwrap";            // --bwrap PATH: the bubblewrap executable
  std::optional<unsigned> sandbox_uid;    // --sandbox-uid N: the uid student code runs as (when root)
  bool verbose = false;
  bool help = false;
};

/// Bad command line: the message says what and how to fix it.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string usage_text();
/// Parses the command line (reads --secret-file). Throws UsageError.
Options parse_args(const std::vector<std::string>& args);

}  // namespace scangrade::grader
