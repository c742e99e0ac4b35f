// The one timing method of the grader, shared by the checker (which times the reference, CUB and a
// device-to-device copy in its own process) and the judge (which runs the student's timed calls
// through the worker, with the checker preparing and verifying every call):
//   * before every call the input is restored from a pristine device copy, the output poisoned
//     (0xFF bytes: NaN, -1) and the L2 cache flushed by a cudaMemsetAsync over 2 x L2; calls
//     alternate between two input/output address pairs;
//   * kWarmup calls first (module load, first-touch allocations, pool growth), not counted;
//   * stop at >= kMinReps repetitions once (p75 - p25) / median <= kMaxSpread, or at kMaxReps, or
//     after kBudgetSeconds for one implementation (at least one repetition always).
// The student's series (grading/judge/timing.cpp) pairs every timed call with one call of the
// slot's reference in the checker (the same preparation), so that drift of the GPU's clocks or load
// touches both alike: the ratio is the median of the paired ratios reference / student, and the
// series stops at >= kMinReps pairs once the distribution-free 95% interval of that median
// (median_interval) lies within +-kRatioHalfWidth of it, or at kMaxReps, or after kPairedBudgetSeconds.
// A paired reference time counts at most kMaxReferenceSlowdown x the reference's median timed alone
// before the series: work the submission leaves running on the GPU after its call returns could
// slow the reference call that follows (the GPU time-slices the two processes), and that gains at
// most this factor.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace scangrade::grader::timing {

inline constexpr int kWarmup = 3;
inline constexpr int kMinReps = 10;
inline constexpr int kMaxReps = 200;
inline constexpr double kMaxSpread = 0.05;
inline constexpr double kBudgetSeconds = 2.0;
// A paired series stops once the 95% interval of its median ratio is within +-1%, or at 200 pairs,
// or after 4 s. Measured on an H100 (tools/bench_repro.py, 16 copies in a batch and 5 grades alone):
// this rule keeps a slot's ratio within CV 1.5% and max/min 1.05; +-2%, 100 pairs, 2 s made the
// 100-submission batch 222 s instead of 311 s (the exclusive lock is held while a judge times) but
// left the batch's spread outside those targets (CV 1.39-1.57%, max/min 1.06).
inline constexpr int kMaxPairs = 200;
inline constexpr double kRatioHalfWidth = 0.01;
inline constexpr double kPairedBudgetSeconds = 4.0;
inline constexpr double kMaxReferenceSlowdown = 1.10;

// The student's time from outside (grading/docs/timing.md, "The judge's bound";
// grading/docs/security.md, "What remains possible"). The worker's process is the
// submission's: its event times are its word. The judge's clock around a call bounds the call from
// below once the worker path's own cost is taken off (the exchange, the worker's switch to its CUDA
// context, its synchronization: 0.2-0.5 ms on an H200), and that cost is calibrated on each timed
// case with the reference solution run as a student (scangrade_worker_reference, the grader's own
// binary, through the same protocol and the same sequence of the checker's work around each call):
// kCalibrationWarmup warm-up and kCalibrationCalls calls before the submission's series and
// kCalibrationCalls after it, each call's judge's clock less its event time; the second largest of
// them (one outlier does not widen the bound) is what the judge's clock may exceed an honest call
// by. When the median of the submission's reported times is below the median of these bounds, each
// of its calls counts max(its reported time, its bound); else its reported times stand (an honest
// call above the calibration's range is not raised by chance). While timing, the judge polls for the
// worker's reply without sleeping, so that its own wake-up is not in its clock.
// The bound also leaves kBoundSlack of the judge's clock to the call: the calibration's calls are as
// long as the reference's, and the worker path adds a little more to a longer call (on an H200, a
// correct single-pass slot's 3.3 ms calls were 0.5% above their bound).
inline constexpr int kCalibrationWarmup = 2;
inline constexpr int kCalibrationCalls = 5;
inline constexpr double kBoundSlack = 0.02;

/// The judge's lower bound on a call's time: its clock around the exchange, less kBoundSlack of
/// it, less the calibrated overhead of the worker path (never below 0).
inline double judge_bound_ms(double wall_ms, double overhead_ms) {
  return std::max(0.0, (1 - kBoundSlack) * wall_ms - overhead_ms);
}

