// A child process's end, under a deadline: what it wrote on a pipe and how it ended. Used by the
// emulation backend's fork isolation (emulated_run.h) and the judge's short helper runs.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
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

}  // namespace scangrade
