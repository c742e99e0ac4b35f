// The judge's worker session: the verdicts of cases, and the Session that starts workers (spares
// ahead once workers are being lost), sends them commands under deadlines, holds the GPU lock around
// GPU work and runs the functional, timing and compute-sanitizer passes. A case's data (Entry, its
// input, the oracle's output, the case cache) is case_data.h's.
// Session is declared here only; its members live in session.cpp (workers, exchanges),
// functional.cpp, timing.cpp and sanitizer.cpp (one file per pass).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_data.h"
#include "case_memory.h"
#include "channel.h"
#include "command_line.h"
#include "gpu_lock.h"
#include "messages.h"
#include "process.h"
#include "sanitizer_xml.h"
#include "scangrade/status.h"
#include "scangrade/suite.h"

namespace scangrade::grader {

struct CaseResult {
  Status status = Status::InternalError;
  std::string message;
  double duration_s = 0;
  std::optional<Timing> timing;
  nlohmann::json sanitizer = nullptr;
  /// The worker said the harness's code in it could not run the case (the buffers did not arrive,
  /// could not be mapped): the state of its process, which an earlier slot's code may have broken.
  bool worker_harness_error = false;
};

/// What one compute-sanitizer process running one tool over some cases found.
struct ToolRun {
  std::string not_run;  // why the tool did not run to the end over every case ("" when it did)
  std::vector<SanitizerFinding> findings;
  std::size_t records = 0;  // records in the report (findings are the first few of them)
  double cost_s = 0;
};

/// What came back from one command.
struct Exchange {
  enum Kind { Reply, Timeout, Died, Garbled, Harness } kind = Harness;
  nlohmann::json reply;
  std::string message;
};

/// The whole submission stops at this multiple of --budget-s (each slot stops at its own share;
/// worker starts and the compute-sanitizer pass take the rest).
inline constexpr double kBudgetBackstop = 1.5;

class Session {
 public:
  /// `sandbox` (may be null: no sandbox) contains every worker and compute-sanitizer run; the
  /// session keeps `channel` (the logs) until it ends.
  Session(const Options& o, std::unique_ptr<Channel> channel, const sandbox::Sandbox* sandbox = nullptr);
  ~Session() {
    calibrator_.reset();
    worker_.reset();
    memory_.reset();
    checker_.reset();
  }

  /// The first worker's hello (nullopt until a worker started).
  const std::optional<Hello>& hello() const { return hello_; }
  /// What the workers printed (stdout and stderr), and the channel's note on the worker ("" or why a
  /// copy of it runs).
  const LogFile& student_log() const { return channel_->student_log(); }
  const std::string& worker_note() const { return channel_->worker_note(); }
  std::vector<std::string>& errors() { return errors_; }

  /// The budget: each slot's share of `budget_s` in proportion to the deadlines of its cases in
  /// `entries` (those that run); the whole submission stops at kBudgetBackstop x budget_s.
  void set_budget(Clock::time_point start, double budget_s, const std::vector<Entry>& entries);
  bool budget_exhausted() const { return Clock::now() >= budget_end_; }
  /// The slot's share is spent (or the whole budget is).
  bool budget_exhausted(Slot slot) const { return budget_exhausted() || slot_left_s(slot) <= 0; }
  /// What a case past its slot's share is told.
  std::string budget_message(Slot slot) const;
  /// Seconds spent waiting for --gpu-lock, timing with it held exclusively, and preparing timed
  /// cases (the checker's buffers and band, GPU held), so far.
  double lock_wait_s() const { return lock_wait_s_; }
  double timing_s() const { return timing_s_; }
  double prepare_s() const { return prepare_s_; }
  /// Workers that said hello, and the seconds from each one's start to its hello (summed).
  int workers_started() const { return workers_started_; }
  /// Cases the current worker has run (0: none yet, or no worker: the next case starts a fresh one).
  int cases_in_worker() const { return worker_ ? cases_in_worker_ : 0; }
  /// Check cases that ran in the buffers of the case before (CaseMemory::setup, SharedBuffers::kept).
  int kept_buffers() const { return kept_buffers_; }
  /// Ends the current worker (not a loss: no spare is started); the next case starts a fresh one.
  void fresh_worker();
  /// Whether the last case graded ran in a worker that had run another slot's cases before it.
  bool last_case_after_other_slots() const { return last_case_after_other_slots_; }
  double worker_start_s() const { return worker_start_s_; }
  /// Seconds the checker took to start (0: not started).
  double checker_start_s() const { return checker_start_s_; }

