// --gpu-lock (judge.h GpuLock): judges sharing a GPU run cases side by side (shared) and time alone
// (exclusive); a judge waiting to time holds back new shared holders (the turnstile). The lock is
// not inherited by programs the judge starts, and the judge's waits are not charged to the
// submission. --baseline-cache: baselines measured once are reused by the next judge.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "judge.h"
#include "protocol.h"

namespace scangrade::grader {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

const std::string kJudge = SCANGRADE_JUDGE;
const std::string kFake = SCANGRADE_FAKE_WORKER;
const std::string kFakeChecker = SCANGRADE_FAKE_CHECKER;

// Two perf cases: on the gpu backend each gets a "time" command after the functional runs.
const char* kSuite = R"({"suite": "lock", "version": 1,
 "performance": {"points": {"hierarchical": 2}},
 "cases": [
  {"id": "hier.int32.n5000.incl", "slot": "hierarchical", "dtype": "int32", "kind": "inclusive", "n": 5000,
   "values": "random", "seed": 3, "why": "multi-block", "perf": true},
  {"id": "hier.int32.n7000.excl", "slot": "hierarchical", "dtype": "int32", "kind": "exclusive", "n": 7000,
   "values": "random", "seed": 4, "why": "multi-block", "perf": true}]})";

double now_s() { return std::chrono::duration<double>(Steady::now().time_since_epoch()).count(); }

/// A second judge in a child process: after `go`, takes the lock in `mode`, holds it `hold_s`, and
/// reports when it got it and when it let go.
struct Holder {
  pid_t pid = -1;
  int go = -1, done = -1;
  double got = 0, released = 0;

  Holder(const std::string& lock, GpuLock::Mode mode, double hold_s) {
    int go_pipe[2], done_pipe[2];
    if (pipe(go_pipe) != 0 || pipe(done_pipe) != 0) throw std::runtime_error("pipe");
    pid = fork();
    if (pid == 0) {
      close(go_pipe[1]);
      close(done_pipe[0]);
      char c;
      (void)!read(go_pipe[0], &c, 1);
      double times[2] = {-1, -1};
      try {
        GpuLock mine(lock, mode);
        times[0] = now_s();
        std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
        times[1] = now_s();
      } catch (...) {
      }
      (void)!write(done_pipe[1], times, sizeof times);
      _exit(0);
    }
    close(go_pipe[0]);
    close(done_pipe[1]);
    go = go_pipe[1];
    done = done_pipe[0];
  }
  void start() { (void)!write(go, "x", 1); }
  void join() {
    double times[2] = {-2, -2};
    (void)!read(done, times, sizeof times);
    got = times[0];
    released = times[1];
    close(go);
    close(done);
    waitpid(pid, nullptr, 0);
  }
};

class GpuLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/scangrade-lock-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    lock_ = dir_ + "/gpu0.lock";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  /// Whether another open file description can take the lock exclusively right now.
  bool free_now() const {
    const int fd = ::open(lock_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    const bool free = fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0) ::close(fd);
    return free;
  }
  /// Writes the suite and a worker script (the fake worker with `args`); returns the judge's
  /// command line, writing results to `out`.
  std::string judge_command(const std::string& out, const std::string& args, const std::string& extra) {
    std::ofstream(dir_ + "/suite.json") << kSuite;
    std::ofstream(dir_ + "/worker.sh") << "#!/bin/sh\nexec '" << kFake << "' " << args << " \"$@\"\n";
    fs::permissions(dir_ + "/worker.sh", fs::perms::owner_all);
    // (no reference worker: the judge's clock is calibrated with the worker's own empty calls, whose
    // commands the probe below counts)
    return "'" + kJudge + "' --sandbox off --worker '" + dir_ + "/worker.sh' --out '" + out +
           "' --submission-name alice --submission-path /subs/alice --backend gpu --checker '" + kFakeChecker +
           "' --reference-worker none --sanitizer off --suite '" + dir_ + "/suite.json' " + extra + " 2>> '" + dir_ +
           "/err.txt'";
  }
  std::string dir_, lock_;
};

TEST_F(GpuLockTest, SharedHoldersRunSideBySide) {
  Holder other(lock_, GpuLock::Shared, 0.0);
  auto held = std::make_unique<GpuLock>(lock_, GpuLock::Shared);
  const double asked = now_s();
  other.start();
  other.join();
  EXPECT_GE(other.got, asked);
  EXPECT_LT(other.got - asked, 0.3) << "a shared holder waited for another shared holder";
  EXPECT_FALSE(free_now());
  held.reset();
  EXPECT_TRUE(free_now());
}

