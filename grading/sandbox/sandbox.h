// The sandbox around every process that runs or compiles student code (the worker, compute-sanitizer
// over the worker, nvcc/g++/the rewriter on student files).
//
// What a sandboxed process gets (bubblewrap, when it can run here):
//   - new mount, pid, network (loopback only), ipc, uts and cgroup namespaces; --die-with-parent,
//     --new-session (no controlling terminal to inject into); as root, bubblewrap mounts with root's
//     rights and setpriv drops to an unprivileged uid with no capabilities inside; otherwise a user
//     namespace maps the grader's uid and no further user namespace may be made inside;
//   - a filesystem of read-only binds of the system (/usr and its /bin, /lib links, the dynamic
//     loader's cache), of the paths the caller names read-only (the toolchain, the built worker, the
//     contract headers), the paths it names writable (a case channel, a compile's output folder), a
//     private size-capped /tmp and /dev/shm, a fresh /proc (its own processes only), a minimal /dev
//     (plus the NVIDIA device nodes for the GPU backend, and a read-only /sys, which the driver needs);
//   - an empty environment but PATH, HOME=/tmp, TMPDIR=/tmp, LANG and the CUDA device selection;
//   - when the grader runs as root: an unprivileged uid (no capabilities, no new privileges);
//   - limits: a cgroup v2 per run (memory.max, pids.max, cpu.max; cgroup.kill ends every process of
//     the run) where one can be made, else rlimits (RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_CPU,
//     RLIMIT_CORE = 0, RLIMIT_NOFILE; never RLIMIT_AS, which breaks CUDA's initialisation).
// When a run ends, for any reason, no process it started survives: the pid namespace dies with its
// first process, the cgroup is killed, and without either the sandbox uid's processes are killed.
//
// What is in force is recorded (Isolation, written into results.json and build.json) with the
// reason for every fallback. Mode::Require refuses to run without bubblewrap.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scangrade::sandbox {

enum class Mode { Off, Auto, Require };
/// "off" | "auto" | "require"
std::optional<Mode> parse_mode(const std::string& text);
const char* mode_name(Mode m);

/// Thrown by Sandbox's constructor under Mode::Require when no sandbox can be made (the grader's
/// exit code 2: a setting the machine cannot honour).
class Unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Limits {
  std::uint64_t memory_bytes = 8ull << 30;  // cgroup memory.max (tmpfs pages written count too)
  std::uint64_t pids = 256;                 // cgroup pids.max, else RLIMIT_NPROC above the uid's count
  double cpus = 2.0;                        // cgroup cpu.max, in cores
  std::uint64_t file_bytes = 1ull << 30;    // RLIMIT_FSIZE: the largest file (a 2^26 case's output is 512 MiB)
  std::uint64_t cpu_seconds = 1800;         // RLIMIT_CPU: a backstop; the grader's deadlines come first
  std::uint64_t open_files = 1024;          // RLIMIT_NOFILE
  std::uint64_t tmp_bytes = 512ull << 20;   // the private /tmp and /dev/shm, each
};

struct Config {
  Mode mode = Mode::Auto;
  std::string bwrap = "bwrap";      // a path, or a name looked up in PATH
  Limits limits;
  std::optional<uid_t> uid;         // when root: the unprivileged uid (default 65534, nobody)
  std::string name = "scangrade";   // names the cgroup: scangrade/<name>-<pid>-<n>
};

/// What one run may see besides the system: paths bound at the same place.
struct Mounts {
  std::vector<std::string> read_only;
  std::vector<std::string> writable;
  bool gpu = false;   // the NVIDIA device nodes and a read-only /sys
  std::string chdir;  // working directory inside (default /tmp)
};

/// What protected the runs (results.json "isolation").
struct Isolation {
  std::string mode;                    // off | auto | require
  bool sandboxed = false;              // bubblewrap in force
  std::string tool;                    // "bubblewrap" or "none"
  std::string tool_version;
  std::vector<std::string> namespaces; // user, mount, pid, net, ipc, uts, cgroup
  bool uid_dropped = false;
  std::optional<uid_t> uid;
  std::string limits_via;              // "cgroup v2" | "rlimit"
  Limits limits;
  std::vector<std::string> notes;      // every fallback, with its reason
  /// One line for printed tables: "sandbox: bubblewrap 0.8.0 (user, mount, pid, net, ipc, uts, cgroup
  /// namespaces), uid 65534, limits by cgroup v2 (8 GiB, 256 processes, 2 CPUs)".
  std::string summary() const;
};
void to_json(nlohmann::json& j, const Isolation& iso);

class Sandbox;

/// One process tree in the sandbox: fork, call enter() in the child, exec argv(); after it ended (or
/// to end it) call finish(), which kills whatever it left and frees its cgroup.
class Run {
 public:
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  /// What to exec: bubblewrap's command line around the program, or the program itself.
  const std::vector<std::string>& argv() const { return argv_; }
  /// In the forked child, before exec (async-signal-safe): joins the run's cgroup, sets the rlimits
  /// and the parent-death signal, drops to the sandbox uid. Returns 0 or the errno that stopped it.
  int enter() const noexcept;
  /// Kills every process of the run and removes its cgroup. Idempotent.
  void finish();

 private:
  friend class Sandbox;
  Run() = default;
  std::vector<std::string> argv_;
  std::string cgroup_;       // the run's cgroup folder, or ""
  std::string cgroup_procs_; // cgroup_ + "/cgroup.procs"
  const Sandbox* owner_ = nullptr;
  bool finished_ = false;
};

class Sandbox {
 public:
  /// Probes bubblewrap (one short sandboxed `true`) and cgroup v2; throws Unavailable under
  /// Mode::Require when bubblewrap cannot run here.
  explicit Sandbox(Config config);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  const Isolation& isolation() const { return iso_; }
  bool active() const { return config_.mode != Mode::Off; }

  /// A run of argv (argv[0] a path) with these mounts.
  std::unique_ptr<Run> prepare(const std::vector<std::string>& argv, const Mounts& mounts) const;
  /// Makes `dir` writable by the sandbox uid (when one is used): the folders named writable.
  void hand_over(const std::string& dir) const;
  /// The uid sandboxed processes run as, when the grader drops to one.
  std::optional<uid_t> uid() const { return drop_uid_; }

 private:
  /// The constructor's steps: this grader's cgroup (cgroup_parent_; returns "" or why there is
  /// none), the process limit when rlimits stand in for it, and the bubblewrap probe.
  std::string make_cgroup();
  std::uint64_t nproc_for_rlimit() const;
  std::string probe_bwrap();
  friend class Run;
  std::vector<std::string> bwrap_args(const Mounts& mounts) const;
  void kill_uid() const;

  Config config_;
  Isolation iso_;
  std::string bwrap_path_;
  std::string setpriv_path_;
  std::string cgroup_parent_;  // <cgroup2 mount>/scangrade/<name>-<pid>, or ""
  std::optional<uid_t> drop_uid_;
  std::uint64_t nproc_limit_ = 0;  // RLIMIT_NPROC when no cgroup limits pids
  mutable unsigned runs_ = 0;
};

}  // namespace scangrade::sandbox
