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
#pragma once

#include <optional>
#include <vector>

namespace scangrade::grader {

inline constexpr double kPerfZeroRatio = 0.25;  // 4x slower than the reference: no performance points

/// clamp((ratio - 0.25) / 0.75, 0, 1)
double perf_fraction(double ratio);

/// Geometric mean of positive values; nullopt for an empty list or a non-positive value.
std::optional<double> geometric_mean(const std::vector<double>& values);

}  // namespace scangrade::grader
