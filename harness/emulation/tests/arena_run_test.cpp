// The emulated run of one slot call (harness/src/emulated_run.cpp) over the arena: the thread-order
// rule (race only when every order completed), and two gallery-like wrong examples judged as a GPU
// judges them. Each case goes through run_emulated and judge(), as `make test` runs a case.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <scangrade/check.h>
#include <scangrade/emu.h>
#include <scangrade/emulated_run.h>
#include <scangrade/oracle.h>

#include "arena_kernels.h"

namespace {

using namespace scangrade;

class ArenaRun : public ::testing::Test {
 protected:
  void SetUp() override { emu::reset(); }
  void TearDown() override { emu::reset(); }
};

Case inclusive_case(std::size_t n) {
  Case c;
  c.id = "arena_n" + std::to_string(n);
  c.slot = Slot::Hierarchical;
  c.dtype = DType::Int32;
  c.kind = ScanKind::Inclusive;
  c.n = n;
  c.values = ValueKind::Random;
  c.why = "arena test";
  return c;
}

std::vector<std::int32_t> small_values(std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>((i * 37 + 11) % 7) + 1;
  return v;
}

struct Judged {
  RunRecord<std::int32_t> run;
  Verdict verdict;
};

Judged judge_emulated(void (*slot)(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t), std::size_t n) {
  const std::vector<std::int32_t> input = small_values(n);
  const std::vector<double> expected = oracle_scan(input, ScanKind::Inclusive);
  Judged j;
  j.run = run_emulated<std::int32_t>(slot, input);
  j.verdict = judge(inclusive_case(n), input, expected, j.run);
  return j;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- the thread-order rule ----------------------------------------------------------------------

TEST_F(ArenaRun, CorrectSlotPasses) {
  const Judged j = judge_emulated(arena_test::correct_scan, 1000);
  EXPECT_EQ(j.verdict.status, Status::Pass) << j.verdict.message;
}

TEST_F(ArenaRun, GenuineRaceIsStillARace) {
  const Judged j = judge_emulated(arena_test::racy_scan, 1000);
  EXPECT_EQ(j.verdict.status, Status::Race) << j.verdict.message;
  EXPECT_TRUE(contains(j.verdict.message, "depends on thread scheduling")) << j.verdict.message;
  // where to look: the kernel, its definition and its launch
  EXPECT_TRUE(contains(j.verdict.message, "a data race in `racy_kernel` (")) << j.verdict.message;
  EXPECT_TRUE(contains(j.verdict.message, "arena_kernels.cu:63) launched at ")) << j.verdict.message;
  EXPECT_TRUE(j.run.undefined.empty()) << j.run.undefined;
}

TEST_F(ArenaRun, AShiftByTheWidthInDeviceCodeGivesTheGpusValue) {
  // pad(t) = t >> (16 + t % 32) is 0 on the GPU for every t: no padding, a right scan, no race
  const Judged j = judge_emulated(arena_test::shifted_pad_scan, 1000);
  EXPECT_EQ(j.verdict.status, Status::Pass) << j.verdict.message;
  EXPECT_TRUE(j.run.race.empty()) << j.run.race;
  EXPECT_TRUE(contains(j.run.undefined, "arena_kernels.cu:86: a shift of the 32-bit int")) << j.run.undefined;
  EXPECT_TRUE(contains(j.run.undefined, "The GPU clamps the count to the width, and the emulator computes it the "
                                        "same way"))
      << j.run.undefined;
  EXPECT_FALSE(contains(j.run.undefined, "differ between thread orders")) << j.run.undefined;
}

TEST_F(ArenaRun, OrdersThatDisagreeAfterAnUndefinedShiftAreNoRace) {
  // the same shift behind an object-like macro keeps the CPU's value (count modulo 32)
  const Judged j = judge_emulated(arena_test::shifted_pad_macro_scan, 1000);
  EXPECT_TRUE(j.run.race.empty()) << j.run.race;
  EXPECT_NE(j.verdict.status, Status::Race) << j.verdict.message;
  EXPECT_TRUE(contains(j.run.undefined, "arena_kernels.cu:86: a shift of the 32-bit int")) << j.run.undefined;
  EXPECT_TRUE(contains(j.run.undefined, "the results also differ between thread orders")) << j.run.undefined;
  if (j.verdict.status != Status::Pass) {
    EXPECT_TRUE(contains(j.verdict.message, "note: while this case ran, your code executed operations whose result "
                                            "C++ leaves undefined"))
        << j.verdict.message;
    EXPECT_FALSE(contains(j.verdict.message, "__syncthreads")) << j.verdict.message;
  }
  // every call starts afresh: the next correct call has nothing on record
  const Judged clean = judge_emulated(arena_test::correct_scan, 1000);
  EXPECT_EQ(clean.verdict.status, Status::Pass) << clean.verdict.message;
  EXPECT_TRUE(clean.run.undefined.empty()) << clean.run.undefined;
}

TEST_F(ArenaRun, CrashUnderEveryOrderIsThatCrashNotARace) {
  const Judged j = judge_emulated(arena_test::null_write_scan, 1000);
  EXPECT_EQ(j.verdict.status, Status::Crash) << j.verdict.message;
  EXPECT_TRUE(j.run.race.empty()) << j.run.race;
  EXPECT_TRUE(j.run.context_broken);  // as after an illegal address on a GPU: the worker starts afresh
  EXPECT_TRUE(contains(j.verdict.message, "cudaErrorIllegalAddress: an illegal memory access was encountered"))
      << j.verdict.message;
  EXPECT_TRUE(contains(j.verdict.message, "through a null pointer")) << j.verdict.message;
}

TEST_F(ArenaRun, CrashUnderSomeOrdersIsACrashThatNamesTheOrder) {
  const Judged j = judge_emulated(arena_test::order_dependent_crash_scan, 1000);
  EXPECT_EQ(j.verdict.status, Status::Crash) << j.verdict.message;
  EXPECT_TRUE(j.run.race.empty()) << j.run.race;
  EXPECT_TRUE(contains(j.verdict.message, "under the reverse thread order")) << j.verdict.message;
  EXPECT_TRUE(contains(j.verdict.message, "completes under the forward order")) << j.verdict.message;
  EXPECT_TRUE(contains(j.verdict.message, "an illegal memory access was encountered")) << j.verdict.message;
  // the process carries on: the next call is judged normally
  EXPECT_EQ(judge_emulated(arena_test::correct_scan, 1000).verdict.status, Status::Pass);
}

TEST_F(ArenaRun, ProcessSurvivesEveryFailure) {
  for (int i = 0; i < 3; ++i) {
    const Judged crashed = judge_emulated(arena_test::null_write_scan, 33);
    EXPECT_EQ(crashed.verdict.status, Status::Crash);
    ASSERT_TRUE(crashed.run.context_broken);
    // the sticky error stays, as on a GPU, until the grader's fresh worker (here: clear_error)
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, 4), cudaErrorIllegalAddress);
    emu::clear_error();
    EXPECT_EQ(judge_emulated(arena_test::correct_scan, 33).verdict.status, Status::Pass);
  }
}

