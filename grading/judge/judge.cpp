// The judge (judge.h): suites -> inputs and oracle -> worker -> verdicts -> results.json.
#include "judge.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "process.h"
#include "protocol.h"
#include "sanitizer_xml.h"
#include "scangrade/check.h"
#include "scangrade/inputs.h"
#include "scangrade/oracle.h"
#include "scangrade/status.h"
#include "scangrade/suite.h"
#include "scoring.h"
#include "sha256.h"

#ifndef SCANGRADE_VERSION
#define SCANGRADE_VERSION "0.0.0"
#endif

namespace scangrade::grader {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kEmulationSanitizerReason =
    "emulation backend: compute-sanitizer does not run; every case up to 65536 elements runs under forward, reverse "
    "and random thread orders instead, and differing results are reported as race";
constexpr const char* kTimeoutHint = "the kernel may spin forever, e.g. waiting for a tile that never started";

// --- small helpers ---------------------------------------------------------------------------------

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f" : "%.0f", s);
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string random_hex(std::size_t bytes) {
  std::string hex;
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::random_device fallback;
  for (std::size_t i = 0; i < bytes; ++i) {
    unsigned char b = 0;
    if (!urandom.read(reinterpret_cast<char*>(&b), 1)) b = static_cast<unsigned char>(fallback());
    static const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

/// The last `lines` lines of text (at most 2000 characters).
std::string tail_lines(const std::string& text, std::size_t lines) {
  std::string t = trim(text);
  std::size_t at = t.size();
  for (std::size_t i = 0; i < lines && at > 0; ++i) {
    const std::size_t nl = t.rfind('\n', at - 1);
    if (nl == std::string::npos) {
      at = 0;
      break;
    }
    at = nl;
  }
  std::string tail = t.substr(at == 0 ? 0 : at + 1);
  if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
  return tail;
}

std::uintmax_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

/// Text appended to `path` since byte `from`.
std::string read_from(const std::string& path, std::uintmax_t from) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(from));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// --- records ----------------------------------------------------------------------------------------

/// One case to grade, with where it came from.
struct Entry {
  const Suite* suite = nullptr;
  Case c;                   // as written (c.seed is what results record)
  Case input_case;          // the case whose seed makes the input (the secret mixed in when hidden)
};

struct CaseResult {
  Status status = Status::InternalError;
  std::string message;
  double duration_s = 0;
  json timing = nullptr;
  json sanitizer = nullptr;
};

/// What the judge makes for a case before a worker runs it: the input and the oracle's output
/// (made ahead, on another thread, while the worker runs the previous case).
struct CaseData {
  std::vector<std::int32_t> input_i;
  std::vector<float> input_f;
  std::vector<double> expected;
  std::string error;  // why they could not be made
};

CaseData make_case_data(const Entry& e) {
  CaseData d;
  try {
    if (e.c.dtype == DType::Float32) {
      d.input_f = make_input<float>(e.input_case);
      d.expected = oracle_scan(d.input_f, e.c.kind);
    } else {
      d.input_i = make_input<std::int32_t>(e.input_case);
      d.expected = oracle_scan(d.input_i, e.c.kind);
    }
  } catch (const std::exception& ex) {
    d.error = ex.what();
  }
  return d;
}

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
  json reply;
  std::string message;
};

// --- the grading session -------------------------------------------------------------------------------

class Session {
 public:
  Session(const Options& o, std::string channel) : o_(o), dir_(std::move(channel)) {
    log_path_ = dir_ + "/student.log";
    sanitizer_log_path_ = dir_ + "/sanitizer.log";
  }
  ~Session() { worker_.reset(); }

  const json& hello() const { return hello_; }
  std::vector<std::string>& errors() { return errors_; }
  const std::string& log_path() const { return log_path_; }

  void set_budget(Clock::time_point start, double budget_s) {
    budget_end_ = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget_s));
  }
  bool budget_exhausted() const { return Clock::now() >= budget_end_; }
  /// Seconds spent waiting for --gpu-lock, and timing with it held exclusively, so far.
  double lock_wait_s() const { return lock_wait_s_; }
  double timing_s() const { return timing_s_; }
  /// Seconds spent preparing timed inputs on the device (GPU shared), so far.
  double prepare_s() const { return prepare_s_; }

  /// Default deadline of a case (seconds): gpu 10 s + 50 ns n, emulate 20 s + 3 us n; a suite's
  /// timeout_s replaces it; both are multiplied by --timeout-scale.
  double case_deadline_s(const Case& c) const {
    const double n = static_cast<double>(c.n);
    double base = c.timeout_s > 0 ? c.timeout_s : (o_.backend == "gpu" ? 10.0 + 50e-9 * n : 20.0 + 3e-6 * n);
    return base * o_.timeout_scale;
  }
  double hello_deadline_s(bool sanitized) const { return (sanitized ? 120.0 : 60.0) * o_.timeout_scale; }

  /// The functional run of one case, with its input and oracle output.
  CaseResult grade(const Entry& e, CaseData data) {
    CaseResult r;
    if (!data.error.empty())
      harness_fault(r, "cannot make the input or the expected output of case '" + e.c.id + "': " + data.error);
    else if (e.c.dtype == DType::Float32) grade_typed<float>(e, data.input_f, data.expected, r);
    else grade_typed<std::int32_t>(e, data.input_i, data.expected, r);
    return r;
  }

  /// Times the passed perf cases (results[i].timing), one after another, holding the GPU lock
  /// exclusively for all of them; baselines come from and go to --baseline-cache when given.
  void time_cases(const std::vector<Entry>& entries, std::vector<CaseResult>& results);

  /// One compute-sanitizer process running `tool` over `cases` (each a "check" command), one
  /// after another.
  ToolRun run_tool(const std::string& tool, const std::vector<const Entry*>& cases,
                   const std::string& compute_sanitizer);

  /// Ends the worker (it may finish its output) and kills the spare workers.
  void shutdown() {
    spares_.clear();
    if (!worker_) return;
    worker_->close_stdin();
    worker_->wait_exit(after(2.0));
    worker_.reset();
  }

 private:
  template <typename T>
  void grade_typed(const Entry& e, const std::vector<T>& input, const std::vector<double>& expected, CaseResult& r);
  void time_case(const Entry& e, CaseResult& r, json& cache, bool& cache_changed);
  /// "prepare" for the cases about to be timed, with the GPU shared (prepare_s counts it).
  void prepare_timed(const std::vector<Entry>& entries, const std::vector<std::size_t>& todo);
  /// A "prepare" or "time" command: the case and what makes its input.
  json timed_command(const char* mode, const Entry& e);

  /// Takes --gpu-lock (when given) in `mode` into `lock`; the wait is not the submission's time.
  /// Returns "" or what went wrong.
  std::string take_gpu(GpuLock::Mode mode, std::optional<GpuLock>& lock) {
    if (o_.gpu_lock.empty()) return "";
    try {
      lock.emplace(o_.gpu_lock, mode);
    } catch (const std::exception& ex) {
      return ex.what();
    }
    lock_wait_s_ += lock->waited_s();
    if (budget_end_ != Clock::time_point::max())
      budget_end_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(lock->waited_s()));
    return "";
  }

  /// A live worker, or the verdict for the case that needed one.
  bool ensure_worker(CaseResult& r);
  /// Sends a command and waits for its reply (k and nonce checked).
  /// on_ran: called when the worker says the GPU part of the command is over ("stage": "ran").
  Exchange exchange(WorkerProcess& w, const json& command, double deadline_s, bool budget_capped,
                    const std::string& log_path, const std::function<void()>& on_ran = nullptr);
  /// Kills the worker after a crash, a timeout, a garbled reply or a broken CUDA context.
  void drop_worker() {
    worker_.reset();
    ++lost_workers_;
    warm_spares();
  }
  /// Once workers are being lost, keeps up to kMaxSpares started ahead of need, so that the next
  /// case does not wait for a CUDA context to start. (On an H100 under a 16-judge batch this did
  /// not shorten a submission that crashes on every case: about 2 s per case either way, so the
  /// cost is elsewhere, likely the crashed process's teardown.)
  void warm_spares();

  /// The worker's input file for command k.
  template <typename T>
  std::string write_input(std::uint64_t k, const std::vector<T>& input) {
    return write_file_atomic(input_path(dir_, k), input.data(), input.size() * sizeof(T));
  }
  json command(std::uint64_t k, const std::string& nonce, const char* mode, const Case& c) const {
    return {{"k", k},       {"nonce", nonce},          {"mode", mode}, {"slot", std::string(name(c.slot))},
            {"dtype", std::string(name(c.dtype))}, {"kind", std::string(name(c.kind))}, {"n", c.n}};
  }
  void harness_fault(CaseResult& r, const std::string& what) {
    r.status = Status::InternalError;
    r.message = what + " (harness fault: please report)";
    errors_.push_back(r.message);
  }
  void from_exchange(const Exchange& x, CaseResult& r) {
    r.status = x.kind == Exchange::Timeout ? Status::Timeout
               : x.kind == Exchange::Harness ? Status::InternalError
                                             : Status::Crash;
    r.message = x.message;
    if (x.kind == Exchange::Harness) errors_.push_back(x.message);
  }

  const Options& o_;
  std::string dir_, log_path_, sanitizer_log_path_;
  std::unique_ptr<WorkerProcess> worker_;
  struct Spare {
    std::unique_ptr<WorkerProcess> process;
    std::uintmax_t log_from = 0;  // the log's size when it started (for the tail of a failed start)
  };
  static constexpr std::size_t kMaxSpares = 4;
  std::deque<Spare> spares_;
  int lost_workers_ = 0;
  json hello_ = nullptr;
  std::vector<std::string> errors_;
  std::uint64_t next_k_ = 1;
  int failed_starts_ = 0;                  // consecutive workers that did not say hello
  std::optional<CaseResult> start_broken_; // after two failed starts in a row: every later case
  Clock::time_point budget_end_ = Clock::time_point::max();
  double lock_wait_s_ = 0, timing_s_ = 0, prepare_s_ = 0;
};