  /// The deadline of a case (seconds): the suite's timeout_s, else the default for the backend
  /// (default_deadline_s), times --timeout-scale.
  double case_deadline_s(const Case& c) const;

  /// How long a worker may take to say hello (compute-sanitizer starts slower).
  double hello_deadline_s(bool sanitized) const { return (sanitized ? 120.0 : 60.0) * o_.timeout_scale; }

  /// The functional run of one case, with its input and oracle output (functional.cpp).
  CaseResult grade(const Entry& e, CaseData data);

  /// Times the passed perf cases (results[i].timing), one after another, holding the GPU lock
  /// exclusively for all of them; baselines come from and go to --baseline-cache when given
  /// (timing.cpp).
  void time_cases(const std::vector<Entry>& entries, std::vector<CaseResult>& results);

  /// One compute-sanitizer process running `tool` over `cases` (each a "check" command), one
  /// after another (sanitizer.cpp).
  ToolRun run_tool(const std::string& tool, const std::vector<const Entry*>& cases,
                   const std::string& compute_sanitizer);

  /// Starts one compute-sanitizer process for each of `tools` now, so that their starts (each a
  /// CUDA context under the tool) overlap; run_tool takes the one of its tool (sanitizer.cpp).
  void prestart_tools(const std::vector<std::string>& tools, const std::string& compute_sanitizer);

  /// Ends the worker (it may finish its output), kills the spare workers and any compute-sanitizer
  /// process started ahead that no run took.
  void shutdown();

