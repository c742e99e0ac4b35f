// The one timing method of the grader, shared by the checker (which times the reference, CUB and a
// device-to-device copy in its own process) and the judge (which runs the student's timed calls
// through the worker, with the checker preparing and verifying every call):
//   * before every call the input is restored from a pristine device copy, the output poisoned
//     (0xFF bytes: NaN, -1) and the L2 cache flushed by a cudaMemsetAsync over 2 x L2; calls
//     alternate between two input/output address pairs;
//   * kWarmup calls first (module load, first-touch allocations, pool growth), not counted;
//   * stop at >= kMinReps repetitions once (p75 - p25) / median <= kMaxSpread, or at kMaxReps, or
//     after kBudgetSeconds for one implementation (at least one repetition always).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace scangrade::grader::timing {

inline constexpr int kWarmup = 3;
inline constexpr int kMinReps = 10;
inline constexpr int kMaxReps = 200;
inline constexpr double kMaxSpread = 0.05;
inline constexpr double kBudgetSeconds = 2.0;

inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

inline double spread_of(const std::vector<double>& v) {
  const double median = quantile(v, 0.5);
  return median > 0 ? (quantile(v, 0.75) - quantile(v, 0.25)) / median : 0.0;
}

/// True when a series of repetitions (warm-ups excluded) may stop, `elapsed_s` after its start.
inline bool enough(const std::vector<double>& ms, double elapsed_s) {
  const int reps = static_cast<int>(ms.size());
  if (reps >= kMaxReps || (reps >= 1 && elapsed_s >= kBudgetSeconds)) return true;
  return reps >= kMinReps && spread_of(ms) <= kMaxSpread;
}

struct Stats {
  double median_ms = 0, min_ms = 0, max_ms = 0, spread = 0;
  int reps = 0;
};

inline Stats summarize(const std::vector<double>& ms) {
  Stats s;
  if (ms.empty()) return s;
  s.reps = static_cast<int>(ms.size());
  s.median_ms = quantile(ms, 0.5);
  s.min_ms = *std::min_element(ms.begin(), ms.end());
  s.max_ms = *std::max_element(ms.begin(), ms.end());
  s.spread = spread_of(ms);
  return s;
}

}  // namespace scangrade::grader::timing
