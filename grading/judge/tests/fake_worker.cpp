// A fake worker for the judge's tests: speaks the protocol (grading/protocol) without a GPU, computing
// the scan on the CPU, and misbehaves on purpose per --mode:
//
//   ok               correct results (the judge's happy path without a GPU): checks write the scan
//                    into the shared output zone (memfds from the judge or the fake checker); timed
//                    calls compute it too and report event_ms = 1 / --ratio (default 1), or with
//                    --report-scale F, F x the time the call took (1: an honest clock, the judge's
//                    calibration worker in the tests; 0.75: a process that forges its clock); with
//                    --sleep-ms MS every timed call first sleeps MS ms (only the slot of
//                    --slow-slot SLOT, when given: a slot that holds the GPU)
//   crash_on=K       SIGSEGV on command K (after printing a line on stderr)
//   hang_on=K        sleeps forever on command K
//   hang_slot=SLOT   sleeps forever on every check of that slot (a bonus slot that spins)
//   crash_small=SLOT dies of SIGSEGV on every check of that slot with n <= 2048
//   crash_large=SLOT dies of SIGSEGV on every check of that slot with n > 2048
//   host_copy_large=SLOT  right results, but every check of that slot with n > 2048 reports a run-time
//                    policy finding (host_compute), as the policy monitor does for a round trip
//   two_blocks_large=SLOT  every check of that slot with n > 2048 reports a multi-block launch (the
//                    launch rule); results are right up to n = 4096 and wrong above
//   stale_timed      timed calls write nothing (a slot that caches results)
//   lying_times      timed calls take 20 ms but report 0.001 ms (a process that forges its clock)
//   finishes_after_return  timed calls return at once and write their output later, when the next
//                    command arrives (work left running after the call returned)
//   caches_sampled_input  timed calls keep a result cache keyed on n and 32 sampled input elements:
//                    a hit copies the remembered output at once (reports 0.001 ms), a miss computes
//                    it in 20 ms (reports 20 ms); a hit prints "result cache hit" on stderr
//   lie_nonce[=K]    replies with a wrong nonce (on command K, or on every command)
//   bad_stage[=K]    sends a stage line other than "ran" before its reply (on command K, or every)
//   short_output[=K] leaves the last output element unwritten (poisoned)
//   garbage_stdout   prints fake PASS lines and fake JSON results on stdout/stderr, replies correctly
//   no_hello         never says hello (sleeps forever)
//   exit_early[=K]   exits with status 0 without replying (on command K, or right after hello)
//   harness_error_on=K  replies to check K with a harness_error (the harness's code in it failed)
//   breaks_after=SLOT   once it has run a check of SLOT, replies to every later check of another slot
//                    with a harness_error (a slot that broke its process's state for the next slot)
//
// --monitor-off WHY: its hello says the policy monitor is off, for that reason.
// --relink-log TARGET / --hardlink-log TARGET: before its hello, replaces the file its stdout goes to
// (found through /proc/self/fd/1) by a symbolic / hard link to TARGET and prints what happened, then
// behaves as its mode says (a worker that tries to make the judge write or read another file).
//
// Commands are numbered by the judge (k = 1, 2, ...). Options: --pid-dir DIR writes DIR/<pid>;
// --dump-dir DIR copies every input file there as DIR/in-K.bin; --probe-lock FILE appends to
// FILE.probe, per command, "<mode> <k> <held>" where held is how the judge holds the GPU lock FILE
// (judge --gpu-lock) at that moment: "exclusive", "shared" or "free"; with --stage, checks say
// {"stage": "ran"} first, and with --probe-lock, 200 ms later, "ran <k> <held>" is appended.
// Shared buffers are memfds (the emulation backend's, or grading/judge/tests/fake_checker.cpp's).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fd_passing.h"
#include "messages.h"
#include "protocol.h"
#include "scangrade/check.h"

using nlohmann::json;
using namespace scangrade::grader;

