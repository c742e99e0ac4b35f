// The kernel tests: one TEST_P body, instantiated per slot from the suite's rows, run over
// whichever implementation this binary is linked with (student, reference, gallery example).
//
//   scangrade_student_test [--suite=FILE] [gtest flags]     (`make test`)
//   scangrade_selftest     [--suite=FILE] [gtest flags]     (`make check`: the reference)
// The suite defaults to testcases/public.json; SCANGRADE_SUITE also sets it.
// SCANGRADE_COMPILE_ERRORS="slot=why;..." (set by `make test`'s driver, tools/student_test.py) marks
// slots whose file did not compile and was replaced by its starter file: they show COMPILE ERROR.
// SCANGRADE_POLICY_VIOLATIONS="slot=message<newline>..." (the same driver: the grader's build-time policy
// scans) marks slots whose file breaks a rule of the assignment, replaced by its starter file as the
// grader does not link it: they show POLICY VIOLATION with the grader's message and score 0.
//
// Output for a terminal: GoogleTest's own printer is replaced by one block per failing case
// (wrapped at 80 columns, status word first, no harness file:line), a summary with the status
// words per slot and type, the points, and a rerun command for the first failure of each slot.
// Built twice: for the GPU, and for the CPU emulation backend (SCANGRADE_EMULATED, the *_emu
// binaries), where each case runs in a forked child under several thread orders.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>
#ifndef SCANGRADE_EMULATED
#include <dlfcn.h>
#endif

#include "scangrade/child.h"
#include "scangrade/device_run.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"
#include "scangrade/suite.h"
#ifdef SCANGRADE_EMULATED
#include "scangrade/emulated_run.h"
#include "scangrade/emu_slack.h"
#endif

