// The timing pass's guards (timing_method.h): the judge's own clock as a bound on the student's
// time, calibrated with the reference solution run as a student through the same worker path, and
// the GPU's fair share, a timing budget per slot derived from the reference's time that ends a
// series, or cuts a call, once a submission has had as long as one too slow to earn points.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <limits>

#include "protocol.h"
#include "session.h"
#include "text.h"
#include "timing_method.h"
#include "timing_series.h"

namespace scangrade::grader {

namespace {

/// What a slot's timing budget of `granted_s` is made of, in words.
std::string budget_words(double granted_s) {
  using namespace timing;
  return formatted("%.3f", granted_s) + " s: " + formatted("%.0f", kSlotSlackSeconds) + " s, plus " +
         std::to_string(kWarmup + kMaxPairs) + " calls at " + formatted("%.0f", kAllowanceRatio) +
         "x the reference's time alone for each of its timed cases so far";
}

}  // namespace

double Session::pool_left_s(Slot slot) const {
  const auto it = pool_s_.find(slot);
  return it == pool_s_.end() ? std::numeric_limits<double>::infinity() : it->second;
}

std::string Session::open_share(Series& s) {
  using namespace timing;
  const Slot slot = s.e.c.slot;
  const double reference_ms = s.used.reference_ms;
  const auto [pool, first] = pool_s_.try_emplace(slot, kSlotSlackSeconds);
  if (first) granted_s_[slot] = kSlotSlackSeconds;
  const double share = allowance_s(kWarmup + kMaxPairs, reference_ms);
  pool->second += share;
  granted_s_[slot] += share;
  // without a time of the reference there is nothing to measure against: the slack alone bounds it
  s.allowance_s = reference_ms > 0 ? allowance_s(kMaxPairs, reference_ms) : std::numeric_limits<double>::infinity();
  if (pool->second > 0) return "";
  return "timing stopped before case " + s.e.c.id + ": the slot's timing budget (" + budget_words(granted_s_[slot]) +
         ") was spent";
}

std::string Session::share_spent(const Series& s) const {
  const Slot slot = s.e.c.slot;
  const double left = pool_left_s(slot);
  // a call is not started when it would likely be cut
  const double last_s = s.calls.empty() ? 0.0 : s.calls.back().wall_ms / 1000;
  if (left > 0 && left >= last_s) return "";
  const auto granted = granted_s_.find(slot);
  return "timing stopped after " + std::to_string(s.calls.size()) + " calls: the slot's timing budget (" +
         budget_words(granted == granted_s_.end() ? 0.0 : granted->second) + ") " +
         (left <= 0 ? std::string("is spent") : "has " + formatted("%.3f", left) + " s left, less than its last call took");
}

Exchange Session::timed_exchange(Series& s, const Command& c, double deadline_s, double& wall_ms, bool& cut) {
  const Slot slot = s.e.c.slot;
  bool capped = false;
  double deadline = cut_at_budget(deadline_s, capped, slot);
  const double share = pool_left_s(slot) + timing::kCutGraceSeconds;
  const bool by_share = share < deadline;
  if (by_share) deadline = std::max(share, 0.0);
  const auto started = Clock::now();
  Exchange x = exchange(*worker_, c, deadline, capped && !by_share, log_);
  wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  if (const auto pool = pool_s_.find(slot); pool != pool_s_.end())
    pool->second -= timing::judge_bound_ms(wall_ms, s.overhead_ms) / 1000;
  cut = by_share && x.kind == Exchange::Timeout;
  return x;
}

void Session::budget_cut(Series& s, const std::string& during) {
  drop_worker();  // the exchange killed it at the deadline
  const Slot slot = s.e.c.slot;
  const auto granted = granted_s_.find(slot);
  s.stopped = "timing stopped: " + during + " of case " + s.e.c.id + " ran past the slot's timing budget (" +
              budget_words(granted == granted_s_.end() ? 0.0 : granted->second) +
              ") and was cut (its process killed); the slot's later timed cases are not timed";
  s.stopped_by = "the GPU's fair share";
  timing_stopped_[slot] = s.stopped;
}

void Session::start_calibrator() {
  // once per session, with a CUDA context of its own: started beside the first worker (with the GPU
  // lock shared), it says hello by the time the timed cases come
  if (o_.backend != "gpu" || calibrator_ || !calibrator_note_.empty()) return;
  std::string path = o_.reference_worker;
  if (path == "none") {
    calibrator_note_ = "--reference-worker none";
    return;
  }
  if (path.empty()) {  // built next to the judge
    std::error_code ec;
    path = (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "scangrade_worker_reference").string();
  }
  if (::access(path.c_str(), X_OK) != 0) {
    calibrator_note_ = "no reference worker at " + path;
    return;
  }
  try {
    if (calibrator_log_.fd() < 0) {
      const int dir = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dir < 0) throw std::runtime_error("cannot open the channel folder");
      try {
        calibrator_log_ = LogFile(dir, "calibration.log");
      } catch (...) {
        ::close(dir);
        throw;
      }
      ::close(dir);
    }
    // the grader's own binary, no student code in it: it runs outside the sandbox
    calibrator_ = std::make_unique<WorkerProcess>(std::vector<std::string>{path, "--channel", channel_->io()},
                                                  calibrator_log_.fd());
    calibrator_->set_spin(true);  // as the submission's worker while timing
    calibrator_said_hello_ = false;
  } catch (const std::exception& ex) {
    calibrator_note_ = std::string("the reference worker did not start: ") + ex.what();
  }
}