 private:
  static Clock::duration seconds(double s);
  template <typename T>
  void grade_typed(const Entry& e, CaseData& data, CaseResult& r);
  /// Emulation: r as a GPU would judge it (order_verdict: a second run in the reverse order when the
  /// forward order's data is wrong and the order may be why; a race only where racecheck would run).
  void judge_orders(const Entry& e, CaseData& data, CaseResult& r);
  std::string last_race_;      // emulation: the race the last check reply named, judged by judge_orders
  bool reverse_next_ = false;  // emulation: the next check runs in the reverse order alone
  template <typename T>
  void read_check_reply(const Entry& e, const CheckReply& reply, CaseMemory& memory, CaseData& data,
                        std::optional<GpuLock>& gpu, CaseResult& r);
  /// The trusted side of check cases (started on first use; null, with r a harness fault, when it
  /// cannot start).
  CaseMemory* case_memory(CaseResult& r);
  /// A run-time policy finding of the worker's monitor, as the suite's policy says it costs.
  void policy_finding(const Entry& e, const CheckReply& reply, CaseResult& r);
  /// GPU: the device memory the worker's processes hold, seen from outside (outside.h), after each
  /// checked call; a call after which it grew by kOutsideGrowthNote or more while the worker's own
  /// count found no leak gets a note (not scored: the driver's one-time reservations grow it too).
  void outside_view(const CheckReply& reply, CaseResult& r);
  std::int64_t outside_held_ = -1;  // the last sample, of the worker started as outside_worker_
  int outside_worker_ = -1;
  /// One timed case's series: the checker's setup from `in`, the worker's calls, the verdict.
  void time_series(const Entry& e, const CachedInput& in, CaseResult& r, nlohmann::json& cache, bool& cache_changed);
  /// time_series' steps (timing.cpp): the checker's and the worker's setup, the judge's round trip,
  /// the paired calls, the timing object; each false when the series cannot go on (said in r or errors_).
  struct Series;
  bool open_series(Series& s, const CachedInput& in);
  bool calibrate_series(Series& s);
  bool run_pairs(Series& s);
  /// run_pairs' step: call i (a warm-up below kWarmup) prepared, made, checked and, after the
  /// warm-up, paired with a reference call. Failed: the series is over (said in r or errors_);
  /// Cut: the fair share cut the call (its bound is the series' last call).
  enum class Pair { Done, Failed, Cut };
  Pair timed_pair(Series& s, int i);
  void record_timing(Series& s);
  /// A timed call (call -1: an empty one); `cut`: the slot's timing budget cut it (the worker is gone).
  std::optional<Exchange> series_call(Series& s, int j, TimeCallReply& reply, double& wall_ms, bool& cut);
  bool series_prime(Series& s, int j);
  void series_failed(Series& s, const Exchange& x);
  void not_computed(Series& s, int i, std::uint64_t outside);
  void abandon_series(Series& s);
  void end_checker_series();
  // The GPU's fair share and the judge's clock (timing_share.cpp, timing_method.h).
  /// An exchange with the worker while timing: its deadline cut at what is left of the slot's
  /// timing budget (plus kCutGraceSeconds), its time taken from it; `cut`: the budget cut it.
  Exchange timed_exchange(Series& s, const Command& c, double deadline_s, double& wall_ms, bool& cut);
  /// A cut: the worker (killed by the cut) dropped, the slot's timing stopped, saying `during` what.
  void budget_cut(Series& s, const std::string& during);
  /// The slot's budget at the series' start: its share added; "" or why the series cannot start.
  std::string open_share(Series& s);
  /// Why the series stops before its next call ("" when it goes on).
  std::string share_spent(const Series& s) const;
  double pool_left_s(Slot slot) const;
  /// The reference solution as a student, through the same protocol: its hello (once), its
  /// time_begin on the series' buffers (calibration_buffers), its calls (the judge's clock less
  /// their event times) before and after the submission's.
  void start_calibrator();
  bool calibrator_ready();
  enum class Calibrated { Done, Unavailable, CheckerFailed };
  Calibrated calibrate_with_reference(Series& s);
  Calibrated calibration_calls(Series& s, int warm_up, int calls);
  /// The checker's work after a call: verify(j), a reference call. False (errors_) when it failed.
  bool checker_after_call(Series& s, int j);
  /// After the submission's calls: the reference's calls again, its time_end, the overhead.
  void finish_calibration(Series& s);
  void drop_calibrator(const std::string& why);
  std::unique_ptr<WorkerProcess> calibrator_;
  LogFile calibrator_log_;
  bool calibrator_said_hello_ = false;
  std::string calibrator_note_;                // why no calibrator runs ("" while one does)
  std::map<Slot, double> pool_s_, granted_s_;  // each slot's timing budget: left, and granted so far
  std::map<Slot, std::string> timing_stopped_; // slots whose timing a cut (or a spent budget) ended: why
  std::set<Slot> failed_slots_;                 // slots with a case that did not pass: short timed series
  /// Ends a compute-sanitizer process and reads its report into `run`.
  ToolRun finish_tool(const std::string& tool, std::unique_ptr<WorkerProcess> w, const std::string& xml_name,
                      Clock::time_point start, ToolRun run);
  /// A compute-sanitizer process running `tool` over the worker, its report's path and the
  /// sanitizer log's size when it started. Throws std::runtime_error when it cannot start.
  struct ToolProcess {
    std::unique_ptr<WorkerProcess> process;
    std::string xml_name;  // in the channel's io/
    std::uintmax_t log_from = 0;
  };
  ToolProcess start_tool(const std::string& tool, const std::string& compute_sanitizer);
  std::map<std::string, ToolProcess> started_tools_;  // prestart_tools: by tool, until run_tool takes one
  void time_case(const Entry& e, CaseResult& r, nlohmann::json& cache, bool& cache_changed);

  /// A new command numbered k (check: the case as written; timing: the input's case).
  Command command(Mode mode, const Entry& e);
  /// `deadline_s` cut at what is left of the budget (of `slot`'s share, when given); `capped` says
  /// whether the budget cut it.
  double cut_at_budget(double deadline_s, bool& capped, std::optional<Slot> slot = std::nullopt) const;
  double slot_left_s(Slot slot) const;
  /// Takes --gpu-lock (when given) in `mode` into `lock`; the wait is not the submission's time.
  /// Returns "" or what went wrong.
  std::string take_gpu(GpuLock::Mode mode, std::optional<GpuLock>& lock);

