// The sandbox around student processes (sandbox.h).
#include "sandbox.h"

#include "files.h"

#include <dirent.h>
#include <algorithm>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace scangrade::sandbox {
namespace {

constexpr uid_t kNobody = 65534;

std::string errno_text() { return std::strerror(errno); }

bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

bool has_word(const std::string& words, const std::string& word) {
  std::istringstream in(words);
  for (std::string w; in >> w;)
    if (w == word) return true;
  return false;
}

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

/// The cgroup v2 mount point, or "".
std::string cgroup2_mount() {
  std::ifstream mounts("/proc/self/mounts");
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream f(line);
    std::string dev, dir, type;
    f >> dev >> dir >> type;
    if (type == "cgroup2") return dir;
  }
  return "";
}

/// Runs argv (a path first), inside `run` when given, and keeps the first 4 KiB of what it printed in
/// `output`; its exit status (128 + N when killed by signal N), or -1 when it could not start.
int run_quietly(const std::vector<std::string>& argv, const Run* run, std::string* output) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return -1;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    if (run && run->enter() != 0) _exit(126);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  const grader::CappedText text = grader::read_capped(out[0], 4096, 0);
  close(out[0]);
  if (output) *output = text.text;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string human_bytes(std::uint64_t b) {
  if (b % (1ull << 30) == 0) return std::to_string(b >> 30) + " GiB";
  return std::to_string(b >> 20) + " MiB";
}

}  // namespace

std::optional<Mode> parse_mode(const std::string& text) {
  if (text == "off") return Mode::Off;
  if (text == "auto") return Mode::Auto;
  if (text == "require") return Mode::Require;
  return std::nullopt;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Off: return "off";
    case Mode::Auto: return "auto";
    case Mode::Require: return "require";
  }
  return "?";
}

std::string Isolation::summary() const {
  std::string s = "sandbox: ";
  if (sandboxed) {
    s += tool + " " + tool_version + " (";
    for (std::size_t i = 0; i < namespaces.size(); ++i) s += (i ? ", " : "") + namespaces[i];
    s += " namespaces)";
  } else {
    s += mode == "off" ? "off (--sandbox off)" : "NONE (no bubblewrap: " + (notes.empty() ? std::string("?") : notes[0]) + ")";
  }
  if (uid_dropped && uid) s += ", uid " + std::to_string(*uid);
  if (limits_via == "cgroup v2") {
    s += ", limits by cgroup v2 (" + human_bytes(limits.memory_bytes) + ", " + std::to_string(limits.pids) + " processes, " +
         std::to_string(limits.cpus).substr(0, 4) + " CPUs)";
  } else if (limits_via == "rlimit") {
    s += ", limits by rlimit (" + std::to_string(limits.pids) + " more processes, files up to " + human_bytes(limits.file_bytes) +
         ", " + std::to_string(limits.cpu_seconds) + " s of CPU; memory not limited)";
  }
  return s;
}

void to_json(nlohmann::json& j, const Isolation& iso) {
  j = {{"mode", iso.mode},
       {"sandboxed", iso.sandboxed},
       {"tool", iso.tool},
       {"tool_version", iso.tool_version},
       {"namespaces", iso.namespaces},
       {"uid_dropped", iso.uid_dropped},
       {"uid", iso.uid ? nlohmann::json(*iso.uid) : nlohmann::json(nullptr)},
       {"limits_via", iso.limits_via},
       {"limits",
        {{"memory_bytes", iso.limits.memory_bytes},
         {"pids", iso.limits.pids},
         {"cpus", iso.limits.cpus},
         {"file_bytes", iso.limits.file_bytes},
         {"cpu_seconds", iso.limits.cpu_seconds},
         {"open_files", iso.limits.open_files},
         {"tmp_bytes", iso.limits.tmp_bytes}}},
       {"notes", iso.notes},
       {"summary", iso.summary()}};
}

// --- Sandbox ---------------------------------------------------------------------------------------

