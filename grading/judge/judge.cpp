// The judge (judge.h): suites -> inputs and oracle -> worker -> verdicts -> results.json.
#include "judge.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "passes.h"
#include "sandbox.h"
#include "results.h"
#include "scangrade/inputs.h"
#include "text.h"

namespace scangrade::grader {
namespace {

using nlohmann::json;

/// The cases to grade, in suite order (--only-slot, --max-n applied; hidden suites' seeds mixed).
std::vector<Entry> select_cases(const Options& o, const std::vector<LoadedSuite>& suites) {
  std::vector<Entry> entries;
  for (const LoadedSuite& s : suites)
    for (const Case& c : s.suite.cases) {
      if (o.only_slot && c.slot != *o.only_slot) continue;
      if (o.max_n && c.n > *o.max_n) continue;
      Entry e{&s.suite, c, c};
      if (s.secret_mixed) e.input_case.seed = mix_secret(c.seed, *o.secret);
      entries.push_back(std::move(e));
    }
  return entries;
}

/// The channel (channel.h), or null with the reason in `errors`.
std::unique_ptr<Channel> make_channel(const Options& o, const sandbox::Sandbox& box, std::vector<std::string>& errors) {
  if (access(o.worker.c_str(), X_OK) != 0) {
    errors.push_back("the worker binary " + o.worker + " cannot be executed: " + std::strerror(errno) +
                     " (harness fault: please report)");
    return nullptr;
  }
  try {
    return std::make_unique<Channel>(channel_base(), box.active() ? &box : nullptr, o.worker);
  } catch (const std::exception& ex) {
    errors.push_back(std::string(ex.what()) + " (harness fault: please report)");
    return nullptr;
  }
}

/// The --verbose (or --gpu-lock) lines at the end on stderr.
void report_end(const Options& o, const json& score, int exit_code, const Phases& p) {
  if (o.verbose)
    std::cerr << "scangrade_judge: " << score["total"].get<double>() << " / " << score["max_total"].get<double>()
              << " points, exit " << exit_code << "\n";
  if (!o.verbose && o.gpu_lock.empty()) return;
  char line[320];
  std::snprintf(line, sizeof line,
                "scangrade_judge: phases functional_s=%.3f timing_s=%.3f lock_wait_s=%.3f sanitizer_s=%.3f "
                "prepare_s=%.3f worker_starts=%d worker_start_s=%.3f checker_start_s=%.3f kept_buffers=%d\n",
                p.correctness_s, p.timing_s, p.lock_wait_s, p.sanitizer_s, p.prepare_s, p.worker_starts,
                p.worker_start_s, p.checker_start_s, p.kept_buffers);
  std::cerr << line;
}

/// Runs the passes over the cases and writes results.json; returns the exit code.
int grade(const Options& o, Clock::time_point t0, const std::vector<LoadedSuite>& suites, const Build& build,
          const sandbox::Sandbox& box, Graded& g) {
  const std::vector<Entry> entries = select_cases(o, suites);
  std::vector<CaseResult> results(entries.size());
  std::unique_ptr<Channel> channel = build.no_run ? nullptr : make_channel(o, box, g.errors);
  std::unique_ptr<Session> session;
  if (channel) {
    if (!channel->worker_note().empty()) g.isolation["notes"].push_back(channel->worker_note());
    session = std::make_unique<Session>(o, std::move(channel), box.active() ? &box : nullptr);
    std::vector<Entry> running;  // the budget is shared out among the cases that run
    for (const Entry& e : entries)
      if (!build.verdict(e)) running.push_back(e);
    session->set_budget(t0, o.budget_s, running);
  }
  const bool gpu = o.backend == "gpu";
  std::string sanitizer_path;
  if (gpu && o.sanitizer)
    sanitizer_path = find_executable(o.compute_sanitizer.empty() ? "compute-sanitizer" : o.compute_sanitizer)
                         .value_or("");

  const std::string not_run = g.errors.empty() ? "" : g.errors.front();
  const double correctness_s = functional_pass(o, build, not_run, session.get(), entries, results);
  g.phases.correctness_s = session ? correctness_s : 0.0;  // no worker: nothing ran
  if (session && gpu) session->time_cases(entries, results);  // after every functional run
  g.sanitizer_pass = sanitizer_pass(o, sanitizer_path, session.get(), entries, results);
  g.phases.sanitizer_s = g.sanitizer_pass["cost_s"].get<double>();
  if (session) {
    session->shutdown();
    for (const std::string& e : session->errors()) g.errors.push_back(e);
    g.phases.timing_s = session->timing_s();
    g.phases.lock_wait_s = session->lock_wait_s();
    g.phases.prepare_s = session->prepare_s();
    g.phases.worker_starts = session->workers_started();
    g.phases.kept_buffers = session->kept_buffers();
    g.phases.worker_start_s = session->worker_start_s();
    g.phases.checker_start_s = session->checker_start_s();
  }

  std::map<Slot, double> perf_max;
  for (const LoadedSuite& s : suites)
    for (const auto& [slot, points] : s.suite.performance_points) perf_max[slot] += points;
  std::vector<ScoredCase> scored;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Case& c = entries[i].c;
    const CaseResult& r = results[i];
    scored.push_back({c.slot, r.status, c.points, c.perf,
                      r.timing ? std::optional<double>(r.timing->ratio_to_reference) : std::nullopt,
                      r.timing ? r.timing->ratio_interval : std::nullopt});
  }
  g.sheet = score_cases(scored, perf_max, gpu);
  if (session)  // why the GPU's fair share ended a slot's timing before every perf case was timed
    for (const auto& [slot, why] : session->timing_stopped())
      if (g.sheet.slots.contains(std::string(name(slot)))) g.sheet.slots[std::string(name(slot))]["timing_stopped"] = why;
  g.exit_code = !g.errors.empty() ? kInternalError : g.sheet.all_pass ? kAllPassed : kSomeFailed;
  g.environment = environment_json(session.get(), sanitizer_path);
  g.student_output = student_output_json(session ? &session->student_log() : nullptr, o.log_limit);
  session.reset();  // its channel goes with it
  g.suites = &suites;
  g.build = &build;
  g.entries = &entries;
  g.results = &results;
  g.duration_s = seconds_since(t0);
  if (!write_results(o.out, results_json(o, g))) return kInternalError;
  report_end(o, g.sheet.score, g.exit_code, g.phases);
  return g.exit_code;
}

}  // namespace

