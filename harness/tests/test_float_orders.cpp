// The float tolerance rule against real summation orders: correct orders never fail, a shift by
// one element always does. (CUB's order is checked on the GPU: test_gpu_orders.cpp.)
#include <cmath>

#include <gtest/gtest.h>

#include "scangrade/check.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"

namespace scangrade {
namespace {

using Floats = std::vector<float>;

Floats sequential(const Floats& x) {
  Floats out(x.size());
  float sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = sum += x[i];
  return out;
}

/// Kogge-Stone: log2(n) steps, out[i] += out[i - d].
Floats kogge_stone(const Floats& x) {
  Floats cur = x, next(x.size());
  for (std::size_t d = 1; d < x.size(); d *= 2) {
    for (std::size_t i = 0; i < x.size(); ++i) next[i] = i >= d ? cur[i] + cur[i - d] : cur[i];
    cur.swap(next);
  }
  return cur;
}

/// Brent-Kung (Blelloch): exclusive up-sweep/down-sweep over a power-of-two padded tree, then
/// inclusive = exclusive + x.
Floats brent_kung(const Floats& x) {
  std::size_t size = 1;
  while (size < x.size()) size *= 2;
  Floats t(size, 0.0f);
  std::copy(x.begin(), x.end(), t.begin());
  for (std::size_t d = 1; d < size; d *= 2)  // up-sweep
    for (std::size_t i = 2 * d - 1; i < size; i += 2 * d) t[i] += t[i - d];
  t[size - 1] = 0;
  for (std::size_t d = size / 2; d >= 1; d /= 2)  // down-sweep
    for (std::size_t i = 2 * d - 1; i < size; i += 2 * d) {
      const float left = t[i - d];
      t[i - d] = t[i];
      t[i] += left;
    }
  Floats out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = t[i] + x[i];
  return out;
}

/// Three-phase: sequential scan of each 16-element subsection, Kogge-Stone over the totals.
Floats three_phase(const Floats& x) {
  constexpr std::size_t kSection = 16;
  Floats out = x, totals;
  for (std::size_t s = 0; s < x.size(); s += kSection) {
    for (std::size_t i = s + 1; i < std::min(s + kSection, x.size()); ++i) out[i] += out[i - 1];
    totals.push_back(out[std::min(s + kSection, x.size()) - 1]);
  }
  const Floats scanned = kogge_stone(totals);
  for (std::size_t i = kSection; i < x.size(); ++i) out[i] += scanned[i / kSection - 1];
  return out;
}

struct OrderCase {
  const char* label;
  Floats (*scan)(const Floats&);
};

class FloatOrders : public ::testing::TestWithParam<std::tuple<OrderCase, std::size_t, ValueKind>> {};

TEST_P(FloatOrders, CorrectOrderNeverFailsShiftAlwaysFails) {
  const auto& [order, n, values] = GetParam();
  Case c;
  c.id = "orders";
  c.n = n;
  c.values = values;
  c.seed = n;
  const Floats x = make_input<float>(c);
  const std::vector<double> expected = oracle_scan(x, ScanKind::Inclusive);
  const Floats got = order.scan(x);
  const Comparison cmp = compare_output(x, ScanKind::Inclusive, expected, got);
  EXPECT_EQ(cmp.wrong, 0u) << order.label << " n=" << n << ": first wrong index "
                           << (cmp.first_wrong.empty() ? 0 : cmp.first_wrong[0]);

  Floats shifted(n);
  for (std::size_t i = 1; i < n; ++i) shifted[i] = got[i - 1];
  shifted[0] = 0;
  EXPECT_GT(compare_output(x, ScanKind::Inclusive, expected, shifted).wrong, 0u) << order.label << " n=" << n;
}

const OrderCase kOrders[] = {{"sequential", sequential},
                             {"kogge_stone", kogge_stone},
                             {"brent_kung", brent_kung},
                             {"three_phase", three_phase}};

INSTANTIATE_TEST_SUITE_P(
    Tolerance, FloatOrders,
    ::testing::Combine(::testing::ValuesIn(kOrders),
                       ::testing::Values(std::size_t{1000}, std::size_t{65539}, std::size_t{1} << 20,
                                         std::size_t{1} << 24),
                       ::testing::Values(ValueKind::Real, ValueKind::Random, ValueKind::Large)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).label) + "_n" + std::to_string(std::get<1>(info.param)) + "_" +
             std::string(name(std::get<2>(info.param)));
    });

}  // namespace
}  // namespace scangrade
