// The compute-sanitizer pass (passes.h) and one compute-sanitizer process (Session::run_tool).
#include <algorithm>
#include <map>

#include "passes.h"
#include "protocol.h"
#include "text.h"

namespace scangrade::grader {

using nlohmann::json;

namespace {

constexpr const char* kEmulationSanitizerReason =
    "emulation backend: compute-sanitizer does not run; every case up to 65536 elements runs under forward, reverse "
    "and random thread orders instead, and differing results are reported as race";

/// What the tools found on one case.
struct CaseSanitizer {
  std::vector<std::string> not_run, shared;
  std::vector<SanitizerFinding> race, memory;
  std::size_t race_records = 0, memory_records = 0;
  json findings = json::array();
  double cost_s = 0;

  void record(const ToolRun& run, const std::string& tool, double cost) {
    cost_s += cost;
    if (!run.not_run.empty()) {
      not_run.push_back(run.not_run);
      return;
    }
    for (const SanitizerFinding& f : run.findings)
      findings.push_back({{"tool", f.tool}, {"kind", f.kind}, {"kernel", f.kernel}, {"file", f.file},
                          {"line", f.line}, {"text", f.text}});
    std::vector<SanitizerFinding>& into = tool == "racecheck" ? race : memory;
    into.insert(into.end(), run.findings.begin(), run.findings.end());
    (tool == "racecheck" ? race_records : memory_records) += run.records;
  }
};

/// Why the pass does not run at all ("" when it may).
std::string pass_not_run(const Options& o, const std::string& compute_sanitizer) {
  if (o.backend != "gpu") return kEmulationSanitizerReason;
  if (!o.sanitizer) return "--sanitizer off";
  if (compute_sanitizer.empty())
    return "compute-sanitizer not found (" +
           (o.compute_sanitizer.empty() ? std::string("not in PATH") : "--compute-sanitizer " + o.compute_sanitizer) +
           "): no case was checked by it";
  return "";
}

/// The case's sanitizer object and verdict once its tools ran.
void apply(const Case& c, const CaseSanitizer& cs, CaseResult& r) {
  json result = {{"tools", c.sanitize}, {"ran", cs.not_run.empty()}, {"findings", cs.findings}, {"cost_s", cs.cost_s}};
  const auto join = [](const std::vector<std::string>& parts, const char* sep) {
    std::string s;
    for (std::size_t k = 0; k < parts.size(); ++k) s += (k ? sep : "") + parts[k];
    return s;
  };
  if (!cs.not_run.empty()) {
    result["reason"] = "not every tool ran: " + join(cs.not_run, "; ");
  } else {
    std::string reason = "ran " + std::to_string(c.sanitize.size()) + " tool(s): " +
                         std::to_string(cs.findings.size()) + " finding(s)";
    if (!cs.shared.empty())
      reason += " (" + join(cs.shared, ", ") + ": one process over every case of this submission that asked for the tool)";
    result["reason"] = reason;
  }
  if (!cs.race.empty()) {
    r.status = Status::Race;
    r.message = c.id + ": compute-sanitizer " + describe_findings(cs.race, cs.race_records);
  } else if (!cs.memory.empty()) {
    r.status = Status::MemoryError;
    r.message = c.id + ": compute-sanitizer " + describe_findings(cs.memory, cs.memory_records);
  }
  r.sanitizer = result;
  r.duration_s += cs.cost_s;
}

/// Runs `tool` over the cases in `group`: one process over all of them; on a finding or a failure,
/// each alone. Returns the processes started.
std::size_t run_group(Session& session, const std::string& tool, const std::vector<std::size_t>& group,
                      const std::string& compute_sanitizer, const std::vector<Entry>& entries,
                      std::map<std::size_t, CaseSanitizer>& per_case) {
  std::size_t processes = 0;
  if (group.size() > 1) {
    std::vector<const Entry*> cases;
    for (std::size_t i : group) cases.push_back(&entries[i]);
    const ToolRun together = session.run_tool(tool, cases, compute_sanitizer);
    ++processes;
    const double share = together.cost_s / static_cast<double>(group.size());
    if (together.not_run.empty() && together.findings.empty()) {
      for (std::size_t i : group) {
        per_case[i].record(together, tool, share);
        per_case[i].shared.push_back(tool);
      }
      return processes;
    }
    for (std::size_t i : group) per_case[i].cost_s += share;  // spent, then each case alone:
  }
  for (std::size_t i : group) {
    const ToolRun alone = session.run_tool(tool, {&entries[i]}, compute_sanitizer);
    ++processes;
    per_case[i].record(alone, tool, alone.cost_s);
  }
  return processes;
}

}  // namespace

json sanitizer_pass(const Options& o, const std::string& compute_sanitizer, Session* session,
                    const std::vector<Entry>& entries, std::vector<CaseResult>& results) {
  const std::string not_run_reason = pass_not_run(o, compute_sanitizer);
  std::map<std::size_t, CaseSanitizer> per_case;  // the cases it runs on
  std::vector<std::string> tools;                  // in order of first appearance
  std::size_t asked = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    CaseResult& r = results[i];
    if (e.c.sanitize.empty()) continue;
    ++asked;
    std::string reason = not_run_reason;
    if (reason.empty() && r.status != Status::Pass)
      reason = "not run: the case did not pass its functional run (" + std::string(name(r.status)) + ")";
    if (reason.empty() && !session) reason = "not run: no worker";
    if (!reason.empty()) {
      r.sanitizer["reason"] = reason;
      continue;
    }
    per_case[i];
    for (const std::string& t : e.c.sanitize)
      if (std::find(tools.begin(), tools.end(), t) == tools.end()) tools.push_back(t);
  }
  if (!per_case.empty()) session->shutdown();  // the worker and the checker are done
  // every tool's process starts now, so that their starts overlap (the runs stay one after another)
  if (tools.size() > 1) session->prestart_tools(tools, compute_sanitizer);
  std::size_t processes = 0;
  for (const std::string& tool : tools) {
    std::vector<std::size_t> group;
    for (const auto& [i, cs] : per_case) {
      const auto& wanted = entries[i].c.sanitize;
      if (std::find(wanted.begin(), wanted.end(), tool) != wanted.end()) group.push_back(i);
    }
    processes += run_group(*session, tool, group, compute_sanitizer, entries, per_case);
  }
  double cost = 0;
  for (auto& [i, cs] : per_case) {
    apply(entries[i].c, cs, results[i]);
    cost += cs.cost_s;
  }
  const std::size_t ran = per_case.size();
  json pass = {{"ran", ran > 0}, {"cost_s", cost}, {"cases", ran}, {"processes", processes}};
  if (ran == asked && ran > 0)
    pass["reason"] = "compute-sanitizer ran on every case that asked for it (" + std::to_string(ran) + ")";
  else if (ran > 0)
    pass["reason"] = "compute-sanitizer ran on " + std::to_string(ran) + " of " + std::to_string(asked) +
                     " case(s) that asked for it (the others did not pass their functional run)";
  else if (!not_run_reason.empty())
    pass["reason"] = not_run_reason;
  else
    pass["reason"] = asked == 0 ? "no case asked for it" : "no case that asked for it passed its functional run";
  return pass;
}

