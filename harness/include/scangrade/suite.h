// Test suites are data: JSON files under testcases/ (format documented in grading/docs/suites.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "scangrade/slots.h"

namespace scangrade {

/// One row of a suite: what to run, on which input, and what it is worth.
struct Case {
  std::string id;           // unique in the suite; used in test names and results
  Slot slot;
  DType dtype;
  ScanKind kind;            // must match the slot's fixed kind, except for the hierarchical slot
  std::size_t n;
  ValueKind values;
  std::uint64_t seed;       // with `id`, fixes the input on every machine
  double points;
  Visibility visibility;
  std::string why;          // why this case is in the suite (shown in failure messages)
  bool perf = false;        // timed by the grader (performance points)
  double timeout_s = 0;     // per-case deadline for the grader; 0 = the default that scales with n
  std::vector<std::string> sanitize;  // compute-sanitizer tools the grader runs on this case after it
                                      // passes: "racecheck", "memcheck", "synccheck" (each at most once)
};

/// What a run-time policy finding (grading/worker/policy_rules.h) costs, per rule, set by a suite's
/// "policy" object: zero_slot (the default: every case of the slot becomes policy_violation),
/// flag (reported in the case's message, scored as if nothing was found) or off (not reported).
enum class PolicyAction { ZeroSlot, Flag, Off };
inline constexpr const char* kPolicyRules[] = {"host_compute", "library", "launch"};

struct Suite {
  std::string name;
  std::filesystem::path path;
  std::vector<Case> cases;
  /// Performance points per slot ("performance": {"points": {"hierarchical": 5}}): what the grader
  /// awards for speed on the slot's perf cases (see grading/judge/scoring.h for the rule).
  std::map<Slot, double> performance_points;
  /// "policy": {"host_compute": "zero_slot" | "flag" | "off", "library": ..., "launch": ...}; a
  /// rule not named costs zero_slot.
  std::map<std::string, PolicyAction> policy;
};

/// The suite's action for a run-time rule (zero_slot when it names none).
inline PolicyAction policy_action(const Suite& s, const std::string& rule) {
  const auto it = s.policy.find(rule);
  return it == s.policy.end() ? PolicyAction::ZeroSlot : it->second;
}

/// The deadline of a case (seconds) when its suite gives no timeout_s: on a GPU 10 s + 50 ns per
/// element, on the CPU emulation backend 20 s + 3 us per element.
double default_deadline_s(std::size_t n, bool emulated);

/// The stop rule for hangs: after this many timeouts in a row in one slot, the slot's remaining
/// cases are not run and count as timeouts (each would wait out its deadline). The grader's default
/// (scangrade_judge --stop-after-timeouts) and `make test` both use it.
inline constexpr std::size_t kStopAfterTimeouts = 3;

/// The compute-sanitizer tools a case may ask for, in the order the grader runs them.
inline constexpr const char* kSanitizerTools[] = {"racecheck", "memcheck", "synccheck"};

/// A suite file that cannot be used; what() names the file, the row and the field.
struct SuiteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Loads and validates a suite file. Throws SuiteError with a precise message on any problem:
/// unreadable file, bad JSON (with line/column), a missing/unknown/ill-typed field, a value out of
/// range for the slot, a kind that does not fit the slot, or a duplicate id.
Suite load_suite(const std::filesystem::path& path);
/// Same, from text (`origin` names the source in error messages).
Suite parse_suite(const std::string& text, const std::string& origin);

/// A readable, test-name-safe label from the id: "hillis_steele.int32.n1025.random" gives
/// "int32_n1025_random" (the slot prefix dropped, '.' and '-' made '_').
std::string case_label(const Case& c);

}  // namespace scangrade
