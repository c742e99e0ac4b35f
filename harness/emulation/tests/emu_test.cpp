// Tests of the ScanGrade CPU emulator: each test runs kernels from tests/*.cu, compiled through
// rewrite.py exactly as student code is.
#include <gtest/gtest.h>

#include <limits>
#include <numeric>
#include <regex>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <scangrade/emu.h>

#include "test_kernels.h"

namespace {

using scangrade::emu::ThreadOrder;

class Emu : public ::testing::Test {
 protected:
  void SetUp() override {
    scangrade::emu::reset();
    scangrade::emu::set_thread_order(ThreadOrder::Forward);
  }
  void TearDown() override {
    scangrade::emu::reset();
    scangrade::emu::set_thread_order(ThreadOrder::Forward);
  }
};

constexpr ThreadOrder kOrders[] = {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random};

std::vector<int> inclusive(const std::vector<int>& in) {
  std::vector<int> out(in.size());
  std::partial_sum(in.begin(), in.end(), out.begin());
  return out;
}

std::vector<int> ramp(int n, int mod = 7) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = (i * 37 + 11) % mod + 1;
  return v;
}

// ---- indices and launch syntax ------------------------------------------------------------------

TEST_F(Emu, ThreadAndBlockIndices) {
  dim3 grid(3, 2, 2), block(4, 3, 2);
  auto rec = emu_test::record_indices(grid, block);
  ASSERT_EQ(rec.size(), 12u * 24u);
  std::size_t i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, ++i) {
              const auto& r = rec[i];
              EXPECT_EQ(r.tx, tx);
              EXPECT_EQ(r.ty, ty);
              EXPECT_EQ(r.tz, tz);
              EXPECT_EQ(r.bx, bx);
              EXPECT_EQ(r.by, by);
              EXPECT_EQ(r.bz, bz);
              EXPECT_EQ(r.bdx, 4u);
              EXPECT_EQ(r.gdx, 3u);
            }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(Emu, TemplatedKernelDeducesArguments) {
  auto v = emu_test::fill_deduced(100, 0.25f);  // 100: not a multiple of the 64-thread block
  for (int i = 0; i < 100; ++i) EXPECT_FLOAT_EQ(v[i], 0.25f + i);
}

TEST_F(Emu, TemplatedKernelExplicitArguments) {
  auto v = emu_test::fill_explicit(65, 2);  // 65: one past a full 64-thread block
  for (int i = 0; i < 65; ++i) EXPECT_DOUBLE_EQ(v[i], 2.0 + i);
}

TEST_F(Emu, MultiLineLaunchWithStreamAndComments) {
  auto v = emu_test::multi_line_launch(300);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(v[i], 3 * i + 7);
}

// ---- shared memory ------------------------------------------------------------------------------

TEST_F(Emu, StaticSharedIsFreshPerBlock) {
  auto v = emu_test::static_shared_per_block(3, 96);
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(v[b], -1) << "block " << b << " saw a previous block's shared value";
    EXPECT_EQ(v[3 + b], 96 + 1000 * b);
  }
}

TEST_F(Emu, ExternSharedIsPerBlock) {
  auto v = emu_test::extern_shared_reverse(4, 128);
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < 128; ++t) EXPECT_EQ(v[b * 128 + t], b * 128 + 127 - t);
}

TEST_F(Emu, StaticSharedInKernelTemplates) {
  auto v = emu_test::templated_static_shared(64);
  for (int t = 0; t < 64; ++t) {
    EXPECT_DOUBLE_EQ(v[t], ((t + 1) % 64 + 0.5) + (t + 0.5) * 2);  // double instance
    EXPECT_DOUBLE_EQ(v[64 + t], (t + 1) % 64 + t * 2);             // int instance: T(0.5) == 0
  }
}

TEST_F(Emu, SharedInDeviceFunctionTemplateIsPerType) {
  auto v = emu_test::shared_in_device_templates(100);
  int sum = 99 * 100 / 2;
  for (int t = 0; t < 100; ++t) EXPECT_EQ(v[t], sum * 10 + 150);
}

