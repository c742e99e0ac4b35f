// The timed calls' fresh inputs (fresh_input.h) draw what inputs.h draws: for every values kind,
// type and a few sizes, InputDraw from a case's stream seed gives make_input's values element by
// element, so a fresh input (the same draw from another seed) has the distribution of the case's
// own. Runs on the host (InputDraw is host and device code).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fresh_input.h"
#include "scangrade/inputs.h"
#include "scangrade/tolerance.h"

namespace scangrade::grader {
namespace {

template <typename T>
void expect_same_draws(ValueKind values, std::size_t n) {
  Case c;
  c.id = "fresh-input";
  c.slot = Slot::Hierarchical;
  c.dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Int32;
  c.kind = ScanKind::Inclusive;
  c.n = n;
  c.values = values;
  c.seed = 12345;
  const std::vector<T> want = make_input<T>(c, 1);
  const InputDraw<T> draw{values, input_stream_seed(c), n};
  std::size_t differ = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T got = draw(i);
    if (std::memcmp(&got, &want[i], sizeof got) != 0) ++differ;
  }
  EXPECT_EQ(differ, 0u) << name(values) << " " << name(c.dtype) << " n=" << n;
}

TEST(FreshInput, DrawsWhatInputsDrawsForEveryKind) {
  for (const ValueKind values : {ValueKind::Random, ValueKind::Real, ValueKind::Zeros, ValueKind::Ones,
                                 ValueKind::Alternating, ValueKind::Large})
    for (const std::size_t n : {std::size_t{1}, std::size_t{1025}, std::size_t{100003}}) {
      if (values != ValueKind::Real) expect_same_draws<std::int32_t>(values, n);  // real is float32 only
      expect_same_draws<float>(values, n);
    }
}

TEST(FreshInput, OnlyKindsWithValuesToDrawAreFresh) {
  EXPECT_TRUE(fresh_values(ValueKind::Random));
  EXPECT_TRUE(fresh_values(ValueKind::Real));
  EXPECT_TRUE(fresh_values(ValueKind::Large));
  EXPECT_FALSE(fresh_values(ValueKind::Zeros));
  EXPECT_FALSE(fresh_values(ValueKind::Ones));
  EXPECT_FALSE(fresh_values(ValueKind::Alternating));
}

TEST(FreshInput, AnotherSeedGivesOtherValues) {
  // what makes a cache keyed on sampled elements miss: 32 sampled elements of two seeds' inputs
  const std::size_t n = 1 << 24;
  for (const ValueKind values : {ValueKind::Random, ValueKind::Large}) {
    const InputDraw<std::int32_t> a{values, 1, n}, b{values, 2, n};
    int same = 0;
    for (std::size_t s = 0; s < 32; ++s) same += a(s * n / 32) == b(s * n / 32);
    EXPECT_LT(same, 32) << name(values);
  }
}

TEST(FreshInput, TheBoundedFloatBandHoldsTheExactRulesBand) {
  // the fresh float band (output_check.cu, WriteFreshFloatBand) uses fresh_abs_sum_bound and
  // integer_values instead of each prefix's own magnitude sum and integer flag: for every kind,
  // every prefix of a few seeds' inputs, its tolerance is at least the exact rule's, so an honest
  // result (inside the exact rule's band) is inside the fresh band
  for (const ValueKind values : {ValueKind::Random, ValueKind::Real, ValueKind::Large, ValueKind::Zeros,
                                 ValueKind::Ones, ValueKind::Alternating})
    for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{0x9e3779b97f4a7c15ull}, ~std::uint64_t{0}}) {
      const std::size_t n = 300000;  // past random's exact start (100 x terms > 2^24 from 167773 terms)
      const InputDraw<float> draw{values, seed, n};
      double abs_sum = 0;
      bool integers = true;
      std::size_t narrower = 0, over_magnitude = 0, not_integer = 0;
      for (std::size_t terms = 1; terms <= n; ++terms) {
        const double x = draw(terms - 1);
        abs_sum += std::fabs(x);
        integers = integers && std::nearbyint(x) == x;
        if (std::fabs(x) > max_magnitude(values)) ++over_magnitude;
        if (integer_values(values) && std::nearbyint(x) != x) ++not_integer;
        const double exact = tolerance::bound(terms, abs_sum, integers);
        const double bounded = tolerance::bound(terms, fresh_abs_sum_bound(values, terms), integer_values(values));
        if (bounded < exact) ++narrower;
      }
      EXPECT_EQ(over_magnitude, 0u) << name(values);
      EXPECT_EQ(not_integer, 0u) << name(values);
      EXPECT_EQ(narrower, 0u) << name(values);
      // and not needlessly wide: within 2.2x of the exact rule at the end (the mean magnitude is
      // about half the largest for random, real and large)
      const double exact_end = tolerance::bound(n, abs_sum, integers);
      if (exact_end > 0) {
        EXPECT_LE(tolerance::bound(n, fresh_abs_sum_bound(values, n), integer_values(values)), 2.2 * exact_end)
            << name(values);
      }
    }
}

}  // namespace
}  // namespace scangrade::grader