namespace scangrade::testing {

/// Defined by the binding file this binary links (bind_student.cpp, bind_reference.cpp, ...).
Implementation implementation_under_test();

/// The suite run without --suite or SCANGRADE_SUITE (harness/tests/default_suite.cpp: its path is the
/// build's, so this file compiles to the same object in every build).
extern const char* const kDefaultSuite;

namespace {

std::string g_suite_path = kDefaultSuite;
#ifdef SCANGRADE_EMULATED
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

/// A test's parameter: a suite row, or a placeholder that explains why the slot has no rows.
struct KernelParam {
  Case c;
  std::string placeholder;  // non-empty: "[<dtype>_]not_implemented" or "suite_error"
  std::string detail;
};

void PrintTo(const KernelParam& p, std::ostream* os) { *os << (p.placeholder.empty() ? p.c.id : p.placeholder); }

const Implementation& implementation() {
  static const Implementation impl = implementation_under_test();
  return impl;
}

const Suite& suite() {
  static const Suite s = load_suite(g_suite_path);
  return s;
}

std::map<Slot, std::string> g_not_implemented_at;  // "student/x.cu:N": the not_implemented() call's line
/// A slot whose file is not linked (its starter file stands in): it did not compile
/// (SCANGRADE_COMPILE_ERRORS) or it breaks a build-time rule (SCANGRADE_POLICY_VIOLATIONS).
struct NotLinked {
  Status status;    // CompileError or PolicyViolation
  std::string why;  // compile error: why; policy violation: the grader's message
};
std::map<Slot, NotLinked> g_not_linked;

/// What an n = 0 call of a slot said: "N" + where when it threw NotImplemented, anything else when not.
std::string probe_call(Slot slot, DType dtype) {
  const ScanKind kind = fixed_kind(slot).value_or(ScanKind::Inclusive);
  try {
    if (dtype == DType::Int32) implementation().get<std::int32_t>(slot, kind)(nullptr, nullptr, 0, nullptr);
    else implementation().get<float>(slot, kind)(nullptr, nullptr, 0, nullptr);
  } catch (const NotImplemented& e) {
    return "N" + e.where;
  }
  return "I";
}

/// Whether this process may fork a child that calls a slot. Emulated: always (every case runs in a
/// forked child). GPU: a child forked after the parent initialised CUDA cannot use it, so the probes
/// run in children only while CUDA is untouched here: they run while GoogleTest registers the tests
/// (params_for, from InitGoogleTest), before any test body, and the CUDA runtime loads the driver
/// (libcuda) at its first call, so the driver not loaded yet means no CUDA in this process. When it is
/// loaded (something called CUDA first), the probe runs in this process, as it did before.
bool may_fork_probes() {
#ifdef SCANGRADE_EMULATED
  return true;
#else
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver != nullptr) dlclose(driver);
  return driver == nullptr;
#endif
}

constexpr double kProbeDeadlineS = 5;

/// The starter files throw NotImplemented before touching their arguments: an n = 0 call tells. Each
/// slot and type is called in a forked child of its own (its own process group, its stdout and stderr
/// to /dev/null), all at once under one deadline, so that a slot that exits, aborts, faults, throws
/// something else or hangs at n = 0 costs nothing here: any outcome but NotImplemented (an exit, a
/// signal, another exception, the deadline) is "implemented", and the slot's cases give it its status.
/// Slots that are not linked (g_not_linked) are not called.
bool slot_is_implemented(Slot slot, DType dtype) {
  static std::map<std::pair<Slot, DType>, std::string> said;  // what each probe wrote ("N" + where)
  static bool probed = false;
  if (!probed && may_fork_probes()) {
    probed = true;
    std::map<std::pair<Slot, DType>, Forked> children;
    for (Slot s : kAllSlots)
      for (DType d : kAllDTypes)
        if (!g_not_linked.count(s)) try {  // no probe (fork failed): implemented, its cases tell
            children[{s, d}] = fork_child([s, d] { return probe_call(s, d); }, ForkOptions{true, -1, -1, true});
          } catch (const std::runtime_error&) {
          }
    const auto start = std::chrono::steady_clock::now();
    for (const auto& [which, child] : children) {
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      said[which] = finish_child(child.pid, child.fd, std::max(0.0, kProbeDeadlineS - spent), 4096).output;
    }
  } else if (!probed) {  // GPU, CUDA already in use: in this process (a slot that exits ends the program)
    try {
      said[{slot, dtype}] = probe_call(slot, dtype);
    } catch (...) {
    }
    cudaGetLastError();
  }
  const auto it = said.find({slot, dtype});
  if (it == said.end() || it->second.empty() || it->second[0] != 'N') return true;
  if (it->second.size() > 1) g_not_implemented_at.emplace(slot, it->second.substr(1));
  return false;
}

// --- outcomes and the terminal printer ------------------------------------------------------------

// failure blocks wrap at 80 columns (the summary too), or at the terminal's width when it is narrower
std::size_t g_wrap = 80;

struct Outcome {
  Slot slot;
  DType dtype;
  Status status = Status::Pass;
  bool skipped = false;     // above the emulation cap, or the slot is not implemented
  std::string message;
  double points = 0;
};
std::map<std::string, Outcome> g_outcome;             // "Suite.Test" -> what the case gave
std::map<std::string, std::pair<Slot, DType>> g_test_owner;  // "Suite.Test" -> slot, dtype
std::map<std::pair<Slot, DType>, bool> g_not_implemented;
std::map<Slot, std::size_t> g_timeouts_in_a_row;      // the stop rule (kStopAfterTimeouts)
#ifdef SCANGRADE_EMULATED
std::map<std::string, Case> g_runnable;  // "Suite.Test" -> its case, when it runs a kernel
#endif
std::string g_program = "scangrade_student_test";      // argv[0], for the rerun command

/// `text` broken into lines of at most `width` columns (at spaces where possible), each line after
/// the first indented by `indent`; the message's own line breaks are kept.
std::string wrap(const std::string& text, std::size_t width, const std::string& indent) {
  std::ostringstream out;
  std::istringstream lines(text);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    std::string lead = first ? "" : indent;
    // keep the message's own indentation after ours
    std::size_t own = line.find_first_not_of(' ');
    if (own == std::string::npos) own = line.size();
    const std::string cont = lead + std::string(own, ' ') + "  ";
    std::string rest = line;
    while (lead.size() + rest.size() > width) {
      std::size_t cut = rest.rfind(' ', width - lead.size());
      if (cut == std::string::npos || cut <= own) cut = width - lead.size();
      out << lead << rest.substr(0, cut) << "\n";
      rest = rest.substr(cut);
      rest.erase(0, rest.find_first_not_of(' '));
      lead = cont;
    }
    out << lead << rest << "\n";
    first = false;
  }
  return out.str();
}

