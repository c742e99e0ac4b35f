// Thread orders and fork isolation on the emulation backend (emulated_run.h).
#include "scangrade/emulated_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "scangrade/child.h"
#include "scangrade/emu.h"

namespace scangrade {
namespace {

constexpr std::uint64_t kRandomOrderSeed = 20261122;

/// Where two completed runs of the same call differ ("" when they do not), without saying why.
template <typename T>
std::string difference(const RunRecord<T>& a, const RunRecord<T>& b, const char* name_a, const char* name_b) {
  const auto differs = [](const std::vector<T>& x, const std::vector<T>& y, std::size_t& at) {
    for (at = 0; at < x.size() && at < y.size(); ++at)
      if (to_bits(x[at]) != to_bits(y[at])) return true;
    return x.size() != y.size();
  };
  std::size_t at = 0;
  std::ostringstream out;
  if (differs(a.output, b.output, at)) {
    out << "out[" << at << "] is " << +a.output[at] << " when the block's threads run in " << name_a << " order but "
        << +b.output[at] << " in " << name_b << " order";
  } else if (differs(a.input_after, b.input_after, at) || differs(a.guard_after, b.guard_after, at) ||
             differs(a.guard_before, b.guard_before, at)) {
    out << "what the slot writes outside d_out depends on the thread order (" << name_a << " vs " << name_b << ")";
  } else {
    return "";
  }
  return out.str();
}

/// The kernels the call launched, for a message: " in `k` (student/x.cu:14) launched at student/x.cu:40".
std::string kernels_text() {
  const std::vector<std::string> kernels = emu::launched_kernels();
  if (kernels.empty()) return "";
  std::string out = kernels.size() == 1 ? " in " : " in one of the kernels the call launched: ";
  for (std::size_t i = 0; i < kernels.size(); ++i) out += (i > 0 ? "; " : "") + kernels[i];
  return out;
}

template <typename T>
std::string first_difference(const RunRecord<T>& a, const RunRecord<T>& b, const char* name_a, const char* name_b) {
  const std::string where = difference(a, b, name_a, name_b);
  if (where.empty()) return "";
  return where + ": the result depends on thread scheduling, a data race" + kernels_text() +
         " (a thread reads shared or global memory that another writes with no barrier between them: add "
         "__syncthreads()/__syncwarp() between the write and the read, or double-buffer)";
}

/// After the orders disagreed: the first order once more. When the same order gives another result
/// (emulation is deterministic), the difference is not the scheduling's: the slot keeps state
/// between calls. "" when the repeat agrees (the thread order made the difference). Errors are
/// compared as failed or completed: their texts name addresses, which differ from call to call.
template <typename T>
std::string kept_state(const RunRecord<T>& first, const RunRecord<T>& again) {
  std::string where;
  if (first.error.empty() != again.error.empty())
    where = "the first call: " + (first.error.empty() ? std::string("ok") : first.error) +
            "; called again: " + (again.error.empty() ? std::string("ok") : again.error);
  else if (first.error.empty())
    where = difference(first, again, "the first call", "the same order called again");
  if (where.empty()) return "";
  return "called twice with the same input in the same thread order, the slot gave two results (" + where +
         "): your code keeps state between calls: a global or static (a counter, a pointer, a flag) that is not "
         "reset at the start of each call. The grader runs many cases in one process, one call after another";
}

/// The same call again (same input, freshly poisoned output) left elements holding the poison that
/// the first call wrote: the slot did not compute its result the second time.
template <typename T>
std::string left_unwritten(const RunRecord<T>& first, const RunRecord<T>& again) {
  if (!first.error.empty() || !again.error.empty()) return "";
  for (std::size_t i = 0; i < first.output.size() && i < again.output.size(); ++i)
    if (to_bits(again.output[i]) == kPoisonBits && to_bits(first.output[i]) != kPoisonBits) {
      std::ostringstream out;
      out << "called again with the same input, the slot left out[" << i << "] unwritten (it still holds the "
          << "poison 0xDEADBEEF): results must be computed on every call (does the slot remember earlier calls, "
          << "or skip work it thinks was done?)";
      return out.str();
    }
  return "";
}

/// run_on_device with the emulator's diagnostic (what faulted, where) after a failed call's error.
template <typename T>
RunRecord<T> run_with_diagnostic(const ScanFn<T>& fn, const std::vector<T>& input) {
  RunRecord<T> run = run_on_device(fn, input);
  if (!run.error.empty() && *emu::last_diagnostic()) run.error += "\n  " + std::string(emu::last_diagnostic());
  return run;
}

/// The thread-order rule. `forward` completed (no error); the call runs again under the reverse and
/// the random order, each compared with it:
///   * every order completed and the outputs (or guards, or the input) differ: race;
///   * an order failed where forward completed: crash, with that order's error. A failure that only
///     some orders show still is a failure the program can have: on a GPU it happens whenever the
///     hardware schedules the threads that way (and compute-sanitizer racecheck would name the race);
///     the message says that forward completes, which points at the race, while the error points at
///     the faulting line;
///   * either way, when the first order called once more disagrees with its first run, the slot
///     keeps state between calls (not_recomputed), and no race or crash is charged to scheduling.
/// A call that fails under forward is that failure (crash, timeout, launch failure: the status its
/// error gives) and never a race: the other orders do not run.
/// `again` calls the slot once more in the current thread order, in the same memory as the first call
/// (the same buffers, or fresh ones made the same way): the same input, the same leftover bytes past
/// the buffers. A slot that reads past its input then reads the same bytes in every call, and a
/// difference between two calls is the thread order's or state the slot kept, never the memory's.
template <typename T>
void compare_thread_orders(const std::function<RunRecord<T>()>& again, RunRecord<T>& forward) {
  using emu::ThreadOrder;
  for (const ThreadOrder order : {ThreadOrder::Reverse, ThreadOrder::Random}) {
    emu::clear_error();
    emu::set_thread_order(order, kRandomOrderSeed);
    const RunRecord<T> other = again();
    forward.not_recomputed = left_unwritten(forward, other);
    if (!forward.not_recomputed.empty()) break;  // not a race: the call did no work the second time
    const std::string race = other.error.empty() ? first_difference(forward, other, "forward", emu::to_string(order)) : "";
    if (other.error.empty() && race.empty()) continue;
    // the orders disagree: the first order again tells state kept between calls from scheduling
    emu::clear_error();
    emu::set_thread_order(ThreadOrder::Forward);
    forward.not_recomputed = kept_state(forward, again());
    if (!forward.not_recomputed.empty()) break;
    if (const std::string undefined = emu::undefined_operations();
        emu::undefined_operations_differ_from_gpu() && other.error.empty()) {
      // the emulator's CPU computed an undefined operation differently from the GPU (undefined.cpp): that
      // may be the whole difference between the orders, so it is no evidence of a race here
      forward.undefined = undefined + "\n(the results also differ between thread orders: " +
                          difference(forward, other, "forward", emu::to_string(order)) +
                          "; with the operations above computed as on the CPU, the emulator cannot tell whether "
                          "scheduling matters on the GPU, so no race is reported; the case is judged on the "
                          "forward order's results)";
      break;
    }
    if (!other.error.empty()) {
      forward.error = "under the " + std::string(emu::to_string(order)) + " thread order: " + other.error +
                      "\n  (the call completes under the forward order: whether it fails depends on the order in "
                      "which the block's threads run, so a data race decides it: look for shared or global memory "
                      "that one thread writes and another reads with no barrier between them)";
      forward.context_broken = other.context_broken;
    } else {
      forward.race = race;
    }
    break;
  }
  emu::clear_error();
  emu::set_thread_order(ThreadOrder::Forward);
}

}  // namespace

namespace {
bool g_reverse_only = false;  // set_reverse_only

/// The order of a call's first run: forward, or reverse alone with each warp's lanes in lockstep at
/// volatile shared-memory accesses (set_reverse_only; set_warp_lockstep in scangrade/emu.h).
void first_order() {
  emu::set_thread_order(g_reverse_only ? emu::ThreadOrder::Reverse : emu::ThreadOrder::Forward, kRandomOrderSeed);
  emu::set_warp_lockstep(g_reverse_only);
}
}  // namespace

void set_reverse_only(bool on) { g_reverse_only = on; }

/// Every call starts with no undefined operation and no kernel on record.
void clear_call_records() {
  emu::clear_undefined_operations();
  emu::clear_launched_kernels();
}

/// The undefined operations the calls ran, unless compare_thread_orders already wrote them down.
template <typename T>
void keep_undefined(RunRecord<T>& forward) {
  if (forward.undefined.empty()) forward.undefined = emu::undefined_operations();
}

template <typename T>
RunRecord<T> run_emulated(const ScanFn<T>& fn, const std::vector<T>& input) {
  clear_call_records();
  first_order();
  RunRecord<T> forward = run_with_diagnostic(fn, input);
  if (!g_reverse_only && input.size() <= kThreadOrdersMaxN && !forward.not_implemented && forward.error.empty())
    compare_thread_orders<T>([&] { return run_with_diagnostic(fn, input); }, forward);
  emu::set_thread_order(emu::ThreadOrder::Forward);
  keep_undefined(forward);
  return forward;
}

template <typename T>
RunRecord<T> run_emulated_in_place(const ScanFn<T>& fn, const T* d_in, T* d_zone, std::size_t n,
                                   const std::function<void()>& after_first) {
  const std::size_t g = kGuardElements;
  const std::vector<T> input(d_in, d_in + n);  // emulated device memory is host memory
  clear_call_records();
  first_order();
  RunRecord<T> forward = run_in_place(fn, d_in, d_zone + g, n);
  emu::set_thread_order(emu::ThreadOrder::Forward);
  if (after_first) after_first();
  if (!forward.error.empty() && *emu::last_diagnostic()) forward.error += "\n  " + std::string(emu::last_diagnostic());
  if (!g_reverse_only && n <= kThreadOrdersMaxN && !forward.not_implemented && forward.error.empty()) {
    const auto read_back = [&](RunRecord<T>& r) {
      r.guard_before.assign(d_zone, d_zone + g);
      r.output.assign(d_zone + g, d_zone + g + n);
      r.guard_after.assign(d_zone + g + n, d_zone + 2 * g + n);
      r.input_after.assign(d_in, d_in + n);
    };
    read_back(forward);
    const std::vector<T> zone_after(d_zone, d_zone + n + 2 * g);  // what the trusted side reads afterwards
    const auto put_input = [&](const std::vector<T>& values) {    // only when it differs (a slot that
      if (n > 0 && std::memcmp(d_in, values.data(), n * sizeof(T)) != 0)  // wrote d_in made it writable)
        std::memcpy(const_cast<T*>(d_in), values.data(), n * sizeof(T));
    };
    // the other calls run in the same buffers, set up as for the first: the same leftover bytes past them
    const auto again = [&] {
      put_input(input);
      std::fill(d_zone, d_zone + g, from_bits<T>(kCanaryBits));
      std::fill(d_zone + g, d_zone + g + n, from_bits<T>(kPoisonBits));
      std::fill(d_zone + g + n, d_zone + 2 * g + n, from_bits<T>(kCanaryBits));
      RunRecord<T> r = run_in_place(fn, d_in, d_zone + g, n);
      if (!r.error.empty() && *emu::last_diagnostic()) r.error += "\n  " + std::string(emu::last_diagnostic());
      if (r.error.empty() && !r.not_implemented) read_back(r);
      return r;
    };
    compare_thread_orders<T>(again, forward);
    // the first call's results, as it left them
    std::copy(zone_after.begin(), zone_after.end(), d_zone);
    put_input(forward.input_after);
  }
  keep_undefined(forward);
  return forward;
}

template RunRecord<std::int32_t> run_emulated_in_place<std::int32_t>(const ScanFn<std::int32_t>&, const std::int32_t*,
                                                                     std::int32_t*, std::size_t,
                                                                     const std::function<void()>&);
template RunRecord<float> run_emulated_in_place<float>(const ScanFn<float>&, const float*, float*, std::size_t,
                                                       const std::function<void()>&);

template RunRecord<std::int32_t> run_emulated<std::int32_t>(const ScanFn<std::int32_t>&,
                                                            const std::vector<std::int32_t>&);
template RunRecord<float> run_emulated<float>(const ScanFn<float>&, const std::vector<float>&);

namespace {

/// A file with no name (gone when its last descriptor is closed), for a child's stdout or stderr.
int unnamed_file() {
  std::FILE* f = std::tmpfile();
  if (f == nullptr) throw std::runtime_error(std::string("tmpfile: ") + std::strerror(errno));
  const int fd = dup(fileno(f));
  std::fclose(f);
  if (fd < 0) throw std::runtime_error(std::string("dup: ") + std::strerror(errno));
  return fd;
}

/// What the child wrote in `fd` (up to kChildOutputCap); closes it.
std::string read_back(int fd) {
  std::string text;
  if (fd < 0) return text;
  char chunk[65536];
  for (off_t at = 0; text.size() < kChildOutputCap;) {
    const ssize_t got = pread(fd, chunk, std::min(sizeof chunk, kChildOutputCap - text.size()), at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(chunk, static_cast<std::size_t>(got));
    at += got;
  }
  close(fd);
  if (text.size() == kChildOutputCap)
    text += "\n[make test keeps the first " + std::to_string(kChildOutputCap >> 20) + " MiB a case prints here]\n";
  return text;
}

/// The end of a crash's message: the last lines the child wrote on stderr (its own diagnosis, such as
/// a CUDA error check's), each cut at 200 characters. Sets `all` when every line is quoted whole.
std::string last_words(const std::string& errors, bool& all) {
  constexpr std::size_t kLines = 12, kWidth = 200;
  std::vector<std::string> lines;
  std::istringstream in(errors);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  while (!lines.empty() && lines.back().find_first_not_of(" \r\t") == std::string::npos) lines.pop_back();
  all = lines.size() <= kLines;
  std::string quoted;
  for (std::size_t i = lines.size() > kLines ? lines.size() - kLines : 0; i < lines.size(); ++i) {
    all = all && lines[i].size() <= kWidth;
    quoted += "\n  " + (lines[i].size() > kWidth ? lines[i].substr(0, kWidth - 3) + "..." : lines[i]);
  }
  if (quoted.empty()) return "";
  return std::string(all ? "; it wrote on stderr:" : "; the last lines it wrote on stderr:") + quoted;
}

}  // namespace

StartedChild start_isolated(const std::function<std::string()>& body) {
  StartedChild child;
  child.out = unnamed_file();
  child.err = unnamed_file();
  try {
    const Forked forked = fork_child(
        [&body] {
          // a file's size limit: a kernel printing in a loop fills at most kChildOutputCap of the disk
          signal(SIGXFSZ, SIG_IGN);
          const rlimit cap{kChildOutputCap, kChildOutputCap};
          setrlimit(RLIMIT_FSIZE, &cap);
          return body();
        },
        ForkOptions{false, child.out, child.err, false});
    child.pid = forked.pid;
    child.fd = forked.fd;
  } catch (...) {
    close(child.out);
    close(child.err);
    throw;
  }
  return child;
}

void abandon_isolated(StartedChild child) {
  if (child.pid <= 0) return;
  kill(child.pid, SIGKILL);
  finish_child(child.pid, child.fd, 0);  // reaps it (and what it left running in its group)
  close(child.out);
  close(child.err);
}

std::string timeout_message(double deadline_s, std::optional<Slot> slot) {
  std::ostringstream msg;
  msg << "no result within " << deadline_s << " s: "
      << (slot ? timeout_causes(*slot) : "the call may never return (a loop that never ends, or a kernel that spins)");
  return msg.str();
}

Isolated run_isolated(const std::function<std::string()>& body, double timeout_s) {
  return finish_isolated(start_isolated(body), timeout_s);
}

Isolated finish_isolated(StartedChild child, double timeout_s) {
  Isolated result;
  const ChildEnd end = finish_child(child.pid, child.fd, timeout_s);
  result.output = read_back(child.out);
  result.errors = read_back(child.err);
  const int wstatus = end.wait_status;
  const bool called_exit = end.output.size() >= std::strlen(kChildCalledExit) &&
                           end.output.compare(end.output.size() - std::strlen(kChildCalledExit),
                                              std::string::npos, kChildCalledExit) == 0;
  if (end.timed_out) {
    result.status = Status::Timeout;
    result.message = timeout_message(timeout_s);
    return result;
  }
  result.status = Status::Crash;
  if (WIFSIGNALED(wstatus)) {
    result.message = std::string("the process died: signal ") + std::to_string(WTERMSIG(wstatus)) + " (" +
                     strsignal(WTERMSIG(wstatus)) + ")";
    if (WTERMSIG(wstatus) == SIGABRT) result.message += ": abort(), a failed assert or an exception that escaped";
  } else if (called_exit) {
    result.message = "the slot called exit(" + std::to_string(WEXITSTATUS(wstatus)) +
                     "), which ends the whole program: a slot must return, even after a CUDA error (the "
                     "harness checks for CUDA errors after the call)";
  } else if (WEXITSTATUS(wstatus) != 0) {
    result.message = "the process exited with code " + std::to_string(WEXITSTATUS(wstatus));
  } else if (end.output.empty()) {
    result.message = "the process ended (code 0) before the case's result was written";
  } else {
    result.status = Status::Pass;
    result.finished = true;
    result.payload = end.output;
    return result;
  }
  result.message += last_words(result.errors, result.errors_quoted);
  return result;
}

}  // namespace scangrade