bool Session::calibrator_ready() {
  if (!calibrator_) return false;
  if (calibrator_said_hello_) return true;
  std::optional<Hello> hello;
  Status status;
  const std::string problem = read_hello(*calibrator_, hello_deadline_s(false), calibrator_log_, 0, hello, status);
  if (!problem.empty()) {
    drop_calibrator(problem);
    return false;
  }
  calibrator_said_hello_ = true;
  return true;
}

void Session::drop_calibrator(const std::string& why) {
  calibrator_.reset();
  calibrator_note_ = "the reference worker could not calibrate it: " + why;
  std::cerr << "scangrade_judge: " << calibrator_note_
            << " (the submission's own empty calls calibrate the judge's clock instead)\n";
}

Session::Calibrated Session::calibrate_with_reference(Series& s) {
  using namespace timing;
  const std::vector<int>& fds = s.calibration_buffers.fds;
  if (!calibrator_ready() || fds.size() != 4 || std::count(fds.begin(), fds.end(), -1) > 0)
    return Calibrated::Unavailable;
  // the reference maps the series' buffers, as the submission's worker did
  Command begin = command(Mode::TimeBegin, s.e);
  begin.shared = true;
  begin.sizes = s.calibration_buffers.sizes;
  calibrator_->send_fds(fds);
  s.calibration_buffers.close();
  const Exchange x = exchange_once(*calibrator_, begin, 60 * o_.timeout_scale, false, calibrator_log_);
  if (x.kind != Exchange::Reply) {
    drop_calibrator("its time_begin: " + x.message);
    return Calibrated::Unavailable;
  }
  const Calibrated done = calibration_calls(s, kCalibrationWarmup, kCalibrationCalls);
  if (done == Calibrated::Done) s.overhead_ms = calibrated_overhead_ms(s.calibration_wall_ms, s.calibration_event_ms);
  return done;
}