TEST_F(Emu, FileScopeSharedVariable) {
  auto v = emu_test::file_scope_shared(2, 64);
  for (int i = 0; i < 128; ++i) EXPECT_EQ(v[i], 63 * 64 / 2);
}

TEST_F(Emu, WritePastDynamicSharedMemoryIsAnIllegalAddress) {
  emu_test::overflow_dynamic_shared(64);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);  // sticky
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  const std::string diagnostic = scangrade::emu::last_diagnostic();
  EXPECT_TRUE(std::regex_search(diagnostic, std::regex("segmentation fault.*just past the end of the dynamic.*"
                                                       "kernels_basic.cu:[0-9]+.*block \\(0,0,0\\) thread \\(0,0,0\\)")))
      << diagnostic;
}

// ---- barriers and warps -------------------------------------------------------------------------

TEST_F(Emu, SyncthreadsOrdersWritesBeforeReads) {
  for (ThreadOrder order : kOrders) {
    scangrade::emu::set_thread_order(order, 7);
    auto v = emu_test::neighbour_after_barrier(1000);
    for (int t = 0; t < 1000; ++t) ASSERT_EQ(v[t], (t + 1) % 1000 * 3) << scangrade::emu::to_string(order);
  }
}

TEST_F(Emu, SyncthreadsCountAndOr) {
  auto v = emu_test::barrier_votes(100);
  EXPECT_EQ(v[0], 34);  // t % 3 == 0 for t in [0, 100)
  EXPECT_EQ(v[1], 1);
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 1);
  EXPECT_EQ(v[4], 0);
}

TEST_F(Emu, WarpShuffles) {
  for (ThreadOrder order : kOrders) {
    scangrade::emu::set_thread_order(order, 3);
    auto v = emu_test::warp_shuffles(64);
    for (int t = 0; t < 64; ++t) {
      int lane = t % 32;
      ASSERT_EQ(v[4 * t + 0], (lane + 1) * (lane + 2) / 2) << "shfl_up scan, lane " << lane;
      if (lane == 0) {
        ASSERT_EQ(v[4 * t + 1], 32 * 33 / 2) << "shfl_down sum";
      }
      ASSERT_EQ(v[4 * t + 2], 32 * 33 / 2) << "shfl_xor butterfly, lane " << lane;
      ASSERT_EQ(v[4 * t + 3], (lane / 16 * 16 + 3 + 1) * 100) << "shfl width 16, lane " << lane;
    }
  }
}

TEST_F(Emu, PartialMaskShufflesAndBallot) {
  auto v = emu_test::partial_mask_shuffles();
  for (int lane = 0; lane < 16; ++lane) EXPECT_EQ(v[lane], lane == 15 ? 150 : (lane + 1) * 10) << lane;
  for (int lane = 16; lane < 32; ++lane) EXPECT_EQ(v[lane], 310) << lane;
  for (int lane = 0; lane < 32; ++lane) EXPECT_EQ(v[32 + lane], lane < 20 ? 0x55555 : -1) << lane;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << scangrade::emu::last_diagnostic();
}

TEST_F(Emu, WarpVotes) {
  auto v = emu_test::warp_votes();
  EXPECT_EQ(v[0], 0xffu);
  EXPECT_EQ(v[1], 0u);  // any: only lane 31 of warp 1 votes yes, and votes are per warp
  EXPECT_EQ(v[2], 1u);
  EXPECT_EQ(v[3], 0xffu);
  EXPECT_EQ(v[4], 1u);
  EXPECT_EQ(v[5], 0u);
}

TEST_F(Emu, Atomics) {
  for (ThreadOrder order : kOrders) {
    scangrade::emu::set_thread_order(order, 11);
    auto v = emu_test::atomics(3, 100);
    ASSERT_EQ(v[0], 300);
    EXPECT_EQ(static_cast<int>(v[1] & 0xffffffff), 299);
    EXPECT_EQ(static_cast<unsigned>(v[2] & 0xffffffff), 5u);
    EXPECT_EQ(static_cast<unsigned>(v[3] & 0xffffffff), 0xffffffffu);
    EXPECT_EQ(v[4], 300) << "spin-lock protected counter";
    EXPECT_EQ(v[5], 299 * 300 / 2);
    EXPECT_EQ(v[6], 300);  // 300 * 0.5 * 2
  }
}

