// --timing-lock (judge.h TimingLock): concurrent judges time one case at a time. The lock blocks
// while another process holds it, is not inherited by programs the judge starts, and the judge
// waits for it around "time" commands without charging the wait to the submission.
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

// Two perf cases: on the gpu backend each gets a "time" command.
const char* kSuite = R"({"suite": "lock", "version": 1,
 "performance": {"points": {"hierarchical": 2}},
 "cases": [
  {"id": "hier.int32.n5000.incl", "slot": "hierarchical", "dtype": "int32", "kind": "inclusive", "n": 5000,
   "values": "random", "seed": 3, "why": "multi-block", "perf": true},
  {"id": "hier.int32.n7000.excl", "slot": "hierarchical", "dtype": "int32", "kind": "exclusive", "n": 7000,
   "values": "random", "seed": 4, "why": "multi-block", "perf": true}]})";

class TimingLockTest : public ::testing::Test {
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
  /// Whether another open file description can take the lock right now (in a child process).
  bool free_now() const {
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = ::open(lock_.c_str(), O_RDWR | O_CREAT, 0666);
      _exit(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::string dir_, lock_;
};

TEST_F(TimingLockTest, SecondHolderWaitsForTheFirst) {
  // the second holder is forked before the first takes the lock: a child forked while it is held
  // would share the holder's open file description (and so its lock)
  int go[2], done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t pid = fork();
  if (pid == 0) {  // a second judge: blocks until the parent lets go
    char c;
    (void)!read(go[0], &c, 1);
    double waited = -1;
    try {
      TimingLock mine(lock_);
      waited = mine.waited_s();
    } catch (...) {
    }
    (void)!write(done[1], &waited, sizeof waited);
    _exit(0);
  }
  close(go[0]);
  close(done[1]);
  auto held = std::make_unique<TimingLock>(lock_);
  EXPECT_LT(held->waited_s(), 0.5);
  EXPECT_FALSE(free_now());
  ASSERT_EQ(write(go[1], "x", 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  held.reset();
  double waited = -2;
  ASSERT_EQ(read(done[0], &waited, sizeof waited), static_cast<ssize_t>(sizeof waited));
  close(done[0]);
  close(go[1]);
  waitpid(pid, nullptr, 0);
  EXPECT_GE(waited, 0.3) << "the second holder did not wait for the first";
  EXPECT_TRUE(free_now());
}

TEST_F(TimingLockTest, ProgramsStartedWhileHeldDoNotKeepIt) {
  auto held = std::make_unique<TimingLock>(lock_);
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

TEST_F(TimingLockTest, UnopenableFileThrows) {
  EXPECT_THROW(TimingLock(dir_ + "/no/such/dir/lock"), std::runtime_error);
  EXPECT_THROW(parse_args({"--timing-lock", dir_ + "/no/such/dir/lock", "--out", "x", "--submission-name", "a",
                           "--submission-path", "b", "--backend", "gpu", "--suite", "s"}),
               UsageError);
}

TEST_F(TimingLockTest, JudgeTimesOnlyWithTheLockAndDoesNotChargeTheWait) {
  {
    std::ofstream(dir_ + "/suite.json") << kSuite;
    std::ofstream(dir_ + "/worker.sh") << "#!/bin/sh\nexec '" << kFake << "' --mode ok --ratio 1 \"$@\"\n";
  }
  fs::permissions(dir_ + "/worker.sh", fs::perms::owner_all);
  auto held = std::make_unique<TimingLock>(lock_);
  const std::string cmd = "'" + kJudge + "' --worker '" + dir_ + "/worker.sh' --out '" + dir_ +
                          "/results.json' --submission-name alice --submission-path /subs/alice --backend gpu"
                          " --sanitizer off --budget-s 1 --suite '" + dir_ + "/suite.json' --timing-lock '" + lock_ +
                          "' 2> '" + dir_ + "/err.txt'";
  const auto start = Steady::now();
  std::thread judge([&] { ASSERT_EQ(std::system(cmd.c_str()), 0); });
  // the judge blocks at the first "time" command while the lock is held; --budget-s 1 would have
  // run out, but the wait is not the submission's time
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(fs::exists(dir_ + "/results.json")) << "the judge timed without the lock";
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
}

}  // namespace
}  // namespace scangrade::grader
