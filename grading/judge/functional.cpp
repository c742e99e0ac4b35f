// The functional pass (passes.h): every case once through the worker, checked against the oracle.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <future>
#include <iostream>

#include "case_data.h"
#include "outside.h"
#include "passes.h"
#include "protocol.h"
#include "scangrade/check.h"
#include "text.h"

namespace scangrade::grader {

using nlohmann::json;

namespace {

std::string trimmed_log(const std::string& log) {
  std::string t = trim(log);
  if (t.size() > 4000) t = t.substr(0, 4000) + "\n... (log trimmed)";
  return t;
}

}  // namespace

std::optional<CaseResult> Build::verdict(const Entry& e) const {
  CaseResult r;
  if (const auto v = policy_violations.find(e.c.slot); v != policy_violations.end()) {
    r.status = Status::PolicyViolation;  // found at build time: the slot was not linked, nothing ran
    r.message = std::string(student_file(e.c.slot)) + " breaks a rule of the assignment: " + v->second;
    return r;
  }
  r.status = Status::CompileError;
  if (status == "layout_error") {
    r.message = "the submission could not be read as a student/ folder: " + trimmed_log(report["log"]);
    return r;
  }
  if (status == "compile_error" && (no_run || failed_slots.count(e.c.slot))) {
    r.message = std::string(student_file(e.c.slot)) + " did not compile:\n" + trimmed_log(report["log"]);
    return r;
  }
  return std::nullopt;
}

CaseResult Session::grade(const Entry& e, CaseData data) {
  CaseResult r;
  if (!data.error.empty())
    harness_fault(r, "cannot make the input or the expected output of case '" + e.c.id + "': " + data.error);
  else if (e.c.dtype == DType::Float32) grade_typed<float>(e, data, r);
  else grade_typed<std::int32_t>(e, data, r);
  if (o_.backend != "gpu" && data.error.empty()) judge_orders(e, data, r);
  return r;
}

void Session::judge_orders(const Entry& e, CaseData& data, CaseResult& r) {
  const std::string race = std::exchange(last_race_, "");
  const auto reverse = [&]() -> std::optional<Verdict> {
    CaseResult again;
    reverse_next_ = true;
    if (e.c.dtype == DType::Float32) grade_typed<float>(e, data, again);
    else grade_typed<std::int32_t>(e, data, again);
    reverse_next_ = false;
    last_race_.clear();
    if (again.status == Status::InternalError || again.worker_harness_error) return std::nullopt;
    return Verdict{again.status, again.message};
  };
  const Verdict v = order_verdict(e.c, Verdict{r.status, r.message}, race, reverse);
  r.status = v.status;
  r.message = v.message;
}

template <typename T>
void Session::grade_typed(const Entry& e, CaseData& data, CaseResult& r) {
  Command cmd = command(Mode::Check, e);
  cmd.reverse = reverse_next_;
  // a worker (and the checker with it) that starts here brings its CUDA context up under the shared
  // GPU lock, not while another judge times its cases
  std::optional<GpuLock> gpu;
  if (!worker_ && spares_.empty())
    if (const std::string why = take_gpu(GpuLock::Shared, gpu); !why.empty()) return harness_fault(r, why);
  if (!ensure_worker(r)) return;
  last_case_after_other_slots_ =
      std::any_of(worker_slots_.begin(), worker_slots_.end(), [&](Slot s) { return s != e.c.slot; });
  worker_slots_.insert(e.c.slot);
  // the input: the case cache's file when the data is only there, else from memory
  CachedInput file;
  if (data.in_cache) {
    file = cached_input(e, o_.case_cache);
    if (file.fd < 0) complete_case_data(e, o_.case_cache, data);
    if (!data.error.empty())
      return harness_fault(r, "cannot read the input of case '" + e.c.id + "' back: " + data.error);
  }
  InputSource input;
  input.file = file;
  input.data = data.input.data();
  // the GPU, shared with the other judges' functional runs (not with a judge that times), from the
  // buffers' setup until the checker has checked or read them
  if (const std::string why = gpu ? "" : take_gpu(GpuLock::Shared, gpu); !why.empty()) {
    if (file.fd >= 0) ::close(file.fd);
    return harness_fault(r, why);
  }
  CaseMemory* memory = case_memory(r);
  SharedBuffers buffers;
  const bool holds = buffers_worker_ == workers_started_;
  buffers_worker_ = -1;  // until the worker has replied with these buffers mapped
  const std::string problem = memory ? memory->setup(e.c.n, sizeof(T), input, holds, buffers) : "";
  if (file.fd >= 0) ::close(file.fd);
  if (!memory) return;
  if (!problem.empty()) {
    memory->release();
    return harness_fault(r, problem);
  }
  cmd.shared = true;
  cmd.kept = buffers.kept;
  kept_buffers_ += buffers.kept ? 1 : 0;
  cmd.sizes = buffers.sizes;
  if (!buffers.kept) worker_->send_fds(buffers.fds);  // a worker that is gone shows in the exchange
  buffers.close();  // the worker has its own descriptors now
  bool capped = false;
  const double deadline = cut_at_budget(case_deadline_s(e.c), capped, e.c.slot);
  const Exchange x = exchange(*worker_, cmd, deadline, capped, log_);
  ++cases_in_worker_;
  if (x.kind != Exchange::Reply) {
    memory->release();
    from_exchange(x, r);
    drop_worker();
    return;
  }
  CheckReply reply;
  try {
    reply = x.reply.get<CheckReply>();
  } catch (const MessageError& ex) {
    memory->release();
    return garbled(r, ex.what());
  }
  if (reply.harness_error.empty()) buffers_worker_ = workers_started_;  // it keeps them mapped
  read_check_reply<T>(e, reply, *memory, data, gpu, r);
  outside_view(reply, r);
}

void Session::outside_view(const CheckReply& reply, CaseResult& r) {
  if (o_.backend != "gpu" || !worker_) return;
  constexpr std::int64_t kOutsideGrowthNote = 64ll << 20;
  const std::int64_t held = DeviceMemoryView::get().held_by_tree(worker_->pid());
  const std::int64_t before = outside_worker_ == workers_started_ ? outside_held_ : -1;
  outside_worker_ = workers_started_;
  outside_held_ = held;
  if (held < 0 || before < 0 || reply.leaked_bytes > 0 || held - before < kOutsideGrowthNote) return;
  r.message += std::string(r.message.empty() ? "" : "\n  ") + "note (not scored): seen from outside the worker " +
               "(the driver's count, NVML), its processes held " + std::to_string((held - before) >> 20) +
               " MiB more device memory after this call than before it, and the worker's own count found no " +
               "leak: memory a call keeps is a leak, unless the driver reserved it (a kernel's local memory, " +
               "loaded modules)";
}

/// The verdict from a well-formed reply and the buffers the trusted side checks or reads itself.
template <typename T>
void Session::read_check_reply(const Entry& e, const CheckReply& reply, CaseMemory& memory, CaseData& data,
                               std::optional<GpuLock>& gpu, CaseResult& r) {
  const Case& c = e.c;
  RunRecord<T> run;
  copy_run(reply, run);
  if (o_.backend != "gpu") last_race_ = std::exchange(run.race, "");  // judged by judge_orders
  Verdict v;
  std::string problem;
  if (run.not_implemented || !run.error.empty()) {
    memory.release();
    v = judge_checked(c, run);  // nothing of the buffers counts
  } else if (memory.verified(c.kind, c.dtype, problem)) {
    v = judge_checked(c, run);  // guards, input and output right: pass (or leak)
  } else if (!problem.empty()) {
    memory.release();
    return harness_fault(r, problem);
  } else {
    const std::size_t g = kGuardElements;
    std::vector<T> zone(c.n + 2 * g);
    run.input_after.resize(c.n);
    if (const std::string why = memory.collect(zone.data(), run.input_after.data()); !why.empty())
      return harness_fault(r, why);
    gpu.reset();  // the rest happens here
    run.guard_before.assign(zone.begin(), zone.begin() + g);
    run.output.assign(zone.begin() + g, zone.begin() + g + c.n);
    run.guard_after.assign(zone.begin() + g + c.n, zone.end());
    complete_case_data(e, o_.case_cache, data);
    if (!data.error.empty())
      return harness_fault(r, "cannot make the expected output of case '" + c.id + "': " + data.error);
    v = judge(c, data.values<T>(), data.expected, run);
  }
  gpu.reset();
  r.status = v.status;
  r.message = v.message;
  if (v.status == Status::InternalError) errors_.push_back(c.id + ": " + v.message);
  if (!reply.policy.empty()) policy_finding(e, reply, r);
  if (run.context_broken) {
    r.message += " (the CUDA context is broken: the next case runs in a fresh worker)";
    drop_worker();
  }
}

CaseMemory* Session::case_memory(CaseResult& r) {
  if (memory_) return memory_.get();
  if (o_.backend != "gpu") {
    memory_ = host_memory();
    return memory_.get();
  }
  try {
    std::string path = o_.checker;
    if (path.empty()) {  // built next to the judge
      std::error_code ec;
      path = (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "scangrade_checker").string();
    }
    checker_ = std::make_unique<CheckerProcess>(path, dir_ + "/checker.log");
  } catch (const std::exception& ex) {
    harness_fault(r, std::string("cannot start the checker: ") + ex.what());
    return nullptr;
  }
  memory_ = checker_memory(*checker_);
  return memory_.get();
}

static std::string correctness_note(const CaseResult& r) {
  return "\n  correctness (not scored): " + std::string(name(r.status)) + (r.message.empty() ? "" : ": " + r.message);
}

void Session::policy_finding(const Entry& e, const CheckReply& reply, CaseResult& r) {
  const std::string rule = reply.policy_rule.empty() ? "host_compute" : reply.policy_rule;
  const PolicyAction action = policy_action(*e.suite, rule);
  if (action == PolicyAction::Off) return;
  const std::string evidence = std::string(student_file(e.c.slot)) + " breaks a rule of the assignment (" + rule +
                               "): " + reply.policy;
  // the one-block rule keeps a multi-block scan from earning one-block points: it is judged per call.
  // A call that launched more than one block scores 0 (policy_violation) when its values passed, and
  // keeps its own status with a note when they did not (it earned nothing anyway); the slot's calls
  // that kept to one block keep their results (a student whose block scan spills into more blocks
  // above some n is not zeroed for the n it handles in one block)
  const bool per_call = rule == "launch";
  const bool earns_nothing = per_call && r.status != Status::Pass;
  if (action == PolicyAction::Flag || earns_nothing) {
    r.message += (r.message.empty() ? "" : "\n") +
                 std::string(earns_nothing ? "policy (not scored: this case did not pass anyway): "
                                           : "policy (flagged, not scored): ") + evidence;
    return;
  }
  r.message = evidence + correctness_note(r);
  r.status = Status::PolicyViolation;
  if (!per_call) policy_slots_.emplace(e.c.slot, evidence);
}

namespace {

/// The stop rule. After K timeouts in a row in one slot, its remaining cases take that status
/// without running (each would wait out its deadline). After K crashes in a row, its remaining cases
/// of the crashed types that would crash the same way do (each would start a fresh worker to crash
/// again): which ones depends on how the crashes lie against the slot's passes of that type. When a
/// larger case passed before, the code crashes on small n: every case up to the largest crashed n
/// is skipped; when a smaller case passed, it crashes on large n (a size limit): every case from the
/// smallest crashed n on; with no pass to tell, only the cases between the two. Cases on the other
/// side still run (a slot that crashes on small n may pass large n, and the other way round).
struct Streaks {
  std::size_t max_timeouts, max_crashes;
  struct Run {
    Status status = Status::Pass;
    std::size_t count = 0, min_n = 0, max_n = 0;  // the crashed n (cases that ran)
    std::set<DType> dtypes;
  };
  std::map<Slot, Run> run;
  std::map<std::pair<Slot, DType>, std::pair<std::size_t, std::size_t>> passed;  // smallest, largest n passed

