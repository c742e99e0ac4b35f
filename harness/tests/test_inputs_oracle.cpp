// Inputs are deterministic and in range; the oracle computes the scans exactly.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "scangrade/inputs.h"
#include "scangrade/oracle.h"

namespace scangrade {
namespace {

Case make_case(ValueKind values, std::size_t n, DType dtype = DType::Int32, std::uint64_t seed = 7) {
  Case c;
  c.id = "t.case";
  c.slot = Slot::Hierarchical;
  c.dtype = dtype;
  c.kind = ScanKind::Inclusive;
  c.n = n;
  c.values = values;
  c.seed = seed;
  return c;
}

TEST(Inputs, SameCaseSameInputOnEveryMachine) {
  const auto a = make_input<std::int32_t>(make_case(ValueKind::Random, 8));
  EXPECT_EQ(a, make_input<std::int32_t>(make_case(ValueKind::Random, 8)));
  // Golden values: a change to the generator changes every suite's inputs; it must be deliberate.
  EXPECT_EQ(a, (std::vector<std::int32_t>{-34, -68, -32, -70, -97, -64, 7, 92}));
}

TEST(Inputs, ThreadsDoNotChangeTheInput) {
  // large cases are made by several threads, each from its own place in the stream
  const std::size_t n = 3 * (std::size_t{1} << 20) + 5;
  for (const ValueKind v : {ValueKind::Random, ValueKind::Large, ValueKind::Alternating}) {
    const Case c = make_case(v, n);
    EXPECT_EQ(make_input<std::int32_t>(c, 1), make_input<std::int32_t>(c, 7)) << name(v);
    EXPECT_EQ(make_input<std::int32_t>(c, 1), make_input<std::int32_t>(c)) << name(v);
  }
  for (const ValueKind v : {ValueKind::Real, ValueKind::Random, ValueKind::Large}) {
    const Case c = make_case(v, n, DType::Float32);
    EXPECT_EQ(make_input<float>(c, 1), make_input<float>(c, 5)) << name(v);
  }
}

TEST(Inputs, SeedAndIdBothChangeTheInput) {
  const auto base = make_input<std::int32_t>(make_case(ValueKind::Random, 64));
  EXPECT_NE(base, make_input<std::int32_t>(make_case(ValueKind::Random, 64, DType::Int32, 8)));
  Case renamed = make_case(ValueKind::Random, 64);
  renamed.id = "t.other";
  EXPECT_NE(base, make_input<std::int32_t>(renamed));
}

TEST(Inputs, RandomIntegersStayInRange) {
  for (std::int32_t v : make_input<std::int32_t>(make_case(ValueKind::Random, 100000))) {
    ASSERT_GE(v, -100);
    ASSERT_LE(v, 100);
  }
  for (float v : make_input<float>(make_case(ValueKind::Random, 1000, DType::Float32))) ASSERT_EQ(v, std::nearbyint(v));
}

TEST(Inputs, RealFloatsAreRealValuedInUnitRange) {
  const auto x = make_input<float>(make_case(ValueKind::Real, 10000, DType::Float32));
  int non_integer = 0;
  for (float v : x) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    non_integer += v != std::nearbyint(v);
  }
  EXPECT_GT(non_integer, 9900);
}

TEST(Inputs, PatternsAreWhatTheyClaim) {
  EXPECT_EQ(make_input<std::int32_t>(make_case(ValueKind::Zeros, 3)), (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_EQ(make_input<std::int32_t>(make_case(ValueKind::Ones, 3)), (std::vector<std::int32_t>{1, 1, 1}));
  EXPECT_EQ(make_input<std::int32_t>(make_case(ValueKind::Alternating, 4)), (std::vector<std::int32_t>{1, -1, 1, -1}));
}

TEST(Inputs, LargeValuesKeepEveryPrefixSumInRange) {
  for (std::size_t n : {1ul, 2ul, 1000ul, 1ul << 20}) {
    const auto x = make_input<std::int32_t>(make_case(ValueKind::Large, n));
    const std::int64_t m = std::numeric_limits<std::int32_t>::max() / static_cast<std::int64_t>(n);
    for (std::int32_t v : x) ASSERT_GE(std::abs(static_cast<std::int64_t>(v)), m / 2) << n;
    EXPECT_NO_THROW(oracle_scan(x, ScanKind::Inclusive)) << n;
  }
}

TEST(Inputs, SecretChangesTheSeed) {
  EXPECT_NE(mix_secret(5, "a"), mix_secret(5, "b"));
  EXPECT_EQ(mix_secret(5, "a"), mix_secret(5, "a"));
}

TEST(Oracle, InclusiveAndExclusive) {
  const std::vector<std::int32_t> x{3, -1, 4, 1, -5};
  EXPECT_EQ(oracle_scan(x, ScanKind::Inclusive), (std::vector<double>{3, 2, 6, 7, 2}));
  EXPECT_EQ(oracle_scan(x, ScanKind::Exclusive), (std::vector<double>{0, 3, 2, 6, 7}));
  EXPECT_TRUE(oracle_scan(std::vector<std::int32_t>{}, ScanKind::Inclusive).empty());
}

TEST(Oracle, FloatAccumulatesInDouble) {
  // 2^24 + 1 is not a float: a float accumulator would lose the final 1.
  const std::vector<float> x{16777216.0f, 1.0f};
  EXPECT_EQ(oracle_scan(x, ScanKind::Inclusive)[1], 16777217.0);
}

TEST(Oracle, Int32OverflowIsRejected) {
  const std::vector<std::int32_t> x{std::numeric_limits<std::int32_t>::max(), 1};
  EXPECT_THROW(oracle_scan(x, ScanKind::Inclusive), std::range_error);
}

TEST(Tolerance, ExactForSmallIntegerSums) {
  EXPECT_EQ(float_tolerance(1000, 100000, true), 0.0);
  EXPECT_EQ(float_tolerance(1, 5.5, false), 0.0);
  EXPECT_GT(float_tolerance(1000, 0x1p25, true), 0.0);  // partial sums past 2^24 can round
  EXPECT_GT(float_tolerance(2, 1.5, false), 0.0);
}

TEST(Tolerance, GrowsWithTermsAndMagnitude) {
  EXPECT_LT(float_tolerance(10, 10, false), float_tolerance(100, 10, false));
  EXPECT_LT(float_tolerance(10, 10, false), float_tolerance(10, 100, false));
  EXPECT_NEAR(float_tolerance(11, 1.0, false), 10 * 0x1p-24, 1e-12);
}

}  // namespace
}  // namespace scangrade
