// The checker's device-side checks (output_check.h) against the harness's host rule (check.h):
// the on-device acceptance band equals acceptance_band (int32 exactly, float to one float step), and
// verified_on_device says "right" exactly for outputs judge() passes. Skipped, with the reason,
// without a GPU.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fresh_input.h"
#include "scangrade/tolerance.h"
#include "output_check.h"
#include "scangrade/check.h"
#include "scangrade/device_run.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"

namespace scangrade::grader {
namespace {

template <typename T>
struct DeviceCopy {
  T* p = nullptr;
  std::size_t n = 0;
  explicit DeviceCopy(const std::vector<T>& v) : n(v.size()) {
    EXPECT_EQ(cudaMalloc(&p, (n ? n : 1) * sizeof(T)), cudaSuccess);
    if (n) {
      EXPECT_EQ(cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  ~DeviceCopy() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    if (n) {
      EXPECT_EQ(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return v;
  }
};

template <typename T>
T from_bits(std::uint32_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

template <typename T>
struct CheckRun {
  Case c;
  std::vector<T> input;
  std::vector<double> expected;
  std::vector<T> zone;  // guard, output, guard
  CheckRun(std::size_t n, ScanKind kind, ValueKind values, std::uint64_t seed) {
    c.id = "output-check";
    c.slot = Slot::Hierarchical;
    c.dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Int32;
    c.kind = kind;
    c.n = n;
    c.values = values;
    c.seed = seed;
    input = make_input<T>(c);
    expected = oracle_scan(input, kind);
    const std::size_t g = kGuardElements;
    zone.assign(n + 2 * g, from_bits<T>(kCanaryBits));
    for (std::size_t i = 0; i < n; ++i) zone[g + i] = static_cast<T>(expected[i]);
  }
  /// What judge() says of the zone as it is (with the input unchanged).
  Status host() const {
    const std::size_t g = kGuardElements;
    RunRecord<T> run;
    run.guard_before.assign(zone.begin(), zone.begin() + g);
    run.output.assign(zone.begin() + g, zone.begin() + g + c.n);
    run.guard_after.assign(zone.begin() + g + c.n, zone.end());
    run.input_after = input;
    return judge(c, input, expected, run).status;
  }
  bool device(const std::vector<T>* input_after = nullptr) const {
    const DeviceCopy<T> z(zone), in(input_after ? *input_after : input), pristine(input);
    return verified_on_device<T>(z.p, kGuardElements, in.p, pristine.p, c.n, c.kind, nullptr);
  }
};

class OutputCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = device_unavailable()) GTEST_SKIP() << "GPU test skipped: " << *why;
  }
};

TEST_F(OutputCheck, CorrectOutputsAreVerifiedAsTheHostPassesThem) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{(1 << 20) + 3}})
    for (const ScanKind kind : {ScanKind::Inclusive, ScanKind::Exclusive}) {
      const CheckRun<std::int32_t> i(n, kind, ValueKind::Random, 7);
      EXPECT_EQ(i.host(), Status::Pass);
      EXPECT_TRUE(i.device()) << "int32 n=" << n;
      for (const ValueKind values : {ValueKind::Real, ValueKind::Random, ValueKind::Large}) {
        const CheckRun<float> f(n, kind, values, 11);
        EXPECT_EQ(f.host(), Status::Pass);
        EXPECT_TRUE(f.device()) << "float n=" << n << " values " << name(values);
      }
    }
}

TEST_F(OutputCheck, EveryKindOfWrongRunIsNotVerified) {
  const std::size_t n = 5000, g = kGuardElements;
  CheckRun<std::int32_t> wrong(n, ScanKind::Inclusive, ValueKind::Random, 3);
  wrong.zone[g + 4321] += 1;
  EXPECT_EQ(wrong.host(), Status::Fail);
  EXPECT_FALSE(wrong.device());

  CheckRun<float> nan(n, ScanKind::Exclusive, ValueKind::Real, 3);
  nan.zone[g + 17] = std::nanf("");
  EXPECT_EQ(nan.host(), Status::Fail);
  EXPECT_FALSE(nan.device());

  CheckRun<float> unwritten(n, ScanKind::Inclusive, ValueKind::Real, 3);
  unwritten.zone[g + n - 1] = from_bits<float>(kPoisonBits);
  EXPECT_FALSE(unwritten.device());

  for (const std::size_t at : {g - 1, g + n}) {  // d_out[-1], d_out[n]
    CheckRun<std::int32_t> past(n, ScanKind::Inclusive, ValueKind::Random, 3);
    past.zone[at] = 0;
    EXPECT_EQ(past.host(), Status::OutOfBoundsWrite);
    EXPECT_FALSE(past.device());
  }

  const CheckRun<std::int32_t> right(n, ScanKind::Inclusive, ValueKind::Random, 3);
  std::vector<std::int32_t> changed = right.input;
  changed[2500] ^= 1;
  EXPECT_FALSE(right.device(&changed));  // the input was modified
}

TEST_F(OutputCheck, FloatToleranceEdgesMatchTheHostRule) {
  const std::size_t n = 1 << 16, g = kGuardElements;
  for (const double fraction : {0.5, 0.98, 1.5, 3.0}) {
    CheckRun<float> r(n, ScanKind::Inclusive, ValueKind::Real, 5);
    double abs_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      abs_sum += std::fabs(static_cast<double>(r.input[i]));
      if (i % 997 != 500) continue;
      const double tol = float_tolerance(i + 1, abs_sum, false);
      r.zone[g + i] = static_cast<float>(r.expected[i] + fraction * tol);
    }
    EXPECT_EQ(r.host() == Status::Pass, r.device()) << "an output " << fraction << " x the tolerance away";
  }
}