/// Reads the hello line; "" when it is fine, else the message (and sets status).
std::string read_hello(WorkerProcess& w, double deadline_s, const std::string& log_path, std::uintmax_t log_from,
                       json& hello, Status& status) {
  std::string line;
  const auto got = w.read_line(line, after(deadline_s));
  status = Status::Crash;
  if (got == WorkerProcess::Read::Timeout) {
    w.kill_group();
    return "the worker did not start: no hello within " + format_seconds(deadline_s) +
           " s (something in the submission may hang while the program starts)";
  }
  if (got == WorkerProcess::Read::Eof) {
    const auto info = w.wait_exit(after(2.0));
    const ExitInfo end = info ? *info : w.kill_group();
    std::string msg = "the worker died while starting: " + end.describe();
    const std::string tail = tail_lines(read_from(log_path, log_from), 10);
    if (!tail.empty()) msg += "\n  last lines of the program's output:\n" + tail;
    return msg;
  }
  if (got == WorkerProcess::Read::Overlong) {
    w.kill_group();
    return "the worker's hello was incomplete or garbled (an over-long line)";
  }
  try {
    hello = json::parse(line);
  } catch (const json::exception&) {
    hello = nullptr;
  }
  if (!hello.is_object() || hello.value("hello", 0) != 1 || !hello.contains("error") || !hello["error"].is_string()) {
    w.kill_group();
    hello = nullptr;
    return "the worker's hello was incomplete or garbled";
  }
  for (const char* key : {"device", "driver", "cuda_runtime"})
    if (!hello.contains(key) || !hello[key].is_string()) hello[key] = "";
  if (!hello["error"].get<std::string>().empty()) {
    status = Status::InternalError;
    return "the worker cannot run kernels on this machine: " + hello["error"].get<std::string>();
  }
  return "";
}

bool Session::ensure_worker(CaseResult& r) {
  if (worker_) return true;
  if (start_broken_) {
    r.status = start_broken_->status;
    r.message = start_broken_->message;
    return false;
  }
  std::uintmax_t log_from = 0;
  if (!spares_.empty()) {  // started earlier: its CUDA context may be up already
    worker_ = std::move(spares_.front().process);
    log_from = spares_.front().log_from;
    spares_.pop_front();
  } else {
    log_from = file_size_or_zero(log_path_);
    try {
      worker_ = std::make_unique<WorkerProcess>(std::vector<std::string>{o_.worker, "--channel", dir_}, log_path_);
    } catch (const std::exception& ex) {
      harness_fault(r, std::string("cannot start the worker: ") + ex.what());
      start_broken_ = r;
      return false;
    }
  }
  json h;
  Status status;
  const std::string problem = read_hello(*worker_, hello_deadline_s(false), log_path_, log_from, h, status);
  if (problem.empty()) {
    hello_ = h;
    failed_starts_ = 0;
    warm_spares();
    return true;
  }
  worker_.reset();
  spares_.clear();  // started the same way: they would fail the same way
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

void Session::warm_spares() {
  if (start_broken_) return;
  const std::size_t want = std::min(kMaxSpares, static_cast<std::size_t>(lost_workers_));
  while (spares_.size() < want) {
    Spare spare;
    spare.log_from = file_size_or_zero(log_path_);
    try {
      spare.process =
          std::make_unique<WorkerProcess>(std::vector<std::string>{o_.worker, "--channel", dir_}, log_path_);
    } catch (const std::exception&) {
      return;  // ensure_worker reports it when it has to start one itself
    }
    spares_.push_back(std::move(spare));
  }
}

Exchange Session::exchange(WorkerProcess& w, const json& cmd, double deadline_s, bool budget_capped,
                           const std::string& log_path, const std::function<void()>& on_ran) {
  Exchange x;
  const std::uintmax_t log_from = file_size_or_zero(log_path);
  const auto died = [&](const ExitInfo& end) {
    x.kind = Exchange::Died;
    x.message = "worker died: " + end.describe();
    const std::string tail = tail_lines(read_from(log_path, log_from), 10);
    if (!tail.empty()) x.message += "\n  last lines of the program's output:\n" + tail;
  };
  if (!w.send(cmd.dump())) {
    const auto info = w.wait_exit(after(2.0));
    died(info ? *info : w.kill_group());
    return x;
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
                                : "no reply within " + format_seconds(deadline_s) + " s: " + kTimeoutHint;
      return x;
    }
    if (got == WorkerProcess::Read::Eof) {
      const auto info = w.wait_exit(after(2.0));
      if (info) died(*info);
      else {
        w.kill_group();
        x.kind = Exchange::Garbled;
        x.message = "the worker's reply was incomplete or garbled (it closed its reply channel without exiting)";
      }
      return x;
    }
    x.kind = Exchange::Garbled;
    x.message = "the worker's reply was incomplete or garbled";
    if (got == WorkerProcess::Read::Overlong) return x;
    try {
      x.reply = json::parse(line);
    } catch (const json::exception&) {
      return x;
    }
    if (!x.reply.is_object() || x.reply.value("k", json()) != cmd["k"] || x.reply.value("nonce", json()) != cmd["nonce"]) {
      x.message += " (its k or nonce does not match the command)";
      return x;
    }
    // {"k", "nonce", "stage": "ran"}: the GPU part of a check is over (at most once, then the reply)
    if (x.reply.contains("stage")) {
      if (ran_seen || x.reply["stage"] != "ran") {
        x.message += " (an unexpected stage line)";
        return x;
      }
      ran_seen = true;
      if (on_ran) on_ran();
      continue;
    }
    break;
  }
  const json he = x.reply.value("harness_error", json(""));
  if (!he.is_string()) return x;
  if (!he.get<std::string>().empty()) {
    x.kind = Exchange::Harness;
    x.message = "the worker could not run the case: " + he.get<std::string>() + " (harness fault: please report)";
    return x;
  }
  x.kind = Exchange::Reply;
  x.message.clear();
  return x;
}