int run_judge(const Options& o) {
  signal(SIGPIPE, SIG_IGN);
  const auto t0 = Clock::now();
  Graded g;
  g.started_at = utc_now();
  // suites and the build file (malformed: exit 2, nothing written)
  std::vector<LoadedSuite> suites;
  Build build;
  try {
    for (const std::string& p : o.suites) suites.push_back(load_suite_file(p, false));
    for (const std::string& p : o.hidden_suites) suites.push_back(load_suite_file(p, true));
    build = read_build(o.build_json);
  } catch (const SuiteError& e) {
    std::cerr << "scangrade_judge: " << e.what() << "\n";
    return kBadInput;
  } catch (const UsageError& e) {
    std::cerr << "scangrade_judge: " << e.what() << "\n";
    return kBadInput;
  }
  build.no_run = build.status == "layout_error" || (build.status == "compile_error" && o.worker.empty());
  if (o.worker.empty() && !build.no_run) {
    std::cerr << "scangrade_judge: --worker is required (it may be omitted only when the build failed)\n"
              << "run with --help for the usage\n";
    return kBadInput;
  }
  // the sandbox every student process runs in (--sandbox require without one: exit 2)
  sandbox::Config config;
  config.mode = *sandbox::parse_mode(o.sandbox);
  config.bwrap = o.bwrap;
  if (o.sandbox_uid) config.uid = *o.sandbox_uid;
  config.name = "judge";
  std::unique_ptr<sandbox::Sandbox> box;
  try {
    box = std::make_unique<sandbox::Sandbox>(config);
  } catch (const sandbox::Unavailable& e) {
    std::cerr << "scangrade_judge: " << e.what() << "\n";
    return kBadInput;
  }
  g.isolation = box->isolation();
  return grade(o, t0, suites, build, *box, g);
}

}  // namespace scangrade::grader
