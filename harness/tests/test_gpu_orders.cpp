// GPU side of the tolerance rule: CUB's summation order (and the reference's) never fails on
// real-valued and large float inputs up to 2^24. Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include "reference.h"
#include "scangrade/device_run.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"

namespace scangrade {
namespace {

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

}  // namespace
}  // namespace scangrade
