// The judge's passes over a submission's cases, in the order run_judge runs them: functional
// (functional.cpp), timing (Session::time_cases, timing.cpp), compute-sanitizer (sanitizer.cpp).
#pragma once

#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "session.h"

namespace scangrade::grader {

/// The compile step's report (--build-json) and what it means for the cases.
struct Build {
  nlohmann::json report;           // results.build
  std::string status = "ok";       // ok, compile_error, layout_error
  bool no_run = false;             // no worker runs at all
  std::set<Slot> failed_slots;     // slots whose file did not compile
  std::map<Slot, std::string> policy_violations;  // slots whose code broke a rule: the evidence

  /// compile_error for a case the build keeps from running; nullopt when it runs.
  std::optional<CaseResult> verdict(const Entry& e) const;
};

/// Runs every case once (or gives it the verdict that keeps it from running), the next case's
/// input and oracle made on another thread meanwhile. `not_run`: why no case can run ("" when
/// they can). Returns the pass's own seconds (its wall time less the waits for the GPU lock).
double functional_pass(const Options& o, const Build& build, const std::string& not_run, Session* session,
                       const std::vector<Entry>& entries, std::vector<CaseResult>& results);

/// Runs the passed cases that ask for it again under compute-sanitizer (per tool, one process over
/// all of them; on a finding or a failure each of them again alone, so that a finding names its
/// case) and turns findings into race / memory_error. Returns results.sanitizer_pass.
nlohmann::json sanitizer_pass(const Options& o, const std::string& compute_sanitizer, Session* session,
                              const std::vector<Entry>& entries, std::vector<CaseResult>& results);

}  // namespace scangrade::grader
