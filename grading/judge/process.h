// Child processes of the judge: a worker in its own process group with a command pipe (its stdin),
// a reply socket (its fd 3) and its stdout/stderr appended to a log the judge holds open; deadlines
// on every read;
// SIGKILL to the whole group on timeout and at the end.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox.h"

namespace scangrade::grader {

using Clock = std::chrono::steady_clock;

/// How a process ended.
struct ExitInfo {
  bool signaled = false;
  int code = 0;    // exit status when !signaled
  int signal = 0;  // terminating signal when signaled
  /// "exit code 3" or "signal 11 (SIGSEGV)".
  std::string describe() const;
};

/// "SIGSEGV" for 11, "signal 77" for unknown ones.
std::string signal_name(int sig);

class WorkerProcess {
 public:
  /// Starts argv[0] (a path) with argv, inside `sandbox` (with `mounts`) when one is given; throws
  /// std::runtime_error (a harness fault) when it cannot be started (fork/exec/pipe failures, a
  /// binary that is not executable, a sandbox that cannot be entered).
  /// `log_fd` (the caller's, left open) becomes its stdout and stderr.
  WorkerProcess(const std::vector<std::string>& argv, int log_fd, const sandbox::Sandbox* sandbox = nullptr,
                const sandbox::Mounts& mounts = {});
  ~WorkerProcess();  // kills the group and reaps
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }

  /// Sends one line on the worker's stdin; false when the worker is gone.
  bool send(const std::string& line);
  /// Passes descriptors to the worker on its fd 3 (a socket), ahead of the command that uses them.
  bool send_fds(const std::vector<int>& fds);
  /// Closes the worker's stdin (it exits at EOF).
  void close_stdin();

  enum class Read { Line, Timeout, Eof, Overlong };
  /// The next line from fd 3 before the deadline.
  Read read_line(std::string& line, Clock::time_point deadline);
  /// Whether read_line polls without sleeping (timed calls: the judge's clock then sees a reply
  /// when it comes, not when this process wakes up).
  void set_spin(bool on) { spin_ = on; }

  /// Waits for the process to end before the deadline; nullopt when it is still running.
  std::optional<ExitInfo> wait_exit(Clock::time_point deadline);
  /// SIGKILL to the process group, then reaps the process. Returns how it ended.
  ExitInfo kill_group();
  /// How it ended, once known.
  const std::optional<ExitInfo>& exit_info() const { return exit_; }

 private:
  bool reap(bool block);

  pid_t pid_ = -1;
  int to_child_ = -1;    // its stdin
  int from_child_ = -1;  // its fd 3
  std::string buffer_;
  bool eof_ = false;
  bool spin_ = false;
  std::optional<ExitInfo> exit_;
  std::unique_ptr<sandbox::Run> run_;  // its sandbox run: ended with the process (finish())
};

/// The first executable `name` in $PATH (or `name` itself when it contains a '/').
std::optional<std::string> find_executable(const std::string& name);

/// Runs argv, captures stdout+stderr (up to 64 KiB), kills it after timeout_s. nullopt when it
/// could not be started or timed out.
std::optional<std::string> capture_output(const std::vector<std::string>& argv, double timeout_s);

}  // namespace scangrade::grader
