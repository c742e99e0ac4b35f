// The checks on host arrays: every verdict, and the messages students read.
#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "scangrade/check.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"

namespace scangrade {
namespace {

/// EXPECT_CONTAINS(text, part): gtest's IsSubstring with the haystack first, as one reads it.
#define EXPECT_CONTAINS(text, part) EXPECT_PRED_FORMAT2(::testing::IsSubstring, part, text)

Case make_case(Slot slot, std::size_t n, ScanKind kind = ScanKind::Inclusive, DType dtype = DType::Int32,
               ValueKind values = ValueKind::Random) {
  Case c;
  c.id = std::string(name(slot)) + ".test";
  c.slot = slot;
  c.dtype = dtype;
  c.kind = kind;
  c.n = n;
  c.values = values;
  c.seed = 3;
  c.why = "the reason";
  return c;
}

/// A run record as a correct slot would leave it.
template <typename T>
RunRecord<T> correct_run(const std::vector<T>& input, const std::vector<double>& expected) {
  RunRecord<T> run;
  for (double v : expected) run.output.push_back(static_cast<T>(v));
  run.guard_before.assign(kGuardElements, from_bits<T>(kCanaryBits));
  run.guard_after.assign(kGuardElements, from_bits<T>(kCanaryBits));
  run.input_after = input;
  return run;
}

template <typename T>
struct FixtureOf {
  Case c;
  std::vector<T> input;
  std::vector<double> expected;
  RunRecord<T> run;
  explicit FixtureOf(Case cs) : c(std::move(cs)) {
    input = make_input<T>(c);
    expected = oracle_scan(input, c.kind);
    run = correct_run(input, expected);
  }
  Verdict verdict() const { return judge(c, input, expected, run); }
};
using Fixture = FixtureOf<std::int32_t>;

TEST(Judge, CorrectOutputPasses) {
  for (std::size_t n : {0u, 1u, 1025u}) {
    Fixture f(make_case(Slot::Hierarchical, n));
    EXPECT_EQ(f.verdict().status, Status::Pass) << f.verdict().message;
  }
}

TEST(Judge, ExclusiveInsteadOfInclusiveIsNamed) {
  Fixture f(make_case(Slot::HillisSteele, 1000));
  const auto exclusive = oracle_scan(f.input, ScanKind::Exclusive);
  for (std::size_t i = 0; i < f.c.n; ++i) f.run.output[i] = static_cast<std::int32_t>(exclusive[i]);
  const Verdict v = f.verdict();
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_CONTAINS(v.message, "the output is the EXCLUSIVE scan");
  EXPECT_CONTAINS(v.message, "hillis_steele.test (n=1000, int32, inclusive");
  EXPECT_CONTAINS(v.message, "why this case: the reason");
}

TEST(Judge, InclusiveInsteadOfExclusiveIsNamed) {
  Fixture f(make_case(Slot::Blelloch, 2048, ScanKind::Exclusive));
  const auto inclusive = oracle_scan(f.input, ScanKind::Inclusive);
  for (std::size_t i = 0; i < f.c.n; ++i) f.run.output[i] = static_cast<std::int32_t>(inclusive[i]);
  EXPECT_CONTAINS(f.verdict().message, "the output is the INCLUSIVE scan");
}

TEST(Judge, FirstWrongElementHasCoordinatesAndCounts) {
  Fixture f(make_case(Slot::Blelloch, 2048, ScanKind::Exclusive));
  f.run.output[1500] += 1;
  f.run.output[1700] += 1;
  const Verdict v = f.verdict();
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_CONTAINS(v.message, "2 of 2048 elements wrong");
  EXPECT_CONTAINS(v.message, "first wrong: out[1500] expected");
  EXPECT_CONTAINS(v.message, "block 0, thread 750 (warp 23, lane 14)");
  EXPECT_CONTAINS(v.message, "wrong indices: 1500 1700");
}

TEST(Judge, BlockSumsNotPropagated) {
  Fixture f(make_case(Slot::Hierarchical, 3 * 2048 + 5));
  // Each 2048-element block scanned on its own.
  for (std::size_t i = 0; i < f.c.n; ++i)
    f.run.output[i] = i % 2048 == 0 ? f.input[i] : f.run.output[i - 1] + f.input[i];
  const Verdict v = f.verdict();
  EXPECT_CONTAINS(v.message, "first wrong: out[2048]");
  EXPECT_CONTAINS(v.message, "the block sums are not propagated");
}

TEST(Judge, TwoLevelHierarchyIsNamed) {
  Case c = make_case(Slot::Hierarchical, 2048 * 2048 + 1, ScanKind::Inclusive, DType::Int32, ValueKind::Ones);
  Fixture f(c);
  f.run.output.back() = 1;  // the third level was never applied
  EXPECT_CONTAINS(f.verdict().message, "wrong from out[4194304] = 2048 x 2048 on: a missing level");
}

TEST(Judge, TilesPastWhatTheLevelsCoverAreNamed) {
  // two levels whose top block scans 1025 block sums of 1024-element tiles: wrong from 1025 x 1024 on
  const std::size_t covered = std::size_t{1025} * 1024;
  Fixture f(make_case(Slot::Hierarchical, covered + 5000));
  for (std::size_t i = covered; i < f.c.n; ++i) f.run.output[i] += 12345;
  const Verdict v = f.verdict();
  EXPECT_CONTAINS(v.message, "the first 1025 tiles of 1024 elements are scanned");
  // the last partial tile alone is a different bug
  Fixture g(make_case(Slot::Hierarchical, covered + 100));
  for (std::size_t i = covered; i < g.c.n; ++i) g.run.output[i] += 12345;
  EXPECT_EQ(g.verdict().message.find("tiles of 1024 elements are scanned"), std::string::npos) << g.verdict().message;
}

TEST(Judge, OneElementLeftAsItsInputIsNotCalledTheOtherKind) {
  // n = 1: the inclusive scan is the input itself; an exclusive slot that left out[0] = in[0] may have
  // skipped anything, nothing says it computed the inclusive scan
  Fixture f(make_case(Slot::Blelloch, 1, ScanKind::Exclusive));
  f.run.output[0] = f.input[0];
  ASSERT_NE(f.input[0], 0);
  EXPECT_EQ(f.verdict().message.find("INCLUSIVE"), std::string::npos) << f.verdict().message;
  // and an inclusive slot that wrote a zero did not compute the exclusive scan for it
  Fixture g(make_case(Slot::HillisSteele, 1));
  g.run.output[0] = 0;
  EXPECT_EQ(g.verdict().message.find("EXCLUSIVE"), std::string::npos) << g.verdict().message;
  // from two elements the other kind is told apart from a copy and from zeros
  Fixture h(make_case(Slot::Blelloch, 2, ScanKind::Exclusive));
  h.run.output = {h.input[0], h.input[0] + h.input[1]};
  EXPECT_CONTAINS(h.verdict().message, "the output is the INCLUSIVE scan");
}

TEST(Judge, ThreadOrdersAreJudgedAsTheGpuWould) {
  Case checked = make_case(Slot::HillisSteele, 33);
  checked.sanitize = {"racecheck"};
  const Case unchecked = make_case(Slot::HillisSteele, 31);
  const Verdict pass{Status::Pass, ""}, fail{Status::Fail, "wrong"}, leak{Status::Leak, "leaked"};
  int reversed = 0;
  const auto reverse_gives = [&](Verdict v) {
    return [&reversed, v]() -> std::optional<Verdict> {
      ++reversed;
      return v;
    };
  };
  // the orders disagree and the data is right: a race only where racecheck runs
  EXPECT_EQ(order_verdict(checked, pass, "differ", reverse_gives(fail)).status, Status::Race);
  EXPECT_EQ(order_verdict(unchecked, pass, "differ", reverse_gives(fail)).status, Status::Pass);
  EXPECT_EQ(reversed, 0);  // right data needs no second look
  // the forward order's data is wrong, the reverse order's right: judged on the reverse order
  EXPECT_EQ(order_verdict(unchecked, fail, "differ", reverse_gives(pass)).status, Status::Pass);
  EXPECT_EQ(order_verdict(checked, fail, "differ", reverse_gives(pass)).status, Status::Race);
  // above the comparison limit the orders were not compared: a right reverse order says why
  Case large_checked = make_case(Slot::Hierarchical, kOrdersComparedMaxN + 1);
  large_checked.sanitize = {"racecheck"};
  const Verdict race = order_verdict(large_checked, fail, "", reverse_gives(pass));
  EXPECT_EQ(race.status, Status::Race);
  EXPECT_CONTAINS(race.message, "the reverse order the right one");
  // a leak is a functional result: the GPU sanitizes no such case
  EXPECT_EQ(order_verdict(checked, fail, "differ", reverse_gives(leak)).status, Status::Leak);
  // wrong in both orders that disagree: a race where racecheck runs, else the forward verdict
  EXPECT_EQ(order_verdict(checked, fail, "differ", reverse_gives(fail)).status, Status::Race);
  EXPECT_EQ(order_verdict(unchecked, fail, "differ", reverse_gives(fail)).message, "wrong");
  const Case large_unchecked = make_case(Slot::Hierarchical, kOrdersComparedMaxN + 1);
  EXPECT_EQ(order_verdict(large_unchecked, fail, "", reverse_gives(fail)).message, "wrong");
  // the orders agreed below the comparison limit: no second run
  reversed = 0;
  EXPECT_EQ(order_verdict(checked, fail, "", reverse_gives(pass)).status, Status::Fail);
  EXPECT_EQ(reversed, 0);
  // above it the orders were not compared: a wrong forward order gets its second look
  const Case large = make_case(Slot::Hierarchical, kOrdersComparedMaxN + 1);
  EXPECT_EQ(order_verdict(large, fail, "", reverse_gives(pass)).status, Status::Pass);
  EXPECT_EQ(reversed, 1);
}

TEST(Judge, ZeroBlockLaunchAtNZeroGetsItsHint) {
  Fixture f(make_case(Slot::Hierarchical, 0));
  f.run.error = "CUDA error after the slot call: cudaErrorInvalidConfiguration: invalid configuration argument";
  const Verdict v = f.verdict();
  EXPECT_EQ(v.status, Status::Crash);
  EXPECT_CONTAINS(v.message, "return before launching when n == 0");
  Fixture g(make_case(Slot::Hierarchical, 5000));
  g.run.error = f.run.error;
  EXPECT_CONTAINS(g.verdict().message, "more than 1024 threads per block");
  g.run.error = "CUDA error after the slot call: cudaErrorLaunchFailure: unspecified launch failure";
  EXPECT_EQ(g.verdict().message.find("hint"), std::string::npos);
}

TEST(Judge, ThreeFixedLevelsAreNamed) {
  Case c = make_case(Slot::Hierarchical, (1 << 24) + 300, ScanKind::Inclusive, DType::Int32, ValueKind::Ones);
  Fixture f(c);
  for (std::size_t i = 1 << 24; i < f.c.n; ++i) f.run.output[i] -= 1 << 24;  // the offset of 256^3 never added
  EXPECT_CONTAINS(f.verdict().message, "= 4096 x 4096, or 256 x 256 x 256 on: a missing level");
}

TEST(Judge, OnlyTheLastPartialBlockWrong) {
  Fixture f(make_case(Slot::Hierarchical, 4096 + 100));
  for (std::size_t i = 4096; i < f.c.n; ++i) f.run.output[i] = 7;
  EXPECT_CONTAINS(f.verdict().message, "only the last, partial block is wrong (indices 4096..4195");
}

TEST(Judge, UnwrittenElementsShowThePoison) {
  Fixture f(make_case(Slot::HillisSteele, 1024));
  for (std::size_t i = 1000; i < 1024; ++i) f.run.output[i] = from_bits<std::int32_t>(kPoisonBits);
  const Verdict v = f.verdict();
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_CONTAINS(v.message, "24 element(s) were never written");
}

TEST(Judge, ShiftByOneIsNamed) {
  Fixture f(make_case(Slot::Hierarchical, 500, ScanKind::Inclusive, DType::Int32, ValueKind::Ones));
  for (std::size_t i = 100; i < 500; ++i) f.run.output[i] = static_cast<std::int32_t>(f.expected[i - 1]);
  EXPECT_CONTAINS(f.verdict().message, "one position earlier");
}

TEST(Judge, WriteOnePastTheEndIsOutOfBounds) {
  Fixture f(make_case(Slot::HillisSteele, 100));
  f.run.guard_after[0] = 0;
  const Verdict v = f.verdict();
  EXPECT_EQ(v.status, Status::OutOfBoundsWrite);
  EXPECT_CONTAINS(v.message, "d_out[n+0] changed");
}

TEST(Judge, WriteBeforeTheStartIsOutOfBounds) {
  Fixture f(make_case(Slot::HillisSteele, 100));
  f.run.guard_before.back() = 0;
  EXPECT_CONTAINS(f.verdict().message, "d_out[-1] changed");
}

TEST(Judge, ModifiedInputIsReported) {
  Fixture f(make_case(Slot::Blelloch, 64, ScanKind::Exclusive));
  f.run.input_after[10] += 1;
  const Verdict v = f.verdict();
  EXPECT_EQ(v.status, Status::InputModified);
  EXPECT_CONTAINS(v.message, "d_in[10] changed");
}

TEST(Judge, LeakIsReportedOnlyWhenOutputIsRight) {
  Fixture f(make_case(Slot::Hierarchical, 5000));
  f.run.leaked_bytes = 8192;
  f.run.leak_detail = "measured";
  EXPECT_EQ(f.verdict().status, Status::Leak);
  f.run.output[3] += 1;
  EXPECT_EQ(f.verdict().status, Status::Fail);
}

TEST(Judge, CrashAndNotImplementedWin) {
  Fixture f(make_case(Slot::SinglePass, 10));
  f.run.error = "CUDA error after the slot call: cudaErrorIllegalAddress";
  EXPECT_EQ(f.verdict().status, Status::Crash);
  EXPECT_CONTAINS(f.verdict().message, "cudaErrorIllegalAddress");
  f.run.not_implemented = true;
  EXPECT_EQ(f.verdict().status, Status::NotImplemented);
  EXPECT_CONTAINS(f.verdict().message, "student/single_pass.cu");
}

TEST(Judge, IncompleteRecordIsTheHarnessFault) {
  Fixture f(make_case(Slot::SinglePass, 10));
  f.run.output.pop_back();
  EXPECT_EQ(f.verdict().status, Status::InternalError);
}

TEST(Judge, NanNeverPasses) {
  Case c = make_case(Slot::Hierarchical, 100, ScanKind::Inclusive, DType::Float32, ValueKind::Real);
  const auto input = make_input<float>(c);
  const auto expected = oracle_scan(input, c.kind);
  RunRecord<float> run = correct_run(input, expected);
  EXPECT_EQ(judge(c, input, expected, run).status, Status::Pass);
  run.output[50] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(judge(c, input, expected, run).status, Status::Fail);
}

template <typename T>
bool inside(const Band<T>& band, const std::vector<T>& out) {
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!(out[i] >= band.lo[i] && out[i] <= band.hi[i])) return false;
  return true;
}

TEST(AcceptanceBand, HoldsWhatTheCheckAcceptsAndNotAShift) {
  for (const auto& [dtype, values] : {std::pair{DType::Int32, ValueKind::Random}, std::pair{DType::Float32, ValueKind::Real}}) {
    const Case c = make_case(Slot::Hierarchical, 5000, ScanKind::Inclusive, dtype, values);
    if (dtype == DType::Float32) {
      const std::vector<float> in = make_input<float>(c);
      const std::vector<double> expected = oracle_scan(in, c.kind);
      std::vector<float> out, sequential;
      float sum = 0;
      for (float x : in) sequential.push_back(sum += x);  // a correct order, rounded in float32
      const Band<float> band = acceptance_band(in, c.kind, expected);
      EXPECT_TRUE(compare_output(in, c.kind, expected, sequential).wrong == 0);
      EXPECT_TRUE(inside(band, sequential));
      std::vector<float> shifted(sequential.size(), 0.0f);
      for (std::size_t i = 1; i < shifted.size(); ++i) shifted[i] = sequential[i - 1];
      EXPECT_FALSE(inside(band, shifted));
      out.assign(in.size(), std::numeric_limits<float>::quiet_NaN());  // the poison is never inside
      EXPECT_FALSE(inside(band, out));
    } else {
      Fixture f(c);
      const Band<std::int32_t> band = acceptance_band(f.input, c.kind, f.expected);
      EXPECT_TRUE(inside(band, f.run.output));
      f.run.output[4999] += 1;
      EXPECT_FALSE(inside(band, f.run.output));
    }
  }
}

TEST(Names, EveryStatusRoundTrips) {
  for (Status s : {Status::Pass, Status::Fail, Status::NotImplemented, Status::Crash, Status::Timeout,
                   Status::CompileError, Status::PolicyViolation, Status::OutOfBoundsWrite, Status::InputModified, Status::Leak, Status::Race,
                   Status::MemoryError, Status::InternalError})
    EXPECT_EQ(parse_status(name(s)), s);
}

// ---- hints on real bugs: each fires on its bug, and the others stay quiet --------------------------

/// The message's hint line ("" when none).
std::string hint_of(const Verdict& v) {
  const std::size_t at = v.message.find("\n  hint: ");
  if (at == std::string::npos) return "";
  return v.message.substr(at + 9, v.message.find('\n', at + 1) - at - 9);
}

TEST(Hints, IntScannedThroughAFloatTemporary) {
  Fixture f(make_case(Slot::Hierarchical, 4096 + 7, ScanKind::Inclusive, DType::Int32, ValueKind::Large));
  float running = 0;  // the student's float accumulator
  for (std::size_t i = 0; i < f.c.n; ++i) {
    running += static_cast<float>(f.input[i]);
    f.run.output[i] = static_cast<std::int32_t>(running);
  }
  const Verdict v = f.verdict();
  ASSERT_EQ(v.status, Status::Fail);
  EXPECT_CONTAINS(hint_of(v), "the int32 data went through a float");
}

TEST(Hints, OffByOneOnlyWhenEveryShownElementIsShifted) {
  Fixture f(make_case(Slot::Hierarchical, 3000));
  for (std::size_t i = 0; i + 1 < f.c.n; ++i) f.run.output[i] = static_cast<std::int32_t>(f.expected[i + 1]);
  EXPECT_CONTAINS(hint_of(f.verdict()), "one position later (and so do the other wrong elements shown): off by one");
  Fixture one(make_case(Slot::Hierarchical, 3000));
  one.run.output[5] = static_cast<std::int32_t>(one.expected[4]);  // a coincidence, not a shifted index
  one.run.output[9] = 12345678;
  EXPECT_EQ(hint_of(one.verdict()), "");
  Fixture single(make_case(Slot::Blelloch, 2, ScanKind::Exclusive));
  single.run.output[1] = 0;  // out[1] = expected[0] = 0: one element is no evidence of an index shift
  if (single.expected[1] != 0) {
    EXPECT_EQ(hint_of(single.verdict()), "");
  }
}

TEST(Hints, HillisSteeleSkippingItsLargestStride) {
  for (std::size_t n : {1000u, 1024u}) {
    Fixture f(make_case(Slot::HillisSteele, n));
    for (std::size_t i = 0; i < n; ++i) {  // strides 1..256 only: each output sums a window of 512
      std::int64_t sum = 0;
      for (std::size_t j = i >= 511 ? i - 511 : 0; j <= i; ++j) sum += f.input[j];
      f.run.output[i] = static_cast<std::int32_t>(sum);
    }
    const std::string h = hint_of(f.verdict());
    EXPECT_CONTAINS(h, "each output sums only the last 512 inputs");
    EXPECT_CONTAINS(h, "the step loop stops before stride 512");
    EXPECT_EQ(h.find("block"), std::string::npos) << "one block: no block-sum or partial-block hint";
  }
}

TEST(Hints, NoWindowHintForTheInputItself) {
  Fixture f(make_case(Slot::HillisSteele, 2));
  f.run.output[1] = f.input[1];  // no step ran at all: a window of 1 says nothing about the loop's bound
  if (f.input[0] != 0) {
    EXPECT_EQ(hint_of(f.verdict()), "");
  }
}

TEST(Hints, BlockHintsOnlyForMultiBlockSlots) {
  Fixture f(make_case(Slot::HillisSteele, 1000));
  for (std::size_t i = 512; i < f.c.n; ++i) f.run.output[i] = 7;
  EXPECT_EQ(hint_of(f.verdict()).find("partial block"), std::string::npos);
}

TEST(Hints, DownSweepStoppingOneLevelEarly) {
  Fixture f(make_case(Slot::Blelloch, 2048, ScanKind::Exclusive));
  for (std::size_t k = 0; 2 * k + 1 < f.c.n; ++k) {
    f.run.output[2 * k] = f.input[2 * k];
    f.run.output[2 * k + 1] = static_cast<std::int32_t>(f.expected[2 * k]);
  }
  const std::string h = hint_of(f.verdict());
  EXPECT_CONTAINS(h, "the last level of the down-sweep (stride 1");
  EXPECT_EQ(h.find("off by one"), std::string::npos);
}

TEST(Hints, FloatSummedInAnUnsignedTemporary) {
  FixtureOf<float> f(make_case(Slot::Blelloch, 1500, ScanKind::Exclusive, DType::Float32, ValueKind::Real));
  std::size_t wrapped = 0;
  for (std::size_t i = 0; i < f.c.n; ++i)
    if (f.expected[i] < 0) f.run.output[i] = static_cast<float>(0x1p32 + std::floor(f.expected[i])), ++wrapped;
  ASSERT_GT(wrapped, 0u);
  const Verdict v = f.verdict();
  EXPECT_CONTAINS(hint_of(v), "is about 2^32 = 4.29e9 where a small value was expected");
}

TEST(Hints, FloatTruncatedToWholeNumbers) {
  FixtureOf<float> f(make_case(Slot::HillisSteele, 1024, ScanKind::Inclusive, DType::Float32, ValueKind::Real));
  for (std::size_t i = 0; i < f.c.n; ++i) f.run.output[i] = std::trunc(f.run.output[i]);
  EXPECT_CONTAINS(hint_of(f.verdict()), "whole numbers where the right ones have fractions");
}

TEST(Hints, FloatToleranceHintOnlyForFloatCases) {
  Fixture i32(make_case(Slot::HillisSteele, 1024, ScanKind::Inclusive, DType::Int32, ValueKind::Large));
  for (std::size_t i = 100; i < i32.c.n; i += 3) i32.run.output[i] ^= 0x5a5a;
  EXPECT_EQ(hint_of(i32.verdict()).find("float tolerance"), std::string::npos);
  FixtureOf<float> f32(make_case(Slot::HillisSteele, 1024, ScanKind::Inclusive, DType::Float32, ValueKind::Large));
  for (std::size_t i = 100; i < f32.c.n; i += 3) f32.run.output[i] *= 1.5f;
  EXPECT_CONTAINS(hint_of(f32.verdict()), "values are outside the float tolerance");
}

}  // namespace
}  // namespace scangrade
