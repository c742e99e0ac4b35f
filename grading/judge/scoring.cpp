// Performance points (scoring.h).
#include "scoring.h"

#include <algorithm>
#include <cmath>

namespace scangrade::grader {

double perf_fraction(double ratio) {
  if (!std::isfinite(ratio)) return ratio > 0 ? 1.0 : 0.0;
  return std::clamp((ratio - kPerfZeroRatio) / (1.0 - kPerfZeroRatio), 0.0, 1.0);
}

std::optional<double> geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

}  // namespace scangrade::grader