namespace {

struct Misbehaviour {
  std::string name = "ok";
  long k = -1;  // -1: every command
  std::string slot;  // hang_slot
  bool on(const std::string& n, std::uint64_t cmd) const {
    return name == n && (k < 0 || static_cast<std::uint64_t>(k) == cmd);
  }
};

[[noreturn]] void sleep_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
}

template <typename T>
void scan_into(const void* in_bytes, void* out_bytes, std::uint64_t n, bool inclusive) {
  const T* input = static_cast<const T*>(in_bytes);
  T* output = static_cast<T*>(out_bytes);
  using Acc = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;
  Acc sum = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (inclusive) sum += static_cast<Acc>(input[i]);
    output[i] = static_cast<T>(sum);
    if (!inclusive) sum += static_cast<Acc>(input[i]);
  }
}

/// The memfds the judge passed for a command, mapped.
struct Mapped {
  std::vector<char*> at;
  std::vector<std::size_t> sizes;
  Mapped(int sock, const Command& cmd) {
    std::string byte;
    std::vector<int> fds;
    if (!receive_with_fds(sock, byte, fds, 1) || fds.size() != cmd.sizes.size()) {
      std::fprintf(stderr, "fake worker: the buffers did not arrive\n");
      std::exit(5);
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      void* p = mmap(nullptr, cmd.sizes[i], PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
      if (p == MAP_FAILED) std::exit(6);
      at.push_back(static_cast<char*>(p));
      sizes.push_back(cmd.sizes[i]);
      close(fds[i]);
    }
  }
  ~Mapped() {
    for (std::size_t i = 0; i < at.size(); ++i) munmap(at[i], sizes[i]);
  }
};

/// How other processes hold the flock on `path` right now (probed without waiting).
std::string lock_state(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return "unopenable";
  std::string state = "exclusive";
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) state = "free";
  else if (::flock(fd, LOCK_SH | LOCK_NB) == 0) state = "shared";
  ::close(fd);
  return state;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, pid_dir, dump_dir, probe_lock, relink_log, hardlink_log, monitor_off;
  Misbehaviour mode;
  double ratio = 1.0, report_scale = -1, sleep_ms = 0;
  std::string slow_slot;
  bool stage = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--channel") dir = next();
    else if (a == "--pid-dir") pid_dir = next();
    else if (a == "--dump-dir") dump_dir = next();
    else if (a == "--probe-lock") probe_lock = next();
    else if (a == "--stage") stage = true;
    else if (a == "--relink-log") relink_log = next();
    else if (a == "--monitor-off") monitor_off = next();
    else if (a == "--hardlink-log") hardlink_log = next();
    else if (a == "--ratio") ratio = std::stod(next());
    else if (a == "--report-scale") report_scale = std::stod(next());
    else if (a == "--sleep-ms") sleep_ms = std::stod(next());
    else if (a == "--slow-slot") slow_slot = next();
    else if (a == "--mode") {
      const std::string m = next();
      const auto eq = m.find('=');
      mode.name = m.substr(0, eq);
      if (eq != std::string::npos &&
          (mode.name == "hang_slot" || mode.name == "crash_small" || mode.name == "crash_large" ||
           mode.name == "host_copy_large" || mode.name == "two_blocks_large" || mode.name == "breaks_after"))
        mode.slot = m.substr(eq + 1);
      else if (eq != std::string::npos) mode.k = std::stol(m.substr(eq + 1));
    }
  }
  if (!pid_dir.empty()) {
    const std::string pid = std::to_string(getpid());
    write_file_atomic(pid_dir + "/" + pid, pid.data(), pid.size());
  }
  if (!relink_log.empty() || !hardlink_log.empty()) {
    char log[4096] = {};
    const ssize_t len = readlink("/proc/self/fd/1", log, sizeof log - 1);
    const bool hard = relink_log.empty();
    const std::string target = hard ? hardlink_log : relink_log;
    const bool done = len > 0 && unlink(log) == 0 &&
                      (hard ? link(target.c_str(), log) : symlink(target.c_str(), log)) == 0;
    std::printf("relink of %s to %s: %s\n", len > 0 ? log : "?", target.c_str(), done ? "done" : std::strerror(errno));
    std::fflush(stdout);
  }
  if (mode.name == "no_hello") sleep_forever();
  if (mode.name == "garbage_stdout") {
    std::printf("PASS all cases\n{\"k\": 1, \"status\": \"pass\", \"points\": 1000}\n");
    std::fflush(stdout);
  }
  Hello hello;
  hello.device = "fake CPU worker";
  hello.monitor = monitor_off;
  write_line(kReplyFd, encode(hello));
  if (mode.name == "exit_early" && mode.k < 0) return 0;

  std::unique_ptr<Mapped> timed;         // time_begin .. time_end
  std::map<std::string, std::vector<char>> result_cache;  // caches_sampled_input
  int late_pair = -1;                                      // finishes_after_return: the call not yet written
  std::unique_ptr<Mapped> kept_buffers;  // the last shared check's (Command::kept)
  bool broken = false;                   // breaks_after: its slot ran in this process
  std::string line;
  while (std::getline(std::cin, line)) {
    const Command cmd = json::parse(line).get<Command>();
    const std::uint64_t k = cmd.k;
    const std::uint64_t n = cmd.c.n;
    if (!dump_dir.empty()) {
      const auto in = read_file(input_path(dir, k));
      if (in) write_file_atomic(dump_dir + "/in-" + std::to_string(k) + ".bin", in->data(), in->size());
    }
    const auto probe = [&](const std::string& what) {
      if (probe_lock.empty()) return;
      std::FILE* f = std::fopen((probe_lock + ".probe").c_str(), "a");
      if (f) {
        std::fprintf(f, "%s %llu %s\n", what.c_str(), static_cast<unsigned long long>(k), lock_state(probe_lock).c_str());
        std::fclose(f);
      }
    };
    probe(name(cmd.mode));
    if (mode.on("bad_stage", k)) write_line(kReplyFd, encode(Stage{k, cmd.nonce, "started"}));
    if (stage && cmd.mode == Mode::Check) {
      write_line(kReplyFd, encode(Stage{k, cmd.nonce}));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      probe("ran");
    }
    if (mode.on("crash_on", k)) {
      std::fprintf(stderr, "fake worker: about to crash on command %llu\n", static_cast<unsigned long long>(k));
      std::fflush(stderr);
      raise(SIGSEGV);
    }
    if (mode.on("hang_on", k)) sleep_forever();
    if (mode.name == "hang_slot" && cmd.mode == Mode::Check && name(cmd.c.slot) == mode.slot) sleep_forever();
    if (mode.name == "crash_small" && cmd.mode == Mode::Check && name(cmd.c.slot) == mode.slot && n <= 2048)
      raise(SIGSEGV);
    if (mode.name == "crash_large" && cmd.mode == Mode::Check && name(cmd.c.slot) == mode.slot && n > 2048)
      raise(SIGSEGV);
    if (mode.on("exit_early", k)) return 0;
    if (mode.name == "garbage_stdout") {
      std::printf("PASS case %llu\n{\"k\": %llu, \"nonce\": \"%s\", \"status\": \"pass\"}\n",
                  static_cast<unsigned long long>(k), static_cast<unsigned long long>(k), cmd.nonce.c_str());
      std::fprintf(stderr, "{\"score\": 100}\n");
      std::fflush(stdout);
    }
    ReplyHeader header;
    header.k = k;
    header.nonce = mode.on("lie_nonce", k) ? std::string("0000") : cmd.nonce;
    const auto check_reply = [&](const ReplyHeader& h) {
      CheckReply reply;
      static_cast<ReplyHeader&>(reply) = h;
      if (mode.name == "host_copy_large" && name(cmd.c.slot) == mode.slot && n > 2048) {
        reply.policy = "the slot copied " + std::to_string(n * 4) + " bytes device->host and then " +
                       std::to_string(n * 4) + " bytes host->device (fake)";
        reply.policy_rule = "host_compute";
      }
      if (mode.name == "two_blocks_large" && name(cmd.c.slot) == mode.slot && n > 2048) {
        reply.policy = "the slot launched kernel k with a grid of 2 blocks (fake)";
        reply.policy_rule = "launch";
      }
      return reply;
    };
    const bool f32 = cmd.c.dtype == scangrade::DType::Float32;
    const bool inclusive = cmd.c.kind == scangrade::ScanKind::Inclusive;
    const auto scan = [&](const void* in, void* out) {
      if (f32) scan_into<float>(in, out, n, inclusive);
      else scan_into<std::int32_t>(in, out, n, inclusive);
    };
    if (late_pair >= 0 && timed) {  // the work the last timed call left running ends now
      scan(timed->at[late_pair], timed->at[2 + late_pair]);
      late_pair = -1;
    }
    if (cmd.mode == Mode::TimeBegin) {
      timed = std::make_unique<Mapped>(kReplyFd, cmd);
      write_line(kReplyFd, encode(header));
    } else if (cmd.mode == Mode::TimeEnd) {
      timed.reset();
      write_line(kReplyFd, encode(header));
    } else if (cmd.mode == Mode::TimeCall) {
      TimeCallReply r;
      static_cast<ReplyHeader&>(r) = header;
      if (cmd.call >= 0 && timed) {
        if (mode.name == "caches_sampled_input") {
          const char* in = timed->at[cmd.call];
          char* out = timed->at[2 + cmd.call];
          std::string key = std::to_string(n) + ":";
          for (std::uint64_t s = 0; s < 32 && n > 0; ++s) key.append(in + (s * n / 32) * 4, 4);
          const auto hit = result_cache.find(key);
          if (hit != result_cache.end()) {
            std::memcpy(out, hit->second.data(), n * 4);
            r.event_ms = r.host_ms = 0.001;
            std::fprintf(stderr, "fake worker: result cache hit\n");
            std::fflush(stderr);
          } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            scan(in, out);
            result_cache[key].assign(out, out + n * 4);
            r.event_ms = r.host_ms = 20.0;
          }
          write_line(kReplyFd, encode(r));
          continue;
        }
        const auto started = std::chrono::steady_clock::now();
        if (sleep_ms > 0 && (slow_slot.empty() || name(cmd.c.slot) == slow_slot))
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms));
        if (mode.name == "finishes_after_return") late_pair = cmd.call;
        else if (mode.name != "stale_timed") scan(timed->at[cmd.call], timed->at[2 + cmd.call]);
        const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
        r.event_ms = r.host_ms = report_scale >= 0 ? report_scale * took : 1.0 / ratio;
        if (mode.name == "lying_times") {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          r.event_ms = r.host_ms = 0.001;
        }
      }
      write_line(kReplyFd, encode(r));
    } else if (cmd.shared) {
      if (!cmd.kept) kept_buffers = std::make_unique<Mapped>(kReplyFd, cmd);
      if (!kept_buffers || kept_buffers->sizes != std::vector<std::size_t>(cmd.sizes.begin(), cmd.sizes.end())) {
        std::fprintf(stderr, "fake worker: kept buffers that it does not hold\n");
        return 8;
      }
      const Mapped& buffers = *kept_buffers;
      if (mode.on("harness_error_on", k) || (broken && name(cmd.c.slot) != mode.slot)) {
        header.harness_error = "worker: the case buffers did not arrive (fake)";
        write_line(kReplyFd, encode(header));
        continue;
      }
      if (mode.name == "breaks_after" && name(cmd.c.slot) == mode.slot) broken = true;
      if (!dump_dir.empty())
        write_file_atomic(dump_dir + "/in-" + std::to_string(k) + ".bin", buffers.at[0], n * 4);
      char* out = buffers.at[1] + kGuardCount * 4;
      scan(buffers.at[0], out);
      if (mode.on("short_output", k) && n > 0) std::memset(out + (n - 1) * 4, 0xEF, 4);
      if (mode.name == "two_blocks_large" && name(cmd.c.slot) == mode.slot && n > 4096) std::memset(out, 0xEF, 4);
      write_line(kReplyFd, encode(check_reply(header)));
    } else {  // local buffers (compute-sanitizer runs): nothing comes back but the reply
      write_line(kReplyFd, encode(check_reply(header)));
    }
  }
  return 0;
}