std::string plural(std::size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string points_text(double p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

/// The summary's rows fit a terminal of this many columns (one line per type where they would not).
constexpr std::size_t kSummaryColumns = 80;  // g_wrap's default

struct Cell {
  std::size_t passed = 0, cases = 0, skipped = 0;
  std::map<Status, std::size_t> statuses;
};

/// A slot's result for one type, as the summary shows it.
std::string cell_text(Slot slot, DType dtype, const std::map<std::pair<Slot, DType>, Cell>& cells) {
  const auto it = cells.find({slot, dtype});
  std::ostringstream cell;
  if (it == cells.end()) {
    cell << "no cases";
  } else if (const auto nl = g_not_linked.find(slot); nl != g_not_linked.end()) {
    cell << (nl->second.status == Status::CompileError ? "COMPILE ERROR" : "POLICY VIOLATION");
  } else if (g_not_implemented[{slot, dtype}]) {
    cell << "NOT IMPLEMENTED";
  } else if (it->second.cases == 0) {
    cell << "not run";
  } else {
    const Cell& c = it->second;
    cell << c.passed << "/" << c.cases << " passed";
    for (const auto& [status, count] : c.statuses) cell << ", " << count << " " << name(status);
    if (c.skipped) cell << ", " << c.skipped << " skipped";
  }
  return cell.str();
}

class TerminalPrinter : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& info) override {
    const auto it = g_test_owner.find(full_name(info));
    if (it == g_test_owner.end() || started_.count(it->second) || g_not_implemented[it->second] ||
        g_not_linked.count(it->second.first))
      return;
    started_.insert(it->second);
    std::cout << "testing " << name(it->second.first) << " (" << name(it->second.second) << ") ..." << std::endl;
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    const std::string test = full_name(info);
    const auto it = g_outcome.find(test);
    const ::testing::TestResult& r = *info.result();
    if (it == g_outcome.end()) {  // a failure that is not a case's verdict (suite error, gtest itself)
      if (!r.Failed()) return;
      for (int i = 0; i < r.total_part_count(); ++i)
        if (r.GetTestPartResult(i).failed()) std::cout << wrap(r.GetTestPartResult(i).message(), g_wrap, "  ");
      ++unowned_failures_;
      return;
    }
    const Outcome& o = it->second;
    // a compile error or a policy violation is said once, under the summary (its compiler message or
    // the policy's finding came before the tests)
    if (o.skipped || o.status == Status::Pass || o.status == Status::NotImplemented || g_not_linked.count(o.slot))
      return;
    if (o.message.find(": not run: ") != std::string::npos) {  // stopped: said once per slot
      if (!stopped_.insert(o.slot).second) return;
      std::cout << "\n" << wrap(std::string(name(o.status)) + ": " + o.message + "; the slot's other cases are not "
                                 "run either (counted in the summary)", g_wrap, "  ");
      return;
    }
    // the first case of a slot with a status gets the whole message; the next ones a line each
    const std::string text = std::string(name(o.status)) + ": " + o.message;
    if (shown_.insert({o.slot, o.status}).second) {
      std::cout << "\n" << wrap(text, g_wrap, "  ");
    } else {
      const std::string line = text.substr(0, text.find('\n'));
      std::cout << (line.size() > g_wrap ? line.substr(0, g_wrap - 3) + "..." : line) << "\n";
    }
    const std::string filter = info.test_suite_name() + std::string(".") + info.name();
    if (!first_failure_.count(o.slot)) first_failure_[o.slot] = filter;
  }

  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    std::map<std::pair<Slot, DType>, Cell> cells;
    double points = 0, max_points = 0, capped_points = 0;
    std::size_t capped_cases = 0, failed_cases = 0;
    for (const Case& c : suite_or_empty().cases) {
      max_points += c.points;
      cells[{c.slot, c.dtype}];
#ifdef SCANGRADE_EMULATED
      if (c.n > kEmulationMaxN) {  // out of every emulated total, whatever the slot did (make grade's rule)
        ++capped_cases;
        capped_points += c.points;
      }
#endif
    }
    for (const auto& [test, o] : g_outcome) {
      if (o.status == Status::NotImplemented || g_not_linked.count(o.slot)) continue;  // said per slot below
      Cell& cell = cells[{o.slot, o.dtype}];
      ++cell.cases;  // the cases that ran or were skipped (--gtest_filter may leave some out)
      if (o.skipped) {
        ++cell.skipped;
      } else if (o.status == Status::Pass) {
        ++cell.passed;
        points += o.points;
      } else {
        ++cell.statuses[o.status];
        ++failed_cases;
      }
    }

    std::cout << "\nScanGrade summary: " << implementation().name << " on "
              << (kEmulated ? "the CPU emulation backend (emulated: no timings)" : device_description()) << "\n";
    std::map<std::pair<Slot, DType>, std::string> text;
    std::size_t int_width = 5;
    for (Slot slot : kAllSlots)
      for (DType dtype : kAllDTypes) {
        text[{slot, dtype}] = cell_text(slot, dtype, cells);
        if (dtype == DType::Int32) int_width = std::max(int_width, text[{slot, dtype}].size());
      }
    std::size_t widest = 0;  // one row: slot, int32, two spaces, float32
    for (Slot slot : kAllSlots) widest = std::max(widest, 15 + int_width + 2 + text[{slot, DType::Float32}].size());
    if (widest <= kSummaryColumns) {
      std::cout << std::left << std::setw(15) << "slot" << std::setw(int_width + 2) << "int32" << "float32\n";
      for (Slot slot : kAllSlots)
        std::cout << std::setw(15) << name(slot) << std::setw(int_width + 2) << text[{slot, DType::Int32}]
                  << text[{slot, DType::Float32}] << "\n";
    } else {  // a long cell: one line per type, so that no row passes 80 columns
      for (Slot slot : kAllSlots)
        std::cout << std::left << std::setw(15) << name(slot) << "int32    " << text[{slot, DType::Int32}] << "\n"
                  << std::setw(15) << "" << "float32  " << text[{slot, DType::Float32}] << "\n";
    }
    // the same total as `make grade` on this backend: cases above the emulation cap are not in it
    std::string score = "points: " + points_text(points) + " of " + points_text(max_points - capped_points);
    if (capped_cases)
      score += " (emulated: " + plural(capped_cases, "case") + " above the emulation cap of 2^22 + 1 elements, " +
               points_text(capped_points) + " points, run on a GPU only: " + points_text(max_points) + " in all)";
    std::cout << wrap(score, g_wrap, "  ");
    for (const auto& [slot, nl] : g_not_linked)
      std::cout << wrap(std::string(name(slot)) +
                            (nl.status == Status::CompileError
                                 ? ": compile error: " + nl.why
                                 : ": policy violation, 0 points (the grader does not link the file): " + nl.why),
                        g_wrap, "  ");
    std::string not_written;  // where each slot still calls not_implemented(), when the slot said
    for (const auto& [slot, at] : g_not_implemented_at)
      if (!g_not_linked.count(slot)) not_written += std::string(not_written.empty() ? "" : ", ") + at;
    if (!not_written.empty())
      std::cout << wrap("not implemented yet: not_implemented() is called at " + not_written, g_wrap, "  ");
    if (!g_not_linked.empty()) {
      std::size_t compile_errors = 0;
      for (const auto& [slot, nl] : g_not_linked) compile_errors += nl.status == Status::CompileError;
      std::vector<std::string> said;
      if (compile_errors) said.push_back(plural(compile_errors, "slot") + " did not compile");
      if (g_not_linked.size() > compile_errors)
        said.push_back(plural(g_not_linked.size() - compile_errors, "slot") + " broke a rule");
      std::cout << said[0] << (said.size() > 1 ? " and " + said[1] : "")
                << (g_not_linked.size() == 1 ? ": its cases did not run\n" : ": their cases did not run\n");
    }
    if (failed_cases || unowned_failures_) {
      std::cout << plural(failed_cases + unowned_failures_, "case") << " did not pass";
      if (!first_failure_.empty()) std::cout << "; rerun the first failure of a slot with:";
      std::cout << "\n";
      for (const auto& [slot, filter] : first_failure_)
        std::cout << "  " << g_program << " --gtest_filter='" << filter << "'\n";
    }
  }

  static std::string full_name(const ::testing::TestInfo& info) {
    return std::string(info.test_suite_name()) + "." + info.name();
  }
  static const Suite& suite_or_empty() {
    static const Suite empty;
    try {
      return suite();
    } catch (const std::exception&) {
      return empty;
    }
  }

  std::set<std::pair<Slot, DType>> started_;
  std::set<Slot> stopped_;
  std::set<std::pair<Slot, Status>> shown_;
  std::map<Slot, std::string> first_failure_;
  std::size_t unowned_failures_ = 0;
};