Session::ToolProcess Session::start_tool(const std::string& tool, const std::string& compute_sanitizer) {
  ToolProcess t;
  t.xml_name = "san-" + std::to_string(next_k_) + "-" + tool + ".xml";
  t.log_from = channel_->sanitizer_log().size();
  t.process = start_worker({compute_sanitizer, "--tool", tool, "--error-exitcode", std::to_string(kSanitizerErrorExit),
                            "--xml", "--save", channel_->io() + "/" + t.xml_name, "--print-limit", "50"});
  return t;
}

void Session::prestart_tools(const std::vector<std::string>& tools, const std::string& compute_sanitizer) {
  if (budget_exhausted()) return;
  for (const std::string& tool : tools) {
    if (started_tools_.count(tool)) continue;
    try {
      started_tools_[tool] = start_tool(tool, compute_sanitizer);
    } catch (const std::exception&) {
      return;  // run_tool starts it again and reports why it cannot
    }
  }
}

ToolRun Session::run_tool(const std::string& tool, const std::vector<const Entry*>& cases,
                          const std::string& compute_sanitizer) {
  ToolRun run;
  auto start = Clock::now();  // (moved on by the lock waits below)
  const auto finish = [&](std::string why) {
    run.not_run = tool + ": " + why;
    run.cost_s = seconds_since(start);
    return run;
  };
  if (budget_exhausted()) return finish("the submission time budget was exhausted");
  ToolProcess started;
  if (const auto it = started_tools_.find(tool); it != started_tools_.end()) {
    started = std::move(it->second);  // started ahead (prestart_tools)
    started_tools_.erase(it);
  } else {
    try {
      started = start_tool(tool, compute_sanitizer);
    } catch (const std::exception& ex) {
      return finish(std::string("cannot start compute-sanitizer: ") + ex.what());
    }
  }
  std::unique_ptr<WorkerProcess> w = std::move(started.process);
  const std::string xml_name = started.xml_name;
  std::optional<Hello> h;
  Status status;
  const std::string problem =
      read_hello(*w, hello_deadline_s(true), channel_->sanitizer_log(), started.log_from, h, status);
  if (!problem.empty()) return finish(problem);
  for (const Entry* e : cases) {
    const Command cmd = command(Mode::Check, *e);
    std::string why;
    try {
      const CaseInput in = make_case_input(*e);
      why = channel_->write_io(input_name(cmd.k), in.data(), in.bytes());
    } catch (const std::exception& ex) {
      why = std::string("cannot make the input: ") + ex.what();
    }
    if (!why.empty()) {
      w->kill_group();
      return finish("case " + e->c.id + ": " + why);
    }
    // racecheck costs about 20x: a generous deadline, cut at the budget
    bool capped = false;
    const double deadline = cut_at_budget(20 * case_deadline_s(e->c) + 60 * o_.timeout_scale, capped, e->c.slot);
    // the GPU, shared, while the case runs under the tool (the wait is not the tool's cost)
    std::optional<GpuLock> gpu;
    const auto asked = Clock::now();
    if (const std::string lock_problem = take_gpu(GpuLock::Shared, gpu); !lock_problem.empty()) {
      w->kill_group();
      return finish(lock_problem);
    }
    start += Clock::now() - asked;
    const Exchange x = exchange(*w, cmd, deadline, false, channel_->sanitizer_log(), [&gpu] { gpu.reset(); });
    gpu.reset();
    channel_->remove_io(input_name(cmd.k));
    if (x.kind == Exchange::Timeout)
      return finish("case " + e->c.id + ": no reply within " + format_seconds(deadline) + " s under compute-sanitizer");
    if (x.kind != Exchange::Reply) break;  // the process ended: its report says why
  }
  return finish_tool(tool, std::move(w), xml_name, start, run);
}