TEST_F(GpuLockTest, ExclusiveWaitsForSharedAndSharedForExclusive) {
  // this process holds the lock in `held_mode` for 400 ms; another asks for it in `asked_mode`
  const auto waits_for_release = [&](GpuLock::Mode held_mode, GpuLock::Mode asked_mode) {
    Holder other(lock_, asked_mode, 0.0);
    auto held = std::make_unique<GpuLock>(lock_, held_mode);
    other.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    const double let_go = now_s();
    held.reset();
    other.join();
    return other.got >= let_go;
  };
  EXPECT_TRUE(waits_for_release(GpuLock::Shared, GpuLock::Exclusive)) << "the exclusive holder did not wait";
  EXPECT_TRUE(waits_for_release(GpuLock::Exclusive, GpuLock::Shared)) << "the shared holder did not wait";
  EXPECT_TRUE(free_now());
}

TEST_F(GpuLockTest, AWaitingTimerHoldsBackNewSharedHolders) {
  // shared (this process) -> a timer queues -> a new runner arrives: the runner must wait for the
  // timer, although the lock is only held shared when it arrives
  Holder timer(lock_, GpuLock::Exclusive, 0.3);
  Holder runner(lock_, GpuLock::Shared, 0.0);
  auto held = std::make_unique<GpuLock>(lock_, GpuLock::Shared);
  timer.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  runner.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  held.reset();
  timer.join();
  runner.join();
  ASSERT_GT(timer.got, 0);
  ASSERT_GT(runner.got, 0);
  EXPECT_GE(runner.got, timer.released) << "a new shared holder overtook the waiting timer";
}