// --- parameters --------------------------------------------------------------------------------

std::string param_name_of(const KernelParam& p) {
  return p.placeholder.empty() ? case_label(p.c) : p.placeholder;
}

std::vector<KernelParam> params_for(Slot slot) {
  std::vector<KernelParam> params;
  const std::string suite_name = std::string(camel_name(slot)) + "/Kernel";
  try {
    if (const auto bad = g_not_linked.find(slot); bad != g_not_linked.end()) {
      // its file did not compile or breaks a rule: the slot runs nothing, like the grader's
      // compile_error and policy_violation
      KernelParam p{Case{}, std::string(name(bad->second.status)), bad->second.why};
      p.c.slot = slot;
      p.c.dtype = DType::Int32;
      for (const Case& c : suite().cases)
        if (c.slot == slot) p.c.points += c.points;
      g_test_owner[suite_name + ".Case/" + param_name_of(p)] = {slot, DType::Int32};
      params.push_back(p);
      return params;
    }
    std::vector<DType> missing;  // dtypes with cases whose slot still throws NotImplemented (slot_is_implemented: where)
    for (DType dtype : kAllDTypes) {
      const bool implemented = slot_is_implemented(slot, dtype);
      for (const Case& c : suite().cases) {
        if (c.slot != slot || c.dtype != dtype) continue;
        if (!implemented) {
          missing.push_back(dtype);
          break;
        }
        params.push_back({c, "", ""});
        g_test_owner[suite_name + ".Case/" + case_label(c)] = {slot, dtype};
#ifdef SCANGRADE_EMULATED
        if (c.n <= kEmulationMaxN) g_runnable[suite_name + ".Case/" + case_label(c)] = c;
#endif
      }
    }
    // One line per slot when nothing is written yet; one per dtype when only one is missing.
    for (DType dtype : missing) {
      const bool both = missing.size() == 2;
      KernelParam p{Case{}, both ? "not_implemented" : std::string(name(dtype)) + "_not_implemented",
                    (g_not_implemented_at.count(slot) ? g_not_implemented_at[slot] : std::string(student_file(slot))) +
                        (both ? "" : " (" + std::string(name(dtype)) + ")") +
                        " still calls not_implemented(): fill in the slot"};
      p.c.slot = slot;
      p.c.dtype = dtype;
      for (DType d : missing) g_not_implemented[{slot, d}] = true;
      g_test_owner[suite_name + ".Case/" + param_name_of(p)] = {slot, dtype};
      params.push_back(p);
      if (both) break;
    }
  } catch (const std::exception& e) {
    params.clear();
    params.push_back({Case{}, "suite_error", e.what()});
  }
  return params;
}

