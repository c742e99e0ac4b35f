// The CPU oracle and the tolerance rule: one place decides what the right answer is.
#pragma once

#include <cstddef>
#include <vector>

#include "scangrade/student_api.h"

namespace scangrade {

/// The exact scan of `in`, as doubles.
///   int32: accumulated exactly in int64; throws std::range_error if a prefix sum leaves the int32
///          range (suite inputs never do: see inputs.h for the ranges that guarantee it). Every
///          int32 is exactly a double, so the result is exact.
///   float: accumulated in float64 (error analysis with the tolerance rule below).
template <typename T>
std::vector<double> oracle_scan(const std::vector<T>& in, ScanKind kind);

/// Tolerance rule. out[i] of a scan is a sum of k terms (k = i+1 inclusive, k = i exclusive) with
/// S = sum of their absolute values. A correct float32 result may differ from the float64 oracle by
///
///   0                              if every term is an integer and S <= 2^24: then every partial
///                                  sum, in any order, is an integer of magnitude <= 2^24 and exact
///                                  in float32, so any correct summation order gives the exact sum;
///   (g32(k-1) + g64(k-1)) * S      otherwise, with g(m) = m*u / (1 - m*u), u = 2^-24 (float32) or
///                                  2^-53 (float64).
///
/// Why: every float32 addition rounds, fl(a+b) = (a+b)(1+d) with |d| <= u. Whatever order the
/// additions take (sequential, Kogge-Stone, Brent-Kung, per-thread sequential then tree, CUB's), a
/// term goes through at most k-1 additions, so the computed sum is sum(x_j * prod(1+d)) and differs
/// from the exact sum by at most g32(k-1) * S (Higham, "Accuracy and Stability of Numerical
/// Algorithms", 2nd ed., section 4.2). The oracle's own float64 error adds g64(k-1) * S. Past
/// m*u = 1/2 the bound is continued as 2*m*u (it is then already larger than S itself: such
/// cases only check the magnitude; int32 cases of the same size check the indexing exactly).
double float_tolerance(std::size_t terms, double abs_sum, bool all_integer);

}  // namespace scangrade
