// scangrade_sandbox: runs one command on student files (nvcc, g++, the emulation rewriter, the link)
// in the sandbox of sandbox.h, with a deadline and a cap on what it prints. Used by grading/build.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "files.h"
#include "sandbox.h"

namespace sb = scangrade::sandbox;

namespace {

constexpr int kUsage = 2, kTimeout = 124, kCannotRun = 125;

const char* kUsageText = R"(usage: scangrade_sandbox [--sandbox auto|require|off] [--bwrap PATH] [--uid N]
                         [--ro PATH]... [--rw PATH]... [--gpu] [--chdir DIR] [--timeout-s S]
                         [--output-limit BYTES] [--isolation-json FILE] -- PROGRAM [ARGS...]
       scangrade_sandbox --probe [--sandbox ...] [--bwrap PATH]

Runs PROGRAM (a path) in the grader's sandbox: bubblewrap namespaces, only the system, the --ro and
--rw paths visible, an unprivileged uid when run as root, cgroup v2 or rlimit limits; every process
it started is gone when this returns. Its stdout and stderr, merged, are printed at the end, capped
(the first and last BYTES/2 bytes, default 131072 in all, and a count of what was left out).

Exit code: PROGRAM's (128+N when killed by signal N); 124 when it ran past --timeout-s; 125 when it
could not be started; 2 on a usage error or when --sandbox require cannot be honoured.
--probe prints what protection this machine gives (JSON, as results.json "isolation") and exits 0.
)";

struct Args {
  sb::Config config;
  sb::Mounts mounts;
  double timeout_s = 600;
  std::size_t output_limit = 128 * 1024;
  std::string isolation_json;
  bool probe = false;
  std::vector<std::string> program;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
      return argv[++i];
    };
    if (k == "--") {
      a.program.assign(argv + i + 1, argv + argc);
      break;
    } else if (k == "--sandbox") {
      const auto m = sb::parse_mode(value());
      if (!m) throw std::invalid_argument("--sandbox takes auto, require or off");
      a.config.mode = *m;
    } else if (k == "--bwrap") {
      a.config.bwrap = value();
    } else if (k == "--uid") {
      a.config.uid = static_cast<uid_t>(std::stoul(value()));
    } else if (k == "--ro") {
      a.mounts.read_only.push_back(value());
    } else if (k == "--rw") {
      a.mounts.writable.push_back(value());
    } else if (k == "--gpu") {
      a.mounts.gpu = true;
    } else if (k == "--chdir") {
      a.mounts.chdir = value();
    } else if (k == "--timeout-s") {
      a.timeout_s = std::stod(value());
    } else if (k == "--output-limit") {
      a.output_limit = std::stoul(value());
    } else if (k == "--isolation-json") {
      a.isolation_json = value();
    } else if (k == "--probe") {
      a.probe = true;
    } else if (k == "--help" || k == "-h") {
      std::cout << kUsageText;
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option " + k);
    }
  }
  if (!a.probe && a.program.empty()) throw std::invalid_argument("no program after --");
  a.config.name = "compile";
  return a;
}

int run(const Args& a, sb::Sandbox& sandbox) {
  for (const std::string& dir : a.mounts.writable) sandbox.hand_over(dir);
  const auto r = sandbox.prepare(a.program, a.mounts);
  const auto cannot_start = [&a](const char* why) {
    const int error = errno;  // before any output can change it
    std::cerr << "scangrade_sandbox: cannot start " << a.program[0] << ": " << why << ": " << std::strerror(error) << "\n";
    return kCannotRun;
  };
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return cannot_start("pipe2");
  std::vector<char*> args;
  for (const std::string& s : r->argv()) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return cannot_start("fork");
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    const int fd = open("/dev/null", O_RDONLY);
    dup2(fd, 0);
    setpgid(0, 0);
    int e = r->enter();
    if (e == 0) {
      execv(args[0], args.data());
      e = errno;
    }
    (void)!write(err[1], &e, sizeof e);
    _exit(kCannotRun);
  }
  close(out[1]);
  close(err[1]);
  int child_errno = 0;
  if (read(err[0], &child_errno, sizeof child_errno) == sizeof child_errno) {
    std::cerr << "scangrade_sandbox: cannot start " << a.program[0] << ": " << std::strerror(child_errno) << "\n";
    waitpid(pid, nullptr, 0);
    return kCannotRun;
  }
  close(err[0]);

  scangrade::grader::CappedReader reader(a.output_limit / 2, a.output_limit / 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.timeout_s);
  bool timed_out = false;
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    const ssize_t got = read(out[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // every writer is gone (the pid namespace ended)
    reader.add(buf, static_cast<std::size_t>(got));
  }
  if (timed_out) kill(-pid, SIGKILL), kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r->finish();  // whatever it left (daemons, spinners) ends here
  close(out[0]);
  std::cout << reader.done().text << std::flush;
  if (timed_out) {
    std::cerr << "scangrade_sandbox: " << a.program[0] << " ran past its " << a.timeout_s << " s deadline and was killed\n";
    return kTimeout;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Args a;
  try {
    a = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "scangrade_sandbox: " << e.what() << "\n" << kUsageText;
    return kUsage;
  }
  try {
    sb::Sandbox sandbox(a.config);
    const nlohmann::json iso = sandbox.isolation();
    if (!a.isolation_json.empty()) std::ofstream(a.isolation_json) << iso.dump(1) << "\n";
    if (a.probe) {
      std::cout << iso.dump(1) << "\n";
      return 0;
    }
    return run(a, sandbox);
  } catch (const sb::Unavailable& e) {
    std::cerr << "scangrade_sandbox: " << e.what() << "\n";
    return kUsage;
  }
}