std::string param_name(const ::testing::TestParamInfo<KernelParam>& info) { return param_name_of(info.param); }

// --- the test body -------------------------------------------------------------------------------

std::string g_broken_by;  // the case that left the CUDA context unusable, if any

#ifdef SCANGRADE_EMULATED
/// Emulated: the case runs in a forked child (a spinning kernel or a segfault costs only this
/// case) under several thread orders (emulated_run.h). The child makes the input and the oracle's
/// result too, so that several cases can run at once (see Prefetch).
template <typename T>
std::string case_in_child(const Case& c) {
  const std::vector<T> input = make_input<T>(c);
  const std::vector<double> expected = oracle_scan(input, c.kind);
  // judged as the grader judges it: the cases memcheck checks on a GPU watch for writes next to the
  // slot's own allocations, and the thread orders decide as order_verdict says (check.h)
  const bool memchecked = std::find(c.sanitize.begin(), c.sanitize.end(), "memcheck") != c.sanitize.end();
  const auto call = [&](bool reverse) {
    emu::watch_slack(memchecked);
    set_reverse_only(reverse);
    RunRecord<T> run = run_emulated(implementation().get<T>(c.slot, c.kind), input);
    set_reverse_only(false);
    if (run.error.empty() && !run.not_implemented) run.stray_write = emu::slack_write();
    emu::watch_slack(false);
    return run;
  };
  RunRecord<T> run = call(false);
  const std::string race = std::exchange(run.race, "");
  const Verdict v = order_verdict(c, judge(c, input, expected, run), race, [&]() -> std::optional<Verdict> {
    RunRecord<T> again = call(true);
    again.race.clear();
    return judge(c, input, expected, again);
  });
  return std::string(name(v.status)) + "\n" + v.message;
}