template <typename T>
void Session::grade_typed(const Entry& e, const std::vector<T>& input, const std::vector<double>& expected,
                          CaseResult& r) {
  const Case& c = e.c;
  const std::uint64_t k = next_k_++;
  const std::string nonce = random_hex(16);
  if (const std::string why = write_input(k, input); !why.empty()) {
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
  // deadline: the case's, cut at the submission's budget
  double deadline = case_deadline_s(c);
  bool capped = false;
  const double left = std::chrono::duration<double>(budget_end_ - Clock::now()).count();
  if (left < deadline) {
    deadline = std::max(left, 0.0);
    capped = true;
  }
  const Exchange x = exchange(*worker_, command(k, nonce, "check", c), deadline, capped, log_path_,
                              [&gpu] { gpu.reset(); });
  gpu.reset();
  std::remove(input_path(dir_, k).c_str());
  if (x.kind != Exchange::Reply) {
    from_exchange(x, r);
    drop_worker();
    std::remove(output_path(dir_, k).c_str());
    return;
  }

  // the reply, fail closed
  const json& j = x.reply;
  const auto garbled = [&](const std::string& why) {
    r.status = Status::Crash;
    r.message = "the worker's reply was incomplete or garbled (" + why + ")";
    drop_worker();
    std::remove(output_path(dir_, k).c_str());
  };
  const bool typed = j.contains("not_implemented") && j["not_implemented"].is_boolean() && j.contains("error") &&
                     j["error"].is_string() && j.contains("context_broken") && j["context_broken"].is_boolean() &&
                     j.contains("leaked_bytes") && j["leaked_bytes"].is_number_integer() &&
                     j.contains("leak_detail") && j["leak_detail"].is_string() && j.contains("out_bytes") &&
                     j["out_bytes"].is_number_unsigned();
  if (!typed) return garbled("a field is missing or has the wrong type");
  RunRecord<T> run;
  run.not_implemented = j["not_implemented"].get<bool>();
  run.error = j["error"].get<std::string>();
  run.context_broken = j["context_broken"].get<bool>();
  run.leaked_bytes = j["leaked_bytes"].get<std::int64_t>();
  run.leak_detail = j["leak_detail"].get<std::string>();
  if (j.contains("race")) {  // emulation workers: results differ between thread orders
    if (!j["race"].is_string()) return garbled("field 'race' is not a string");
    run.race = j["race"].get<std::string>();
  }
  if (!run.not_implemented && run.error.empty()) {
    const std::uint64_t bytes = output_bytes(c.n);
    if (j["out_bytes"].get<std::uint64_t>() != bytes)
      return garbled("out_bytes " + j["out_bytes"].dump() + ", expected " + std::to_string(bytes));
    // straight into the record's vectors: no staging copy of what may be half a gigabyte
    run.output.resize(c.n);
    run.guard_before.resize(kGuardElements);
    run.guard_after.resize(kGuardElements);
    run.input_after.resize(c.n);
    const auto part = [](std::vector<T>& v) { return Part{v.data(), v.size() * sizeof(T)}; };
    const std::string why = read_parts(
        output_path(dir_, k), {part(run.output), part(run.guard_before), part(run.guard_after), part(run.input_after)});
    if (!why.empty()) return garbled("the output file: " + why.substr(why.rfind('/') + 1));
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

/// The baseline cache's key of a case: the device, the harness version and everything that makes
/// the input.
std::string baseline_key(const std::string& device, const Entry& e) {
  const Case& c = e.input_case;
  return device + " | scangrade " + SCANGRADE_VERSION + " | " + c.id + " | " + std::string(name(c.slot)) + " " +
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

}  // namespace

void Session::time_cases(const std::vector<Entry>& entries, std::vector<CaseResult>& results) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].c.perf && results[i].status == Status::Pass) todo.push_back(i);
  if (todo.empty()) return;
  prepare_timed(entries, todo);
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
  if (cache_changed) {
    const json file = {{"version", 1},
                       {"about", "scangrade_judge --baseline-cache: medians (ms) of the reference, CUB and a "
                                 "device-to-device copy per device, harness version and case"},
                       {"baselines", cache}};
    const std::string text = file.dump(1) + "\n";
    if (const std::string why = write_file_atomic(o_.baseline_cache, text.data(), text.size()); !why.empty())
      std::cerr << "scangrade_judge: cannot update the baseline cache: " << why << "\n";
  }
  timing_s_ += seconds_since(start);
}

void Session::prepare_timed(const std::vector<Entry>& entries, const std::vector<std::size_t>& todo) {
  CaseResult unused;
  if (!ensure_worker(unused)) return;
  std::optional<GpuLock> gpu;
  if (!take_gpu(GpuLock::Shared, gpu).empty()) return;
  const auto start = Clock::now();
  for (std::size_t i : todo) {
    json cmd = timed_command("prepare", entries[i]);
    const Exchange x = exchange(*worker_, cmd, case_deadline_s(entries[i].c), false, log_path_);
    if (x.kind != Exchange::Reply) {  // only harness code ran: "time" makes its input itself
      drop_worker();
      break;
    }
  }
  prepare_s_ += seconds_since(start);
}

json Session::timed_command(const char* mode, const Entry& e) {
  json cmd = command(next_k_++, random_hex(16), mode, e.c);
  cmd["id"] = e.input_case.id;
  cmd["values"] = std::string(name(e.input_case.values));
  cmd["seed"] = e.input_case.seed;
  return cmd;
}

