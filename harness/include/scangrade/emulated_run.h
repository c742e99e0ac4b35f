// Running a slot on the CPU emulation backend (harness/emulation): thread orders reveal races, a
// forked child with a deadline contains hangs and crashes. Compiled into emulated builds only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scangrade/device_run.h"

namespace scangrade {

/// Largest n run emulated: 2048^2 + 1, the first size that needs a third level of block sums.
/// Larger cases are skipped with this reason and run on a GPU only.
inline constexpr std::size_t kEmulationMaxN = (std::size_t{1} << 22) + 1;
/// Up to this n a case runs under forward, reverse and random thread orders; above, forward only
/// (races show at small sizes, and three orders of a large case cost seconds).
inline constexpr std::size_t kThreadOrdersMaxN = kOrdersComparedMaxN;

/// run_on_device under each thread order; RunRecord::race says where the outputs differ.
/// The rule: race only when every order ran to completion and the results differ. A call that fails
/// under the forward order is that failure (its error: crash) and the other orders do not run; one
/// that completes under forward but fails under another order is a crash too, whose error names the
/// order and says forward completes (a failure some schedules show is one the GPU can show). When the
/// orders disagree, forward runs once more: a different result in the same order is state kept
/// between calls (RunRecord::not_recomputed), neither race nor crash.
template <typename T>
RunRecord<T> run_emulated(const ScanFn<T>& fn, const std::vector<T>& input);

/// run_in_place under each thread order, the first (forward) on the grader's shared buffers
/// (d_zone: guard, output, guard); the other orders run on buffers of their own and are compared
/// with it. `after_first` runs right after the first call (the grader's policy monitor watches
/// that call only: the other orders' copies are the harness's).
template <typename T>
RunRecord<T> run_emulated_in_place(const ScanFn<T>& fn, const T* d_in, T* d_zone, std::size_t n,
                                   const std::function<void()>& after_first = {});

/// What came back from a forked child.
struct Isolated {
  bool finished = false;  // the child ran `body` to the end
  std::string payload;    // what body returned (when finished)
  Status status = Status::Pass;  // Timeout or Crash when not finished
  std::string message;    // when not finished; a crash's ends with the last lines the child wrote on stderr
  std::string output;     // what the child printed on stdout (a kernel's printf), up to kChildOutputCap
  std::string errors;     // what it printed on stderr, up to kChildOutputCap
  bool errors_quoted = false;  // message quotes all of `errors`
};

/// What a child may print on stdout, and on stderr, that is kept (the file it writes stops there).
inline constexpr std::size_t kChildOutputCap = std::size_t{8} << 20;

/// Runs body() in a forked child with a deadline; the child's return value comes back through a
/// pipe, what it prints on stdout and stderr in Isolated::output and errors (each written to a file
/// of its own, so that several children never mix their lines; the caller prints them in its order).
/// A child that runs past the deadline is killed (Timeout); one that dies, or calls exit(), is a Crash.
Isolated run_isolated(const std::function<std::string()>& body, double timeout_s);

/// run_isolated in two steps, so that several children can run at once (the kernel tests run the
/// next cases while they wait for one): start_isolated forks the child and returns at once;
/// finish_isolated waits for it, the deadline counted from that call (a child started early never
/// has less time than run_isolated gives it); abandon_isolated kills and reaps one whose result is
/// not wanted.
struct StartedChild {
  pid_t pid = -1;
  int fd = -1;   // read end of the child's pipe
  int out = -1;  // the files its stdout and stderr go to
  int err = -1;
};
StartedChild start_isolated(const std::function<std::string()>& body);
Isolated finish_isolated(StartedChild child, double timeout_s);
void abandon_isolated(StartedChild child);

/// The next calls of run_emulated / run_emulated_in_place run once, in the reverse thread order with
/// each warp's lanes in lockstep at volatile shared-memory accesses, as a GPU's warp runs them, with
/// no order compared (true), or as described above (false, the default): a second look at a case whose
/// forward order got the data wrong (order_verdict in check.h).
void set_reverse_only(bool on);

/// A Timeout's message: no result within `deadline_s` seconds (the case's whole deadline).
std::string timeout_message(double deadline_s, std::optional<Slot> slot = std::nullopt);

}  // namespace scangrade
