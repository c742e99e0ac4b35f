// The timing pass (Session::time_cases): the passed perf cases timed after every functional run,
// with the GPU to this judge alone. Every timed call gets fresh input from the checker and is paired
// with one call of the reference in the checker (timing_method.h); CUB and copy baselines are
// shared through --baseline-cache (the reference never is: its times come from the pairs). The
// judge's clock bounds every call, and the GPU's fair share ends a series early
// (timing_share.cpp).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <utility>

#include "protocol.h"
#include "case_data.h"
#include "session.h"
#include "results.h"
#include "text.h"
#include "timing_method.h"
#include "timing_series.h"
#include "scangrade/check.h"

namespace scangrade::grader {

using nlohmann::json;

namespace {

/// The baseline cache's key of a case: the device, the harness version and everything that makes
/// the input.
std::string baseline_key(const std::string& device, const Entry& e) {
  const Case& c = e.input_case;
  return device + " | scangrade " + harness_version() + " | " + c.id + " | " + std::string(name(c.slot)) + " " +
         std::string(name(c.dtype)) + " " + std::string(name(c.kind)) + " n=" + std::to_string(c.n) + " " +
         std::string(name(c.values)) + " seed=" + std::to_string(c.seed);
}

/// The cache file's entries (an empty object when it is missing or unreadable: then it is rebuilt).
json load_baseline_cache(const std::string& path) {
  const auto text = read_file(path);
  if (!text || text->empty()) return json::object();
  try {
    json j = json::parse(*text);
    if (j.is_object() && j.value("version", 0) == 1 && j.contains("baselines") && j["baselines"].is_object())
      return j["baselines"];
  } catch (const json::exception&) {
  }
  std::cerr << "scangrade_judge: ignoring the unreadable baseline cache " << path << " (it is rebuilt)\n";
  return json::object();
}

void save_baseline_cache(const std::string& path, const json& cache) {
  const json file = {{"version", 1},
                     {"about", "scangrade_judge --baseline-cache: medians (ms) of the reference, CUB and a "
                               "device-to-device copy per device, harness version and case"},
                     {"baselines", cache}};
  const std::string text = file.dump(1) + "\n";
  if (const std::string why = write_file_atomic(path, text.data(), text.size()); !why.empty())
    std::cerr << "scangrade_judge: cannot update the baseline cache: " << why << "\n";
}

/// A cache entry's baselines, when it has them.
std::optional<Baselines> cached_baselines(const json& cache, const std::string& key) {
  if (!cache.is_object() || !cache.contains(key)) return std::nullopt;
  try {
    return cache[key].get<Baselines>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

namespace {

/// Which of the worker's times the timing object reports (each call at least the judge's bound).
enum class Clocked { Events, Host };

/// The timing object's `method`: the method of timing_method.h, with this run's numbers.
std::string method_text(int reps, std::size_t flush_bytes, bool cached, Clocked clocked, bool fresh_input,
                        bool warm_up_only) {
  using namespace timing;
  std::string method =
      (warm_up_only ? "median of " + std::to_string(reps) +
                          " warm-up calls of the slot (the GPU's fair share stopped the series before its first "
                          "counted call: its time is from them, against the reference timed alone)"
                    : "median of " + std::to_string(reps) + " repetitions of the slot call, after " +
                          std::to_string(kWarmup) + " warm-up calls") +
      "; before every call the trusted checker process " +
      (fresh_input ? std::string("wrote new input values of the case's kind, drawn on the device from a seed only "
                                 "it knows (a new one from the OS for every call), made that input's acceptance "
                                 "band,")
                   : std::string("restored the case's input from a pristine device copy (its values kind has no "
                                 "values to draw),")) +
      " poisoned the output (calls alternate between two input/output address pairs that the checker owns) "
      "and flushed the L2 cache with a cudaMemsetAsync over 2x L2 (" +
      formatted("%.0f", static_cast<double>(flush_bytes) / (1 << 20)) +
      " MiB), and after every call it checked the whole output on the device against " +
      std::string(fresh_input ? "that call's" : "the case's") +
      " acceptance band before the call's time counted; every timed call was followed by one call of the slot's "
      "reference in the checker process, prepared the same way (its input restored, its output poisoned, L2 "
      "flushed; both processes' default memory pools keep freed memory, release threshold: all), and the ratio "
      "to the reference is the median of these pairs' ratios; stopped at >= " +
      std::to_string(kMinReps) + " pairs once the 95% interval of that median (order statistics) was within +-" +
      formatted("%.0f", 100 * kRatioHalfWidth) + "% of it, or at " + std::to_string(kMaxPairs) + " pairs, or after " +
      formatted("%.0f", kPairedBudgetSeconds) + " s, or by the GPU's fair share; ";
  method += clocked == Clocked::Events
                ? "each call timed with CUDA events around it on its stream"
                : "the host clock bounded by cudaDeviceSynchronize exceeded the event time by more than 50% and "
                  "50 us (work on other streams), so the student's time is the host time";
  method += "; the reference alone, CUB and a device-to-device copy were timed the same way in the checker process ";
  method += cached ? "on this GPU earlier in the same batch, with the GPU to themselves (the batch's baseline cache)"
                   : "right before the student's calls";
  return method;
}

/// The method's sentence on the judge's bound: where the overhead came from and what it changed.
std::string bound_text(double overhead_ms, const std::string& overhead_from, double gap_ms, bool bounded, int raised,
                       int calls) {
  std::string text = "; the judge's bound on a call is its clock around the call less " +
                     formatted("%.0f", 100 * timing::kBoundSlack) + "% of it and less " +
                     formatted("%.3f", overhead_ms) + " ms, " + overhead_from + " (the submission's calls: " +
                     formatted("%.3f", gap_ms) + " ms, the median of its clock less their reported times): ";
  if (!bounded) return text + "the median reported time was not below the median bound";
  return text + "the median reported time was below the median bound, so every call counts at least its bound (" +
         std::to_string(raised) + " of " + std::to_string(calls) +
         " calls reported less; the student's time is the judge's clock)";
}

}  // namespace

void Session::time_cases(const std::vector<Entry>& entries, std::vector<CaseResult>& results) {
  std::vector<std::size_t> todo;
  failed_slots_.clear();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].c.perf && results[i].status == Status::Pass) todo.push_back(i);
    if (results[i].status != Status::Pass) failed_slots_.insert(entries[i].c.slot);
  }
  if (todo.empty()) return calibrator_.reset();
  // the GPU to this judge alone, for all its timed cases in one go
  std::optional<GpuLock> gpu;
  if (const std::string why = take_gpu(GpuLock::Exclusive, gpu); !why.empty()) {
    for (std::size_t i : todo) harness_fault(results[i], why);
    calibrator_.reset();
    return;
  }
  start_calibrator();  // started with the first worker, unless it could not be then
  json cache = o_.baseline_cache.empty() ? json(nullptr) : load_baseline_cache(o_.baseline_cache);
  bool cache_changed = false;
  const auto start = Clock::now();
  for (std::size_t i : todo) {
    if (timing_stopped_.count(entries[i].c.slot)) continue;  // the fair share ended the slot's timing
    const auto case_start = Clock::now();
    time_case(entries[i], results[i], cache, cache_changed);
    results[i].duration_s += seconds_since(case_start);
  }
  calibrator_.reset();
  if (cache_changed) save_baseline_cache(o_.baseline_cache, cache);
  timing_s_ += seconds_since(start);
}

void Session::time_case(const Entry& e, CaseResult& r, json& cache, bool& cache_changed) {
  CaseResult start;
  if (!ensure_worker(start)) return;  // the pass stands; without a timing the slot gets no perf points
  if (!checker_ && (!case_memory(start) || !checker_)) {
    errors_.push_back("cannot time " + e.c.id + ": " + start.message);
    return;
  }
  // the input, and nothing else: the checker makes the band from it. From the batch's case cache
  // when it has the case (no copy), else made here into the staging memfd.
  const auto prepared = Clock::now();
  const std::size_t bytes = e.c.n * (e.c.dtype == DType::Float32 ? sizeof(float) : sizeof(std::int32_t));
  CachedInput in = cached_input(e, o_.case_cache);
  const bool cached = in.fd >= 0;
  if (!cached) {
    CaseInput input;
    try {
      input = make_case_input(e);
    } catch (const std::exception& ex) {
      return harness_fault(r, "cannot make the timed case '" + e.c.id + "': " + ex.what());
    }
    if (const std::string why = timing_staging_.reserve(std::max<std::size_t>(bytes, 1)); !why.empty())
      return errors_.push_back("cannot time " + e.c.id + ": " + why);
    std::memcpy(timing_staging_.data(), input.data(), bytes);
    in = {timing_staging_.fd(), 0};
  }
  prepare_s_ += seconds_since(prepared);
  time_series(e, in, r, cache, cache_changed);
  if (cached) ::close(in.fd);
}

void Session::time_series(const Entry& e, const CachedInput& in, CaseResult& r, json& cache, bool& cache_changed) {
  Series s(e, r, baseline_key(checker_->device(), e));
  s.cached = cached_baselines(cache, s.key);
  s.variation = timing::bench_variation();
  s.short_series = failed_slots_.count(e.c.slot) > 0;
  if (!s.variation.error.empty()) return errors_.push_back("cannot time " + e.c.id + ": " + s.variation.error);
  if (!open_series(s, in) || !calibrate_series(s) || !run_pairs(s)) return;
  if (worker_) {  // a call cut by the fair share took the worker with it
    double wall = 0;
    bool cut = false;
    const Exchange x = timed_exchange(s, command(Mode::TimeEnd, e), 30 * o_.timeout_scale, wall, cut);
    if (cut) budget_cut(s, "its time_end");
    else if (x.kind != Exchange::Reply) drop_worker();
    if (worker_) worker_->set_spin(false);
  }
  finish_calibration(s);
  end_checker_series();
  record_timing(s);
  // baselines measured now go to the cache (only positive numbers)
  // (reference_ms: the reference timed alone, the cap of the paired reference times)
  const Baselines& used = s.used;
  if (cache.is_object() && !s.cached && used.reference_ms > 0 && used.cub_ms > 0 && used.copy_ms > 0) {
    cache[s.key] = {{"reference_ms", used.reference_ms}, {"cub_ms", used.cub_ms}, {"copy_ms", used.copy_ms},
                    {"measured_by", o_.submission_name}, {"measured_at", utc_now()}};
    cache_changed = true;
  }
}

void Session::end_checker_series() {
  try {
    checker_->request(CheckerRequest::of(CheckerOp::TimeEnd), {});
  } catch (const std::exception&) {
  }
}

void Session::series_failed(Series& s, const Exchange& x) {
  from_exchange(x, s.r);
  s.r.message = "the case passed, then failed during the timed repetitions: " + s.r.message;
  drop_worker();
  end_checker_series();
}

bool Session::open_series(Series& s, const CachedInput& in) {
  const Entry& e = s.e;
  // the checker: pristine input, band, two input/output pairs it owns (and the baselines)
  const auto prepared = Clock::now();
  const std::size_t n = e.c.n;
  s.bytes = n * (e.c.dtype == DType::Float32 ? sizeof(float) : sizeof(std::int32_t));
  std::vector<int> fds;
  CheckerReply setup;
  try {
    setup = checker_->request(CheckerRequest::time_setup(e.c, in.offset, !s.cached.has_value(), true), {in.fd}, &fds);
  } catch (const std::exception& ex) {
    errors_.push_back("cannot time " + e.c.id + ": " + ex.what());
    return false;
  }
  SharedBuffers buffers;
  buffers.fds = fds;
  prepare_s_ += seconds_since(prepared);
  if (!setup.error.empty() || fds.size() != 4) {
    end_checker_series();
    errors_.push_back("cannot time " + e.c.id + ": the checker: " + (setup.error.empty() ? "no buffers" : setup.error));
    return false;
  }
  s.used = s.cached ? *s.cached : setup.baselines.value();
  s.flush_bytes = setup.flush_bytes;
  s.fresh_input = setup.fresh_input;
  if (const std::string why = open_share(s); !why.empty()) {  // the slot's timing budget is spent
    timing_stopped_[e.c.slot] = why;
    end_checker_series();
    return false;
  }
  // the worker maps the four buffers (and the reference as a student, for the calibration)
  Command begin = command(Mode::TimeBegin, e);
  begin.shared = true;
  begin.sizes = setup.sizes;
  worker_->set_spin(true);  // the judge's clock sees each reply when it comes (timing_share.cpp)
  worker_->send_fds(buffers.fds);
  if (calibrator_ready())
    for (int fd : buffers.fds) s.calibration_buffers.fds.push_back(::dup(fd));
  s.calibration_buffers.sizes = setup.sizes;
  buffers.close();
  s.deadline_s = case_deadline_s(e.c);
  double wall = 0;
  bool cut = false;
  const Exchange x = timed_exchange(s, begin, 60 * o_.timeout_scale, wall, cut);
  if (cut) {
    budget_cut(s, "its time_begin");
    end_checker_series();
    return false;
  }
  if (x.kind != Exchange::Reply) {
    series_failed(s, x);
    return false;
  }
  return true;
}

std::optional<Exchange> Session::series_call(Series& s, int j, TimeCallReply& reply, double& wall_ms, bool& cut) {
  Command c = command(Mode::TimeCall, s.e);
  c.call = j;
  Exchange x = timed_exchange(s, c, s.deadline_s, wall_ms, cut);
  if (x.kind != Exchange::Reply) return x;
  try {
    reply = x.reply.get<TimeCallReply>();
  } catch (const MessageError& ex) {
    x.kind = Exchange::Garbled;
    x.message = std::string("the worker's reply was incomplete or garbled (") + ex.what() + ")";
    return x;
  }
  return std::nullopt;
}

bool Session::series_prime(Series& s, int j) {
  CheckerReply primed;
  try {
    primed = checker_->request(CheckerRequest::prime(j), {});
  } catch (const std::exception& ex) {
    primed = CheckerReply::failed(ex.what());
  }
  if (primed.error.empty()) return true;
  errors_.push_back("cannot time " + s.e.c.id + ": the checker: " + primed.error);
  end_checker_series();
  return false;
}

void Session::abandon_series(Series& s) {
  end_checker_series();
  Command end = command(Mode::TimeEnd, s.e);
  exchange(*worker_, end, 30 * o_.timeout_scale, false, log_);
}

bool Session::run_pairs(Series& s) {
  using namespace timing;
  const auto series_start = Clock::now();
  for (int i = 0;; ++i) {
    if (std::string why = share_spent(s); !why.empty()) {  // the slot's timing budget
      s.stopped = std::move(why);
      s.stopped_by = "the GPU's fair share";
      if (!s.calls.empty()) return true;
      timing_stopped_[s.e.c.slot] = s.stopped;
      abandon_series(s);
      return false;
    }
    switch (timed_pair(s, i)) {
      case Pair::Failed: return false;
      case Pair::Cut: return true;
      case Pair::Done: break;
    }
    if (i < kWarmup) continue;
    s.counted_s += s.bound_ms(s.calls.back().wall_ms) / 1000;
    if (s.counted_s >= s.allowance_s) {  // as long as the longest series of a submission too slow for points
      s.stopped = "timing stopped after " + std::to_string(i + 1) + " calls: the counted calls took " +
                  formatted("%.3f", s.counted_s) + " s (the judge's clock), as long as " +
                  std::to_string(kMaxPairs) + " calls " + formatted("%.0f", kAllowanceRatio) +
                  "x slower than the reference (" + formatted("%.3f", s.used.reference_ms) +
                  " ms timed alone) would take; a slot 4x slower than the reference earns no performance points, "
                  "so this case is timed no further";
      s.stopped_by = "the GPU's fair share";
      return true;
    }
    if (s.short_series && s.variation.fixed_reps == 0 && static_cast<int>(s.ratios.size()) >= kMinReps) {
      s.stopped_by = "a short series of " + std::to_string(kMinReps) +
                     " pairs (another case of this slot did not pass, so the slot earns no performance points: "
                     "its time is for the feedback only)";
      return true;
    }
    const double elapsed_s = seconds_since(series_start);
    if (!series_done(s.ratios, elapsed_s, s.variation)) continue;
    const int pairs = static_cast<int>(s.ratios.size());
    s.stopped_by = s.variation.fixed_reps > 0 ? "its fixed number of pairs"
                   : ratio_known(std::vector<double>(s.ratios), 0.0) && pairs < kMaxPairs
                       ? "the interval rule"
                   : pairs >= kMaxPairs ? "the most pairs"
                                       : "the time budget";
    return true;
  }
}

Session::Pair Session::timed_pair(Series& s, int i) {
  using timing::kWarmup;
  const int j = i % 2;
  if (!series_prime(s, j)) return Pair::Failed;
  TimeCallReply reply;
  double wall = 0;
  bool cut = false;
  if (auto x = series_call(s, j, reply, wall, cut)) {
    if (!cut) {
      series_failed(s, *x);
      return Pair::Failed;
    }
    // it ran at least this long: the case's last call (against the reference timed alone)
    s.calls.push_back({0, 0, wall, s.used.reference_ms, i >= kWarmup});
    budget_cut(s, "call " + std::to_string(i + 1));
    return Pair::Cut;
  }
  if (!reply.error.empty()) {
    s.r.status = Status::Crash;
    s.r.message = "the case passed, then failed during the timed repetitions: " + reply.error;
    if (reply.context_broken) drop_worker();
    end_checker_series();
    return Pair::Failed;
  }
  CheckerReply verified;
  try {
    verified = checker_->request(CheckerRequest::verify(j), {});
  } catch (const std::exception& ex) {
    verified = CheckerReply::failed(ex.what());
  }
  if (!verified.error.empty()) {
    errors_.push_back("cannot time " + s.e.c.id + ": the checker: " + verified.error);
    end_checker_series();
    return Pair::Failed;
  }
  if (verified.outside) {
    not_computed(s, i, *verified.outside);
    abandon_series(s);
    return Pair::Failed;
  }
  if (i < kWarmup) {
    s.calls.push_back({reply.event_ms, reply.host_ms, wall, s.used.reference_ms, false});
    return Pair::Done;
  }
  // the paired reference call (the checker made its own warm-up calls at time_setup)
  CheckerReply paired;
  try {
    paired = checker_->request(CheckerRequest::of(CheckerOp::ReferenceCall), {});
  } catch (const std::exception& ex) {
    paired = CheckerReply::failed(ex.what());
  }
  if (!paired.error.empty()) {
    errors_.push_back("cannot time " + s.e.c.id + ": the checker's reference call: " + paired.error);
    abandon_series(s);
    return Pair::Failed;
  }
  s.calls.push_back({reply.event_ms, reply.host_ms, wall, paired.ms, true});
  s.ratios.push_back(reply.event_ms > 0 ? paired.ms / reply.event_ms : 0.0);  // the stopping rule's
  return Pair::Done;
}

void Session::not_computed(Series& s, int i, std::uint64_t outside) {
  using timing::kWarmup;
  s.r.status = Status::Fail;
  s.r.message = "the case passed, but a timed call did not compute its result: call " + std::to_string(i + 1) + " (" +
                std::to_string(std::min(i, kWarmup)) + " warm-up and " + std::to_string(std::max(0, i - kWarmup)) +
                " timed calls before it) left element " + std::to_string(outside) +
                " outside the checked result. Results must be computed on every call: the timed calls get " +
                std::string(s.fresh_input ? "new input values, " : "") +
                "fresh, poisoned output buffers at alternating addresses, and a slot that returns a remembered "
                "result is not timed";
}

void Session::record_timing(Series& s) {
  using namespace timing;
  // the counted calls; a series the fair share stopped in its warm-up: those calls, against the
  // reference timed alone
  std::vector<TimedCall> calls;
  for (const TimedCall& c : s.calls)
    if (c.counted) calls.push_back(c);
  const bool warm_up_only = calls.empty();
  if (warm_up_only) calls = s.calls;
  if (calls.empty()) return;
  // the worker's own times are evidence: when their median is below the median of the judge's
  // bounds, each call counts at least its bound
  std::vector<double> event_ms, host_ms, bound_ms;
  for (const TimedCall& c : calls)
    event_ms.push_back(c.event_ms), host_ms.push_back(c.host_ms), bound_ms.push_back(s.bound_ms(c.wall_ms));
  const double event_median = quantile(event_ms, 0.5), host_median = quantile(host_ms, 0.5);
  const Clocked clocked = host_median > 1.5 * event_median && host_median - event_median > 0.050 ? Clocked::Host
                                                                                                  : Clocked::Events;
  const std::vector<double>& reported = clocked == Clocked::Host ? host_ms : event_ms;
  const bool bounded = quantile(reported, 0.5) < quantile(bound_ms, 0.5);
  std::vector<double> gaps;  // what the worker path added to each call, if its report is true
  for (std::size_t k = 0; k < calls.size(); ++k) gaps.push_back(calls[k].wall_ms - reported[k]);
  std::vector<double> chosen;
  int raised = 0;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const bool raise = bounded && bound_ms[k] > reported[k];
    chosen.push_back(raise ? bound_ms[k] : reported[k]);
    raised += raise ? 1 : 0;
  }
  const Stats mine = summarize(chosen);
  // the ratio: the median of the paired ratios, with its 95% interval; a paired reference time
  // counts at most kMaxReferenceSlowdown x the reference timed alone (timing_method.h)
  const Baselines& used = s.used;
  const double cap = used.reference_ms > 0 ? kMaxReferenceSlowdown * used.reference_ms : 0.0;
  int capped = 0;
  std::vector<double> reference_ms, ratios;
  for (std::size_t k = 0; k < calls.size(); ++k) {
    double ms = calls[k].reference_ms;
    if (cap > 0 && ms > cap) ms = cap, ++capped;
    reference_ms.push_back(ms);
    ratios.push_back(chosen[k] > 0 ? ms / chosen[k] : 0.0);
  }
  const auto [ratio_lo, ratio_hi] = median_interval(ratios);