TEST_F(Emu, LookBackWaitOnEarlierBlocks) {
  auto in = ramp(256 * 9 + 17);  // 9 full tiles and a partial one
  auto out = emu_test::look_back_scan(in, 256);
  EXPECT_EQ(out, inclusive(in));
  EXPECT_EQ(scangrade::emu::pool_bytes_in_use(), 0u);
}

// ---- faults -------------------------------------------------------------------------------------

TEST_F(Emu, DivergentBarrierIsReportedWithFileAndLine) {
  int line = 0;
  cudaError_t e = emu_test::divergent_barrier(&line);
  EXPECT_EQ(e, cudaErrorLaunchFailure);
  std::string diag = scangrade::emu::last_diagnostic();
  EXPECT_NE(diag.find("kernels_sync.cu:" + std::to_string(line)), std::string::npos) << diag;
  EXPECT_NE(diag.find("divergent barrier"), std::string::npos) << diag;
  EXPECT_NE(diag.find("block (0,0,0)"), std::string::npos) << diag;
  // sticky until cleared
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorLaunchFailure);
  scangrade::emu::clear_error();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, 16), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

TEST_F(Emu, WarpSyncAgainstBarrierIsADeadlock) {
  int line = 0;
  EXPECT_EQ(emu_test::warp_barrier_deadlock(&line), cudaErrorLaunchFailure);
  std::string diag = scangrade::emu::last_diagnostic();
  EXPECT_NE(diag.find("deadlock"), std::string::npos) << diag;
  EXPECT_NE(diag.find("kernels_sync.cu:" + std::to_string(line)), std::string::npos) << diag;
}

TEST_F(Emu, ShuffleMaskNamingExitedLanes) {
  int line = 0;
  EXPECT_EQ(emu_test::shuffle_with_exited_lanes(&line), cudaErrorLaunchFailure);
  std::string diag = scangrade::emu::last_diagnostic();
  EXPECT_NE(diag.find("kernels_sync.cu:" + std::to_string(line)), std::string::npos) << diag;
  EXPECT_NE(diag.find("exited"), std::string::npos) << diag;
}

TEST_F(Emu, ExitedThreadsDoNotBlockABarrier) {
  std::vector<int> out;
  EXPECT_EQ(emu_test::early_exit_then_barrier(&out), cudaSuccess) << scangrade::emu::last_diagnostic();
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], 31 - t);
}

TEST_F(Emu, InvalidLaunchConfigurations) {
  EXPECT_EQ(emu_test::launch_threads(1, 2048, 0), cudaErrorInvalidConfiguration);
  EXPECT_NE(std::string(scangrade::emu::last_diagnostic()).find("2048 threads"), std::string::npos)
      << scangrade::emu::last_diagnostic();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "launch errors are not sticky";
  EXPECT_EQ(emu_test::launch_threads(1, dim3(32, 32), 0), cudaSuccess);
  EXPECT_EQ(emu_test::launch_threads(1, dim3(32, 33), 0), cudaErrorInvalidConfiguration);  // 1056 threads
  EXPECT_EQ(emu_test::launch_threads(dim3(1, 65536), 1, 0), cudaErrorInvalidConfiguration);
  EXPECT_EQ(emu_test::launch_threads(0, 32, 0), cudaErrorInvalidConfiguration);
  EXPECT_EQ(emu_test::launch_threads(1, dim3(1, 1, 65), 0), cudaErrorInvalidConfiguration);
  EXPECT_EQ(emu_test::launch_threads(1, 32, 48 * 1024), cudaSuccess);
  EXPECT_EQ(emu_test::launch_threads(1, 32, 48 * 1024 + 1), cudaErrorInvalidConfiguration);
  EXPECT_EQ(emu_test::launch_threads(1, 1024, 0), cudaSuccess);
}

// ---- races: results that depend on the thread order --------------------------------------------

