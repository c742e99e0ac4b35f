// Verdict statuses: one list for `make test`, the grader's JSON and every exporter.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace scangrade {

/// Whose fault: every status but Pass and InternalError is charged to the submission;
/// InternalError is the harness's own fault ("please report") and never costs points.
enum class Status {
  Pass,               // output matches the oracle and no rule was broken
  Fail,               // wrong values (the message names the first wrong element and a hint)
  NotImplemented,     // the slot still calls scangrade::not_implemented()
  Crash,              // the slot threw, a CUDA call failed, or the process died
  Timeout,            // the case ran past its deadline (e.g. a spinning kernel)
  CompileError,       // the submission did not compile
  PolicyViolation,    // the submission broke a rule of the assignment (a library scan, a harness symbol, ...)
  OutOfBoundsWrite,   // a guard zone right before or after d_out changed
  InputModified,      // d_in changed during the call
  Leak,               // device memory allocated by the slot was not freed
  Race,               // results depend on thread scheduling (emulation) or racecheck found hazards
  MemoryError,        // compute-sanitizer memcheck/synccheck found an error
  InternalError,      // the harness failed: please report
};

std::string_view name(Status s);
std::optional<Status> parse_status(std::string_view s);

}  // namespace scangrade
