// Micro-benchmark of the emulator on a 2^22-element two-level scan (the public suite's largest
// size): correctness is asserted, the time is only printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>
#include <scangrade/emu.h>

#include "test_kernels.h"

namespace {

TEST(EmuBench, TwoLevelScanOf4MElements) {
  using scangrade::emu::ThreadOrder;
  constexpr std::size_t n = std::size_t(1) << 22;
  std::vector<std::int32_t> in(n), expected(n), out(n);
  std::int32_t acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    in[i] = static_cast<std::int32_t>(i % 13) - 6;
    expected[i] = acc;
    acc += in[i];
  }
  std::int32_t *d_in = nullptr, *d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, n * sizeof(std::int32_t)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, n * sizeof(std::int32_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), n * sizeof(std::int32_t), cudaMemcpyHostToDevice), cudaSuccess);
  for (ThreadOrder order : {ThreadOrder::Forward, ThreadOrder::Random}) {
    scangrade::emu::set_thread_order(order, 1);
    scangrade::emu::reset_stats();
    auto start = std::chrono::steady_clock::now();
    emu_test::two_level_exclusive_scan(d_in, d_out, n, nullptr);
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess) << scangrade::emu::last_diagnostic();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto s = scangrade::emu::stats();
    std::printf("[ bench    ] 2^22-element two-level scan, %s order: %.3f s (%llu blocks, %llu threads, "
                "%llu rendezvous, %.1f ns per rendezvous)\n",
                scangrade::emu::to_string(order), seconds, static_cast<unsigned long long>(s.blocks),
                static_cast<unsigned long long>(s.threads), static_cast<unsigned long long>(s.rendezvous),
                seconds * 1e9 / static_cast<double>(s.rendezvous));
    ASSERT_EQ(cudaMemcpy(out.data(), d_out, n * sizeof(std::int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(out, expected);
  }
  cudaFree(d_in);
  cudaFree(d_out);
  scangrade::emu::set_thread_order(ThreadOrder::Forward);
}

}  // namespace
