// The timing pass (Session::time_cases): the passed perf cases timed after every functional run,
// with the GPU to this judge alone. Every timed call gets fresh input from the checker and is paired
// with one call of the reference in the checker (timing_method.h); CUB and copy baselines are
// shared through --baseline-cache (the reference never is: its times come from the pairs).
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

std::string format(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

/// Which series of the student's times the timing object reports.
enum class Clocked { Events, Host, Judge };

/// The timing object's `method`: the method of timing_method.h, with this run's numbers.
std::string method_text(int reps, std::size_t flush_bytes, bool cached, Clocked clocked, double overhead_ms,
                        bool fresh_input) {
  using namespace timing;
  std::string method =
      "median of " + std::to_string(reps) + " repetitions of the slot call, after " + std::to_string(kWarmup) +
      " warm-up calls; before every call the trusted checker process " +
      (fresh_input ? std::string("wrote new input values of the case's kind, drawn on the device from a seed only "
                                 "it knows (a new one from the OS for every call), made that input's acceptance "
                                 "band,")
                   : std::string("restored the case's input from a pristine device copy (its values kind has no "
                                 "values to draw),")) +
      " poisoned the output (calls alternate between two input/output address pairs that the checker owns) "
      "and flushed the L2 cache with a cudaMemsetAsync over 2x L2 (" +
      format("%.0f", static_cast<double>(flush_bytes) / (1 << 20)) +
      " MiB), and after every call it checked the whole output on the device against " +
      std::string(fresh_input ? "that call's" : "the case's") +
      " acceptance band before the call's time counted; every timed call was followed by one call of the slot's "
      "reference in the checker process, prepared the same way (its input restored, its output poisoned, L2 "
      "flushed; both processes' default memory pools keep freed memory, release threshold: all), and the ratio "
      "to the reference is the median of these pairs' ratios; stopped at >= " +
      std::to_string(kMinReps) + " pairs once the 95% interval of that median (order statistics) was within +-" +
      format("%.0f", 100 * kRatioHalfWidth) + "% of it, or at " + std::to_string(kMaxPairs) + " pairs, or after " +
      format("%.0f", kPairedBudgetSeconds) + " s; ";
  switch (clocked) {
    case Clocked::Events:
      method += "each call timed with CUDA events around it on its stream (the judge's own clock around every call "
                "bounded these times)";
      break;
    case Clocked::Host:
      method += "the host clock bounded by cudaDeviceSynchronize exceeded the event time by more than 50% and 50 us "
                "(work on other streams), so the student's time is the host time";
      break;
    case Clocked::Judge:
      method += "the times the submission's process reported were below what the judge's own clock saw around its "
                "calls, so the student's time is the judge's clock minus the round trip of an empty call (" +
                format("%.3f", overhead_ms) + " ms)";
      break;
  }
  method += "; the reference alone, CUB and a device-to-device copy were timed the same way in the checker process ";
  method += cached ? "on this GPU earlier in the same batch, with the GPU to themselves (the batch's baseline cache)"
                   : "right before the student's calls";
  return method;
}

}  // namespace

void Session::time_cases(const std::vector<Entry>& entries, std::vector<CaseResult>& results) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].c.perf && results[i].status == Status::Pass) todo.push_back(i);
  if (todo.empty()) return;
  // the GPU to this judge alone, for all its timed cases in one go
  std::optional<GpuLock> gpu;
  if (const std::string why = take_gpu(GpuLock::Exclusive, gpu); !why.empty()) {
    for (std::size_t i : todo) harness_fault(results[i], why);
    return;
  }
  json cache = o_.baseline_cache.empty() ? json(nullptr) : load_baseline_cache(o_.baseline_cache);
  bool cache_changed = false;
  const auto start = Clock::now();
  for (std::size_t i : todo) {
    const auto case_start = Clock::now();
    time_case(entries[i], results[i], cache, cache_changed);
    results[i].duration_s += seconds_since(case_start);
  }
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

