// The float tolerance rule's arithmetic (oracle.h, float_tolerance, says why), for host and device:
// the CPU oracle and the checker's on-device acceptance band use this one definition.
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define SCANGRADE_HOST_DEVICE __host__ __device__
#else
#define SCANGRADE_HOST_DEVICE
#endif

namespace scangrade::tolerance {

/// Higham's gamma(m) = m*u / (1 - m*u), continued as 2*m*u past m*u = 1/2.
SCANGRADE_HOST_DEVICE inline double growth(std::size_t m, double u) {
  const double mu = static_cast<double>(m) * u;
  return mu < 0.5 ? mu / (1.0 - mu) : 2.0 * mu;
}

/// float_tolerance(terms, abs_sum, all_integer) of oracle.h.
SCANGRADE_HOST_DEVICE inline double bound(std::size_t terms, double abs_sum, bool all_integer) {
  if (terms <= 1 || (all_integer && abs_sum <= 0x1p24)) return 0.0;
  return (growth(terms - 1, 0x1p-24) + growth(terms - 1, 0x1p-53)) * abs_sum;
}

}  // namespace scangrade::tolerance