  // bytes read + written over milliseconds: GB/s = bytes / (ms * 1e6)
  const auto gbps = [&s](double ms) { return ms > 0 ? 2.0 * static_cast<double>(s.bytes) / (ms * 1e6) : 0.0; };
  Timing t;
  t.median_ms = mine.median_ms;
  t.min_ms = mine.min_ms;
  t.max_ms = mine.max_ms;
  t.reps = mine.reps;
  t.spread = mine.spread;
  t.gbps = gbps(mine.median_ms);
  t.copy_gbps = gbps(used.copy_ms);
  t.fraction_of_copy = t.copy_gbps > 0 ? t.gbps / t.copy_gbps : 0.0;
  t.reference_ms = quantile(reference_ms, 0.5);
  t.cub_ms = used.cub_ms;
  t.ratio_to_reference = quantile(ratios, 0.5);
  t.ratio_interval = std::make_pair(ratio_lo, ratio_hi);
  t.ratio_to_cub = mine.median_ms > 0 ? used.cub_ms / mine.median_ms : 0.0;
  t.clock = bounded ? "judge" : clocked == Clocked::Host ? "host" : "events";
  t.raised_to_bound = raised;
  t.judge_overhead_ms = s.overhead_ms;
  t.stopped = s.stopped;
  t.method = method_text(mine.reps, s.flush_bytes, s.cached.has_value(), clocked, s.fresh_input, warm_up_only) +
             bound_text(s.overhead_ms, s.overhead_from, quantile(gaps, 0.5), bounded, raised, mine.reps);
  t.method += "; a paired reference time counts at most " + formatted("%.2f", kMaxReferenceSlowdown) +
              "x the reference timed alone (" + formatted("%.3f", used.reference_ms) + " ms; " + std::to_string(capped) +
              " of " + std::to_string(reference_ms.size()) + " paired reference times were above it); stopped by " +
              s.stopped_by + " with the ratio's 95% interval at " +
              formatted("%.2f", t.ratio_to_reference > 0 ? 50 * (ratio_hi - ratio_lo) / t.ratio_to_reference : 0.0) +
              "% of it each side" + describe(s.variation);
  s.r.timing = t;
}

}  // namespace scangrade::grader
