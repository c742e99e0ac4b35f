// The timed calls' fresh inputs (fresh_input.h) draw what inputs.h draws: for every values kind,
// type and a few sizes, InputDraw from a case's stream seed gives make_input's values element by
// element, so a fresh input (the same draw from another seed) has the distribution of the case's
// own. Runs on the host (InputDraw is host and device code).
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fresh_input.h"
#include "scangrade/inputs.h"

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

}  // namespace
}  // namespace scangrade::grader
