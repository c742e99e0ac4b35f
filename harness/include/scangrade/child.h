// A child process's start and end, under a deadline: what it wrote on a pipe and how it ended. Used
// by the emulation backend's fork isolation (emulated_run.h), the kernel tests' not-implemented probe
// and the judge's short helper runs.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace scangrade {

struct ChildEnd {
  std::string output;      // what it wrote on the pipe (reading stops keeping it past max_bytes)
  bool timed_out = false;  // the deadline passed first: the child was killed
  int wait_status = 0;     // from waitpid
};

/// Reads `fd` (the read end of the child's pipe; closed here) until end of file or until
/// `timeout_s` have passed, keeping up to about `max_bytes`; then SIGKILLs the process group the
/// child leads, if any (what it left running), and on timeout the child itself, and reaps it.
ChildEnd finish_child(pid_t pid, int fd, double timeout_s, std::size_t max_bytes = SIZE_MAX);

/// How fork_child sets up its child.
struct ForkOptions {
  bool own_group = false;  // it leads a process group (finish_child kills what it started) and dies with us
  int out_fd = -1;         // its stdout goes there (-1: ours); `quiet` wins
  int err_fd = -1;         // its stderr goes there (-1: ours)
  bool quiet = false;      // its stdout and stderr go to /dev/null
};

/// A forked child: its pid and the read end of its pipe (for finish_child).
struct Forked {
  pid_t pid = -1;
  int fd = -1;
};

/// Forks a child that runs body() and writes what it returns on the pipe ("\x01" + what() when it
/// throws a std::exception; kChildCalledExit when code in it calls exit()), flushes its stdio and
/// _exits with 0. Our stdio is flushed before the fork, so that nothing buffered is printed twice.
/// Throws std::runtime_error when pipe or fork fails.
Forked fork_child(const std::function<std::string()>& body, const ForkOptions& options = {});

/// What a fork_child child writes last on its pipe when exit() ends it (its on_exit handler).
inline constexpr char kChildCalledExit[] = "\x02exit";

}  // namespace scangrade