TEST_F(OutputCheck, BandOnTheDeviceIsTheHostBand) {
  for (const ScanKind kind : {ScanKind::Inclusive, ScanKind::Exclusive}) {
    const CheckRun<std::int32_t> i(100000, kind, ValueKind::Random, 9);
    const DeviceCopy<std::int32_t> in(i.input), lo(i.input), hi(i.input);
    acceptance_band_on_device<std::int32_t>(in.p, i.c.n, kind, lo.p, hi.p, nullptr);
    const Band<std::int32_t> host = acceptance_band(i.input, kind, i.expected);
    EXPECT_EQ(lo.get(), host.lo);
    EXPECT_EQ(hi.get(), host.hi);

    const CheckRun<float> f(100000, kind, ValueKind::Real, 9);
    const DeviceCopy<float> fin(f.input), flo(f.input), fhi(f.input);
    acceptance_band_on_device<float>(fin.p, f.c.n, kind, flo.p, fhi.p, nullptr);
    const Band<float> fhost = acceptance_band(f.input, kind, f.expected);
    const std::vector<float> dlo = flo.get(), dhi = fhi.get();
    std::size_t apart = 0;
    for (std::size_t k = 0; k < f.c.n; ++k) {
      // the same float, or the next one (the float64 sums in another order)
      if (dlo[k] != fhost.lo[k] && std::nextafter(dlo[k], fhost.lo[k]) != fhost.lo[k]) ++apart;
      if (dhi[k] != fhost.hi[k] && std::nextafter(dhi[k], fhost.hi[k]) != fhost.hi[k]) ++apart;
    }
    EXPECT_EQ(apart, 0u);
  }
}