TEST_F(Emu, InPlaceHillisSteeleRaceDependsOnOrder) {
  int differing_sizes = 0;
  // n = 2 is no race (thread 0 never writes); from n = 3 on, thread 2 reads thread 1's new value
  for (int n : {3, 4, 31, 32, 33, 100, 256, 1000, 1024}) {
    auto in = ramp(n);
    scangrade::emu::set_thread_order(ThreadOrder::Forward);
    auto forward = emu_test::hillis_steele_in_place(in);
    scangrade::emu::set_thread_order(ThreadOrder::Reverse);
    auto reverse = emu_test::hillis_steele_in_place(in);
    EXPECT_EQ(reverse, inclusive(in)) << "n = " << n << ": reverse order hides the race";
    if (forward != reverse) ++differing_sizes;
  }
  EXPECT_EQ(differing_sizes, 9) << "forward order exposes the race at every size";
}

TEST_F(Emu, LaunchedKernelsNameTheKernelItsDefinitionAndLaunchSite) {
  scangrade::emu::clear_launched_kernels();
  emu_test::hillis_steele_in_place(ramp(64));
  const std::vector<std::string> kernels = scangrade::emu::launched_kernels();
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_TRUE(std::regex_search(kernels[0], std::regex("^`hillis_steele_in_place_kernel` \\(.*kernels_races\\.cu:9\\) "
                                                       "launched at .*kernels_races\\.cu:[0-9]+$")))
      << kernels[0];
  scangrade::emu::clear_launched_kernels();
  EXPECT_TRUE(scangrade::emu::launched_kernels().empty());
}

// ---- operations C++ leaves undefined ------------------------------------------------------------

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(Emu, ShiftCountsBelowTheWidthAreNotRecorded) {
  scangrade::emu::clear_undefined_operations();
  const emu_test::Shifted s = emu_test::shift({5, -8}, 3);
  EXPECT_EQ(s.left, (std::vector<int>{40, -64}));
  EXPECT_EQ(s.right_unsigned, (std::vector<unsigned>{0u, 0x1fffffffu}));
  EXPECT_EQ(s.right_signed, (std::vector<int>{0, -1}));
  EXPECT_EQ(scangrade::emu::undefined_operations(), "");
}

TEST_F(Emu, ShiftByTheWidthGivesTheGpuValueAndIsRecordedWithFileLine) {
  scangrade::emu::clear_undefined_operations();
  for (int count : {32, 33, 40, -1}) {
    // PTX shl/shr clamp the count: x << 32 == 0, unsigned x >> 32 == 0, signed x >> 32 == 0 or -1
    const emu_test::Shifted s = emu_test::shift({5, -8}, count);
    EXPECT_EQ(s.left, (std::vector<int>{0, 0})) << count;
    EXPECT_EQ(s.right_unsigned, (std::vector<unsigned>{0u, 0u})) << count;
    EXPECT_EQ(s.right_signed, (std::vector<int>{0, -1})) << count;
  }
  const std::string u = scangrade::emu::undefined_operations();
  for (int line : {10, 11, 12}) EXPECT_TRUE(contains(u, "kernels_undefined.cu:" + std::to_string(line) + ": ")) << u;
  EXPECT_TRUE(contains(u, "a shift of the 32-bit int 5 by 32 bits: undefined in C++")) << u;
  EXPECT_TRUE(contains(u, "The GPU clamps the count to the width, and the emulator computes it the same way: "
                          "`5 << 32` gave 0")) << u;
  EXPECT_TRUE(contains(u, "a shift of the 32-bit unsigned int 5 by 32 bits")) << u;
  EXPECT_TRUE(contains(u, "[8 times here]")) << u;  // both threads, four counts, one line per place
  EXPECT_TRUE(contains(u, "shift_kernel")) << u;     // where it ran first
  EXPECT_FALSE(contains(u, "race")) << u;
  EXPECT_FALSE(scangrade::emu::undefined_operations_differ_from_gpu());  // the values are the GPU's
  scangrade::emu::clear_undefined_operations();
  EXPECT_EQ(scangrade::emu::undefined_operations(), "");
}

