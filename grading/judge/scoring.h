// Performance points: one rule, written down once.
//
// A slot's perf_ratio is the geometric mean, over the slot's perf cases, of
// ratio_to_reference = reference_ms / student_ms (> 1: faster than the reference). Its performance
// points are
//
//     suite performance points for the slot  x  clamp((perf_ratio - 0.25) / (1 - 0.25), 0, 1)
//
// full marks at the reference's speed (or faster), zero at 4x slower than the reference, linear in
// between. They are awarded only on the GPU backend and only when every correctness case of the
// slot passed (and every perf case has a timing); otherwise they are 0 while the maximum still
// counts in perf_max_points.
//
// A slot's correctness points are the points of its passed cases; the score adds up the slots.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "scangrade/slots.h"
#include "scangrade/status.h"

namespace scangrade::grader {

inline constexpr double kPerfZeroRatio = 0.25;  // 4x slower than the reference: no performance points

/// clamp((ratio - 0.25) / 0.75, 0, 1)
double perf_fraction(double ratio);

/// Geometric mean of positive values; nullopt for an empty list or a non-positive value.
std::optional<double> geometric_mean(const std::vector<double>& values);

/// One graded case as the score sees it.
struct ScoredCase {
  Slot slot;
  Status status;
  double points;                      // what it is worth
  bool perf;                          // a perf case
  std::optional<double> ratio;        // its ratio_to_reference, when it was timed
  std::optional<std::pair<double, double>> ratio_interval = std::nullopt;  // its 95% interval, when measured
};

/// results.json's `slots` and `score`, and whether every case passed.
struct ScoreSheet {
  nlohmann::json slots = nlohmann::json::object();
  nlohmann::json score;
  bool all_pass = true;
};

/// The per-slot roll-up and the totals. perf_max: each slot's performance points over the suites;
/// gpu: whether the backend earns performance points.
ScoreSheet score_cases(const std::vector<ScoredCase>& cases, const std::map<Slot, double>& perf_max, bool gpu);

}  // namespace scangrade::grader