TEST_F(OutputCheck, FreshInputIsTheDrawAndItsBandIsTheHostBand) {
  // fresh_input_and_band_on_device: the input it writes is InputDraw's (the host's draw of the same
  // seed); its int32 band is acceptance_band of that input exactly; its float band is the rule
  // around the float64 sums with the magnitude sum bounded from the generator (fresh_abs_sum_bound),
  // to one float step, and it holds acceptance_band of that input (so an honest result passes)
  const std::size_t n = (1 << 20) + 3;  // several CUB tiles and a partial one
  for (const ScanKind kind : {ScanKind::Inclusive, ScanKind::Exclusive}) {
    for (const ValueKind values : {ValueKind::Random, ValueKind::Large}) {
      std::vector<std::int32_t> host(n);
      for (std::size_t i = 0; i < n; ++i) host[i] = InputDraw<std::int32_t>{values, 0x5eed, n}(i);
      const DeviceCopy<std::int32_t> in{std::vector<std::int32_t>(n, 7)}, lo{host};
      fresh_input_and_band_on_device<std::int32_t>(values, 0x5eed, n, kind, in.p, lo.p, lo.p, nullptr);
      EXPECT_EQ(in.get(), host) << name(values);
      EXPECT_EQ(lo.get(), acceptance_band(host, kind, oracle_scan(host, kind)).lo) << name(values);
    }
    for (const ValueKind values : {ValueKind::Random, ValueKind::Real, ValueKind::Large}) {
      std::vector<float> host(n);
      for (std::size_t i = 0; i < n; ++i) host[i] = InputDraw<float>{values, 0x5eed, n}(i);
      const DeviceCopy<float> in{std::vector<float>(n, 7.0f)}, lo{host}, hi{host};
      fresh_input_and_band_on_device<float>(values, 0x5eed, n, kind, in.p, lo.p, hi.p, nullptr);
      EXPECT_EQ(in.get(), host) << name(values);
      const std::vector<double> sums = oracle_scan(host, kind);
      const Band<float> exact = acceptance_band(host, kind, sums);
      const std::vector<float> dlo = lo.get(), dhi = hi.get();
      std::size_t apart = 0, narrower = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t terms = kind == ScanKind::Inclusive ? k + 1 : k;
        const double tol = tolerance::bound(terms, fresh_abs_sum_bound(values, terms), integer_values(values));
        const float want_lo = std::nextafter(static_cast<float>(sums[k] - tol), -INFINITY);
        const float want_hi = std::nextafter(static_cast<float>(sums[k] + tol), INFINITY);
        if (dlo[k] != want_lo && std::nextafter(dlo[k], want_lo) != want_lo) ++apart;
        if (dhi[k] != want_hi && std::nextafter(dhi[k], want_hi) != want_hi) ++apart;
        // the exact rule's band inside (to the one step the float64 sums' order may move an end)
        if (dlo[k] > std::nextafter(exact.lo[k], INFINITY) || dhi[k] < std::nextafter(exact.hi[k], -INFINITY))
          ++narrower;
      }
      EXPECT_EQ(apart, 0u) << name(values);
      EXPECT_EQ(narrower, 0u) << name(values);
      // an honest result (the oracle's sums rounded to float) passes
      std::vector<float> honest(n);
      for (std::size_t k = 0; k < n; ++k) honest[k] = static_cast<float>(sums[k]);
      const DeviceCopy<float> out(honest);
      const DeviceCopy<unsigned long long> first{std::vector<unsigned long long>(1)};
      EXPECT_FALSE(first_outside<float>(out.p, lo.p, hi.p, n, first.p, nullptr).has_value()) << name(values);
    }
  }
}

TEST_F(OutputCheck, ARememberedResultIsOutsideTheNextFreshBand) {
  // the output computed for one fresh input is checked against the band of the next: a cache that
  // returns it fails, and the right output of the new input passes
  const std::size_t n = 1 << 16;
  for (const ValueKind values : {ValueKind::Random, ValueKind::Real}) {
    const DeviceCopy<float> in{std::vector<float>(n)}, lo{std::vector<float>(n)}, hi{std::vector<float>(n)};
    const DeviceCopy<unsigned long long> first{std::vector<unsigned long long>(1)};
    fresh_input_and_band_on_device<float>(values, 1, n, ScanKind::Inclusive, in.p, lo.p, hi.p, nullptr);
    const std::vector<float> first_input = in.get();
    std::vector<float> remembered(n);
    const std::vector<double> sums = oracle_scan(first_input, ScanKind::Inclusive);
    for (std::size_t i = 0; i < n; ++i) remembered[i] = static_cast<float>(sums[i]);
    const DeviceCopy<float> out(remembered);
    EXPECT_FALSE(first_outside<float>(out.p, lo.p, hi.p, n, first.p, nullptr).has_value());
    fresh_input_and_band_on_device<float>(values, 2, n, ScanKind::Inclusive, in.p, lo.p, hi.p, nullptr);
    EXPECT_TRUE(first_outside<float>(out.p, lo.p, hi.p, n, first.p, nullptr).has_value()) << name(values);
    std::vector<float> right(n);
    const std::vector<double> next = oracle_scan(in.get(), ScanKind::Inclusive);
    for (std::size_t i = 0; i < n; ++i) right[i] = static_cast<float>(next[i]);
    const DeviceCopy<float> right_out(right);
    EXPECT_FALSE(first_outside<float>(right_out.p, lo.p, hi.p, n, first.p, nullptr).has_value()) << name(values);
  }
}

}  // namespace
}  // namespace scangrade::grader