StartedChild start_case(const Case& c) {
  return start_isolated([c] { return c.dtype == DType::Int32 ? case_in_child<std::int32_t>(c) : case_in_child<float>(c); });
}


/// SCANGRADE_TEST_JOBS=J (set by `make test`'s driver from --jobs): up to J cases' children run at
/// once. The tests still run one after another in GoogleTest's order (the screen, the stop rule and
/// every verdict as with J = 1): while a case's child is awaited, the children of the next cases in
/// that order are already running; a started case that the stop rule then does not run is killed.
/// Each child's deadline counts from when its result is awaited, as without prefetching. A child that
/// has finished no longer holds a core: while a long case is awaited, the cores its successors freed
/// start the cases after them (at most kAhead × J children started and not yet awaited). Off (J = 1)
/// under --gtest_shuffle or --gtest_repeat, whose order is not known ahead.
class Prefetch {
 public:
  static Prefetch& get() {
    static Prefetch p;
    return p;
  }

  Isolated run(const std::string& test, const Case& c) {
    if (!planned_) plan();
    top_up(test);
    const double deadline = default_deadline_s(c.n, true);
    const auto it = started_.find(test);
    Isolated result;
    if (it == started_.end()) {
      result = finish_isolated(start_case(c), deadline);
    } else {
      const StartedChild child = it->second;
      started_.erase(it);
      result = finish_isolated(child, deadline - keep_busy(test, child, deadline));
    }
    // the whole deadline (not what was left of it), and the slot's likely causes
    if (result.status == Status::Timeout) result.message = timeout_message(deadline, c.slot);
    return result;
  }

  ~Prefetch() {  // cases started that never ran (--gtest_fail_fast stopped early): not left running
    for (const auto& [test, child] : started_) abandon_isolated(child);
  }

  /// A case that will not run after all (the stop rule): its child, if started, is killed.
  void drop(const std::string& test) {
    if (const auto it = started_.find(test); it != started_.end()) {
      abandon_isolated(it->second);
      started_.erase(it);
    }
  }

 private:
  void plan() {
    planned_ = true;
    const char* env = std::getenv("SCANGRADE_TEST_JOBS");
    if (env != nullptr) jobs_ = std::max(1L, std::strtol(env, nullptr, 10));
    if (GTEST_FLAG_GET(shuffle) || GTEST_FLAG_GET(repeat) != 1) jobs_ = 1;
    if (jobs_ <= 1) return;
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
      const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
      if (!suite.should_run()) continue;
      for (int j = 0; j < suite.total_test_count(); ++j) {
        const ::testing::TestInfo& info = *suite.GetTestInfo(j);
        const std::string test = std::string(info.test_suite_name()) + "." + info.name();
        if (info.should_run() && g_runnable.count(test)) order_.push_back(test);
      }
    }
  }

  /// Starts the children of the cases after `test` in the planned order, up to jobs_ running at once
  /// (`awaited`: a running child no longer in started_).
  void top_up(const std::string& test, std::size_t awaited = 0) {
    if (jobs_ <= 1) return;
    const auto at = std::find(order_.begin(), order_.end(), test);
    if (at == order_.end()) return;
    std::size_t running = awaited;
    for (const auto& [name, child] : started_) running += !has_finished(child);
    for (auto next = at; next != order_.end() && running < jobs_ && started_.size() < kAhead * jobs_; ++next) {
      if (started_.count(*next) || done_.count(*next)) continue;
      const Case& c = g_runnable.at(*next);
      if (g_timeouts_in_a_row[c.slot] > 0) break;  // a slot timing out: no guessing past its stop rule
      started_[*next] = start_case(c);
      ++running;
    }
    done_.insert(test);
  }

  /// Waits until the awaited child has written its result (or the deadline passed), starting later
  /// cases whenever one of the started children finishes; returns the seconds waited.
  double keep_busy(const std::string& test, const StartedChild& child, double deadline_s) {
    const auto start = std::chrono::steady_clock::now();
    auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    if (jobs_ <= 1) return 0;
    while (waited() < deadline_s) {
      pollfd p{child.fd, POLLIN, 0};
      const int ready = poll(&p, 1, 20);
      if (ready > 0 || (ready < 0 && errno != EINTR)) break;
      top_up(test, 1);
    }
    return std::min(waited(), deadline_s);
  }

  /// A child that has written its result or exited (its pipe readable or closed): its core is free.
  static bool has_finished(const StartedChild& child) {
    pollfd p{child.fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
  }

  static constexpr std::size_t kAhead = 4;

  bool planned_ = false;
  std::size_t jobs_ = 1;
  std::vector<std::string> order_;
  std::map<std::string, StartedChild> started_;
  std::set<std::string> done_;
};