// ---- gallery-like wrong examples ----------------------------------------------------------------

// A tile kernel without a bounds check: up to 255 elements written past d_out. On a GPU they land in
// the harness's guard zone and the allocation's slack: out_of_bounds_write. Emulated they used to run
// into the malloc heap (SIGBUS, "free(): invalid size"): crash.
TEST_F(ArenaRun, UncheckedTileScanIsAnOutOfBoundsWrite) {
  for (std::size_t n : {std::size_t{300},       // 212 elements past d_out: through the guard zone into the slack
                        std::size_t{1000},      // 24 past: inside the guard zone
                        std::size_t{70000},     // above the thread-order limit: forward order only
                        (std::size_t{1} << 19) + 1})  // d_in 4 bytes over 2 MiB: a new granule, 255 reads into it
  {
    const Judged j = judge_emulated(arena_test::unchecked_tile_scan, n);
    EXPECT_EQ(j.verdict.status, Status::OutOfBoundsWrite) << "n = " << n << ": " << j.verdict.message;
    EXPECT_TRUE(contains(j.verdict.message, "wrote past the end of the output")) << j.verdict.message;
  }
}

// The same kernel graded in place, as the worker grades (the judge's buffers, kept from case to case):
// the bytes past d_in are what an earlier, larger case left there, not what a fresh allocation holds.
// The last tile reads them and writes its sums past d_out, into the guard zone. Every thread order
// must run in those same buffers: with fresh ones for the other orders the guard zone differed, the
// first order run again differed too, and the case was "keeps state between calls" (fail) instead of
// the GPU's out_of_bounds_write.
TEST_F(ArenaRun, ReadsPastTheInputAreTheSameInEveryThreadOrder) {
  const std::size_t n = 300, g = kGuardElements, stale = 256;
  const std::vector<std::int32_t> input = small_values(n);
  std::int32_t* d_in = nullptr;
  std::int32_t* d_zone = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, (n + stale) * sizeof(std::int32_t)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_zone, (n + 2 * g) * sizeof(std::int32_t)), cudaSuccess);
  for (std::size_t i = 0; i < n + stale; ++i) d_in[i] = i < n ? input[i] : static_cast<std::int32_t>(1000 + i);
  for (std::size_t i = 0; i < n + 2 * g; ++i)
    d_zone[i] = from_bits<std::int32_t>(i < g || i >= g + n ? kCanaryBits : kPoisonBits);
  RunRecord<std::int32_t> run = run_emulated_in_place<std::int32_t>(arena_test::unchecked_tile_scan, d_in, d_zone, n, {});
  EXPECT_EQ(run.not_recomputed, "") << "the same input, order and memory gave the same result";
  EXPECT_EQ(run.race, "");
  const Verdict v = judge(inclusive_case(n), input, oracle_scan(input, ScanKind::Inclusive), run);
  EXPECT_EQ(v.status, Status::OutOfBoundsWrite) << v.message;
  // what the trusted side reads afterwards is the first call's result
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(d_zone[g + i], run.output[i]) << i;
  cudaFree(d_in);
  cudaFree(d_zone);
}

