// A child process's end, under a deadline (child.h).
#include "scangrade/child.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace scangrade {

ChildEnd finish_child(pid_t pid, int fd, double timeout_s, std::size_t max_bytes) {
  using Clock = std::chrono::steady_clock;
  ChildEnd end;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      end.timed_out = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    char chunk[65536];
    const ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (end.output.size() < max_bytes) end.output.append(chunk, static_cast<std::size_t>(got));
  }
  close(fd);
  kill(-pid, SIGKILL);  // its process group, when it leads one
  if (end.timed_out) kill(pid, SIGKILL);
  while (waitpid(pid, &end.wait_status, 0) < 0 && errno == EINTR) {
  }
  return end;
}

}  // namespace scangrade