template <typename T>
Verdict run_case(const Case& c) {
  const ::testing::TestInfo& info = *::testing::UnitTest::GetInstance()->current_test_info();
  const Isolated child = Prefetch::get().run(std::string(info.test_suite_name()) + "." + info.name(), c);
  // what the slot printed (a kernel's printf), here in the order of the cases, before the verdict
  std::cout << child.output << std::flush;
  if (!child.errors_quoted) std::cerr << child.errors << std::flush;  // a crash's message quotes it otherwise
  if (!child.finished) return {child.status, c.id + ": " + child.message};
  const auto split = child.payload.find('\n');
  const std::optional<Status> status = parse_status(child.payload.substr(0, split));
  if (!status) return {Status::InternalError, c.id + ": unreadable result from the test child: " + child.payload};
  return {*status, split == std::string::npos ? "" : child.payload.substr(split + 1)};
}
#else
template <typename T>
Verdict run_case(const Case& c) {
  const std::vector<T> input = make_input<T>(c);
  const std::vector<double> expected = oracle_scan(input, c.kind);
  const RunRecord<T> run = run_on_device(implementation().get<T>(c.slot, c.kind), input);
  if (run.context_broken) g_broken_by = c.id;
  return judge(c, input, expected, run);
}
#endif

class Kernel : public ::testing::TestWithParam<KernelParam> {};

/// Records what a case gave, for the printer and the summary.
void record(const KernelParam& p, Status status, const std::string& message, bool skipped = false) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  g_outcome[std::string(info->test_suite_name()) + "." + info->name()] =
      Outcome{p.c.slot, p.c.dtype, status, skipped, message, p.c.points};
}

TEST_P(Kernel, Case) {
  const KernelParam& p = GetParam();
  if (p.placeholder == "suite_error") FAIL() << "cannot load the suite: " << p.detail;
  if (p.placeholder == "compile_error") {
    record(p, Status::CompileError, std::string(student_file(p.c.slot)) + ": " + p.detail +
                                        " (every case of the slot scores 0, as in the grader)");
    FAIL() << "compile_error";
  }
  if (p.placeholder == "policy_violation") {
    record(p, Status::PolicyViolation,
           p.detail + " (the grader does not link the file: every case of the slot scores 0)");
    FAIL() << "policy_violation";
  }
  if (p.placeholder.find("not_implemented") != std::string::npos) {
    record(p, Status::NotImplemented, p.detail);
    GTEST_SKIP() << "NOT IMPLEMENTED: " << p.detail;
  }
  if (const auto why = device_unavailable()) {
    const char* backend = std::getenv("SCANGRADE_BACKEND");
    if (backend && std::string(backend) == "gpu") FAIL() << "SCANGRADE_BACKEND=gpu insists on a GPU, but: " << *why;
    GTEST_SKIP() << "GPU test skipped: " << *why << " (make test uses the emulation backend then)";
  }
  const Case& c = p.c;
  if (!g_broken_by.empty()) {
    record(p, Status::Crash, c.id + ": not run: case " + g_broken_by +
                                 " left the CUDA context unusable (a sticky error such as an illegal address); "
                                 "fix that case first");
    FAIL() << "crash";
  }
#ifdef SCANGRADE_EMULATED
  if (c.n > kEmulationMaxN) {
    const std::string why = "n = " + std::to_string(c.n) + " is above the emulation cap of " +
                            std::to_string(kEmulationMaxN) + " (2^22 + 1) elements: this case runs on a GPU only";
    record(p, Status::Pass, why, true);
    GTEST_SKIP() << why;
  }
#endif
  // the grader's stop rule: after kStopAfterTimeouts timeouts in a row, the slot's other cases are
  // timeouts without running (each would wait out its deadline)
  std::size_t& timeouts = g_timeouts_in_a_row[c.slot];
  if (timeouts >= kStopAfterTimeouts) {
#ifdef SCANGRADE_EMULATED
    Prefetch::get().drop(std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) +
                         "." + ::testing::UnitTest::GetInstance()->current_test_info()->name());
#endif
    ++timeouts;
    record(p, Status::Timeout, c.id + ": not run: the " + std::to_string(kStopAfterTimeouts) +
                                   " previous cases of this slot timed out (the grader, too, stops a slot after " +
                                   std::to_string(kStopAfterTimeouts) + " timeouts in a row)");
    FAIL() << "timeout";
  }
  const Verdict v = c.dtype == DType::Int32 ? run_case<std::int32_t>(c) : run_case<float>(c);
  timeouts = v.status == Status::Timeout ? timeouts + 1 : 0;
  record(p, v.status, v.message);
  if (v.status == Status::NotImplemented) GTEST_SKIP() << "NOT IMPLEMENTED: " << v.message;
  if (v.status != Status::Pass) FAIL() << name(v.status);
}