/// One timed case's series: what time_series' steps share.
struct Session::Series {
  Series(const Entry& entry, CaseResult& result, std::string baseline_key)
      : e(entry), r(result), key(std::move(baseline_key)) {}
  const Entry& e;
  CaseResult& r;
  std::string key;                   // the baseline cache's key
  std::optional<Baselines> cached;   // the cache's baselines, when it had them
  Baselines used;                    // the baselines this case reports
  std::size_t bytes = 0, flush_bytes = 0;
  bool fresh_input = false;
  double deadline_s = 0, overhead_ms = 0;
  timing::BenchVariation variation;  // benchmark-only (timing_method.h); none when grading
  std::string stopped_by;            // which stopping rule ended the series
  std::vector<double> event_ms, host_ms, judge_ms, reference_ms, event_ratios;
};

void Session::time_series(const Entry& e, const CachedInput& in, CaseResult& r, json& cache, bool& cache_changed) {
  Series s(e, r, baseline_key(checker_->device(), e));
  s.cached = cached_baselines(cache, s.key);
  s.variation = timing::bench_variation();
  if (!s.variation.error.empty()) return errors_.push_back("cannot time " + e.c.id + ": " + s.variation.error);
  if (!open_series(s, in) || !calibrate_series(s) || !run_pairs(s)) return;
  if (const Exchange x = exchange(*worker_, command(Mode::TimeEnd, e), 30 * o_.timeout_scale, false, log_);
      x.kind != Exchange::Reply)
    drop_worker();
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

  // the worker maps the four buffers
  Command begin = command(Mode::TimeBegin, e);
  begin.shared = true;
  begin.sizes = setup.sizes;
  worker_->send_fds(buffers.fds);
  buffers.close();
  s.deadline_s = case_deadline_s(e.c);
  if (const Exchange x = exchange(*worker_, begin, 60 * o_.timeout_scale, false, log_); x.kind != Exchange::Reply) {
    series_failed(s, x);
    return false;
  }
  return true;
}