TEST_F(GpuLockTest, ProgramsStartedWhileHeldDoNotKeepIt) {
  auto held = std::make_unique<GpuLock>(lock_, GpuLock::Exclusive);
  const pid_t child = fork();
  if (child == 0) {
    execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  held.reset();
  EXPECT_TRUE(free_now()) << "the exec'd child inherited the lock's descriptor";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST_F(GpuLockTest, UnopenableFileThrows) {
  EXPECT_THROW(GpuLock(dir_ + "/no/such/dir/lock", GpuLock::Shared), std::runtime_error);
  EXPECT_THROW(parse_args({"--gpu-lock", dir_ + "/no/such/dir/lock", "--out", "x", "--submission-name", "a",
                           "--submission-path", "b", "--backend", "gpu", "--suite", "s"}),
               UsageError);
}

TEST_F(GpuLockTest, JudgeRunsSharedTimesExclusiveAndIsNotChargedForWaits) {
  // (10 ms reported for calls of microseconds: above the judge's bound on each, so every series
  // stops at its least pairs)
  const std::string cmd = judge_command(dir_ + "/results.json",
                                        "--mode ok --ratio 0.1 --stage --probe-lock '" + lock_ + "'",
                                        "--budget-s 1 --gpu-lock '" + lock_ + "'");
  auto held = std::make_unique<GpuLock>(lock_, GpuLock::Exclusive);
  const auto start = Steady::now();
  std::thread judge([&] { ASSERT_EQ(std::system(cmd.c_str()), 0); });
  // the judge blocks at its first case while another judge times; --budget-s 1 would have run
  // out, but the wait is not the submission's time
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(fs::exists(dir_ + "/results.json")) << "the judge used the GPU while another judge timed";
  held.reset();
  judge.join();
  const double wall = std::chrono::duration<double>(Steady::now() - start).count();
  EXPECT_GE(wall, 1.5);
  const auto text = read_file(dir_ + "/results.json");
  ASSERT_TRUE(text.has_value()) << read_file(dir_ + "/err.txt").value_or("");
  const json r = json::parse(*text);
  for (const json& c : r["cases"]) {
    EXPECT_EQ(c["status"], "pass") << c["id"] << ": " << c["message"];
    EXPECT_TRUE(c["timing"].is_object()) << c["id"];
    EXPECT_LT(c["duration_s"].get<double>(), 1.0) << c["id"] << ": the lock wait was charged to the case";
  }
  const std::string err = read_file(dir_ + "/err.txt").value_or("");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(phases functional_s=\S+ timing_s=\S+ lock_wait_s=(\S+) )")))
      << err;
  EXPECT_GE(std::stod(m[1].str()), 1.0) << err;
  EXPECT_TRUE(free_now());
  // what the worker saw: every check with the lock shared (held until the checker read the output
  // back); every timing command with it exclusive, after the checks: per perf case time_begin, 5
  // empty calls (the judge's clock overhead), 3 warm-ups and 10 timed calls, time_end
  std::string expected = "check 1 shared\nran 1 shared\ncheck 2 shared\nran 2 shared\n";
  int k = 3;
  for (int c = 0; c < 2; ++c) {
    expected += "time_begin " + std::to_string(k++) + " exclusive\n";
    for (int i = 0; i < 18; ++i) expected += "time_call " + std::to_string(k++) + " exclusive\n";
    expected += "time_end " + std::to_string(k++) + " exclusive\n";
  }
  EXPECT_EQ(read_file(lock_ + ".probe").value_or(""), expected);
}

TEST_F(GpuLockTest, AWorkerStartsOnlyWithTheSharedLock) {
  // a worker's start brings its CUDA context up (and the checker's with it): not while another
  // judge times. The worker leaves a mark as it starts; while the lock is held exclusively by
  // someone else, no mark appears.
  const std::string cmd = judge_command(dir_ + "/results.json", "--mode ok --ratio 1", "--gpu-lock '" + lock_ + "'");
  std::ofstream(dir_ + "/worker.sh") << "#!/bin/sh\ntouch '" << dir_ << "/started'\nexec '" << kFake
                                     << "' --mode ok --ratio 1 \"$@\"\n";
  auto held = std::make_unique<GpuLock>(lock_, GpuLock::Exclusive);
  std::thread judge([&] { ASSERT_EQ(std::system(cmd.c_str()), 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_FALSE(fs::exists(dir_ + "/started")) << "a worker started while another judge timed";
  held.reset();
  judge.join();
  EXPECT_TRUE(fs::exists(dir_ + "/started"));
  ASSERT_TRUE(fs::exists(dir_ + "/results.json")) << read_file(dir_ + "/err.txt").value_or("");
  EXPECT_TRUE(free_now());
}

TEST_F(GpuLockTest, BaselinesMeasuredOnceAreReusedFromTheCache) {
  const std::string cache = dir_ + "/baselines-gpu0.json";
  const std::string extra = "--gpu-lock '" + lock_ + "' --baseline-cache '" + cache + "'";
  ASSERT_EQ(std::system(judge_command(dir_ + "/first.json", "--mode ok --ratio 2", extra).c_str()), 0);
  const json stored = json::parse(read_file(cache).value_or("null"));
  ASSERT_TRUE(stored.is_object()) << read_file(dir_ + "/err.txt").value_or("");
  ASSERT_EQ(stored["baselines"].size(), 2u) << stored.dump(1);
  for (const auto& [key, b] : stored["baselines"].items()) {
    EXPECT_NE(key.find("fake checker"), std::string::npos) << key;
    EXPECT_EQ(b["reference_ms"], 1.0) << key;
    EXPECT_EQ(b["measured_by"], "alice") << key;
  }
  // the next judge gets the cached CUB and copy baselines: its checker does not measure them. The
  // reference is not taken from the cache: it is timed in pairs with the student's calls
  json edited = stored;
  for (auto& [key, b] : edited["baselines"].items()) b["reference_ms"] = 4.0, b["cub_ms"] = 4.0;
  std::ofstream(cache) << edited.dump();
  ASSERT_EQ(std::system(judge_command(dir_ + "/second.json", "--mode ok --ratio 2", extra).c_str()), 0);
  const json first = json::parse(read_file(dir_ + "/first.json").value_or("null"));
  const json second = json::parse(read_file(dir_ + "/second.json").value_or("null"));
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string fresh = first["cases"][i]["timing"]["method"], cached = second["cases"][i]["timing"]["method"];
    EXPECT_NE(fresh.find("right before the student's calls"), std::string::npos) << fresh;
    EXPECT_NE(cached.find("the batch's baseline cache"), std::string::npos) << cached;
    EXPECT_EQ(first["cases"][i]["timing"]["ratio_to_reference"], 2.0);  // 1 ms over the worker's 0.5 ms
    EXPECT_EQ(second["cases"][i]["timing"]["cub_ms"], 4.0);
    EXPECT_EQ(second["cases"][i]["timing"]["reference_ms"], 1.0);       // paired, not cached
    EXPECT_EQ(second["cases"][i]["timing"]["ratio_to_reference"], 2.0);
  }
  // an unreadable cache is rebuilt, not fatal
  std::ofstream(cache) << "{ not json";
  ASSERT_EQ(std::system(judge_command(dir_ + "/third.json", "--mode ok", extra).c_str()), 0);
  EXPECT_EQ(json::parse(read_file(cache).value_or("null"))["baselines"].size(), 2u);
  EXPECT_NE(read_file(dir_ + "/err.txt").value_or("").find("ignoring the unreadable baseline cache"), std::string::npos);
}

}  // namespace
}  // namespace scangrade::grader
