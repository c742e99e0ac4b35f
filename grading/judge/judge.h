// The judge: grades one submission by driving worker processes (which link the student's code)
// and writes results.json (grading/results.schema.json). The judge itself never links student code
// nor the CUDA runtime. Command line: command_line.h; the passes: passes.h; the worker session:
// session.h; the protocol: grading/protocol/README.md.
#pragma once

#include "command_line.h"
#include "gpu_lock.h"

namespace scangrade::grader {

/// Exit codes of scangrade_judge (also results.json's exit_code).
enum ExitCode : int {
  kAllPassed = 0,      // graded, every case passed
  kSomeFailed = 1,     // graded, some case did not pass
  kBadInput = 2,       // usage, malformed suite or build file: message on stderr, no results written
  kInternalError = 3,  // harness fault: outcome not_graded, `errors` filled (please report)
};

/// Grades and writes the results; returns the exit code.
int run_judge(const Options& options);

}  // namespace scangrade::grader