TEST_F(Emu, FloatConversionOutOfRangeIsRecordedWithTheSaturatedGpuValue) {
  scangrade::emu::clear_undefined_operations();
  const emu_test::Converted c = emu_test::convert({1.5f, 3e10f, -1.0f});
  EXPECT_EQ(c.as_int[0], 1);
  EXPECT_EQ(c.as_unsigned[0], 1u);
  const std::string u = scangrade::emu::undefined_operations();
  EXPECT_TRUE(contains(u, "kernels_undefined.cu:17: the float 3e+10 converted to int, outside its range")) << u;
  EXPECT_TRUE(contains(u, "saturates (it gives 2147483647)")) << u;
  // line 18: 3e10 is too large for unsigned, and -1 is below it: the first one is described
  EXPECT_TRUE(contains(u, "kernels_undefined.cu:18: the float 3e+10 converted to unsigned int")) << u;
  EXPECT_TRUE(contains(u, "it gives 4294967295")) << u;
  EXPECT_TRUE(scangrade::emu::undefined_operations_differ_from_gpu());
}

TEST_F(Emu, IntegerDivisionByZeroAndOverflowGiveTheGpuValueInsteadOfATrap) {
  scangrade::emu::clear_undefined_operations();
  constexpr int kMin = std::numeric_limits<int>::min();
  const emu_test::Divided d = emu_test::divide({7, -7, kMin, 9}, {0, 0, -1, 2});
  EXPECT_EQ(d.status, cudaSuccess);
  // every bit set for a zero divisor; INT_MIN / -1 wraps, its remainder is 0
  EXPECT_EQ(d.quotient, (std::vector<int>{-1, -1, kMin, 4}));
  EXPECT_EQ(d.remainder, (std::vector<int>{-1, -1, 0, 1}));
  EXPECT_EQ(d.unsigned_quotient, (std::vector<unsigned>{0xffffffffu, 0xffffffffu, 0u, 4u}));
  const std::string u = scangrade::emu::undefined_operations();
  EXPECT_TRUE(contains(u, "kernels_undefined.cu:23: an integer division or remainder of 7 by zero")) << u;
  EXPECT_TRUE(contains(u, "kernels_undefined.cu:25: ")) << u;
  EXPECT_TRUE(contains(u, "the emulator gives the same")) << u;
  // the GPU's values: no reason to doubt what the thread orders show
  EXPECT_FALSE(scangrade::emu::undefined_operations_differ_from_gpu());
  // the emulator carries on: a later launch runs
  EXPECT_EQ(emu_test::shift({1}, 1).left, (std::vector<int>{2}));
}

TEST_F(Emu, DoubleBufferedHillisSteeleIsOrderIndependent) {
  for (int n : {1, 2, 31, 32, 33, 255, 1000, 1024}) {
    auto in = ramp(n);
    for (ThreadOrder order : kOrders) {
      scangrade::emu::set_thread_order(order, 42);
      EXPECT_EQ(emu_test::hillis_steele_double_buffered(in), inclusive(in))
          << "n = " << n << ", order " << scangrade::emu::to_string(order);
    }
  }
}

TEST_F(Emu, WarpSynchronousReductionWithoutSyncwarpDependsOnOrder) {
  auto in = ramp(64, 100);
  int expected = std::accumulate(in.begin(), in.end(), 0);
  scangrade::emu::set_thread_order(ThreadOrder::Forward);
  int forward = emu_test::warp_reduce_without_syncwarp(in);
  scangrade::emu::set_thread_order(ThreadOrder::Reverse);
  int reverse = emu_test::warp_reduce_without_syncwarp(in);
  EXPECT_NE(forward, reverse) << "expected " << expected;
  EXPECT_FALSE(forward == expected && reverse == expected);
}

