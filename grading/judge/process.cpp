// Child processes of the judge (process.h).
#include "process.h"

#include <sys/socket.h>

#include "fd_passing.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "protocol.h"
#include "scangrade/child.h"

namespace scangrade::grader {
namespace {

constexpr std::size_t kMaxLine = 1 << 20;

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

/// In the child after fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<char*>& args, int stdin_fd, int reply_fd, int log_fd, int err_fd,
                            const sandbox::Run* run) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the judge dying takes the worker with it
  // Move every fd we need above 10 first, so that the dup2s below cannot clobber each other.
  const int in = fcntl(stdin_fd, F_DUPFD, 10), reply = fcntl(reply_fd, F_DUPFD, 10), log = fcntl(log_fd, F_DUPFD, 10);
  if (in < 0 || reply < 0 || log < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0 ||
      dup2(reply, kReplyFd) < 0) {
    const int e = errno;
    (void)!write(err_fd, &e, sizeof e);
    _exit(127);
  }
  for (int fd = kReplyFd + 1; fd < 1024; ++fd)
    if (fd != err_fd) close(fd);
  signal(SIGPIPE, SIG_DFL);
  if (run != nullptr)
    if (const int e = run->enter(); e != 0) {
      (void)!write(err_fd, &e, sizeof e);
      _exit(127);
    }
  execv(args[0], args.data());
  const int e = errno;
  (void)!write(err_fd, &e, sizeof e);
  _exit(127);
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGINT: return "SIGINT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "signal " + std::to_string(sig);
  }
}

std::string ExitInfo::describe() const {
  if (signaled) return "signal " + std::to_string(signal) + " (" + signal_name(signal) + ")";
  return "exit code " + std::to_string(code);
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv_in, int log_fd, const sandbox::Sandbox* sandbox,
                             const sandbox::Mounts& mounts) {
  if (argv_in.empty()) throw std::runtime_error("no program to start");
  if (access(argv_in[0].c_str(), X_OK) != 0) throw sys_error("cannot execute " + argv_in[0]);
  if (sandbox != nullptr) run_ = sandbox->prepare(argv_in, mounts);
  const std::vector<std::string>& argv = run_ ? run_->argv() : argv_in;
  int in_pipe[2], reply_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) throw sys_error("pipe");
  // the reply channel is a socket: the judge also passes the case buffers' descriptors on it
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, reply_pipe) != 0) throw sys_error("socketpair");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) throw sys_error("pipe");
  if (log_fd < 0) throw std::runtime_error("no log to start " + argv_in[0] + " with");

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw sys_error("fork");
  if (pid == 0) exec_child(args, in_pipe[0], reply_pipe[1], log_fd, err_pipe[1], run_.get());
  setpgid(pid, pid);  // also here: no race with the first kill(-pgid)
  pid_ = pid;
  close(in_pipe[0]);
  close(reply_pipe[1]);
  close(err_pipe[1]);
  to_child_ = in_pipe[1];
  from_child_ = reply_pipe[0];
  int child_errno = 0;
  ssize_t got;
  do got = read(err_pipe[0], &child_errno, sizeof child_errno);
  while (got < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (got == sizeof child_errno) {
    reap(true);
    errno = child_errno;
    throw sys_error("cannot start " + argv[0]);
  }
}

bool WorkerProcess::send_fds(const std::vector<int>& fds) {
  return from_child_ >= 0 && send_with_fds(from_child_, std::string(1, 'F'), fds);
}

WorkerProcess::~WorkerProcess() {
  if (to_child_ >= 0) close(to_child_);
  if (pid_ > 0 && !exit_) kill_group();
  else if (pid_ > 0) kill(-pid_, SIGKILL);  // grandchildren it may have left
  if (run_) run_->finish();
  if (from_child_ >= 0) close(from_child_);
}

bool WorkerProcess::send(const std::string& line) {
  if (to_child_ < 0) return false;
  return write_line(to_child_, line);
}

void WorkerProcess::close_stdin() {
  if (to_child_ >= 0) close(to_child_);
  to_child_ = -1;
}

WorkerProcess::Read WorkerProcess::read_line(std::string& line, Clock::time_point deadline) {
  for (;;) {
    const std::size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return Read::Line;
    }
    if (buffer_.size() > kMaxLine) return Read::Overlong;
    if (eof_) return Read::Eof;
    pollfd p{from_child_, POLLIN, 0};
    const int timeout = spin_ ? 0 : ms_until(deadline);
    const int ready = poll(&p, 1, timeout);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (Clock::now() >= deadline) return Read::Timeout;
      continue;
    }
    char chunk[65536];
    const ssize_t got = read(from_child_, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      eof_ = true;
      continue;
    }
    buffer_.append(chunk, static_cast<std::size_t>(got));
  }
}

bool WorkerProcess::reap(bool block) {
  if (exit_) return true;
  int status = 0;
  pid_t r;
  do r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  ExitInfo info;
  if (WIFSIGNALED(status)) {
    info.signaled = true;
    info.signal = WTERMSIG(status);
  } else {
    info.code = WEXITSTATUS(status);
  }
  exit_ = info;
  if (run_) run_->finish();  // whatever it started (daemons, spinners) ends with it
  return true;
}

std::optional<ExitInfo> WorkerProcess::wait_exit(Clock::time_point deadline) {
  while (!reap(false)) {
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exit_;
}

ExitInfo WorkerProcess::kill_group() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    reap(true);
  }
  return exit_ ? *exit_ : ExitInfo{};
}

std::optional<std::string> find_executable(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos)
    return access(name.c_str(), X_OK) == 0 ? std::optional<std::string>(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + name;
      struct stat st {};
      if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0)
        return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> capture_output(const std::vector<std::string>& argv, double timeout_s) {
  int out[2];
  if (argv.empty() || pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(out[1]);
  const ChildEnd end = finish_child(pid, out[0], timeout_s, 65536);
  if (end.timed_out || !WIFEXITED(end.wait_status) || WEXITSTATUS(end.wait_status) == 127) return std::nullopt;
  return end.output;
}

}  // namespace scangrade::grader
