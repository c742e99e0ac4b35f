// The single-pass reference finishes whatever order blocks start in. Block b scans tile b, and a
// block waits for an earlier tile's status word only a bounded time before it sums that tile from
// the input itself (reference/single_pass.cu). Here the tiles are handed out in reverse
// (single_pass_parts::TileOrder::Reversed): every block starts before all the tiles it waits on, the
// order a GPU that starts blocks in any order may produce. Without the bounded wait this deadlocks
// on a GPU as soon as the grid holds more blocks than fit at once (the largest case), and spins
// forever in the emulator (which runs blocks one at a time, in increasing index order).
// Runs on the GPU, or on the emulation backend in the _emu build.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "reference.h"
#include "scangrade/device_run.h"
#include "tuning.h"

namespace scangrade::reference {
namespace {

namespace sp = single_pass_parts;

/// Inputs whose every prefix sum is exact in float too (small integers), so that the check is exact.
template <typename T>
std::vector<T> small_integers(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-8, 8);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(value(rng));
  return v;
}

/// One call of clear + scan kernel in `order`, on a workspace from the stream's pool.
template <typename T>
ScanFn<T> scan_in(sp::TileOrder order) {
  return [order](const T* d_in, T* d_out, std::size_t n, cudaStream_t stream) {
    void* workspace = nullptr;
    check_cuda(cudaMallocAsync(&workspace, sp::workspace_bytes(n), stream), "cudaMallocAsync", "the test's workspace");
    sp::clear_workspace(workspace, n, stream);
    sp::scan_kernel(d_in, d_out, n, workspace, stream, order);
    check_cuda(cudaFreeAsync(workspace, stream), "cudaFreeAsync", "the test's workspace");
  };
}

template <typename T>
void expect_inclusive_scan(sp::TileOrder order, std::size_t n) {
  const std::vector<T> input = small_integers<T>(n, static_cast<unsigned>(n));
  const RunRecord<T> run = run_on_device(scan_in<T>(order), input);
  ASSERT_TRUE(run.error.empty()) << run.error;
  ASSERT_EQ(run.output.size(), n);
  T sum = T(0);
  std::size_t wrong = 0, first = n;
  for (std::size_t i = 0; i < n; ++i) {
    sum += input[i];
    if (run.output[i] != sum && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << "first wrong element: " << first << " of " << n;
}

class SinglePassOrder : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    if (const auto why = device_unavailable()) {
      GTEST_SKIP() << "no GPU (scangrade_reference_tests_emu runs these on the emulation backend): " << *why;
    }
  }
};

TEST_P(SinglePassOrder, ReversedTilesInt32) { expect_inclusive_scan<std::int32_t>(sp::TileOrder::Reversed, GetParam()); }
TEST_P(SinglePassOrder, ReversedTilesFloat) { expect_inclusive_scan<float>(sp::TileOrder::Reversed, GetParam()); }
TEST_P(SinglePassOrder, TilesByBlockInt32) { expect_inclusive_scan<std::int32_t>(sp::TileOrder::ByBlock, GetParam()); }

constexpr std::size_t kTile = tuning::kSinglePassItems;
// one tile; a few whole tiles and a partial one; more than one look-back window (32 tiles)
INSTANTIATE_TEST_SUITE_P(Small, SinglePassOrder, ::testing::Values(kTile - 3, 5 * kTile + 1, 40 * kTile + 777));
#ifndef SCANGRADE_EMULATED
// more blocks than an H100 or H200 holds at once (132 SMs x 8): reversed, the first blocks to start
// wait on tiles whose blocks cannot start until they finish
INSTANTIATE_TEST_SUITE_P(MoreBlocksThanFit, SinglePassOrder, ::testing::Values(2048 * kTile + 777));
#endif

}  // namespace
}  // namespace scangrade::reference