INSTANTIATE_TEST_SUITE_P(HillisSteele, Kernel, ::testing::ValuesIn(params_for(Slot::HillisSteele)), param_name);
INSTANTIATE_TEST_SUITE_P(Blelloch, Kernel, ::testing::ValuesIn(params_for(Slot::Blelloch)), param_name);
INSTANTIATE_TEST_SUITE_P(Hierarchical, Kernel, ::testing::ValuesIn(params_for(Slot::Hierarchical)), param_name);
INSTANTIATE_TEST_SUITE_P(SinglePass, Kernel, ::testing::ValuesIn(params_for(Slot::SinglePass)), param_name);

}  // namespace
}  // namespace scangrade::testing

int main(int argc, char** argv) {
  // Load every kernel at context creation, so module loading is not mistaken for a leak.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  if (const char* env = std::getenv("SCANGRADE_SUITE")) scangrade::testing::g_suite_path = env;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--suite=", 0) == 0) scangrade::testing::g_suite_path = arg.substr(8);
  }
  // "slot=why;slot=why": slots whose file did not compile (tools/student_test.py)
  if (const char* env = std::getenv("SCANGRADE_COMPILE_ERRORS")) {
    std::istringstream entries(env);
    std::string entry;
    while (std::getline(entries, entry, ';')) {
      const auto eq = entry.find('=');
      for (scangrade::Slot slot : scangrade::kAllSlots)
        if (entry.substr(0, eq) == scangrade::name(slot))
          scangrade::testing::g_not_linked[slot] = {scangrade::Status::CompileError,
                                                    eq == std::string::npos ? "did not compile" : entry.substr(eq + 1)};
    }
  }
  // "slot=message\nslot=message": slots whose file breaks a build-time rule (tools/student_test.py; the
  // grader's message may hold ';'); a slot that is also a compile error shows the violation, as in the grader
  if (const char* env = std::getenv("SCANGRADE_POLICY_VIOLATIONS")) {
    std::istringstream entries(env);
    std::string entry;
    while (std::getline(entries, entry, '\n')) {
      const auto eq = entry.find('=');
      for (scangrade::Slot slot : scangrade::kAllSlots)
        if (entry.substr(0, eq) == scangrade::name(slot))
          scangrade::testing::g_not_linked[slot] = {
              scangrade::Status::PolicyViolation,
              eq == std::string::npos ? "breaks a rule of the assignment" : entry.substr(eq + 1)};
    }
  }
  if (argc > 0) scangrade::testing::g_program = argv[0];
  winsize terminal{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &terminal) == 0 && terminal.ws_col >= 40)
    scangrade::testing::g_wrap = std::min<std::size_t>(scangrade::testing::g_wrap, terminal.ws_col);
  ::testing::InitGoogleTest(&argc, argv);
  if (scangrade::testing::kEmulated)
    std::cout << scangrade::testing::wrap("ScanGrade: running the kernels on the CPU emulation backend (no GPU used; "
                                          "results are labelled emulated, sizes above 2^22 + 1 are skipped)",
                                          scangrade::testing::g_wrap, "");
  // GoogleTest's printer (harness file:line on every failure, a closing list of every failed case)
  // gives way to ours; SCANGRADE_GTEST_PRINTER=1 keeps it (for debugging the harness).
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  const char* keep = std::getenv("SCANGRADE_GTEST_PRINTER");
  if (!(keep && std::string(keep) == "1")) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new scangrade::testing::TerminalPrinter);
  return RUN_ALL_TESTS();
}
