// A child process's start and end, under a deadline (child.h).
#include "scangrade/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

namespace {

int g_result_fd = -1;  // in a fork_child child: the write end of its pipe

/// Writes all of `text` on fd; false when the pipe is gone.
bool write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<std::size_t>(w);
  }
  return true;
}

/// The child's side of fork_child: its stdio and process group set up, body run, the result written.
[[noreturn]] void be_the_child(const std::function<std::string()>& body, const ForkOptions& options, int fd,
                               pid_t parent) {
  if (options.own_group) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // it dies with us: a Ctrl-C that ends us does not reach its group
    if (getppid() != parent) _exit(4);
  }
  const int devnull = options.quiet ? open("/dev/null", O_WRONLY) : -1;
  const int out = options.quiet ? devnull : options.out_fd, err = options.quiet ? devnull : options.err_fd;
  if (out >= 0) dup2(out, STDOUT_FILENO);
  if (err >= 0) dup2(err, STDERR_FILENO);
  // line by line: what was printed before an abort, a fault or the deadline's SIGKILL is kept
  if (out >= 0) std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  g_result_fd = fd;
  // code in the child called exit(): say so, and end with its code before the handlers registered
  // before this one run: they are our parent's (destructors of its statics, which would act on its
  // other children), not the child's
  on_exit(
      [](int code, void*) {
        std::fflush(nullptr);
        write_all(g_result_fd, kChildCalledExit);
        _exit(code);
      },
      nullptr);
  std::string payload;
  try {
    payload = body();
  } catch (const std::exception& e) {
    payload = std::string("\x01") + e.what();
  }
  std::fflush(nullptr);  // stdout is fully buffered in a pipe or a file: _exit would drop it
  _exit(write_all(fd, payload) ? 0 : 3);
}

}  // namespace

Forked fork_child(const std::function<std::string()>& body, const ForkOptions& options) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);  // what we buffered is not printed a second time by the child
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    close(fds[0]);
    be_the_child(body, options, fds[1], parent);
  }
  if (options.own_group) setpgid(pid, pid);  // either side may set it first
  close(fds[1]);
  return Forked{pid, fds[0]};
}

}  // namespace scangrade
