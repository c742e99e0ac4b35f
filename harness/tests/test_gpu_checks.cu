// The checks on a real GPU: CUB's summation order (and the reference's) never fails the float
// tolerance rule up to 2^24, and the guarded run catches what only the device can show (a write one
// past n inside the allocation's slack, a modified input, leaked temporaries, a crash).
// Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include "reference.h"
#include "scangrade/device_run.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"

namespace scangrade {
namespace {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = device_unavailable()) GTEST_SKIP() << "GPU test skipped: " << *why;
  }
};

class GpuOrders : public ::testing::TestWithParam<std::tuple<std::size_t, ValueKind, ScanKind>> {
 protected:
  void SetUp() override {
    if (const auto why = device_unavailable()) GTEST_SKIP() << "GPU test skipped: " << *why;
  }
};

TEST_P(GpuOrders, CubAndReferenceStayWithinTolerance) {
  const auto& [n, values, kind] = GetParam();
  Case c;
  c.id = "gpu.orders";
  c.slot = Slot::Hierarchical;
  c.dtype = DType::Float32;
  c.kind = kind;
  c.n = n;
  c.values = values;
  c.seed = 11;
  c.why = "tolerance rule vs. CUB's order";
  const std::vector<float> x = make_input<float>(c);
  const std::vector<double> expected = oracle_scan(x, kind);

  const ScanFn<float> cub = [k = kind](const float* in, float* out, std::size_t m, cudaStream_t s) {
    baseline::cub_scan(in, out, m, k, s);
  };
  const ScanFn<float> reference = [k = kind](const float* in, float* out, std::size_t m, cudaStream_t s) {
    reference::hierarchical_scan(in, out, m, k, s);
  };
  for (const auto& [label, fn] : {std::pair{"cub", cub}, std::pair{"reference", reference}}) {
    const Verdict v = judge(c, x, expected, run_on_device(fn, x));
    EXPECT_EQ(v.status, Status::Pass) << label << ": " << v.message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tolerance, GpuOrders,
    ::testing::Combine(::testing::Values(std::size_t{4097}, std::size_t{1} << 20, std::size_t{1} << 24),
                       ::testing::Values(ValueKind::Real, ValueKind::Large, ValueKind::Random),
                       ::testing::Values(ScanKind::Inclusive, ScanKind::Exclusive)),
    [](const auto& info) {
      return "n" + std::to_string(std::get<0>(info.param)) + "_" + std::string(name(std::get<1>(info.param))) + "_" +
             std::string(name(std::get<2>(info.param)));
    });

// --- known-wrong slots: each must get its own verdict --------------------------------------------

__global__ void copy_scan_kernel(const int* in, int* out, std::size_t n, std::size_t extra, bool write_input) {
  // A sequential inclusive scan by one thread, then the planted bug.
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int sum = 0;
  for (std::size_t i = 0; i < n; ++i) out[i] = sum += in[i];
  for (std::size_t i = n; i < n + extra; ++i) out[i] = 0;  // writes past the end
  if (write_input && n > 0) const_cast<int*>(in)[0] += 1;
}

__global__ void illegal_address_kernel(int* out) { out[threadIdx.x + (1ull << 40)] = 1; }

struct Planted {
  std::size_t extra = 0;
  bool write_input = false;
  std::size_t leak_malloc = 0;
  std::size_t leak_async = 0;
};

ScanFn<int> planted(Planted p) {
  return [p](const int* in, int* out, std::size_t n, cudaStream_t s) {
    void* tmp = nullptr;
    if (p.leak_malloc) cudaMalloc(&tmp, p.leak_malloc);
    if (p.leak_async) cudaMallocAsync(&tmp, p.leak_async, s);
    copy_scan_kernel<<<1, 32, 0, s>>>(in, out, n, p.extra, p.write_input);
  };
}

Status verdict_of(const ScanFn<int>& fn, std::size_t n = 1000) {
  Case c;
  c.id = "planted";
  c.slot = Slot::Hierarchical;
  c.dtype = DType::Int32;
  c.kind = ScanKind::Inclusive;
  c.n = n;
  c.values = ValueKind::Random;
  c.seed = 5;
  const std::vector<int> x = make_input<int>(c);
  const Verdict v = judge(c, x, oracle_scan(x, c.kind), run_on_device(fn, x));
  return v.status;
}

TEST_F(GpuTest, CorrectSlotPasses) { EXPECT_EQ(verdict_of(planted({})), Status::Pass); }

TEST_F(GpuTest, WriteOnePastTheEndIsCaughtInsideTheSlack) {
  // n = 1000 ints: the 4000-byte output is rounded up by the allocator, so d_out[n] is memory no
  // memory checker objects to; the guard zone catches it.
  EXPECT_EQ(verdict_of(planted({1, false, 0, 0})), Status::OutOfBoundsWrite);
}

TEST_F(GpuTest, ModifiedInputIsCaught) { EXPECT_EQ(verdict_of(planted({0, true, 0, 0})), Status::InputModified); }

TEST_F(GpuTest, CudaMallocLeakIsCaught) { EXPECT_EQ(verdict_of(planted({0, false, 4096, 0})), Status::Leak); }

TEST_F(GpuTest, CudaMallocAsyncLeakIsCaught) { EXPECT_EQ(verdict_of(planted({0, false, 0, 4096})), Status::Leak); }

TEST_F(GpuTest, ThrownExceptionIsACrash) {
  EXPECT_EQ(verdict_of([](const int*, int*, std::size_t, cudaStream_t) { throw std::runtime_error("boom"); }),
            Status::Crash);
}

// Last: an illegal address leaves this process's CUDA context unusable.
TEST_F(GpuTest, ZZIllegalAddressIsACrashAndBreaksTheContext) {
  const ScanFn<int> fn = [](const int*, int* out, std::size_t, cudaStream_t s) {
    illegal_address_kernel<<<1, 32, 0, s>>>(out);
  };
  std::vector<int> x(100, 1);
  const RunRecord<int> run = run_on_device(fn, x);
  EXPECT_NE(run.error.find("cudaErrorIllegalAddress"), std::string::npos) << run.error;
  EXPECT_TRUE(run.context_broken);
}

}  // namespace
}  // namespace scangrade