  /// A live worker, or the verdict for the case that needed one.
  bool ensure_worker(CaseResult& r);
  /// ensure_worker's steps: a spare or a new worker (false, with r's verdict, when none starts);
  /// the bookkeeping of a worker that said hello; the verdict of one that did not (returns false).
  bool take_worker(CaseResult& r, std::uintmax_t& log_from, Clock::time_point& started);
  void worker_ready(const Hello& h, Clock::time_point started);
  bool worker_failed(CaseResult& r, Status status, std::string problem);
  /// A worker, or `tool` (compute-sanitizer's argv before the program) running one: its output goes
  /// to the sanitizer log and it may write the channel's io/ folder.
  std::unique_ptr<WorkerProcess> start_worker(const std::vector<std::string>& tool = {}) const;
  /// Sends a command and waits for its reply (k and nonce checked, harness_error read).
  /// on_ran: called when the worker says the GPU part of the command is over ("stage": "ran").
  Exchange exchange_once(WorkerProcess& w, const Command& command, double deadline_s, bool budget_capped,
                         const LogFile& log, const std::function<void()>& on_ran = {});
  Exchange exchange(WorkerProcess& w, const Command& command, double deadline_s, bool budget_capped,
                    const LogFile& log, const std::function<void()>& on_ran = nullptr);
  /// Kills the worker after a crash, a timeout, a garbled reply or a broken CUDA context.
  void drop_worker();
  /// Once workers are being lost, keeps up to kMaxSpares started ahead of need, so that the next
  /// case does not wait for a CUDA context to start.
  void warm_spares();

  void harness_fault(CaseResult& r, const std::string& what);
  /// crash "the worker's reply was incomplete or garbled (why)", and a fresh worker for the next case.
  void garbled(CaseResult& r, const std::string& why);
  void from_exchange(const Exchange& x, CaseResult& r);

  const Options& o_;
  std::unique_ptr<Channel> channel_;
  const std::string dir_;  // the channel's folder (the judge's own)
  LogFile& log_;           // the workers' stdout and stderr
  const sandbox::Sandbox* sandbox_ = nullptr;
  sandbox::Mounts mounts_;       // a worker's: the worker read-only, nothing writable
  sandbox::Mounts tool_mounts_;  // compute-sanitizer's: also the tool read-only (outside /usr), io/ writable
  std::unique_ptr<WorkerProcess> worker_;
  struct Spare {
    std::unique_ptr<WorkerProcess> process;
    std::uintmax_t log_from = 0;  // the log's size when it started (for the tail of a failed start)
    Clock::time_point started;
  };
  static constexpr std::size_t kMaxSpares = 4;
  std::deque<Spare> spares_;
  int lost_workers_ = 0;
  std::optional<Hello> hello_;
  std::vector<std::string> errors_;
  std::uint64_t next_k_ = 1;
  int failed_starts_ = 0;                   // consecutive workers that did not say hello
  std::optional<CaseResult> start_broken_;  // after two failed starts in a row: every later case
  Clock::time_point budget_end_ = Clock::time_point::max();
  std::map<Slot, double> slot_budget_s_, slot_spent_s_;  // each slot's share and what its exchanges took
  double lock_wait_s_ = 0, timing_s_ = 0, prepare_s_ = 0, worker_start_s_ = 0, checker_start_s_ = 0;
  int workers_started_ = 0, cases_in_worker_ = 0;
  std::set<Slot> worker_slots_;  // the slots whose cases the current worker ran
  bool last_case_after_other_slots_ = false;
  int buffers_worker_ = -1, kept_buffers_ = 0;  // the worker (by start number) that keeps the check buffers mapped, -1: none
  std::unique_ptr<CheckerProcess> checker_;  // the GPU backend's trusted side
  std::unique_ptr<CaseMemory> memory_;
  Staging timing_staging_;  // a timed case's input for the checker, when the case cache has none
  std::map<Slot, std::string> policy_slots_;  // slots whose code broke a zero_slot rule: the evidence

 public:
  /// The evidence when a case of `slot` broke a zero_slot rule ("" when none did).
  std::string policy_evidence(Slot slot) const {
    const auto it = policy_slots_.find(slot);
    return it == policy_slots_.end() ? "" : it->second;
  }
  /// The slots whose timing the fair share stopped before every perf case was timed, and why.
  const std::map<Slot, std::string>& timing_stopped() const { return timing_stopped_; }
  /// The checker's device line ("" when no checker runs).
  std::string checker_device() const { return checker_ ? checker_->device() : ""; }
};

/// Reads a worker's hello; "" when it is fine, else the message (and sets status).
/// A hint for a worker that died (signal, or 128 + signal from the sandbox): a segmentation fault
/// (deep recursion at tiny n), an abort (the failed assertion's text from `output`); "" for others.
std::string death_hint(const ExitInfo& end, const std::string& output, std::size_t n);

std::string read_hello(WorkerProcess& w, double deadline_s, const LogFile& log, std::uintmax_t log_from,
                       std::optional<Hello>& hello, Status& status);

}  // namespace scangrade::grader