// cgroup v2: <mount>/scangrade/<name>-<pid> with memory, pids and cpu limits; runs in leaves below.
std::string Sandbox::make_cgroup() {
  std::string why_no_cgroup;
  const std::string mount = cgroup2_mount();
  if (mount.empty()) {
    why_no_cgroup = "no cgroup v2 hierarchy is mounted";
  } else {
    const std::string base = mount + "/scangrade";
    if (mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
      why_no_cgroup = "cannot create " + base + ": " + errno_text();
    } else {
      const std::string have = grader::read_file(mount + "/cgroup.subtree_control").value_or("");
      if (!has_word(have, "memory") || !has_word(have, "pids")) write_text(mount + "/cgroup.subtree_control", "+memory +pids +cpu");
      const std::string now = grader::read_file(mount + "/cgroup.subtree_control").value_or("");
      if (!has_word(now, "memory") || !has_word(now, "pids")) {
        why_no_cgroup = "the cgroup v2 hierarchy at " + mount + " does not delegate the memory and pids controllers (it has: '" +
                        now.substr(0, now.find('\n')) + "')";
      } else {
        write_text(base + "/cgroup.subtree_control", has_word(now, "cpu") ? "+memory +pids +cpu" : "+memory +pids");
        const std::string mine = base + "/" + config_.name + "-" + std::to_string(getpid());
        if (mkdir(mine.c_str(), 0755) != 0 && errno != EEXIST) {
          why_no_cgroup = "cannot create " + mine + ": " + errno_text();
        } else if (!write_text(mine + "/memory.max", std::to_string(config_.limits.memory_bytes)) ||
                   !write_text(mine + "/pids.max", std::to_string(config_.limits.pids))) {
          why_no_cgroup = "cannot set memory.max/pids.max in " + mine + ": " + errno_text();
          rmdir(mine.c_str());
        } else {
          if (has_word(now, "cpu")) {
            const long period = 100000;
            write_text(mine + "/cpu.max", std::to_string(static_cast<long>(config_.limits.cpus * period)) + " " +
                                              std::to_string(period));
          }
          write_text(mine + "/memory.swap.max", "0");
          cgroup_parent_ = mine;
        }
      }
    }
  }
  return why_no_cgroup;
}

// RLIMIT_NPROC counts every process of the uid: allow `pids` more than it has now.
std::uint64_t Sandbox::nproc_for_rlimit() const {
  std::uint64_t have = 0;
  const uid_t uid = drop_uid_.value_or(getuid());
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      struct stat st {};
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && stat(("/proc/" + std::string(e->d_name)).c_str(), &st) == 0 &&
          st.st_uid == uid)
        ++have;
    }
    closedir(d);
  }
  return have + config_.limits.pids;
}

// Whether bubblewrap can make its namespaces here: "" when it can (iso_.sandboxed), else why not.
std::string Sandbox::probe_bwrap() {
  std::string why_no_bwrap;
  if (bwrap_path_.empty()) {
    why_no_bwrap = "bubblewrap (" + config_.bwrap + ") is not installed (apt-get install bubblewrap, or --bwrap PATH)";
  } else if (drop_uid_ && setpriv_path_.empty()) {
    why_no_bwrap = "/usr/bin/setpriv (util-linux) is missing: bubblewrap could not drop to the sandbox uid";
  } else {
    std::string version;
    run_quietly({bwrap_path_, "--version"}, nullptr, &version);
    iso_.tool_version = version.substr(version.find(' ') == std::string::npos ? 0 : version.find(' ') + 1);
    while (!iso_.tool_version.empty() && std::isspace(static_cast<unsigned char>(iso_.tool_version.back())))
      iso_.tool_version.pop_back();
    iso_.sandboxed = true;  // for prepare() below
    std::string said;
    const auto probe = prepare({"/usr/bin/true"}, Mounts{});
    const int rc = run_quietly(probe->argv(), probe.get(), &said);
    probe->finish();
    if (rc != 0) {
      iso_.sandboxed = false;
      while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
      why_no_bwrap = "bubblewrap cannot make its namespaces here (" + (said.empty() ? "exit " + std::to_string(rc) : said) +
                     "; Docker's default seccomp profile blocks user namespaces)";
    }
  }
  return why_no_bwrap;
}