// Warp lockstep: the lanes of a warp make their volatile shared accesses in turn, as a GPU's warp
// runs them together, in either order; warps still take turns, so a race between warps stays one.
TEST_F(Emu, WarpLockstepRunsAWarpsLanesTogetherAtVolatileSharedAccesses) {
  auto in = ramp(64, 100);
  const int expected_sum = std::accumulate(in.begin(), in.end(), 0);
  std::vector<int> per_warp(64), block(64);
  for (int i = 0; i < 64; ++i) per_warp[i] = (i % 32 == 0 ? 0 : per_warp[i - 1]) + in[i];
  std::partial_sum(in.begin(), in.end(), block.begin());

  ASSERT_FALSE(scangrade::emu::warp_lockstep()) << "off by default";
  scangrade::emu::set_thread_order(ThreadOrder::Forward);
  EXPECT_NE(emu_test::warp_scan_without_syncwarp(in), per_warp) << "without lockstep a lane runs ahead";

  scangrade::emu::set_warp_lockstep(true);
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
    scangrade::emu::set_thread_order(order, 7);
    EXPECT_EQ(emu_test::warp_scan_without_syncwarp(in), per_warp) << scangrade::emu::to_string(order);
    EXPECT_EQ(emu_test::warp_reduce_without_syncwarp(in), expected_sum) << scangrade::emu::to_string(order);
  }
  scangrade::emu::set_thread_order(ThreadOrder::Forward);
  EXPECT_NE(emu_test::volatile_in_place_scan(in), block) << "warp 1 reads what warp 0 wrote in the same step";
  scangrade::emu::set_thread_order(ThreadOrder::Reverse);
  EXPECT_EQ(emu_test::volatile_in_place_scan(in), block);
  scangrade::emu::set_warp_lockstep(false);
  scangrade::emu::set_thread_order(ThreadOrder::Forward);
}

// After a barrier the thread order starts again from its first thread, even when thread 0's atomic
// ticket (a yield point) left the pass elsewhere before it: in the forward order thread 0 then reads
// the tile total before thread 255 has written it, in the reverse order after; the orders disagree.
TEST_F(Emu, EveryStepAfterABarrierStartsFromTheOrdersFirstThread) {
  auto in = ramp(1025, 100);
  std::vector<int> expected(in.size());
  std::partial_sum(in.begin(), in.end(), expected.begin());
  scangrade::emu::set_thread_order(ThreadOrder::Reverse);
  EXPECT_EQ(emu_test::ticket_race_scan(in), expected);
  scangrade::emu::set_thread_order(ThreadOrder::Forward);
  EXPECT_NE(emu_test::ticket_race_scan(in), expected);
}

// ---- memory accounting --------------------------------------------------------------------------

std::size_t used_bytes() {
  std::size_t free = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  return total - free;
}

std::uint64_t pool_used() {
  cudaMemPool_t pool;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  std::uint64_t used = 0;
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  return used;
}

TEST_F(Emu, LeaksShowInMemGetInfoAndPool) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::size_t before = used_bytes();
  emu_test::no_leak(4096, stream);
  EXPECT_EQ(used_bytes(), before);
  EXPECT_EQ(pool_used(), 0u);

  emu_test::leak_malloc(1000);
  EXPECT_EQ(used_bytes(), before + 1000);
  EXPECT_EQ(pool_used(), 0u);

  emu_test::leak_malloc_async(512, stream);
  EXPECT_EQ(used_bytes(), before + 1512);
  EXPECT_EQ(pool_used(), 512u);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST_F(Emu, AllocationErrors) {
  void* p = nullptr;
  scangrade::emu::set_memory_limit(1 << 20);
  EXPECT_EQ(cudaMalloc(&p, (1 << 20) + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaFree(reinterpret_cast<void*>(0x1234)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  scangrade::emu::set_memory_limit(std::size_t(8) << 30);
}

TEST_F(Emu, DeviceProperties) {
  cudaDeviceProp prop;
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_STREQ(prop.name, "ScanGrade CPU emulator");
  EXPECT_EQ(prop.multiProcessorCount, 132);
  EXPECT_EQ(prop.warpSize, 32);
  EXPECT_EQ(prop.maxThreadsPerBlock, 1024);
  EXPECT_EQ(prop.sharedMemPerBlock, 48u * 1024u);
  int count = 0;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_TRUE(scangrade::emu::is_emulated());
}

}  // namespace
