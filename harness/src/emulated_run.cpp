// Thread orders and fork isolation on the emulation backend (emulated_run.h).
#include "scangrade/emulated_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <sstream>

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
  emu::set_thread_order(emu::ThreadOrder::Forward);
  RunRecord<T> forward = run_with_diagnostic(fn, input);
  if (input.size() <= kThreadOrdersMaxN && !forward.not_implemented && forward.error.empty())
    compare_thread_orders<T>([&] { return run_with_diagnostic(fn, input); }, forward);
  keep_undefined(forward);
  return forward;
}

template <typename T>
RunRecord<T> run_emulated_in_place(const ScanFn<T>& fn, const T* d_in, T* d_zone, std::size_t n,
                                   const std::function<void()>& after_first) {
  const std::size_t g = kGuardElements;
  const std::vector<T> input(d_in, d_in + n);  // emulated device memory is host memory
  clear_call_records();
  emu::set_thread_order(emu::ThreadOrder::Forward);
  RunRecord<T> forward = run_in_place(fn, d_in, d_zone + g, n);
  if (after_first) after_first();
  if (!forward.error.empty() && *emu::last_diagnostic()) forward.error += "\n  " + std::string(emu::last_diagnostic());
  if (n <= kThreadOrdersMaxN && !forward.not_implemented && forward.error.empty()) {
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

StartedChild start_isolated(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    std::string payload;
    try {
      payload = body();
    } catch (const std::exception& e) {
      payload = std::string("\x01") + e.what();
    }
    for (std::size_t done = 0; done < payload.size();) {
      const ssize_t w = write(fds[1], payload.data() + done, payload.size() - done);
      if (w <= 0) _exit(3);
      done += static_cast<std::size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  return StartedChild{pid, fds[0]};
}

void abandon_isolated(StartedChild child) {
  if (child.pid <= 0) return;
  kill(child.pid, SIGKILL);
  finish_child(child.pid, child.fd, 0);  // reaps it (and what it left running in its group)
}

Isolated run_isolated(const std::function<std::string()>& body, double timeout_s) {
  return finish_isolated(start_isolated(body), timeout_s);
}

Isolated finish_isolated(StartedChild child, double timeout_s) {
  Isolated result;
  const ChildEnd end = finish_child(child.pid, child.fd, timeout_s);
  const int wstatus = end.wait_status;
  if (end.timed_out) {
    result.status = Status::Timeout;
    std::ostringstream msg;
    msg << "no result within " << timeout_s << " s: the kernel may spin forever (e.g. waiting for a flag that no "
        << "earlier block sets)";
    result.message = msg.str();
  } else if (WIFSIGNALED(wstatus)) {
    result.status = Status::Crash;
    result.message = std::string("the process died: signal ") + std::to_string(WTERMSIG(wstatus)) + " (" +
                     strsignal(WTERMSIG(wstatus)) + ")";
  } else if (WEXITSTATUS(wstatus) != 0) {
    result.status = Status::Crash;
    result.message = "the process exited with code " + std::to_string(WEXITSTATUS(wstatus));
  } else {
    result.finished = true;
    result.payload = end.output;
  }
  return result;
}

}  // namespace scangrade