/// The calibration calls' overhead (judge's clock - event time): the second largest of them (the
/// largest below 4 calls), never below 0.
inline double calibrated_overhead_ms(const std::vector<double>& wall_ms, const std::vector<double>& event_ms) {
  std::vector<double> overheads;
  for (std::size_t i = 0; i < wall_ms.size() && i < event_ms.size(); ++i) overheads.push_back(wall_ms[i] - event_ms[i]);
  if (overheads.empty()) return 0;
  std::sort(overheads.begin(), overheads.end());
  return std::max(0.0, overheads[overheads.size() - (overheads.size() >= 4 ? 2 : 1)]);
}

// A fair share of the GPU (grading/docs/timing.md, "The GPU's fair share"). While a judge times,
// the GPU is its alone (the exclusive --gpu-lock): a submission's timed calls get a budget from the
// reference's time, so that none makes the class wait longer than a full series of a submission too
// slow to earn performance points. kAllowanceRatio is 1.25 x the zero-point ratio's 4x (scoring.h:
// none at 4x slower than the reference): a submission that can still earn points gets its whole
// series.
//   * a case's counted calls (after its warm-up) stop once they took kMaxPairs calls at
//     kAllowanceRatio x the reference timed alone (the judge's bound of each call);
//   * a slot's timed cases share a pool: kSlotSlackSeconds (first calls: module loading, pool
//     growth), plus (kWarmup + kMaxPairs) calls at kAllowanceRatio x the reference for each case
//     reached; every exchange with the worker while timing (its setup, calls, end) is taken from it,
//     a call is cut (the worker killed) at what is left plus kCutGraceSeconds, and a call is not
//     started when less is left than the last call took. A cut ends the slot's timing.
inline constexpr double kAllowanceRatio = 5.0;
inline constexpr double kSlotSlackSeconds = 1.0;
inline constexpr double kCutGraceSeconds = 0.25;

/// Seconds of `calls` calls at kAllowanceRatio x the reference's `reference_ms`.
inline double allowance_s(int calls, double reference_ms) {
  return static_cast<double>(calls) * kAllowanceRatio * std::max(0.0, reference_ms) / 1000.0;
}

inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

inline double spread_of(const std::vector<double>& v) {
  const double median = quantile(v, 0.5);
  return median > 0 ? (quantile(v, 0.75) - quantile(v, 0.25)) / median : 0.0;
}

/// True when a series of repetitions (warm-ups excluded) may stop, `elapsed_s` after its start.
inline bool enough(const std::vector<double>& ms, double elapsed_s) {
  const int reps = static_cast<int>(ms.size());
  if (reps >= kMaxReps || (reps >= 1 && elapsed_s >= kBudgetSeconds)) return true;
  return reps >= kMinReps && spread_of(ms) <= kMaxSpread;
}

/// The distribution-free 95% confidence interval of the median of `v` (order statistics: ranks
/// n/2 -+ 1.96 sqrt(n) / 2, the normal approximation of the binomial; the whole range below 6
/// values). No assumption on the distribution, no randomness: the same values give the same interval.
inline std::pair<double, double> median_interval(std::vector<double> v) {
  if (v.empty()) return {0.0, 0.0};
  std::sort(v.begin(), v.end());
  const double m = static_cast<double>(v.size()), half = 0.98 * std::sqrt(m);
  // 1-based ranks j = floor(m/2 - half), k = ceil(1 + m/2 + half), clamped to [1, m]
  const double j = std::max(1.0, std::floor(m / 2 - half)), k = std::min(m, std::ceil(1 + m / 2 + half));
  return {v[static_cast<std::size_t>(j) - 1], v[static_cast<std::size_t>(k) - 1]};
}

/// True when a paired series (ratios reference / student, warm-ups excluded) may stop, `elapsed_s`
/// after its start.
inline bool ratio_known(const std::vector<double>& ratios, double elapsed_s) {
  const int reps = static_cast<int>(ratios.size());
  if (reps >= kMaxPairs || (reps >= 1 && elapsed_s >= kPairedBudgetSeconds)) return true;
  if (reps < kMinReps) return false;
  const double median = quantile(ratios, 0.5);
  const auto [lo, hi] = median_interval(ratios);
  return median > 0 && lo >= median * (1 - kRatioHalfWidth) && hi <= median * (1 + kRatioHalfWidth);
}

struct Stats {
  double median_ms = 0, min_ms = 0, max_ms = 0, spread = 0;
  int reps = 0;
};