Sandbox::Sandbox(Config config) : config_(std::move(config)) {
  iso_.mode = mode_name(config_.mode);
  iso_.limits = config_.limits;
  iso_.tool = "none";
  const bool root = geteuid() == 0;
  if (config_.mode == Mode::Off) {
    iso_.limits_via = "none";
    iso_.notes.push_back("--sandbox off: student code runs with the grader's uid, filesystem and network");
    return;
  }
  if (root) {
    drop_uid_ = config_.uid.value_or(kNobody);
    iso_.uid_dropped = true;
    iso_.uid = drop_uid_;
  } else {
    iso_.notes.push_back("the grader does not run as root: student code keeps the grader's uid (inside its own user namespace when sandboxed)");
  }

  const std::string why_no_cgroup = make_cgroup();
  if (!cgroup_parent_.empty()) {
    iso_.limits_via = "cgroup v2";
  } else {
    iso_.limits_via = "rlimit";
    iso_.notes.push_back("no cgroup: " + why_no_cgroup + "; limits by rlimits (processes, file size, CPU time, open files, no core dumps)");
    nproc_limit_ = nproc_for_rlimit();
  }

  // bubblewrap: found, and able to make its namespaces here (Docker's default seccomp profile, say,
  // forbids user namespaces): one sandboxed `true` tells
  bwrap_path_ = find_in_path(config_.bwrap);
  setpriv_path_ = access("/usr/bin/setpriv", X_OK) == 0 ? "/usr/bin/setpriv" : "";
  const std::string why_no_bwrap = probe_bwrap();
  if (iso_.sandboxed) {
    iso_.tool = "bubblewrap";
    iso_.namespaces = {"mount", "pid", "net", "ipc", "uts", "cgroup"};
    if (!drop_uid_) iso_.namespaces.insert(iso_.namespaces.begin(), "user");
  } else {
    iso_.tool_version.clear();
    iso_.notes.insert(iso_.notes.begin(), why_no_bwrap);
    if (config_.mode == Mode::Require) throw Unavailable("--sandbox require: " + why_no_bwrap);
  }
}