void Session::time_case(const Entry& e, CaseResult& r, json& cache, bool& cache_changed) {
  const Case& c = e.c;
  CaseResult start;
  if (!ensure_worker(start)) return;  // the pass stands; without a timing the slot gets no perf points
  const std::string key = hello_.is_object() ? baseline_key(hello_.value("device", ""), e) : "";
  json cmd = timed_command("time", e);
  cmd["baselines"] = cache.is_object() && cache.contains(key) ? cache[key] : json(nullptr);
  double deadline = 4 * case_deadline_s(c) + 30 * o_.timeout_scale;
  bool capped = false;
  const double left = std::chrono::duration<double>(budget_end_ - Clock::now()).count();
  if (left < deadline) {
    deadline = std::max(left, 0.0);
    capped = true;
  }
  const Exchange t = exchange(*worker_, cmd, deadline, capped, log_path_);
  if (t.kind != Exchange::Reply) {
    if (t.kind == Exchange::Harness) {  // the harness could not time a passing case: keep the pass
      errors_.push_back(t.message);
    } else {
      from_exchange(t, r);
      r.message = "the timed repetitions failed: " + r.message;
    }
    drop_worker();
    return;
  }
  const json& tj = t.reply;
  const auto garbled = [&](const std::string& why) {
    r.status = Status::Crash;
    r.message = "the worker's reply was incomplete or garbled (" + why + ")";
    drop_worker();
  };
  if (!tj.contains("error") || !tj["error"].is_string() || !tj.contains("timing"))
    return garbled("a field of the timing reply is missing");
  if (!tj["error"].get<std::string>().empty()) {
    r.status = Status::Crash;
    r.message = "the case passed, then failed during the timed repetitions: " + tj["error"].get<std::string>();
    if (tj.value("context_broken", false)) drop_worker();
    return;
  }
  static const char* kNumbers[] = {"median_ms", "min_ms", "max_ms", "spread", "gbps", "copy_gbps",
                                   "fraction_of_copy", "reference_ms", "cub_ms", "ratio_to_reference",
                                   "ratio_to_cub"};
  const json& timing = tj["timing"];
  bool ok = timing.is_object() && timing.contains("reps") && timing["reps"].is_number_integer() &&
            timing["reps"].get<std::int64_t>() >= 1 && timing.contains("method") && timing["method"].is_string() &&
            timing.size() == 13;
  for (const char* k : kNumbers) ok = ok && timing.contains(k) && timing[k].is_number();
  if (!ok) return garbled("the timing object does not have the schema's fields");
  r.timing = timing;
  // a baseline measured now goes to the cache (only the harness's own numbers: all three positive)
  const json b = tj.value("baselines", json(nullptr));
  if (cache.is_object() && !key.empty() && b.is_object() && b.value("measured", false)) {
    bool sane = true;
    for (const char* k : {"reference_ms", "cub_ms", "copy_ms"})
      sane = sane && b.contains(k) && b[k].is_number() && b[k].get<double>() > 0;
    if (sane) {
      cache[key] = {{"reference_ms", b["reference_ms"]}, {"cub_ms", b["cub_ms"]}, {"copy_ms", b["copy_ms"]},
                    {"measured_by", o_.submission_name}, {"measured_at", utc_now()}};
      cache_changed = true;
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
  const std::uint64_t first_k = next_k_;
  const std::string xml_path = dir_ + "/san-" + std::to_string(first_k) + "-" + tool + ".xml";
  const std::vector<std::string> argv = {compute_sanitizer, "--tool", tool, "--error-exitcode",
                                         std::to_string(kSanitizerErrorExit), "--xml", "--save", xml_path,
                                         "--print-limit", "50", o_.worker, "--channel", dir_};
  std::unique_ptr<WorkerProcess> w;
  try {
    w = std::make_unique<WorkerProcess>(argv, sanitizer_log_path_);
  } catch (const std::exception& ex) {
    return finish(std::string("cannot start compute-sanitizer: ") + ex.what());
  }
  json h;
  Status status;
  const std::string problem =
      read_hello(*w, hello_deadline_s(true), sanitizer_log_path_, file_size_or_zero(sanitizer_log_path_), h, status);
  if (!problem.empty()) return finish(problem);
  for (const Entry* e : cases) {
    const Case& c = e->c;
    const std::uint64_t k = next_k_++;
    std::string why;
    try {
      why = c.dtype == DType::Float32 ? write_input(k, make_input<float>(e->input_case))
                                      : write_input(k, make_input<std::int32_t>(e->input_case));
    } catch (const std::exception& ex) {
      why = std::string("cannot make the input: ") + ex.what();
    }
    if (!why.empty()) {
      w->kill_group();
      return finish("case " + c.id + ": " + why);
    }
    // racecheck costs about 20x: a generous deadline, cut at the budget
    double deadline = 20 * case_deadline_s(c) + 60 * o_.timeout_scale;
    const double left = std::chrono::duration<double>(budget_end_ - Clock::now()).count();
    deadline = std::max(0.0, std::min(deadline, left));
    // the GPU, shared, while the case runs under the tool (the wait is not the tool's cost)
    std::optional<GpuLock> gpu;
    const auto asked = Clock::now();
    if (const std::string lock_problem = take_gpu(GpuLock::Shared, gpu); !lock_problem.empty()) {
      w->kill_group();
      return finish(lock_problem);
    }
    start += Clock::now() - asked;
    const Exchange x = exchange(*w, command(k, random_hex(16), "check", c), deadline, false, sanitizer_log_path_,
                                [&gpu] { gpu.reset(); });
    gpu.reset();
    std::remove(input_path(dir_, k).c_str());
    std::remove(output_path(dir_, k).c_str());
    if (x.kind == Exchange::Timeout)
      return finish("case " + c.id + ": no reply within " + format_seconds(deadline) + " s under compute-sanitizer");
    if (x.kind != Exchange::Reply) break;  // the process ended: its report says why
  }
  // compute-sanitizer writes its report when the program exits
  w->close_stdin();
  const auto exit = w->wait_exit(after(60.0 * o_.timeout_scale));
  const ExitInfo end = exit ? *exit : w->kill_group();
  w.reset();
  const auto xml = read_file(xml_path);
  const SanitizerReport report = xml ? parse_sanitizer_xml(*xml, tool) : SanitizerReport{};
  std::remove(xml_path.c_str());
  run.findings = report.findings;
  run.records = report.records;
  if (run.findings.empty() && !end.signaled && end.code == kSanitizerErrorExit) {
    run.findings.push_back({tool, "error", "", "", 0,
                            "compute-sanitizer " + tool + " reported errors (exit code " +
                                std::to_string(kSanitizerErrorExit) + ") but its XML report listed none" +
                                (report.readable ? "" : ": " + (xml ? report.problem : "no report file"))});
    run.records = 1;
  }
  if (run.findings.empty() && !report.readable)
    return finish("no readable report (" + (xml ? report.problem : "no report file") +
                  "; compute-sanitizer ended with " + end.describe() + ")");
  run.cost_s = seconds_since(start);
  return run;
}

// --- inputs: suites, build file ---------------------------------------------------------------------

struct LoadedSuite {
  Suite suite;
  std::string sha256;
  bool secret_mixed = false;
};

json default_build() {
  return {{"status", "ok"}, {"log", ""}, {"missing_slots", json::array()}, {"failed_slots", json::array()}};
}

/// Reads --build-json; throws UsageError naming the problem.
json load_build(const std::string& path) {
  const auto text = read_file(path);
  if (!text) throw UsageError(path + ": cannot read the build file");
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) {
    throw UsageError(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw UsageError(path + ": expected an object");
  json b = default_build();
  const std::string status = j.value("status", std::string());
  if (status != "ok" && status != "compile_error" && status != "layout_error")
    throw UsageError(path + ": field 'status': expected ok, compile_error or layout_error");
  b["status"] = status;
  if (j.contains("log")) {
    if (!j["log"].is_string()) throw UsageError(path + ": field 'log': expected a string");
    b["log"] = j["log"];
  }
  for (const char* key : {"missing_slots", "failed_slots"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array()) throw UsageError(path + ": field '" + key + "': expected a list of slot names");
    for (const json& s : j[key])
      if (!s.is_string() || !parse_slot(s.get<std::string>()))
        throw UsageError(path + ": field '" + key + "': " + s.dump() + " is not a slot name");
    b[key] = j[key];
  }
  if (j.contains("warnings")) {
    if (!j["warnings"].is_number_unsigned()) throw UsageError(path + ": field 'warnings': expected a count");
    b["warnings"] = j["warnings"];
  }
  if (j.contains("seconds")) {
    if (!j["seconds"].is_number() || j["seconds"].get<double>() < 0)
      throw UsageError(path + ": field 'seconds': expected a non-negative number");
    b["seconds"] = j["seconds"];
  }
  return b;
}

std::string trimmed_log(const std::string& log) {
  std::string t = trim(log);
  if (t.size() > 4000) t = t.substr(0, 4000) + "\n... (log trimmed)";
  return t;
}

json case_json(const Entry& e, const CaseResult& r, const std::string& backend) {
  const Case& c = e.c;
  const bool pass = r.status == Status::Pass;
  return {{"id", c.id},
          {"suite", e.suite->name},
          {"slot", std::string(name(c.slot))},
          {"dtype", std::string(name(c.dtype))},
          {"kind", std::string(name(c.kind))},
          {"n", c.n},
          {"values", std::string(name(c.values))},
          {"seed", c.seed},
          {"visibility", std::string(name(c.visibility))},
          {"why", c.why},
          {"status", std::string(name(r.status))},
          {"message", pass ? "" : r.message},
          {"points", pass ? c.points : 0.0},
          {"max_points", c.points},
          {"backend", backend},
          {"duration_s", r.duration_s},
          {"timing", r.timing},
          {"sanitizer", r.sanitizer}};
}

std::string compute_sanitizer_version(const std::string& path) {
  const auto out = capture_output({path, "--version"}, 30);
  if (!out) return "";
  std::istringstream lines(*out);
  std::string line;
  while (std::getline(lines, line)) {
    const auto at = line.find("Version");
    if (at != std::string::npos) return trim(line.substr(at + 7));
  }
  return trim(*out).substr(0, 100);
}

/// Where the channel folder goes: $SCANGRADE_CHANNEL_DIR; else /dev/shm when it is a writable
/// memory file system with 8 GiB free (inputs and outputs of large cases, hundreds of MB each,
/// never touch a disk); else $TMPDIR, else /tmp.
std::string channel_base() {
  if (const char* dir = std::getenv("SCANGRADE_CHANNEL_DIR"); dir && *dir) return dir;
  struct statvfs fs {};
  if (access("/dev/shm", W_OK | X_OK) == 0 && statvfs("/dev/shm", &fs) == 0 &&
      static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) >= 8.0 * (1ull << 30))
    return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

bool write_results(const std::string& path, const json& results) {
  const std::string text = results.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
  const std::string why = write_file_atomic(path, text.data(), text.size());
  if (!why.empty()) {
    std::cerr << "scangrade_judge: cannot write the results: " << why << " (harness fault: please report)\n";
    return false;
  }
  return true;
}

}  // namespace

// --- GPU lock -------------------------------------------------------------------------------------------

namespace {

int open_lock_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error("cannot open the GPU lock " + path + ": " + std::strerror(errno));
  return fd;
}

void lock_file(int fd, int operation, const std::string& path) {
  while (::flock(fd, operation) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot lock the GPU lock " + path + ": " + std::strerror(err));
  }
}

}  // namespace

GpuLock::GpuLock(const std::string& path, Mode mode) {
  const auto start = Clock::now();
  const std::string gate_path = path + ".gate";
  const int gate = open_lock_file(gate_path);
  lock_file(gate, LOCK_EX, gate_path);
  try {
    fd_ = open_lock_file(path);
    lock_file(fd_, mode == Shared ? LOCK_SH : LOCK_EX, path);
  } catch (...) {
    fd_ = -1;
    ::close(gate);
    throw;
  }
  ::close(gate);  // through the turnstile: the next one may queue
  waited_s_ = seconds_since(start);
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

// --- command line -------------------------------------------------------------------------------------

std::string usage_text() {
  return R"(usage: scangrade_judge --worker BIN --out results.json --submission-name NAME
                      --submission-path PATH --backend gpu|emulate [--suite FILE]...
                      [--hidden-suite FILE (--secret S | --secret-file F)]... [--build-json FILE]
                      [--budget-s 900] [--timeout-scale 1.0] [--sanitizer auto|off]
                      [--compute-sanitizer PATH] [--only-slot SLOT] [--max-n N] [--log-limit 65536]
                      [--gpu-lock FILE] [--baseline-cache FILE] [--verbose]

Grades one submission: runs every case of the suites through the worker (the only process that links
the student's code), checks each result against the CPU oracle and writes results.json
(grading/results.schema.json). The judge never links student code.

  --worker BIN            worker executable built from the submission (scangrade_worker_*); may be
                          omitted only when --build-json says layout_error or compile_error
  --out FILE              results.json to write (atomically: a temporary file, then a rename)
  --submission-name NAME  recorded in results.submission.name
  --submission-path PATH  recorded in results.submission.path
  --backend gpu|emulate   where the worker runs kernels; timing and compute-sanitizer only on gpu
  --suite FILE            a suite (JSON, README "Suite files"); repeatable; seeds used as written
  --hidden-suite FILE     a hidden suite: the secret is mixed into every seed (inputs.h mix_secret);
                          results record the seeds as written, never the secret or the mixed seed
  --secret S              the instructor's secret for hidden suites
  --secret-file F         read the secret from F (trailing newline removed); safer than --secret
  --build-json FILE       the compile step's report {status, log, warnings, missing_slots,
                          failed_slots, seconds}: copied to results.build; cases of failed_slots get
                          compile_error; layout_error (or compile_error without --worker) makes every
                          case compile_error and runs no worker
  --budget-s S            wall-clock budget for the whole submission (default 900); once spent,
                          remaining cases get timeout "submission time budget exhausted"
  --timeout-scale X       multiplies every deadline (default 1.0). Per-case deadline: the suite's
                          timeout_s, else gpu 10 s + 50 ns*n, emulate 20 s + 3 us*n
  --sanitizer auto|off    auto (default): on gpu, cases with a "sanitize" list that passed are run
                          again under compute-sanitizer: one process per tool runs all the cases
                          that asked for it; when it reports a finding (or fails), each of those
                          cases runs again alone, so that findings name their case
  --compute-sanitizer P   compute-sanitizer executable (default: looked up in PATH)
  --only-slot SLOT        grade only this slot's cases (hillis_steele, blelloch, hierarchical,
                          single_pass)
  --max-n N               grade only cases with n <= N (e.g. 4194305, the emulation cap, for quick
                          emulated runs); the others are left out of the results and the score
  --log-limit BYTES       keep at most this much of the student's output (default 65536)
  --gpu-lock FILE         judges that share a GPU share FILE (created if missing, with FILE.gate):
                          each holds it shared while it runs cases and compute-sanitizer, and
                          exclusive while it times its passed perf cases, all in one go after its
                          functional runs, so that timings are taken with the GPU to one judge.
                          Waits do not count against --budget-s nor a case's duration_s. Prints a
                          "phases" line on stderr at the end (as --verbose)
  --baseline-cache FILE   time the reference, CUB and the copy once per case and GPU, and reuse
                          them: FILE (JSON, created if missing) keeps them per device, case and
                          harness version. Read and written only with the exclusive GPU lock held;
                          use one FILE per GPU, with --gpu-lock. Without it the baselines are timed
                          in the same process as the student's call, every time
  --verbose               one progress line per case on stderr; at the end a line
                          "scangrade_judge: phases functional_s=F timing_s=T lock_wait_s=W sanitizer_s=S
                          prepare_s=P" (T: timed cases, the GPU held exclusively; P: their
                          inputs put on the GPU beforehand)
  --help                  this text

Exit codes (also results.exit_code):
  0  graded, every case passed
  1  graded, some case did not pass
  2  bad input: usage, malformed suite or build file (message on stderr; no results written)
  3  internal error, a harness fault such as a missing worker binary or an unwritable channel
     folder: results written with outcome not_graded and `errors` filled (please report)
)";
}

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  std::optional<std::string> secret_file;
  const auto value = [&](std::size_t& i) -> std::string {
    if (i + 1 >= args.size()) throw UsageError(args[i] + " needs a value");
    return args[++i];
  };
  const auto number = [&](std::size_t& i) -> double {
    const std::string flag = args[i];
    const std::string text = value(i);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0)
      throw UsageError(flag + ": expected a positive number, got '" + text + "'");
    return v;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--worker") o.worker = value(i);
    else if (a == "--out") o.out = value(i);
    else if (a == "--submission-name") o.submission_name = value(i);
    else if (a == "--submission-path") o.submission_path = value(i);
    else if (a == "--backend") o.backend = value(i);
    else if (a == "--suite") o.suites.push_back(value(i));
    else if (a == "--hidden-suite") o.hidden_suites.push_back(value(i));
    else if (a == "--secret") o.secret = value(i);
    else if (a == "--secret-file") secret_file = value(i);
    else if (a == "--build-json") o.build_json = value(i);
    else if (a == "--budget-s") o.budget_s = number(i);
    else if (a == "--timeout-scale") o.timeout_scale = number(i);
    else if (a == "--compute-sanitizer") o.compute_sanitizer = value(i);
    else if (a == "--gpu-lock") {
      o.gpu_lock = value(i);
      for (const std::string& path : {o.gpu_lock, o.gpu_lock + ".gate"}) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) throw UsageError("--gpu-lock: cannot open " + path + ": " + std::strerror(errno));
        ::close(fd);
      }
    } else if (a == "--baseline-cache") {
      o.baseline_cache = value(i);
    }
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--sanitizer") {
      const std::string v = value(i);
      if (v != "auto" && v != "off") throw UsageError("--sanitizer: expected auto or off, got '" + v + "'");
      o.sanitizer = v == "auto";
    } else if (a == "--only-slot") {
      const std::string v = value(i);
      o.only_slot = parse_slot(v);
      if (!o.only_slot)
        throw UsageError("--only-slot: '" + v + "' is not one of hillis_steele, blelloch, hierarchical, single_pass");
    } else if (a == "--max-n") {
      const std::string v = value(i);
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || v[0] == '-') throw UsageError("--max-n: expected an element count, got '" + v + "'");
      o.max_n = static_cast<std::size_t>(n);
    } else if (a == "--log-limit") {
      const std::string v = value(i);
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || v[0] == '-') throw UsageError("--log-limit: expected a byte count, got '" + v + "'");
      o.log_limit = static_cast<std::size_t>(n);
    } else {
      throw UsageError("unknown argument '" + a + "'");
    }
  }
  if (o.help) return o;
  if (o.out.empty()) throw UsageError("--out is required");
  if (o.submission_name.empty()) throw UsageError("--submission-name is required");
  if (o.submission_path.empty()) throw UsageError("--submission-path is required");
  if (o.backend != "gpu" && o.backend != "emulate") throw UsageError("--backend: expected gpu or emulate");
  if (o.suites.empty() && o.hidden_suites.empty()) throw UsageError("no suite: give --suite FILE or --hidden-suite FILE");
  if (o.secret && secret_file) throw UsageError("give --secret or --secret-file, not both");
  if (secret_file) {
    const auto text = read_file(*secret_file);
    if (!text) throw UsageError("--secret-file: cannot read " + *secret_file);
    std::string s = *text;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    o.secret = s;
  }
  if (!o.hidden_suites.empty() && (!o.secret || o.secret->empty()))
    throw UsageError("--hidden-suite needs the secret: --secret S or --secret-file F");
  return o;
}

