// One timed case's series, as the timing pass's steps share it (timing.cpp: the series and its
// timing object; timing_share.cpp: the judge's clock as a bound and the GPU's fair share).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "case_memory.h"
#include "session.h"
#include "timing_method.h"

namespace scangrade::grader {

/// One call of the submission's slot while timing.
struct TimedCall {
  double event_ms = 0, host_ms = 0;  // what the worker reported
  double wall_ms = 0;                // the judge's clock around the exchange
  double reference_ms = 0;           // the paired reference call (a warm-up or a cut call: the reference alone)
  bool counted = false;              // after the warm-up
};

struct Session::Series {
  Series(const Entry& entry, CaseResult& result, std::string baseline_key)
      : e(entry), r(result), key(std::move(baseline_key)) {}
  const Entry& e;
  CaseResult& r;
  std::string key;                   // the baseline cache's key
  std::optional<Baselines> cached;   // the cache's baselines, when it had them
  Baselines used;                    // the baselines this case reports
  std::size_t bytes = 0, flush_bytes = 0;
  bool fresh_input = false;
  double deadline_s = 0;
  double overhead_ms = 0;            // what the worker path adds to the judge's clock (calibrated)
  std::string overhead_from;         // how it was calibrated
  SharedBuffers calibration_buffers; // the series' buffers again, for the reference as a student
  std::vector<double> calibration_wall_ms, calibration_event_ms;  // its calls before and after the series
  /// The judge's bound on a call that took `wall_ms` on its clock.
  double bound_ms(double wall_ms) const { return timing::judge_bound_ms(wall_ms, overhead_ms); }
  double allowance_s = 0;            // what the counted calls may take (timing_method.h)
  double counted_s = 0;              // what they took (the judge's bound)
  std::string stopped;               // why the GPU's fair share stopped the series ("": it did not)
  timing::BenchVariation variation;  // benchmark-only (timing_method.h); none when grading
  bool short_series = false;         // another case of the slot did not pass: kMinReps pairs, for the feedback
  std::string stopped_by;            // which stopping rule ended the series
  std::vector<TimedCall> calls;      // every call, warm-ups included
  std::vector<double> ratios;        // the counted calls' paired ratios (judged times): the stopping rule
};

/// `value` printed with `fmt` (one number).
inline std::string formatted(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

}  // namespace scangrade::grader