// Host code that cudaFree's memory it never allocated (a std::vector's data). The CUDA runtime returns
// cudaErrorInvalidValue and records it as the last error; the harness's cudaGetLastError after the call
// finds it: crash, with the emulator's reason. Nothing is freed and the process carries on.
TEST_F(ArenaRun, FreeOfAPointerNeverAllocatedIsTheGpusError) {
  const Judged j = judge_emulated(arena_test::frees_host_vector, 1000);
  EXPECT_EQ(j.verdict.status, Status::Crash) << j.verdict.message;
  EXPECT_FALSE(j.run.context_broken);  // an ordinary error, not sticky
  EXPECT_TRUE(contains(j.verdict.message, "cudaErrorInvalidValue: invalid argument")) << j.verdict.message;
  EXPECT_TRUE(contains(j.verdict.message, "was not returned by cudaMalloc")) << j.verdict.message;
  EXPECT_EQ(judge_emulated(arena_test::correct_scan, 1000).verdict.status, Status::Pass);
}

// The same bug, but the student checks cudaFree's result and clears the error: the output decides.
TEST_F(ArenaRun, FreeOfAPointerNeverAllocatedCheckedAndClearedPasses) {
  const Judged j = judge_emulated(arena_test::frees_host_vector_checked, 1000);
  EXPECT_EQ(j.verdict.status, Status::Pass) << j.verdict.message;
}

}  // namespace