inline Stats summarize(const std::vector<double>& ms) {
  Stats s;
  if (ms.empty()) return s;
  s.reps = static_cast<int>(ms.size());
  s.median_ms = quantile(ms, 0.5);
  s.min_ms = *std::min_element(ms.begin(), ms.end());
  s.max_ms = *std::max_element(ms.begin(), ms.end());
  s.spread = spread_of(ms);
  return s;
}

/// Benchmark-only variations of this method, for measuring what each cause of noise contributes
/// (tools/bench_timing_causes.py). They come from the environment variable SCANGRADE_BENCH_TIMING
/// of the grader's processes, a comma list of:
///   default_pool  the worker leaves the runtime's default memory pool as it is (it returns freed
///                 memory to the driver at every synchronization) instead of the reference's
///                 configuration (release threshold: all)
///   no_fresh      the checker restores the case's own input before every call (no fresh values)
///   fixed_reps=N  the series runs exactly N pairs (1..kMaxReps): no interval rule, no time budget
///   shift=B       pair 1's input and output start B bytes into their buffers (B a multiple of 256,
///                 at most 1 MiB), so the two pairs differ in address alignment
/// Grading never sets it. The judge names the variation in every timing's `method`; the worker and
/// the checker read it from their own environment (the worker's is the judge's), so a submission
/// that changes it in its own process only moves its own buffers or pool away from the checker's.
struct BenchVariation {
  bool default_pool = false, no_fresh = false;
  int fixed_reps = 0;      // 0: the interval rule
  std::size_t shift = 0;   // bytes into pair 1's buffers
  std::string error;       // a term that is not one of the above (the variation is then ignored)
  bool any() const { return default_pool || no_fresh || fixed_reps > 0 || shift > 0; }
};

inline BenchVariation parse_bench_variation(const char* text) {
  BenchVariation v;
  if (!text) return v;
  const std::string all = text;
  std::size_t start = 0;
  while (start <= all.size()) {
    std::size_t end = all.find(',', start);
    if (end == std::string::npos) end = all.size();
    const std::string term = all.substr(start, end - start);
    start = end + 1;
    if (term.empty()) continue;
    const auto number = [&term](std::size_t from, unsigned long long max) -> long long {
      const std::string digits = term.substr(from);
      if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
        return -1;
      const unsigned long long value = std::stoull(digits);
      return value <= max ? static_cast<long long>(value) : -1;
    };
    if (term == "default_pool") {
      v.default_pool = true;
    } else if (term == "no_fresh") {
      v.no_fresh = true;
    } else if (term.rfind("fixed_reps=", 0) == 0 && number(11, kMaxPairs) >= 1) {
      v.fixed_reps = static_cast<int>(number(11, kMaxPairs));
    } else if (term.rfind("shift=", 0) == 0 && number(6, 1 << 20) >= 0 && number(6, 1 << 20) % 256 == 0) {
      v.shift = static_cast<std::size_t>(number(6, 1 << 20));
    } else {
      return BenchVariation{false, false, 0, 0, "SCANGRADE_BENCH_TIMING: unknown term '" + term + "'"};
    }
  }
  return v;
}

/// This process's variation (none unless SCANGRADE_BENCH_TIMING is set).
inline BenchVariation bench_variation() { return parse_bench_variation(std::getenv("SCANGRADE_BENCH_TIMING")); }

/// The variation as the timing's `method` names it (empty when there is none).
inline std::string describe(const BenchVariation& v) {
  if (!v.any()) return "";
  std::string text = "; BENCHMARK VARIATION (SCANGRADE_BENCH_TIMING, not a grading configuration):";
  if (v.default_pool) text += " the worker kept the runtime's default memory pool;";
  if (v.no_fresh) text += " no fresh input;";
  if (v.fixed_reps > 0) text += " exactly " + std::to_string(v.fixed_reps) + " pairs;";
  if (v.shift > 0) text += " pair 1 shifted by " + std::to_string(v.shift) + " bytes;";
  text.pop_back();
  return text;
}

/// True when a paired series may stop under a variation: its fixed number of pairs, or ratio_known.
inline bool series_done(const std::vector<double>& ratios, double elapsed_s, const BenchVariation& v) {
  if (v.fixed_reps > 0) return static_cast<int>(ratios.size()) >= v.fixed_reps;
  return ratio_known(ratios, elapsed_s);
}

}  // namespace scangrade::grader::timing