Session::Calibrated Session::calibration_calls(Series& s, int warm_up, int calls) {
  // prepared as the submission's calls are; each call's judge's clock less its event time
  for (int i = 0; i < warm_up + calls; ++i) {
    if (!series_prime(s, i % 2)) return Calibrated::CheckerFailed;
    Command call = command(Mode::TimeCall, s.e);
    call.call = i % 2;
    const auto started = Clock::now();
    const Exchange x = exchange_once(*calibrator_, call, s.deadline_s, false, calibrator_log_);
    const double wall = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    std::string problem = x.kind == Exchange::Reply ? "" : x.message;
    TimeCallReply reply;
    if (problem.empty()) {
      try {
        reply = x.reply.get<TimeCallReply>();
        problem = reply.error;
      } catch (const MessageError& ex) {
        problem = ex.what();
      }
    }
    if (!problem.empty()) {
      drop_calibrator("its call: " + problem);
      return Calibrated::Unavailable;
    }
    if (!checker_after_call(s, i % 2)) return Calibrated::CheckerFailed;
    if (i < warm_up) continue;
    s.calibration_wall_ms.push_back(wall);
    s.calibration_event_ms.push_back(reply.event_ms);
  }
  return Calibrated::Done;
}

bool Session::checker_after_call(Series& s, int j) {
  // what follows every call of the submission's: the checker checks the output and calls the
  // reference (its time is not used here), so that each calibration call comes after the same work
  CheckerReply verified, paired;
  try {
    verified = checker_->request(CheckerRequest::verify(j), {});
    if (verified.error.empty()) paired = checker_->request(CheckerRequest::of(CheckerOp::ReferenceCall), {});
  } catch (const std::exception& ex) {
    verified = CheckerReply::failed(ex.what());
  }
  const std::string error = verified.error.empty() ? paired.error : verified.error;
  if (error.empty()) return true;
  errors_.push_back("cannot time " + s.e.c.id + ": the checker: " + error);
  end_checker_series();
  return false;
}

void Session::finish_calibration(Series& s) {
  using namespace timing;
  if (s.calibration_wall_ms.empty()) return;  // the submission's empty calls calibrated this series
  // the reference's calls again after the submission's: the overhead brackets the series
  if (calibrator_ && calibration_calls(s, 0, kCalibrationCalls) == Calibrated::Done) {
    const Exchange x =
        exchange_once(*calibrator_, command(Mode::TimeEnd, s.e), 30 * o_.timeout_scale, false, calibrator_log_);
    if (x.kind != Exchange::Reply) drop_calibrator("its time_end: " + x.message);
  }
  const std::vector<double>& wall = s.calibration_wall_ms;
  const std::vector<double>& event = s.calibration_event_ms;
  s.overhead_ms = calibrated_overhead_ms(wall, event);
  double least = s.overhead_ms;
  for (std::size_t k = 0; k < wall.size(); ++k) least = std::min(least, wall[k] - event[k]);
  double most = least;
  for (std::size_t k = 0; k < wall.size(); ++k) most = std::max(most, wall[k] - event[k]);
  s.overhead_from = "the second largest of " + std::to_string(wall.size()) +
                    " calls of the reference solution run as a student through the same worker path, before and "
                    "after the submission's (each call's judge's clock less its event time: " +
                    formatted("%.3f", least) + " to " + formatted("%.3f", most) + " ms)";
}

bool Session::calibrate_series(Series& s) {
  switch (calibrate_with_reference(s)) {
    case Calibrated::Done: return true;
    case Calibrated::CheckerFailed: return false;
    case Calibrated::Unavailable: break;
  }
  // no trusted calibration: the largest round trip of the submission's own empty calls (after the
  // checker's prime, as the real calls: the context switch back to the worker counts)
  std::vector<double> empty_ms;
  for (int i = 0; i < timing::kCalibrationCalls; ++i) {
    TimeCallReply reply;
    double wall = 0;
    bool cut = false;
    if (!series_prime(s, i % 2)) return false;
    if (auto x = series_call(s, -1, reply, wall, cut)) {
      if (cut) {
        budget_cut(s, "an empty call");
        end_checker_series();
      } else {
        series_failed(s, *x);
      }
      return false;
    }
    empty_ms.push_back(wall);
  }
  s.overhead_ms = *std::max_element(empty_ms.begin(), empty_ms.end());
  s.overhead_from = "the largest round trip of " + std::to_string(timing::kCalibrationCalls) +
                    " empty calls of the submission's own process (" + calibrator_note_ +
                    "; a process that slows its empty calls widens this bound)";
  return true;
}

}  // namespace scangrade::grader