std::optional<Exchange> Session::series_call(Series& s, int j, TimeCallReply& reply, double& wall_ms) {
  Command c = command(Mode::TimeCall, s.e);
  c.call = j;
  bool capped = false;
  const double deadline = cut_at_budget(s.deadline_s, capped, s.e.c.slot);
  const auto t0 = Clock::now();
  Exchange x = exchange(*worker_, c, deadline, capped, log_);
  wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
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

bool Session::calibrate_series(Series& s) {
  // the round trip of an empty call: what the judge's clock adds to every call
  // (after the checker's prime, as the real calls: the context switch back to the worker counts)
  std::vector<double> empty_ms;
  for (int i = 0; i < 5; ++i) {
    TimeCallReply reply;
    double wall = 0;
    if (!series_prime(s, i % 2)) return false;
    if (auto x = series_call(s, -1, reply, wall)) {
      series_failed(s, *x);
      return false;
    }
    empty_ms.push_back(wall);
  }
  s.overhead_ms = timing::quantile(empty_ms, 0.5);
  return true;
}

void Session::abandon_series(Series& s) {
  end_checker_series();
  Command end = command(Mode::TimeEnd, s.e);
  exchange(*worker_, end, 30 * o_.timeout_scale, false, log_);
}

bool Session::run_pairs(Series& s) {
  using namespace timing;
  const Entry& e = s.e;
  CaseResult& r = s.r;
  const auto series_start = Clock::now();
  for (int i = 0;; ++i) {
    const int j = i % 2;
    if (!series_prime(s, j)) return false;
    TimeCallReply reply;
    double wall = 0;
    if (auto x = series_call(s, j, reply, wall)) {
      series_failed(s, *x);
      return false;
    }
    if (!reply.error.empty()) {
      r.status = Status::Crash;
      r.message = "the case passed, then failed during the timed repetitions: " + reply.error;
      if (reply.context_broken) drop_worker();
      end_checker_series();
      return false;
    }
    CheckerReply verified;
    try {
      verified = checker_->request(CheckerRequest::verify(j), {});
    } catch (const std::exception& ex) {
      verified = CheckerReply::failed(ex.what());
    }
    if (!verified.error.empty()) {
      errors_.push_back("cannot time " + e.c.id + ": the checker: " + verified.error);
      end_checker_series();
      return false;
    }
    if (verified.outside) {
      not_computed(s, i, *verified.outside);
      abandon_series(s);
      return false;
    }
    if (i < kWarmup) continue;
    // the paired reference call (the checker made its own warm-up calls at time_setup)
    CheckerReply paired;
    try {
      paired = checker_->request(CheckerRequest::of(CheckerOp::ReferenceCall), {});
    } catch (const std::exception& ex) {
      paired = CheckerReply::failed(ex.what());
    }
    if (!paired.error.empty()) {
      errors_.push_back("cannot time " + e.c.id + ": the checker's reference call: " + paired.error);
      abandon_series(s);
      return false;
    }
    s.event_ms.push_back(reply.event_ms);
    s.host_ms.push_back(reply.host_ms);
    s.judge_ms.push_back(std::max(0.0, wall - s.overhead_ms));
    s.reference_ms.push_back(paired.ms);
    s.event_ratios.push_back(reply.event_ms > 0 ? s.reference_ms.back() / reply.event_ms : 0.0);
    const double elapsed_s = seconds_since(series_start);
    if (!series_done(s.event_ratios, elapsed_s, s.variation)) continue;
    const int pairs = static_cast<int>(s.event_ratios.size());
    s.stopped_by = s.variation.fixed_reps > 0 ? "its fixed number of pairs"
                   : ratio_known(std::vector<double>(s.event_ratios), 0.0) && pairs < kMaxPairs
                       ? "the interval rule"
                   : pairs >= kMaxPairs ? "the most pairs"
                                       : "the time budget";
    return true;
  }
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
  // the worker's own times are evidence; the judge's clock bounds them
  const double event_median = quantile(s.event_ms, 0.5), host_median = quantile(s.host_ms, 0.5);
  const double judge_median = quantile(s.judge_ms, 0.5);
  Clocked clocked = host_median > 1.5 * event_median && host_median - event_median > 0.050 ? Clocked::Host
                                                                                            : Clocked::Events;
  const double reported = clocked == Clocked::Host ? host_median : event_median;
  // below 70% of the judge's clock, less 100 us of slack: not what happened (an honest call's
  // reported time is the judge's minus launch and synchronization costs)
  if (reported < 0.7 * judge_median - 0.100) clocked = Clocked::Judge;
  const std::vector<double>& chosen =
      clocked == Clocked::Events ? s.event_ms : clocked == Clocked::Host ? s.host_ms : s.judge_ms;
  const Stats mine = summarize(chosen);
  // the ratio: the median of the paired ratios, with its 95% interval; a paired reference time
  // counts at most kMaxReferenceSlowdown x the reference timed alone (timing_method.h)
  const Baselines& used = s.used;
  const double cap = used.reference_ms > 0 ? kMaxReferenceSlowdown * used.reference_ms : 0.0;
  int capped = 0;
  for (double& ms : s.reference_ms)
    if (cap > 0 && ms > cap) ms = cap, ++capped;
  std::vector<double> ratios;
  for (std::size_t k = 0; k < chosen.size(); ++k) ratios.push_back(chosen[k] > 0 ? s.reference_ms[k] / chosen[k] : 0.0);
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
  t.reference_ms = quantile(s.reference_ms, 0.5);
  t.cub_ms = used.cub_ms;
  t.ratio_to_reference = quantile(ratios, 0.5);
  t.ratio_interval = std::make_pair(ratio_lo, ratio_hi);
  t.ratio_to_cub = mine.median_ms > 0 ? used.cub_ms / mine.median_ms : 0.0;
  t.method = method_text(mine.reps, s.flush_bytes, s.cached.has_value(), clocked, s.overhead_ms, s.fresh_input);
  t.method += "; a paired reference time counts at most " + format("%.2f", kMaxReferenceSlowdown) +
              "x the reference timed alone (" + format("%.3f", used.reference_ms) + " ms; " + std::to_string(capped) +
              " of " + std::to_string(s.reference_ms.size()) + " paired reference times were above it); stopped by " +
              s.stopped_by + " with the ratio's 95% interval at " +
              format("%.2f", t.ratio_to_reference > 0 ? 50 * (ratio_hi - ratio_lo) / t.ratio_to_reference : 0.0) +
              "% of it each side" + describe(s.variation);
  s.r.timing = t;
}

}  // namespace scangrade::grader