// --- grading -------------------------------------------------------------------------------------------

int run_judge(const Options& o) {
  signal(SIGPIPE, SIG_IGN);
  const auto t0 = Clock::now();
  const std::string started_at = utc_now();

  // suites (malformed: exit 2, nothing written)
  std::vector<LoadedSuite> suites;
  try {
    const auto load = [&](const std::string& path, bool hidden) {
      LoadedSuite s;
      s.suite = load_suite(path);
      const auto bytes = read_file(path);
      s.sha256 = sha256_hex(bytes ? *bytes : "");
      s.secret_mixed = hidden;
      suites.push_back(std::move(s));
    };
    for (const std::string& p : o.suites) load(p, false);
    for (const std::string& p : o.hidden_suites) load(p, true);
  } catch (const SuiteError& e) {
    std::cerr << "scangrade_judge: " << e.what() << "\n";
    return kBadInput;
  }
  json build = default_build();
  if (!o.build_json.empty()) {
    try {
      build = load_build(o.build_json);
    } catch (const UsageError& e) {
      std::cerr << "scangrade_judge: " << e.what() << "\n";
      return kBadInput;
    }
  }
  const std::string build_status = build["status"];
  const bool no_run = build_status == "layout_error" || (build_status == "compile_error" && o.worker.empty());
  if (o.worker.empty() && !no_run) {
    std::cerr << "scangrade_judge: --worker is required (it may be omitted only when the build failed)\n"
              << "run with --help for the usage\n";
    return kBadInput;
  }
  std::set<Slot> failed_slots;
  for (const json& s : build["failed_slots"]) failed_slots.insert(*parse_slot(s.get<std::string>()));

  // the cases, in suite order
  std::vector<Entry> entries;
  for (const LoadedSuite& s : suites)
    for (const Case& c : s.suite.cases) {
      if (o.only_slot && c.slot != *o.only_slot) continue;
      if (o.max_n && c.n > *o.max_n) continue;
      Entry e{&s.suite, c, c};
      if (s.secret_mixed) e.input_case.seed = mix_secret(c.seed, *o.secret);
      entries.push_back(std::move(e));
    }
  std::vector<CaseResult> results(entries.size());
  std::vector<std::string> errors;

  // the channel folder (0700 from mkdtemp)
  std::string channel;
  if (!no_run) {
    if (access(o.worker.c_str(), X_OK) != 0)
      errors.push_back("the worker binary " + o.worker + " cannot be executed: " + std::strerror(errno) +
                       " (harness fault: please report)");
    std::string pattern = channel_base() + "/scangrade-XXXXXX";
    if (errors.empty()) {
      if (mkdtemp(pattern.data()) == nullptr)
        errors.push_back("cannot make the channel folder " + pattern + ": " + std::strerror(errno) +
                         " (harness fault: please report)");
      else
        channel = pattern;
    }
  }

  std::unique_ptr<Session> session;
  if (!channel.empty()) {
    session = std::make_unique<Session>(o, channel);
    session->set_budget(t0, o.budget_s);
  }
  const bool gpu = o.backend == "gpu";
  std::string sanitizer_path;
  if (gpu && o.sanitizer) {
    if (const auto p = find_executable(o.compute_sanitizer.empty() ? "compute-sanitizer" : o.compute_sanitizer))
      sanitizer_path = *p;
  }

  // functional runs; the next case's input and oracle are made while the worker runs this one
  const auto runs = [&](const Entry& e) {
    return session && errors.empty() && build_status != "layout_error" &&
           !(build_status == "compile_error" && (no_run || failed_slots.count(e.c.slot)));
  };
  std::future<CaseData> ahead;
  std::size_t ahead_i = entries.size();
  const auto make_ahead = [&](std::size_t from) {
    for (ahead_i = from; ahead_i < entries.size() && !runs(entries[ahead_i]); ++ahead_i) {
    }
    if (ahead_i < entries.size()) ahead = std::async(std::launch::async, make_case_data, std::cref(entries[ahead_i]));
  };
  make_ahead(0);
  const auto functional_start = Clock::now();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    CaseResult& r = results[i];
    const auto case_start = Clock::now();
    const double waited_before = session ? session->lock_wait_s() : 0.0;
    if (build_status == "layout_error") {
      r.status = Status::CompileError;
      r.message = "the submission could not be read as a student/ folder: " + trimmed_log(build["log"]);
    } else if (build_status == "compile_error" && (no_run || failed_slots.count(e.c.slot))) {
      r.status = Status::CompileError;
      r.message = std::string(student_file(e.c.slot)) + " did not compile:\n" + trimmed_log(build["log"]);
    } else if (!errors.empty() || !session) {
      r.status = Status::InternalError;
      r.message = "not run: " + (errors.empty() ? std::string("no worker") : errors.front());
    } else if (session->budget_exhausted()) {
      r.status = Status::Timeout;
      r.message = "submission time budget exhausted";
    } else {
      CaseData data = ahead_i == i ? ahead.get() : make_case_data(e);
      make_ahead(i + 1);
      r = session->grade(e, std::move(data));
    }
    r.duration_s = seconds_since(case_start) - ((session ? session->lock_wait_s() : 0.0) - waited_before);
    if (!e.c.sanitize.empty() && r.sanitizer.is_null()) {
      // filled in by the sanitizer pass below when it runs this case
      r.sanitizer = {{"tools", e.c.sanitize}, {"ran", false}, {"findings", json::array()}};
    }
    if (o.verbose)
      std::cerr << "[" << i + 1 << "/" << entries.size() << "] " << e.c.id << ": " << name(r.status) << " ("
                << format_seconds(r.duration_s) << " s)\n";
  }

  // the functional runs' own time: their wall time less the waits for the GPU lock
  const double functional_s =
      std::max(0.0, seconds_since(functional_start) - (session ? session->lock_wait_s() : 0.0));

  // timing: the passed perf cases, after every functional run, the GPU to this judge alone
  if (session && gpu) session->time_cases(entries, results);

  // sanitizer pass: per tool, one process over every case that asked for it; on a finding (or a
  // failure) each of those cases runs again alone, so that a finding names its case
  json sanitizer_pass = {{"ran", false}, {"reason", ""}};
  {
    std::string not_run_reason;
    if (!gpu) not_run_reason = kEmulationSanitizerReason;
    else if (!o.sanitizer) not_run_reason = "--sanitizer off";
    else if (sanitizer_path.empty())
      not_run_reason = "compute-sanitizer not found (" +
                       (o.compute_sanitizer.empty() ? std::string("not in PATH") : "--compute-sanitizer " + o.compute_sanitizer) +
                       "): no case was checked by it";
    struct CaseSanitizer {  // what the tools found on one case
      std::vector<std::string> not_run, shared;
      std::vector<SanitizerFinding> race, memory;
      std::size_t race_records = 0, memory_records = 0;
      json findings = json::array();
      double cost_s = 0;
    };
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
    if (!per_case.empty()) session->shutdown();  // one GPU process of this judge at a time
    const auto record = [&](std::size_t i, const ToolRun& run, const std::string& tool, double cost) {
      CaseSanitizer& cs = per_case[i];
      cs.cost_s += cost;
      if (!run.not_run.empty()) {
        cs.not_run.push_back(run.not_run);
        return;
      }
      for (const SanitizerFinding& f : run.findings)
        cs.findings.push_back({{"tool", f.tool}, {"kind", f.kind}, {"kernel", f.kernel}, {"file", f.file},
                               {"line", f.line}, {"text", f.text}});
      if (tool == "racecheck") {
        cs.race.insert(cs.race.end(), run.findings.begin(), run.findings.end());
        cs.race_records += run.records;
      } else {
        cs.memory.insert(cs.memory.end(), run.findings.begin(), run.findings.end());
        cs.memory_records += run.records;
      }
    };
    std::size_t processes = 0;
    for (const std::string& tool : tools) {
      std::vector<std::size_t> group;
      for (const auto& [i, cs] : per_case) {
        const auto& wanted = entries[i].c.sanitize;
        if (std::find(wanted.begin(), wanted.end(), tool) != wanted.end()) group.push_back(i);
      }
      if (group.size() > 1) {
        std::vector<const Entry*> cases;
        for (std::size_t i : group) cases.push_back(&entries[i]);
        const ToolRun together = session->run_tool(tool, cases, sanitizer_path);
        ++processes;
        const double share = together.cost_s / static_cast<double>(group.size());
        if (together.not_run.empty() && together.findings.empty()) {
          for (std::size_t i : group) {
            record(i, together, tool, share);
            per_case[i].shared.push_back(tool);
          }
          continue;
        }
        for (std::size_t i : group) per_case[i].cost_s += share;  // spent, then each case alone:
      }
      for (std::size_t i : group) {
        const ToolRun alone = session->run_tool(tool, {&entries[i]}, sanitizer_path);
        ++processes;
        record(i, alone, tool, alone.cost_s);
      }
    }
    double cost = 0;
    for (auto& [i, cs] : per_case) {
      CaseResult& r = results[i];
      const Case& c = entries[i].c;
      json result = {{"tools", c.sanitize}, {"ran", cs.not_run.empty()}, {"findings", cs.findings},
                     {"cost_s", cs.cost_s}};
      if (!cs.not_run.empty()) {
        std::string reason = "not every tool ran: ";
        for (std::size_t k = 0; k < cs.not_run.size(); ++k) reason += (k ? "; " : "") + cs.not_run[k];
        result["reason"] = reason;
      } else {
        std::string reason = "ran " + std::to_string(c.sanitize.size()) + " tool(s): " +
                             std::to_string(cs.findings.size()) + " finding(s)";
        if (!cs.shared.empty()) {
          reason += " (";
          for (std::size_t k = 0; k < cs.shared.size(); ++k) reason += (k ? ", " : "") + cs.shared[k];
          reason += ": one process over every case of this submission that asked for the tool)";
        }
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
      cost += cs.cost_s;
    }
    const std::size_t ran = per_case.size();
    sanitizer_pass["cost_s"] = cost;
    sanitizer_pass["cases"] = ran;
    sanitizer_pass["processes"] = processes;
    if (ran > 0) {
      sanitizer_pass["ran"] = true;
      sanitizer_pass["reason"] = "compute-sanitizer ran on " + std::to_string(ran) + " of " + std::to_string(asked) +
                                 " case(s) that asked for it (the others did not pass their functional run)";
      if (ran == asked) sanitizer_pass["reason"] = "compute-sanitizer ran on every case that asked for it (" +
                                                   std::to_string(ran) + ")";
    } else if (!not_run_reason.empty()) {
      sanitizer_pass["reason"] = not_run_reason;
    } else {
      sanitizer_pass["reason"] = asked == 0 ? "no case asked for it" : "no case that asked for it passed its functional run";
    }
  }
  if (session) {
    session->shutdown();
    for (const std::string& e : session->errors()) errors.push_back(e);
  }

  // slots and score
  std::map<Slot, double> perf_max;
  for (const LoadedSuite& s : suites)
    for (const auto& [slot, points] : s.suite.performance_points) perf_max[slot] += points;
  json slots = json::object();
  double points = 0, max_points = 0, perf_points_total = 0, perf_max_total = 0;
  bool all_pass = true;
  for (Slot slot : kAllSlots) {
    std::size_t count = 0, passed = 0;
    double sp = 0, smax = 0;
    std::vector<double> ratios;
    bool perf_complete = true;
    json statuses = json::object();
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].c.slot != slot) continue;
      const CaseResult& r = results[i];
      ++count;
      const std::string st(name(r.status));
      statuses[st] = statuses.value(st, 0) + 1;
      smax += entries[i].c.points;
      if (r.status == Status::Pass) {
        ++passed;
        sp += entries[i].c.points;
      }
      if (entries[i].c.perf) {
        if (r.timing.is_object()) ratios.push_back(r.timing["ratio_to_reference"].get<double>());
        else perf_complete = false;
      }
    }
    if (count == 0) continue;
    all_pass = all_pass && passed == count;
    const double pmax = perf_max.count(slot) ? perf_max[slot] : 0.0;
    const std::optional<double> ratio = geometric_mean(ratios);
    double pp = 0;
    // scoring.h: only on gpu, only when every case of the slot passed and every perf case was timed
    if (gpu && passed == count && perf_complete && ratio) pp = pmax * perf_fraction(*ratio);
    slots[std::string(name(slot))] = {{"cases", count},       {"passed", passed},
                                      {"points", sp},         {"max_points", smax},
                                      {"perf_points", pp},    {"perf_max_points", pmax},
                                      {"perf_ratio", ratio ? json(*ratio) : json(nullptr)},
                                      {"statuses", statuses}};
    points += sp;
    max_points += smax;
    perf_points_total += pp;
    perf_max_total += pmax;
  }

  // results.json
  const int exit_code = !errors.empty() ? kInternalError : all_pass ? kAllPassed : kSomeFailed;
  json environment = {{"device", "unknown: no worker ran"}, {"driver", nullptr}, {"cuda_runtime", nullptr}};
  if (session && session->hello().is_object()) {
    const json& h = session->hello();
    environment["device"] = h["device"];
    environment["driver"] = h["driver"].get<std::string>().empty() ? json(nullptr) : h["driver"];
    environment["cuda_runtime"] = h["cuda_runtime"].get<std::string>().empty() ? json(nullptr) : h["cuda_runtime"];
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  environment["host"] = host;
  environment["compute_sanitizer"] = nullptr;
  if (!sanitizer_path.empty()) {
    const std::string v = compute_sanitizer_version(sanitizer_path);
    if (!v.empty()) environment["compute_sanitizer"] = v;
  }

  json student_output = {{"text", ""}, {"truncated", false}};
  if (!channel.empty()) {
    const auto log = read_file(channel + "/student.log");
    if (log) {
      student_output["text"] = log->substr(0, o.log_limit);
      student_output["truncated"] = log->size() > o.log_limit;
    }
    std::error_code ec;
    fs::remove_all(channel, ec);
  }

  json suites_json = json::array();
  for (const LoadedSuite& s : suites)
    suites_json.push_back({{"name", s.suite.name},
                           {"path", s.suite.path.string()},
                           {"sha256", s.sha256},
                           {"cases", s.suite.cases.size()},
                           {"secret_mixed", s.secret_mixed}});
  json cases = json::array();
  for (std::size_t i = 0; i < entries.size(); ++i) cases.push_back(case_json(entries[i], results[i], o.backend));

  json out = {{"schema_version", 1},
              {"tool", {{"name", "scangrade"}, {"version", SCANGRADE_VERSION}}},
              {"submission", {{"name", o.submission_name}, {"path", o.submission_path}}},
              {"backend", o.backend},
              {"environment", environment},
              {"suites", suites_json},
              {"build", build},
              {"cases", cases},
              {"slots", slots},
              {"score",
               {{"points", points},
                {"max_points", max_points},
                {"perf_points", perf_points_total},
                {"perf_max_points", perf_max_total},
                {"total", points + perf_points_total},
                {"max_total", max_points + perf_max_total}}},
              {"sanitizer_pass", sanitizer_pass},
              {"student_output", student_output},
              {"outcome", errors.empty() ? "graded" : "not_graded"},
              {"exit_code", exit_code},
              {"started_at", started_at},
              {"duration_s", seconds_since(t0)}};
  if (!errors.empty()) out["errors"] = errors;
  if (!write_results(o.out, out)) return kInternalError;
  if (o.verbose)
    std::cerr << "scangrade_judge: " << points + perf_points_total << " / " << max_points + perf_max_total
              << " points, exit " << exit_code << "\n";
  if (o.verbose || !o.gpu_lock.empty()) {
    // where the time went (grading/batch.py reads this line)
    const double timing = session ? session->timing_s() : 0.0, waited = session ? session->lock_wait_s() : 0.0;
    char line[256];
    std::snprintf(line, sizeof line,
                  "scangrade_judge: phases functional_s=%.3f timing_s=%.3f lock_wait_s=%.3f sanitizer_s=%.3f "
                  "prepare_s=%.3f\n",
                  functional_s, timing, waited, sanitizer_pass.value("cost_s", 0.0),
                  session ? session->prepare_s() : 0.0);
    std::cerr << line;
  }
  return exit_code;
}

}  // namespace scangrade::grader
