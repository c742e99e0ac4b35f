// The functional pass (passes.h): every case once through the worker, checked against the oracle.
#include <map>
#include <future>
#include <iostream>

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
  else if (e.c.dtype == DType::Float32) grade_typed<float>(e, data.input.f32, data.expected, r);
  else grade_typed<std::int32_t>(e, data.input.i32, data.expected, r);
  return r;
}

template <typename T>
void Session::grade_typed(const Entry& e, const std::vector<T>& input, const std::vector<double>& expected,
                          CaseResult& r) {
  const Command cmd = command(Mode::Check, e);
  const std::uint64_t k = cmd.k;
  if (const std::string why = write_file_atomic(input_path(dir_, k), input.data(), input.size() * sizeof(T), kChannelFileMode);
      !why.empty()) {
    harness_fault(r, "the channel folder is not writable: " + why);
    return;
  }
  if (!ensure_worker(r)) {
    std::remove(input_path(dir_, k).c_str());
    return;
  }
  // the GPU, shared with the other judges' functional runs (not with a judge that times), until
  // the worker says its GPU part is over (then it writes the output file)
  std::optional<GpuLock> gpu;
  if (const std::string why = take_gpu(GpuLock::Shared, gpu); !why.empty()) {
    std::remove(input_path(dir_, k).c_str());
    harness_fault(r, why);
    return;
  }
  bool capped = false;
  const double deadline = cut_at_budget(case_deadline_s(e.c), capped, e.c.slot);
  const Exchange x = exchange(*worker_, cmd, deadline, capped, log_path_, [&gpu] { gpu.reset(); });
  gpu.reset();
  std::remove(input_path(dir_, k).c_str());
  if (x.kind != Exchange::Reply) {
    from_exchange(x, r);
    drop_worker();
    std::remove(output_path(dir_, k).c_str());
    return;
  }
  CheckReply reply;
  try {
    reply = x.reply.get<CheckReply>();
  } catch (const MessageError& ex) {
    garbled(r, ex.what());
    std::remove(output_path(dir_, k).c_str());
    return;
  }
  read_check_reply(e, k, reply, input, expected, r);
}

/// The verdict from a well-formed reply and its output file, fail closed.
template <typename T>
void Session::read_check_reply(const Entry& e, std::uint64_t k, const CheckReply& reply, const std::vector<T>& input,
                               const std::vector<double>& expected, CaseResult& r) {
  const Case& c = e.c;
  const auto unreadable = [&](const std::string& why) {
    garbled(r, why);
    std::remove(output_path(dir_, k).c_str());
  };
  RunRecord<T> run;
  copy_run(reply, run);
  if (!run.not_implemented && run.error.empty()) {
    const std::uint64_t bytes = output_bytes(c.n);
    if (reply.out_bytes != bytes)
      return unreadable("out_bytes " + std::to_string(reply.out_bytes) + ", expected " + std::to_string(bytes));
    // straight into the record's vectors: no staging copy of what may be half a gigabyte
    run.output.resize(c.n);
    run.guard_before.resize(kGuardElements);
    run.guard_after.resize(kGuardElements);
    run.input_after.resize(c.n);
    const std::string why = read_parts(output_path(dir_, k), output_parts(run));
    if (!why.empty()) return unreadable("the output file: " + why.substr(why.rfind('/') + 1));
  }
  std::remove(output_path(dir_, k).c_str());
  const Verdict v = judge(c, input, expected, run);
  r.status = v.status;
  r.message = v.message;
  if (v.status == Status::InternalError) errors_.push_back(c.id + ": " + v.message);
  if (run.context_broken) {
    r.message += " (the CUDA context is broken: the next case runs in a fresh worker)";
    drop_worker();
  }
}

namespace {

/// The stop rule: after K timeouts (or crashes) in a row in one slot, its remaining cases take that
/// status without running (each would wait out its deadline or start a fresh worker again).
struct Streaks {
  std::size_t max_timeouts, max_crashes;
  std::map<Slot, std::pair<Status, std::size_t>> run;  // per slot: the status repeated, how often

  void record(Slot slot, Status s) {
    auto& [status, count] = run[slot];
    count = (s == status) ? count + 1 : 1;
    status = s;
  }
  Status status(Slot slot) const { return run.at(slot).first; }
  /// "" while the slot's cases run; else why its next case does not
  std::string stops(Slot slot) const {
    const auto it = run.find(slot);
    if (it == run.end()) return "";
    const auto [status, count] = it->second;
    const std::size_t limit = status == Status::Timeout ? max_timeouts : status == Status::Crash ? max_crashes : 0;
    if (limit == 0 || count < limit) return "";
    const std::string what = status == Status::Timeout ? "timed out" : "crashed";
    return "not run: the " + std::to_string(limit) + " previous cases of this slot " + what +
           " (a slot's remaining cases are not run after " + std::to_string(limit) + " in a row; the other slots are "
           "graded as usual)";
  }
};

}  // namespace

double functional_pass(const Options& o, const Build& build, const std::string& not_run, Session* session,
                       const std::vector<Entry>& entries, std::vector<CaseResult>& results) {
  const auto runs = [&](const Entry& e) { return session && not_run.empty() && !build.verdict(e); };
  std::future<CaseData> ahead;
  std::size_t ahead_i = entries.size();
  const auto make_ahead = [&](std::size_t from) {
    for (ahead_i = from; ahead_i < entries.size() && !runs(entries[ahead_i]); ++ahead_i) {
    }
    if (ahead_i < entries.size()) ahead = std::async(std::launch::async, make_case_data, std::cref(entries[ahead_i]));
  };
  const auto waited = [&] { return session ? session->lock_wait_s() : 0.0; };
  Streaks streaks{o.stop_after_timeouts, o.stop_after_crashes};
  make_ahead(0);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    CaseResult& r = results[i];
    const auto case_start = Clock::now();
    const double waited_before = waited();
    if (auto verdict = build.verdict(e)) {
      r = std::move(*verdict);
    } else if (!not_run.empty() || !session) {
      r.status = Status::InternalError;
      r.message = "not run: " + (not_run.empty() ? std::string("no worker") : not_run);
    } else if (session->budget_exhausted(e.c.slot)) {
      r.status = Status::Timeout;
      r.message = session->budget_message(e.c.slot);
    } else if (const std::string why = streaks.stops(e.c.slot); !why.empty()) {
      r.status = streaks.status(e.c.slot);
      r.message = why;
    } else {
      CaseData data = ahead_i == i ? ahead.get() : make_case_data(e);
      make_ahead(i + 1);
      r = session->grade(e, std::move(data));
    }
    r.duration_s = seconds_since(case_start) - (waited() - waited_before);
    streaks.record(e.c.slot, r.status);
    if (!e.c.sanitize.empty() && r.sanitizer.is_null()) {
      // filled in by the sanitizer pass when it runs this case
      r.sanitizer = {{"tools", e.c.sanitize}, {"ran", false}, {"findings", json::array()}};
    }
    if (o.verbose)
      std::cerr << "[" << i + 1 << "/" << entries.size() << "] " << e.c.id << ": " << name(r.status) << " ("
                << format_seconds(r.duration_s) << " s)\n";
  }
  return std::max(0.0, seconds_since(start) - waited());
}

}  // namespace scangrade::grader