  void record(const Entry& e, Status s, bool ran) {
    Run& r = run[e.c.slot];
    if (s != r.status) {
      r = Run{};
      r.status = s;
    }
    ++r.count;
    if (ran && s == Status::Crash) {
      r.min_n = r.dtypes.empty() ? e.c.n : std::min(r.min_n, e.c.n);
      r.max_n = std::max(r.max_n, e.c.n);
      r.dtypes.insert(e.c.dtype);
    }
    if (ran && s == Status::Pass) {
      const auto key = std::make_pair(e.c.slot, e.c.dtype);
      const auto it = passed.find(key);
      if (it == passed.end()) passed[key] = {e.c.n, e.c.n};
      else it->second = {std::min(it->second.first, e.c.n), std::max(it->second.second, e.c.n)};
    }
  }
  Status status(Slot slot) const { return run.at(slot).status; }
  /// The crashed range of n that `e`'s type skips: [from, to].
  std::pair<std::size_t, std::size_t> crash_range(const Run& r, const Entry& e) const {
    const auto it = passed.find({e.c.slot, e.c.dtype});
    if (it != passed.end() && it->second.second > r.max_n) return {0, r.max_n};  // crashes on small n
    if (it != passed.end() && it->second.first < r.min_n) return {r.min_n, SIZE_MAX};  // on large n
    return {r.min_n, r.max_n};
  }
  /// "" while the entry runs; else why it does not
  std::string stops(const Entry& e) const {
    const auto it = run.find(e.c.slot);
    if (it == run.end()) return "";
    const Run& r = it->second;
    if (r.status == Status::Timeout && max_timeouts > 0 && r.count >= max_timeouts)
      return "not run: the " + std::to_string(max_timeouts) + " previous cases of this slot timed out (a slot's "
             "remaining cases are not run after " + std::to_string(max_timeouts) + " timeouts in a row; the other "
             "slots are graded as usual)";
    if (r.status != Status::Crash || max_crashes == 0 || r.count < max_crashes || !r.dtypes.count(e.c.dtype))
      return "";
    const auto [from, to] = crash_range(r, e);
    if (e.c.n < from || e.c.n > to) return "";
    const std::string range = from == 0 ? "up to n = " + std::to_string(to)
                              : to == SIZE_MAX ? "from n = " + std::to_string(from) + " on"
                                               : "from n = " + std::to_string(from) + " to " + std::to_string(to);
    return "not run: the " + std::to_string(r.count) + " previous cases of this slot crashed, n = " +
           std::to_string(r.min_n) + " to " + std::to_string(r.max_n) + "; after " + std::to_string(max_crashes) +
           " crashes in a row its other " + std::string(name(e.c.dtype)) + " cases " + range +
           " are not run (each would start a fresh process to crash the same way), its other cases run as usual";
  }
};

/// A case that failed after `before` other cases in the same worker (and after the slot passed a
/// case at least as large) runs again alone, in a fresh worker: when it passes there, the code keeps
/// state between calls, and the message says so (the verdict stands: the grader, like any program,
/// calls the slot many times in one process). Once per slot.
void rerun_alone(const Options& o, Session& session, const Entry& e, int before, CaseResult& r) {
  session.fresh_worker();
  const CaseResult alone = session.grade(e, case_data_for_run(e, o.case_cache, o.backend == "gpu"));
  session.fresh_worker();  // what the next case runs in is fresh too, as before the rerun
  if (alone.status != Status::Pass) return;
  r.message += "\n  hint: your code keeps state between calls: this case passes when it runs alone in a fresh "
               "process, but not after the " + std::to_string(before) + " case(s) this process ran before it. Look "
               "for a global or static (a counter, a pointer, a flag, a cached allocation) that is not reset at the "
               "start of each call: the grader calls your slot many times in one process";
}

}  // namespace

double functional_pass(const Options& o, const Build& build, const std::string& not_run, Session* session,
                       const std::vector<Entry>& entries, std::vector<CaseResult>& results) {
  const auto runs = [&](const Entry& e) { return session && not_run.empty() && !build.verdict(e); };
  const bool device = o.backend == "gpu";  // the checker checks a passing output on the device
  std::future<CaseData> ahead;
  std::size_t ahead_i = entries.size();
  const auto make_ahead = [&](std::size_t from) {
    for (ahead_i = from; ahead_i < entries.size() && !runs(entries[ahead_i]); ++ahead_i) {
    }
    if (ahead_i < entries.size())
      ahead = std::async(std::launch::async, [&o, device, &e = entries[ahead_i]] {
        return case_data_for_run(e, o.case_cache, device);
      });
  };
  const auto waited = [&] { return session ? session->lock_wait_s() : 0.0; };
  Streaks streaks{o.stop_after_timeouts, o.stop_after_crashes, {}, {}};
  std::set<Slot> rerun;  // slots whose first failure after other cases was run again alone
  std::map<Slot, std::size_t> largest_passed;  // per slot, the largest n of a case that passed
  make_ahead(0);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    CaseResult& r = results[i];
    const auto case_start = Clock::now();
    const double waited_before = waited();
    bool ran = false;
    if (auto verdict = build.verdict(e)) {
      r = std::move(*verdict);
    } else if (!not_run.empty() || !session) {
      r.status = Status::InternalError;
      r.message = "not run: " + (not_run.empty() ? std::string("no worker") : not_run);
    } else if (session->budget_exhausted(e.c.slot)) {
      r.status = Status::Timeout;
      r.message = session->budget_message(e.c.slot);
    } else if (const std::string why = streaks.stops(e); !why.empty()) {
      r.status = streaks.status(e.c.slot);
      r.message = why;
    } else {  // a slot that broke a zero_slot rule still runs: its correctness results are shown
      CaseData data = ahead_i == i ? ahead.get() : case_data_for_run(e, o.case_cache, device);
      make_ahead(i + 1);
      const int before = session->cases_in_worker();
      r = session->grade(e, std::move(data));
      ran = true;
      if (r.worker_harness_error && session->last_case_after_other_slots()) {
        // the grader's code in a process that ran another slot's cases first could not run this one
        // (its descriptors or device memory used up): that slot may have done it, so this case runs
        // again in a fresh process, and that run's verdict stands
        session->fresh_worker();
        r = session->grade(e, case_data_for_run(e, o.case_cache, device));
      }
      // a failure after the slot passed a case at least as large: state kept between calls?
      const auto largest = largest_passed.find(e.c.slot);
      if ((r.status == Status::Crash || r.status == Status::Fail) && before > 0 && largest != largest_passed.end() &&
          largest->second >= e.c.n && rerun.insert(e.c.slot).second)
        rerun_alone(o, *session, e, before, r);
      if (r.status == Status::Pass) largest_passed[e.c.slot] = std::max(largest_passed[e.c.slot], e.c.n);
    }
    r.duration_s = seconds_since(case_start) - (waited() - waited_before);
    streaks.record(e, r.status, ran);
    if (!e.c.sanitize.empty() && r.sanitizer.is_null()) {
      // filled in by the sanitizer pass when it runs this case
      r.sanitizer = {{"tools", e.c.sanitize}, {"ran", false}, {"findings", json::array()}};
    }
    if (o.verbose)
      std::cerr << "[" << i + 1 << "/" << entries.size() << "] " << e.c.id << ": " << name(r.status) << " ("
                << format_seconds(r.duration_s) << " s)\n";
  }
  // a zero_slot rule: the cases of the slot that ran before the finding do not count either
  for (std::size_t i = 0; session && i < entries.size(); ++i) {
    const std::string evidence = session->policy_evidence(entries[i].c.slot);
    if (evidence.empty() || results[i].status == Status::PolicyViolation) continue;
    if (results[i].status == Status::CompileError || results[i].status == Status::NotImplemented) continue;
    results[i].message = "not counted: a case of this slot broke a rule of the assignment: " + evidence +
                         correctness_note(results[i]);
    results[i].status = Status::PolicyViolation;
  }
  return std::max(0.0, seconds_since(start) - waited());
}

}  // namespace scangrade::grader
