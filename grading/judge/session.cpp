// The judge's worker session (session.h): starting workers, one command's exchange, the GPU lock.
#include "session.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <csignal>
#include <iostream>

#include "protocol.h"
#include "text.h"

namespace scangrade::grader {

using nlohmann::json;

namespace {


}  // namespace

Session::Session(const Options& o, std::unique_ptr<Channel> channel, const sandbox::Sandbox* sandbox)
    : o_(o), channel_(std::move(channel)), dir_(channel_->dir()), log_(channel_->student_log()), sandbox_(sandbox) {
  // A worker writes nothing but through its descriptors (the log, the reply socket) and the shared
  // case buffers; compute-sanitizer also writes its report, in io/.
  mounts_.read_only.push_back(channel_->worker());
  mounts_.gpu = o_.backend == "gpu";
  tool_mounts_ = mounts_;
  if (!o_.compute_sanitizer.empty() && o_.compute_sanitizer.rfind("/usr/", 0) != 0)
    if (const auto path = find_executable(o_.compute_sanitizer)) tool_mounts_.read_only.push_back(*path);
  tool_mounts_.writable.push_back(channel_->io());
}

Clock::duration Session::seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

double Session::case_deadline_s(const Case& c) const {
  const double base = c.timeout_s > 0 ? c.timeout_s : default_deadline_s(c.n, o_.backend != "gpu");
  return base * o_.timeout_scale;
}

void Session::set_budget(Clock::time_point start, double budget_s, const std::vector<Entry>& entries) {
  budget_end_ = start + seconds(kBudgetBackstop * budget_s);
  std::map<Slot, double> weight;
  double total = 0;
  for (const Entry& e : entries) {
    weight[e.c.slot] += case_deadline_s(e.c);
    total += case_deadline_s(e.c);
  }
  for (const auto& [slot, w] : weight) slot_budget_s_[slot] = total > 0 ? budget_s * w / total : budget_s;
}

double Session::slot_left_s(Slot slot) const {
  const auto share = slot_budget_s_.find(slot);
  if (share == slot_budget_s_.end()) return std::numeric_limits<double>::infinity();
  const auto spent = slot_spent_s_.find(slot);
  return share->second - (spent == slot_spent_s_.end() ? 0.0 : spent->second);
}

std::string Session::budget_message(Slot slot) const {
  if (budget_exhausted()) return "submission time budget exhausted";
  const auto share = slot_budget_s_.find(slot);
  return "slot time budget exhausted (this slot's share of --budget-s, " +
         format_seconds(share == slot_budget_s_.end() ? 0.0 : share->second) +
         " s, is spent: a hang in one slot costs no other slot anything)";
}

double Session::cut_at_budget(double deadline_s, bool& capped, std::optional<Slot> slot) const {
  double left = std::chrono::duration<double>(budget_end_ - Clock::now()).count();
  if (slot) left = std::min(left, slot_left_s(*slot));
  capped = left < deadline_s;
  return capped ? std::max(left, 0.0) : deadline_s;
}

void Session::shutdown() {
  calibrator_.reset();
  spares_.clear();
  started_tools_.clear();
  memory_.reset();
  checker_.reset();
  if (!worker_) return;
  worker_->close_stdin();
  worker_->wait_exit(after(2.0));
  worker_.reset();
}

Command Session::command(Mode mode, const Entry& e) {
  Command c;
  c.k = next_k_++;
  c.nonce = random_hex(16);
  c.mode = mode;
  c.c = e.c;
  // emulated, the cases memcheck checks on a GPU watch for writes next to the slot's own allocations
  c.watch_slack = mode == Mode::Check && o_.backend != "gpu" &&
                  std::find(e.c.sanitize.begin(), e.c.sanitize.end(), "memcheck") != e.c.sanitize.end();
  return c;
}

std::string Session::take_gpu(GpuLock::Mode mode, std::optional<GpuLock>& lock) {
  if (o_.gpu_lock.empty()) return "";
  try {
    lock.emplace(o_.gpu_lock, mode);
  } catch (const std::exception& ex) {
    return ex.what();
  }
  lock_wait_s_ += lock->waited_s();
  if (budget_end_ != Clock::time_point::max()) budget_end_ += seconds(lock->waited_s());
  return "";
}

void Session::harness_fault(CaseResult& r, const std::string& what) {
  r.status = Status::InternalError;
  r.message = what + " (harness fault: please report)";
  errors_.push_back(r.message);
}

void Session::garbled(CaseResult& r, const std::string& why) {
  r.status = Status::Crash;
  r.message = std::string(kInterfered) + "its process's reply was incomplete or garbled (" + why + ")";
  drop_worker();
}

void Session::from_exchange(const Exchange& x, CaseResult& r) {
  // the worker's process is the submission's: whatever it says or fails to say is charged to the
  // submission (a harness problem in it shows on the reference solution too, in the harness's tests)
  r.status = x.kind == Exchange::Timeout ? Status::Timeout : Status::Crash;
  r.message = x.message;
  r.worker_harness_error = x.kind == Exchange::Harness;
}

std::string death_hint(const ExitInfo& end, const std::string& output, std::size_t n) {
  // a sandboxed process's death by signal S can reach the judge as exit code 128 + S
  const int sig = end.signaled ? end.signal : end.code > 128 && end.code < 160 ? end.code - 128 : 0;
  if (sig == SIGSEGV || sig == SIGBUS) {
    std::string hint = "\n  hint: a segmentation fault in host code (the GPU reports its faults as CUDA errors, "
                       "not as signals): a device pointer or a null pointer dereferenced on the host, or deep "
                       "recursion: a recursive function whose base case is never reached overflows the stack";
    if (n <= 1)
      hint += ". This case has n = " + std::to_string(n) + ": does your recursion (or loop over levels) stop when "
              "there is one block, or zero?";
    return hint;
  }
  if (sig == SIGABRT) {
    std::string failed;  // glibc: "prog: file.cu:12: void f(...): Assertion `n <= 4194304' failed."
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
      if (line.find("Assertion") != std::string::npos || line.find("terminate called") != std::string::npos)
        failed = trim(line);
    if (const std::size_t at = failed.find("Assertion"); at != std::string::npos)
      return "\n  hint: an assert() in your code failed (" + failed.substr(at) + "). The grader compiles with "
             "assertions on; a limit your assert states is a limit of your code: the slot must handle every n";
    if (!failed.empty())
      return "\n  hint: the program aborted (" + failed + "): an exception nothing caught, or std::terminate";
    return "\n  hint: the program aborted (SIGABRT): a failed assert(), an uncaught exception, or a corrupted heap "
           "(free() of a pointer malloc did not return, a write past a host buffer)";
  }
  return "";
}

std::string read_hello(WorkerProcess& w, double deadline_s, const LogFile& log, std::uintmax_t log_from,
                       std::optional<Hello>& hello, Status& status) {
  std::string line;
  const auto got = w.read_line(line, after(deadline_s));
  status = Status::Crash;
  hello.reset();
  if (got == WorkerProcess::Read::Timeout) {
    w.kill_group();
    return "the worker did not start: no hello within " + format_seconds(deadline_s) +
           " s (something in the submission may hang while the program starts)";
  }
  if (got == WorkerProcess::Read::Eof) {
    const auto info = w.wait_exit(after(2.0));
    const ExitInfo end = info ? *info : w.kill_group();
    std::string msg = "the worker died while starting: " + end.describe();
    const std::string tail = tail_lines(log.read_from(log_from), 10);
    if (!tail.empty()) msg += "\n  last lines of the program's output:\n" + tail;
    return msg;
  }
  if (got == WorkerProcess::Read::Overlong) {
    w.kill_group();
    return "the worker's hello was incomplete or garbled (an over-long line)";
  }
  try {
    hello = json::parse(line).get<Hello>();
  } catch (const std::exception&) {  // not JSON, or not a hello
    w.kill_group();
    return "the worker's hello was incomplete or garbled";
  }
  if (!hello->error.empty()) {
    status = Status::InternalError;
    return "the worker cannot run kernels on this machine: " + hello->error;
  }
  return "";
}

std::unique_ptr<WorkerProcess> Session::start_worker(const std::vector<std::string>& tool) const {
  std::vector<std::string> argv = tool;
  for (const std::string& a : {channel_->worker(), std::string("--channel"), channel_->io()}) argv.push_back(a);
  return std::make_unique<WorkerProcess>(argv, tool.empty() ? log_.fd() : channel_->sanitizer_log().fd(), sandbox_,
                                         tool.empty() ? mounts_ : tool_mounts_);
}

bool Session::ensure_worker(CaseResult& r) {
  if (worker_) return true;
  if (start_broken_) {
    r.status = start_broken_->status;
    r.message = start_broken_->message;
    return false;
  }
  std::uintmax_t log_from = 0;
  Clock::time_point started = Clock::now();
  if (!take_worker(r, log_from, started)) return false;
  std::optional<Hello> h;
  Status status;
  std::string problem = read_hello(*worker_, hello_deadline_s(false), log_, log_from, h, status);
  if (problem.empty() && o_.backend == "gpu" && !h->monitor.empty()) {
    // the run-time policy cannot watch this process: it fails closed (a worker that says so falsely
    // loses only its own cases; a machine without CUPTI shows it on every submission, the reference's too)
    worker_->kill_group();
    status = Status::Crash;
    problem = std::string(kInterfered) + "the grader's policy monitor could not watch its process (" + h->monitor +
              "), and on the GPU no case is graded unwatched (if every submission shows this, the grading "
              "machine's CUPTI does not work: please report)";
  }
  if (!problem.empty()) return worker_failed(r, status, problem);
  worker_ready(*h, started);
  return true;
}

bool Session::take_worker(CaseResult& r, std::uintmax_t& log_from, Clock::time_point& started) {
  if (!spares_.empty()) {  // started earlier: its CUDA context may be up already
    worker_ = std::move(spares_.front().process);
    log_from = spares_.front().log_from;
    started = spares_.front().started;
    spares_.pop_front();
    return true;
  }
  log_from = log_.size();
  try {
    worker_ = start_worker();
  } catch (const std::exception& ex) {
    harness_fault(r, std::string("cannot start the worker: ") + ex.what());
    start_broken_ = r;
    return false;
  }
  // the checker's CUDA context comes up while the worker's does (not one after the other)
  if (o_.backend == "gpu" && !checker_) {
    CaseResult ignored;  // a checker that cannot start is reported by the case that needs it
    const auto checker_started = Clock::now();
    if (case_memory(ignored)) checker_start_s_ = seconds_since(checker_started);
    else errors_.pop_back();
    start_calibrator();  // and the reference's as a student, for the timed cases (timing_share.cpp)
  }
  return true;
}

void Session::worker_ready(const Hello& h, Clock::time_point started) {
  hello_ = h;
  failed_starts_ = 0;
  cases_in_worker_ = 0;
  worker_slots_.clear();
  const double took = seconds_since(started);
  worker_start_s_ += took;
  ++workers_started_;
  if (o_.verbose || !o_.gpu_lock.empty()) {
    // the steady clock is CLOCK_MONOTONIC here and in the worker: one clock for both
    const auto at = [&](std::int64_t ns) {
      return ns > 0 ? format_seconds(std::chrono::duration<double>(Clock::time_point(std::chrono::nanoseconds(ns)) -
                                                                   started).count())
                    : std::string("?");
    };
    std::cerr << "scangrade_judge: worker " << workers_started_ << " ready " << format_seconds(took)
              << " s after its start (its own code ran " << at(h.loaded_ns) << " s after it, its CUDA context "
              << format_seconds(h.device_ms / 1000) << " s, the policy monitor "
              << format_seconds(h.monitor_ms / 1000) << " s, the hello sent at " << at(h.sent_ns) << " s)\n";
  }
  warm_spares();
}

bool Session::worker_failed(CaseResult& r, Status status, std::string problem) {
  worker_.reset();
  spares_.clear();  // started the same way: they would fail the same way
  if (status == Status::InternalError && (o_.backend != "gpu" || checker_)) {
    // "no usable device" from the worker, where the emulated runtime always runs and the trusted
    // checker has a CUDA context on the same GPU: said by (or because of) the submission's code
    status = Status::Crash;
    problem = std::string(kInterfered) + "its process said that " + problem.substr(problem.find(": ") + 2) +
              ", but the grader's own process runs kernels here";
  }
  r.status = status;
  r.message = problem;
  if (status == Status::InternalError) {
    r.message += " (harness fault: please report)";
    errors_.push_back(r.message);
    start_broken_ = r;  // the machine has no usable device: no later case can run either
  } else if (++failed_starts_ >= 2) {
    start_broken_ = r;
    start_broken_->message += " (the worker failed to start twice in a row: not started again)";
  }
  return false;
}

void Session::fresh_worker() {
  if (!worker_) return;
  worker_->close_stdin();
  worker_->wait_exit(after(2.0));
  worker_.reset();
}

void Session::drop_worker() {
  worker_.reset();
  ++lost_workers_;
  warm_spares();
}

void Session::warm_spares() {
  if (start_broken_) return;
  const std::size_t want = std::min(kMaxSpares, static_cast<std::size_t>(lost_workers_));
  while (spares_.size() < want) {
    Spare spare;
    spare.log_from = log_.size();
    spare.started = Clock::now();
    try {
      spare.process = start_worker();
    } catch (const std::exception&) {
      return;  // ensure_worker reports it when it has to start one itself
    }
    spares_.push_back(std::move(spare));
  }
}

Exchange Session::exchange(WorkerProcess& w, const Command& cmd, double deadline_s, bool budget_capped,
                           const LogFile& log, const std::function<void()>& on_ran) {
  const auto started = Clock::now();
  Exchange x = exchange_once(w, cmd, deadline_s, budget_capped, log, on_ran);
  slot_spent_s_[cmd.c.slot] += seconds_since(started);
  if (x.kind == Exchange::Timeout && budget_capped) x.message = budget_message(cmd.c.slot);
  return x;
}

Exchange Session::exchange_once(WorkerProcess& w, const Command& cmd, double deadline_s, bool budget_capped,
                                const LogFile& log, const std::function<void()>& on_ran) {
  Exchange x;
  const std::uintmax_t log_from = log.size();
  const auto died = [&](const ExitInfo& end) {
    x.kind = Exchange::Died;
    x.message = "worker died: " + end.describe();
    const std::string output = log.read_from(log_from);
    const std::string tail = tail_lines(output, 10);
    if (!tail.empty()) x.message += "\n  last lines of the program's output:\n" + tail;
    x.message += death_hint(end, output, cmd.c.n);
    return x;
  };
  if (!w.send(encode(cmd))) {
    const auto info = w.wait_exit(after(2.0));
    return died(info ? *info : w.kill_group());
  }
  const auto deadline = after(deadline_s);
  bool ran_seen = false;
  for (;;) {
    std::string line;
    const auto got = w.read_line(line, deadline);
    if (got == WorkerProcess::Read::Timeout) {
      w.kill_group();
      x.kind = Exchange::Timeout;
      x.message = budget_capped ? "submission time budget exhausted"
                                : "no reply within " + format_seconds(deadline_s) + " s: " + timeout_causes(cmd.c.slot);
      return x;
    }
    if (got == WorkerProcess::Read::Eof) {
      if (const auto info = w.wait_exit(after(2.0))) return died(*info);
      w.kill_group();
      x.kind = Exchange::Garbled;
      x.message = std::string(kInterfered) + "its process closed the grader's reply channel without exiting";
      return x;
    }
    x.kind = Exchange::Garbled;
    x.message = std::string(kInterfered) + "its process's reply was incomplete or garbled";
    if (got == WorkerProcess::Read::Overlong) return x;
    try {
      x.reply = json::parse(line);
    } catch (const json::exception&) {
      return x;
    }
    if (!answers(x.reply, cmd)) {
      x.message += " (its k or nonce does not match the command)";
      return x;
    }
    if (!x.reply.contains("stage")) break;
    // the GPU part of a check is over (at most once, then the reply)
    bool ran = false;
    try {
      ran = x.reply.get<Stage>().stage == "ran";
    } catch (const MessageError&) {
    }
    if (ran_seen || !ran) {
      x.message += " (an unexpected stage line)";
      return x;
    }
    ran_seen = true;
    if (on_ran) on_ran();
  }
  std::string harness_error;
  try {
    harness_error = harness_error_of(x.reply);
  } catch (const MessageError&) {
    return x;
  }
  if (!harness_error.empty()) {
    x.kind = Exchange::Harness;
    x.message = std::string(kInterfered) + "the grader's code in its process could not run the case: " +
                harness_error + " (that process is the submission's: its memory, descriptors, CUDA context and any "
                "function it replaces are in play; the same harness passes its own tests with the reference solution)";
    return x;
  }
  x.kind = Exchange::Reply;
  x.message.clear();
  return x;
}

}  // namespace scangrade::grader