Sandbox::~Sandbox() {
  if (!cgroup_parent_.empty()) {
    // runs left behind (a caller that never called finish) are killed with the parent cgroup
    write_text(cgroup_parent_ + "/cgroup.kill", "1");
    if (DIR* d = opendir(cgroup_parent_.c_str())) {
      while (dirent* e = readdir(d))
        if (e->d_type == DT_DIR && std::strncmp(e->d_name, "run-", 4) == 0) rmdir((cgroup_parent_ + "/" + e->d_name).c_str());
      closedir(d);
    }
    for (int i = 0; i < 100 && rmdir(cgroup_parent_.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

namespace {

/// The system's read-only tree in the sandbox: /usr, the top-level folders (or their links), the
/// loader's files, /proc, /dev and, for a GPU run, the NVIDIA device nodes and /sys.
void add_system_mounts(std::vector<std::string>& a, bool gpu) {
  a.insert(a.end(), {"--ro-bind", "/usr", "/usr"});
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat st {};
    if (lstat(top, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t len = readlink(top, target, sizeof target - 1);
      if (len <= 0) continue;
      a.insert(a.end(), {"--symlink", std::string(target, static_cast<std::size_t>(len)), top});
    } else if (S_ISDIR(st.st_mode)) {
      a.insert(a.end(), {"--ro-bind", top, top});
    }
  }
  // the loader's cache, and the alternatives links toolchains resolve through (/usr/bin/c++,
  // /usr/local/cuda on some images); /etc itself 0755, not bubblewrap's 0700
  a.insert(a.end(), {"--perms", "0755", "--dir", "/etc"});
  for (const char* etc : {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"})
    a.insert(a.end(), {"--ro-bind-try", etc, etc});
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  if (gpu) {
    if (DIR* d = opendir("/dev")) {
      while (dirent* e = readdir(d))
        if (std::strncmp(e->d_name, "nvidia", 6) == 0) {
          const std::string p = "/dev/" + std::string(e->d_name);
          a.insert(a.end(), {"--dev-bind", p, p});
        }
      closedir(d);
    }
    a.insert(a.end(), {"--ro-bind", "/sys", "/sys"});
  }
}

/// The run's own binds (read-only, then writable), with the folders above them made first.
void add_binds(std::vector<std::string>& a, const Mounts& m) {
  // bubblewrap makes the folders above a bind point 0700 (as root): make them 0755 first, so that
  // the sandbox uid can reach what is bound
  std::vector<std::string> read_only = m.read_only;
  if (const char* lib = std::getenv("LD_LIBRARY_PATH")) {  // the driver's libraries, where they live
    std::istringstream dirs(lib);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      struct stat st {};
      if (dir.size() > 1 && dir[0] == '/' && dir.rfind("/usr/", 0) != 0 && stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        read_only.push_back(dir);
    }
  }
  std::vector<std::string> binds = read_only;
  binds.insert(binds.end(), m.writable.begin(), m.writable.end());
  const auto premade = [&](const std::string& dir) {
    for (const char* top : {"/usr", "/proc", "/sys"})
      if (dir == top || dir.rfind(std::string(top) + "/", 0) == 0) return true;
    if (dir == "/" || dir == "/tmp" || dir == "/dev" || dir == "/dev/shm") return true;
    for (const std::string& b : binds)
      if (dir == b || dir.rfind(b + "/", 0) == 0) return true;  // made by a bind
    return false;
  };
  std::vector<std::string> made;
  for (const std::string& b : binds)
    for (std::size_t slash = b.find('/', 1); slash != std::string::npos; slash = b.find('/', slash + 1)) {
      const std::string dir = b.substr(0, slash);
      if (premade(dir) || std::find(made.begin(), made.end(), dir) != made.end()) continue;
      made.push_back(dir);
      a.insert(a.end(), {"--perms", "0755", "--dir", dir});
    }
  for (const std::string& p : read_only) a.insert(a.end(), {"--ro-bind", p, p});
  for (const std::string& p : m.writable) a.insert(a.end(), {"--bind", p, p});
}

}  // namespace

std::vector<std::string> Sandbox::bwrap_args(const Mounts& m) const {
  // As root, bubblewrap makes the namespaces and mounts with root's rights and setpriv drops to the
  // sandbox uid inside (so the uid needs no way through the grader's folders to the bound paths);
  // otherwise a user namespace maps the grader's own uid, and no further one may be made inside.
  std::vector<std::string> a = {bwrap_path_, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "scangrade"};
  if (!drop_uid_) a.insert(a.end(), {"--unshare-user", "--disable-userns"});
  add_system_mounts(a, m.gpu);
  const std::string tmp = std::to_string(config_.limits.tmp_bytes);
  a.insert(a.end(), {"--perms", "1777", "--size", tmp, "--tmpfs", "/tmp", "--perms", "1777", "--size", tmp, "--tmpfs",
                     "/dev/shm"});
  add_binds(a, m);
  a.insert(a.end(), {"--chdir", m.chdir.empty() ? "/tmp" : m.chdir, "--clearenv", "--setenv", "PATH",
                     "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR",
                     "/tmp", "--setenv", "LANG", "C.UTF-8"});
  // where the driver's libraries are, the device selection, the emulator's knobs and the timing
  // benchmark's variation (timing_method.h) reach the student's process (the grader's settings, no
  // secret); nothing else does
  for (const char* name : {"LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
                           "NVIDIA_DRIVER_CAPABILITIES", "SCANGRADE_EMU_STACK_KB", "SCANGRADE_EMU_THREAD_ORDER",
                           "SCANGRADE_BENCH_TIMING"})
    if (const char* v = std::getenv(name)) a.insert(a.end(), {"--setenv", name, v});
  a.push_back("--");
  if (drop_uid_) {
    const std::string id = std::to_string(*drop_uid_);
    a.insert(a.end(), {setpriv_path_, "--reuid=" + id, "--regid=" + id, "--clear-groups", "--inh-caps=-all",
                       "--bounding-set=-all", "--no-new-privs", "--"});
  }
  return a;
}

std::unique_ptr<Run> Sandbox::prepare(const std::vector<std::string>& argv, const Mounts& mounts) const {
  std::unique_ptr<Run> run(new Run());
  run->owner_ = this;
  if (config_.mode != Mode::Off && !cgroup_parent_.empty()) {
    const std::string leaf = cgroup_parent_ + "/run-" + std::to_string(runs_++);
    if (mkdir(leaf.c_str(), 0755) == 0 || errno == EEXIST) {
      run->cgroup_ = leaf;
      run->cgroup_procs_ = leaf + "/cgroup.procs";
    }
  }
  if (iso_.sandboxed) run->argv_ = bwrap_args(mounts);
  run->argv_.insert(run->argv_.end(), argv.begin(), argv.end());
  return run;
}

void Sandbox::hand_over(const std::string& dir) const {
  if (drop_uid_) (void)!chown(dir.c_str(), *drop_uid_, *drop_uid_);
}

void Sandbox::kill_uid() const {
  // Without a pid namespace or a cgroup, the sandbox uid's processes are found by signalling as
  // that uid: kill(-1) reaches every process the uid owns (and nothing else).
  if (!drop_uid_ || iso_.sandboxed || !cgroup_parent_.empty()) return;
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(*drop_uid_) != 0 || setuid(*drop_uid_) != 0) _exit(1);
    kill(-1, SIGKILL);
    _exit(0);
  }
  if (pid > 0)
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
}

// --- Run -------------------------------------------------------------------------------------------

Run::~Run() { finish(); }

int Run::enter() const noexcept {
  const Sandbox& s = *owner_;
  if (s.config_.mode == Mode::Off) return 0;
  if (!cgroup_procs_.empty()) {
    const int fd = ::open(cgroup_procs_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) return errno ? errno : EIO;
    ::close(fd);
  }
  const auto limit = [](int resource, rlim_t value) {
    const struct rlimit r {value, value};
    return setrlimit(resource, &r) == 0 ? 0 : errno;
  };
  if (int e = limit(RLIMIT_CORE, 0)) return e;
  if (int e = limit(RLIMIT_FSIZE, s.config_.limits.file_bytes)) return e;
  if (int e = limit(RLIMIT_CPU, s.config_.limits.cpu_seconds)) return e;
  if (int e = limit(RLIMIT_NOFILE, s.config_.limits.open_files)) return e;
  if (s.drop_uid_ && !s.iso_.sandboxed) {  // sandboxed: setpriv drops it inside bubblewrap
    const uid_t uid = *s.drop_uid_;
    if (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) return errno;
  }
  if (s.nproc_limit_ > 0)
    if (int e = limit(RLIMIT_NPROC, s.nproc_limit_)) return e;
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a uid change clears it
  prctl(PR_SET_DUMPABLE, 0);
  return 0;
}

void Run::finish() {
  if (finished_ || owner_ == nullptr) return;
  finished_ = true;
  if (cgroup_.empty()) {
    owner_->kill_uid();
    return;
  }
  const std::string kill_file = cgroup_ + "/cgroup.kill";
  if (!write_text(kill_file, "1")) {  // kernels before 5.14: signal each process until none is left
    for (int round = 0; round < 50; ++round) {
      std::istringstream procs(grader::read_file(cgroup_procs_).value_or(""));
      bool any = false;
      for (pid_t pid; procs >> pid;) any = true, kill(pid, SIGKILL);
      if (!any) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  // the cgroup empties once the killed processes have exited (a GPU context takes a moment)
  for (int i = 0; i < 500 && rmdir(cgroup_.c_str()) != 0 && errno == EBUSY; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
}

}  // namespace scangrade::sandbox