ToolRun Session::finish_tool(const std::string& tool, std::unique_ptr<WorkerProcess> w, const std::string& xml_name,
                             Clock::time_point start, ToolRun run) {
  // compute-sanitizer writes its report when the program exits
  w->close_stdin();
  const auto exit = w->wait_exit(after(60.0 * o_.timeout_scale));
  const ExitInfo end = exit ? *exit : w->kill_group();
  w.reset();
  // in io/, which student code may write: read as a plain file of this folder only, capped
  std::string unreadable;
  const auto xml = channel_->read_io(xml_name, kSanitizerReportCap, unreadable);
  const SanitizerReport report = xml ? parse_sanitizer_xml(*xml, tool) : SanitizerReport{};
  channel_->remove_io(xml_name);
  run.findings = report.findings;
  run.records = report.records;
  if (!xml && unreadable != "no such file") {
    // a link, a hard link, a device, a flood: the submission's process put it there (it runs as the
    // only other writer of io/); a report the grader cannot trust cannot clear the case
    run.findings.push_back({tool, "error", "", "", 0,
                            kInterfered + std::string("compute-sanitizer's report ") + xml_name + " was replaced (" +
                                unreadable + ")"});
    run.records = 1;
    run.cost_s = seconds_since(start);
    return run;
  }
  if (run.findings.empty() && !end.signaled && end.code == kSanitizerErrorExit) {
    run.findings.push_back({tool, "error", "", "", 0,
                            "compute-sanitizer " + tool + " reported errors (exit code " +
                                std::to_string(kSanitizerErrorExit) + ") but its XML report listed none" +
                                (report.readable ? "" : ": " + (xml ? report.problem : "no report file"))});
    run.records = 1;
  }
  if (run.findings.empty() && !report.readable)
    run.not_run = tool + ": no readable report (" + (xml ? report.problem : "no report file") +
                  "; compute-sanitizer ended with " + end.describe() + ")";
  run.cost_s = seconds_since(start);
  return run;
}

}  // namespace scangrade::grader
