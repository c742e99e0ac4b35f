// CPU oracle and tolerance rule (oracle.h).
#include "scangrade/oracle.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "scangrade/tolerance.h"

namespace scangrade {

template <>
std::vector<double> oracle_scan<std::int32_t>(const std::vector<std::int32_t>& in, ScanKind kind) {
  std::vector<double> out(in.size());
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (kind == ScanKind::Exclusive) out[i] = static_cast<double>(sum);
    sum += in[i];
    if (sum > std::numeric_limits<std::int32_t>::max() || sum < std::numeric_limits<std::int32_t>::min())
      throw std::range_error("int32 prefix sum leaves the int32 range at index " + std::to_string(i) +
                             ": the case's values are too large for its n");
    if (kind == ScanKind::Inclusive) out[i] = static_cast<double>(sum);
  }
  return out;
}

template <>
std::vector<double> oracle_scan<float>(const std::vector<float>& in, ScanKind kind) {
  std::vector<double> out(in.size());
  double sum = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (kind == ScanKind::Exclusive) out[i] = sum;
    sum += in[i];
    if (kind == ScanKind::Inclusive) out[i] = sum;
  }
  return out;
}

double float_tolerance(std::size_t terms, double abs_sum, bool all_integer) {
  return tolerance::bound(terms, abs_sum, all_integer);
}

}  // namespace scangrade
