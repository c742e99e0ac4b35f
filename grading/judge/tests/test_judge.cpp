// scangrade_judge as a subprocess, driving the fake worker (fake_worker.cpp) that misbehaves on
// purpose: every misbehaving case gets its crash/timeout with its message, every other case is still
// graded, the results validate, the exit codes are right and no process is left behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "protocol.h"
#include "sha256.h"

namespace scangrade::grader {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kJudge = SCANGRADE_JUDGE;
const std::string kFake = SCANGRADE_FAKE_WORKER;
const std::string kSource = SCANGRADE_SOURCE_DIR;
const std::string kSchema = kSource + "/grading/results.schema.json";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string sha256_of_file(const std::string& path) { return sha256_hex(read_file(path).value_or("")); }

// Four cases, one per slot; k = 1..4 on the emulate backend (no timing commands).
const char* kSuite = R"({"suite": "fake", "version": 1,
 "performance": {"points": {"hierarchical": 4, "single_pass": 2}},
 "cases": [
  {"id": "hs.int32.n10", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 10,
   "values": "random", "seed": 1, "why": "small"},
  {"id": "bl.float32.n100", "slot": "blelloch", "dtype": "float32", "kind": "exclusive", "n": 100,
   "values": "random", "seed": 2, "why": "small", "points": 2},
  {"id": "hier.int32.n5000.excl", "slot": "hierarchical", "dtype": "int32", "kind": "exclusive", "n": 5000,
   "values": "random", "seed": 3, "why": "multi-block", "perf": true},
  {"id": "sp.float32.n3000.real", "slot": "single_pass", "dtype": "float32", "kind": "inclusive", "n": 3000,
   "values": "real", "seed": 4, "why": "reals", "perf": true, "sanitize": ["racecheck"]}]})";

class Judge : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/scangrade-judge-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    fs::create_directory(dir_ + "/pids");
    fs::create_directory(dir_ + "/dump");
    suite_ = dir_ + "/suite.json";
    write_text(suite_, kSuite);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// A stand-in for compute-sanitizer at DIR/compute-sanitizer: answers --version, takes the
  /// options the judge passes (setting $tool and $save, the XML report's path), leaves the worker's
  /// command line in "$@" and then runs `body` (which runs the worker and writes the report).
  std::string fake_sanitizer(const std::string& body) {
    const std::string path = dir_ + "/compute-sanitizer";
    write_text(path, R"SH(#!/bin/sh
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Compute Sanitizer"; echo "Version 2099.1.0 fake"; exit 0; fi
save=""; tool=""
while [ $# -gt 0 ]; do
  case "$1" in
    --save) save="$2"; shift 2;;
    --tool) tool="$2"; shift 2;;
    --error-exitcode|--print-limit) shift 2;;
    --xml) shift;;
    *) break;;
  esac
done
)SH" + body);
    chmod(path.c_str(), 0755);
    return path;
  }
  /// Shell lines writing a one-race XML report to $save and exiting 86 (--error-exitcode).
  static std::string race_report(const std::string& func, const std::string& file, int line) {
    return "cat > \"$save\" <<EOF\n<?xml version=\"1.0\"?>\n"
           "<ComputeSanitizerOutput><record><kind>Race</kind><level>Error</level>\n"
           "<what><text>Race reported between Write access and Read access</text></what>\n"
           "<where><func>" + func + "</func><path>" + file + "</path><line>" + std::to_string(line) +
           "</line></where></record></ComputeSanitizerOutput>\nEOF\nexit 86\n";
  }

  /// A worker executable: the fake worker with these arguments (exec: same pid).
  std::string worker(const std::string& args) {
    const std::string path = dir_ + "/worker-" + std::to_string(workers_++) + ".sh";
    write_text(path, "#!/bin/sh\nexec " + quote(kFake) + " --pid-dir " + quote(dir_ + "/pids") + " --dump-dir " +
                         quote(dir_ + "/dump") + " " + args + " \"$@\"\n");
    chmod(path.c_str(), 0755);
    return path;
  }

  struct Result {
    int code = -1;
    bool written = false;
    json results;
    std::string err;
    double seconds = 0;
  };

  /// Runs the judge; `extra` are more arguments (already quoted where needed).
  Result judge(const std::string& worker_path, const std::string& extra, const std::string& backend = "emulate",
               bool with_suite = true) {
    const std::string out = dir_ + "/results.json";
    std::remove(out.c_str());
    std::string cmd = quote(kJudge) + " --out " + quote(out) + " --submission-name alice --submission-path /subs/alice" +
                      " --backend " + backend;
    if (!worker_path.empty()) cmd += " --worker " + quote(worker_path);
    if (with_suite) cmd += " --suite " + quote(suite_);
    cmd += " " + extra + " 2> " + quote(dir_ + "/err.txt");
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(cmd.c_str());
    Result r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = read_file(dir_ + "/err.txt").value_or("");
    if (const auto text = read_file(out)) {
      r.written = true;
      r.results = json::parse(*text);
    }
    return r;
  }

  /// Every fake worker started is gone.
  void expect_no_process_left() {
    int count = 0;
    for (const auto& entry : fs::directory_iterator(dir_ + "/pids")) {
      const pid_t pid = std::stoi(entry.path().filename().string());
      ++count;
      EXPECT_TRUE(kill(pid, 0) == -1 && errno == ESRCH) << "worker " << pid << " is still running";
    }
    EXPECT_GT(count, 0) << "no worker was started";
  }

  std::string dir_, suite_;
  int workers_ = 0;
};

/// Structure of results.json (the schema's required keys), and the schema itself when python3 has
/// jsonschema.
void expect_valid(const json& r, const std::string& dir) {
  for (const char* key : {"schema_version", "tool", "submission", "backend", "environment", "suites", "build", "cases",
                          "slots", "score", "sanitizer_pass", "student_output", "outcome", "exit_code", "started_at",
                          "duration_s"})
    EXPECT_TRUE(r.contains(key)) << "missing " << key;
  for (const json& c : r["cases"])
    for (const char* key : {"id", "suite", "slot", "dtype", "kind", "n", "values", "seed", "visibility", "why",
                            "status", "message", "points", "max_points", "backend", "duration_s", "timing", "sanitizer"})
      EXPECT_TRUE(c.contains(key)) << "case " << c.value("id", "?") << " misses " << key;
  static const bool have_jsonschema = std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") == 0;
  if (!have_jsonschema) return;
  const std::string path = dir + "/validate.json";
  write_text(path, r.dump());
  const std::string cmd = "python3 -c 'import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                          "json.load(open(sys.argv[2])))' " + quote(path) + " " + quote(kSchema) + " 2>" +
                          quote(dir + "/schema-err.txt");
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "results.json does not validate against the schema:\n"
                                         << read_file(dir + "/schema-err.txt").value_or("");
}

const json& case_of(const json& r, const std::string& id) {
  for (const json& c : r["cases"])
    if (c["id"] == id) return c;
  static const json none;
  ADD_FAILURE() << "no case " << id;
  return none;
}

bool contains(const json& j, const std::string& text) { return j.is_string() && j.get<std::string>().find(text) != std::string::npos; }

/// Every case but `bad` passed with full points.
void expect_others_pass(const json& r, const std::set<std::string>& bad) {
  for (const json& c : r["cases"]) {
    if (bad.count(c["id"])) continue;
    EXPECT_EQ(c["status"], "pass") << c["id"] << ": " << c["message"];
    EXPECT_EQ(c["points"], c["max_points"]) << c["id"];
  }
}

TEST_F(Judge, HappyPathGradesEveryCase) {
  const Result r = judge(worker("--mode ok"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  expect_valid(r.results, dir_);
  expect_others_pass(r.results, {});
  EXPECT_EQ(r.results["outcome"], "graded");
  EXPECT_EQ(r.results["exit_code"], 0);
  EXPECT_EQ(r.results["environment"]["device"], "fake CPU worker");
  EXPECT_TRUE(r.results["environment"]["driver"].is_null());
  EXPECT_EQ(r.results["score"]["points"], 5);
  EXPECT_EQ(r.results["score"]["max_points"], 5);
  // emulate: no timing, no performance points, but their maximum still counts
  EXPECT_EQ(r.results["score"]["perf_points"], 0);
  EXPECT_EQ(r.results["score"]["perf_max_points"], 6);
  EXPECT_TRUE(case_of(r.results, "hier.int32.n5000.excl")["timing"].is_null());
  EXPECT_EQ(r.results["sanitizer_pass"]["ran"], false);
  EXPECT_TRUE(contains(r.results["sanitizer_pass"]["reason"], "emulation backend"));
  const json& san = case_of(r.results, "sp.float32.n3000.real")["sanitizer"];
  EXPECT_EQ(san["ran"], false);
  EXPECT_EQ(san["tools"], json::array({"racecheck"}));
  EXPECT_TRUE(san["findings"].empty());
  EXPECT_TRUE(case_of(r.results, "hs.int32.n10")["sanitizer"].is_null());
  EXPECT_EQ(r.results["suites"][0]["sha256"], sha256_of_file(suite_));
  EXPECT_EQ(r.results["suites"][0]["secret_mixed"], false);
  EXPECT_EQ(r.results["slots"]["blelloch"]["statuses"]["pass"], 1);
  expect_no_process_left();
}

TEST_F(Judge, CrashIsChargedToItsCaseOnly) {
  const Result r = judge(worker("--mode crash_on=2"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "worker died: signal 11 (SIGSEGV)")) << c["message"];
  EXPECT_TRUE(contains(c["message"], "about to crash on command 2")) << c["message"];  // the log's tail
  EXPECT_EQ(c["points"], 0);
  expect_others_pass(r.results, {"bl.float32.n100"});
  expect_no_process_left();
}

TEST_F(Judge, HangIsKilledAtTheDeadline) {
  // emulate default deadline 20 s + 3 us n, times 0.05: about 1 s
  const Result r = judge(worker("--mode hang_on=3"), "--timeout-scale 0.05");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "hier.int32.n5000.excl");
  EXPECT_EQ(c["status"], "timeout");
  EXPECT_TRUE(contains(c["message"], "no reply within")) << c["message"];
  EXPECT_TRUE(contains(c["message"], "spin forever")) << c["message"];
  expect_others_pass(r.results, {"hier.int32.n5000.excl"});
  EXPECT_LT(r.seconds, 15);
  expect_no_process_left();
}

TEST_F(Judge, WrongNonceFailsClosed) {
  const Result r = judge(worker("--mode lie_nonce=2"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "incomplete or garbled")) << c["message"];
  expect_others_pass(r.results, {"bl.float32.n100"});
  expect_no_process_left();
}

TEST_F(Judge, UnknownStageLineFailsClosed) {
  const Result r = judge(worker("--mode bad_stage=3 --stage"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  const json& c = case_of(r.results, "hier.int32.n5000.excl");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "an unexpected stage line")) << c["message"];
  expect_others_pass(r.results, {"hier.int32.n5000.excl"});  // the others said "ran" first: fine
  expect_no_process_left();
}

TEST_F(Judge, ShortOutputFailsClosed) {
  const Result r = judge(worker("--mode short_output=4"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "sp.float32.n3000.real");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "incomplete or garbled")) << c["message"];
  EXPECT_TRUE(contains(c["message"], "bytes")) << c["message"];
  expect_others_pass(r.results, {"sp.float32.n3000.real"});
  expect_no_process_left();
}

TEST_F(Judge, StudentOutputIsNeverParsed) {
  const Result r = judge(worker("--mode garbage_stdout"), "--log-limit 40");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0);
  expect_valid(r.results, dir_);
  expect_others_pass(r.results, {});
  EXPECT_EQ(r.results["score"]["points"], 5);  // not the 1000 it printed
  EXPECT_TRUE(contains(r.results["student_output"]["text"], "PASS all cases"));
  EXPECT_EQ(r.results["student_output"]["text"].get<std::string>().size(), 40u);
  EXPECT_EQ(r.results["student_output"]["truncated"], true);
  expect_no_process_left();
}

TEST_F(Judge, NoHelloIsACrashForEveryCaseAndNothingIsLeftRunning) {
  const Result r = judge(worker("--mode no_hello"), "--timeout-scale 0.02");  // hello deadline 60 s x 0.02
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  for (const json& c : r.results["cases"]) {
    EXPECT_EQ(c["status"], "crash") << c["id"];
    EXPECT_TRUE(contains(c["message"], "no hello within")) << c["message"];
  }
  EXPECT_LT(r.seconds, 15);
  expect_no_process_left();
}

TEST_F(Judge, EarlyExitIsACrashWithTheExitCode) {
  const Result r = judge(worker("--mode exit_early=2"), "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "crash");
  EXPECT_TRUE(contains(c["message"], "worker died: exit code 0")) << c["message"];
  expect_others_pass(r.results, {"bl.float32.n100"});
  expect_no_process_left();
}

TEST_F(Judge, BudgetExhaustedTimesOutTheRest) {
  const Result r = judge(worker("--mode hang_on=1"), "--budget-s 1.5");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  for (const json& c : r.results["cases"]) {
    EXPECT_EQ(c["status"], "timeout") << c["id"];
    EXPECT_TRUE(contains(c["message"], "submission time budget exhausted")) << c["message"];
  }
  EXPECT_LT(r.seconds, 10);
  expect_no_process_left();
}

TEST_F(Judge, GpuBackendTimesPerfCasesAndScoresPerformance) {
  // ratio 0.625: (0.625 - 0.25) / 0.75 = half the performance points
  const Result r = judge(worker("--mode ok --ratio 0.625"), "--compute-sanitizer /nonexistent/compute-sanitizer", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0) << r.err;
  expect_valid(r.results, dir_);
  const json& t = case_of(r.results, "hier.int32.n5000.excl")["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["ratio_to_reference"], 0.625);
  EXPECT_TRUE(case_of(r.results, "hs.int32.n10")["timing"].is_null());  // not a perf case
  EXPECT_DOUBLE_EQ(r.results["slots"]["hierarchical"]["perf_ratio"].get<double>(), 0.625);
  EXPECT_DOUBLE_EQ(r.results["slots"]["hierarchical"]["perf_points"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r.results["slots"]["single_pass"]["perf_points"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r.results["score"]["total"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(r.results["score"]["max_total"].get<double>(), 11.0);
  // compute-sanitizer missing: never "found nothing"
  EXPECT_EQ(r.results["sanitizer_pass"]["ran"], false);
  EXPECT_TRUE(contains(r.results["sanitizer_pass"]["reason"], "compute-sanitizer not found"));
  const json& san = case_of(r.results, "sp.float32.n3000.real")["sanitizer"];
  EXPECT_EQ(san["ran"], false);
  EXPECT_TRUE(contains(san["reason"], "not found"));
  EXPECT_TRUE(r.results["environment"]["compute_sanitizer"].is_null());
  expect_no_process_left();
}

TEST_F(Judge, PerformancePointsNeedEveryCaseOfTheSlot) {
  // command 3 is the hierarchical case's check: it crashes, so its perf points are 0 (max still counted)
  const Result r = judge(worker("--mode crash_on=3"), "--sanitizer off", "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.results["slots"]["hierarchical"]["perf_points"], 0);
  EXPECT_EQ(r.results["slots"]["hierarchical"]["perf_max_points"], 4);
  EXPECT_TRUE(r.results["slots"]["hierarchical"]["perf_ratio"].is_null());
  EXPECT_DOUBLE_EQ(r.results["slots"]["single_pass"]["perf_points"].get<double>(), 2.0);
  EXPECT_TRUE(contains(r.results["sanitizer_pass"]["reason"], "--sanitizer off"));
}

TEST_F(Judge, SanitizerFindingsTurnAPassIntoARace) {
  // compute-sanitizer stand-in: runs the worker, reports one race
  const std::string fake_cs = fake_sanitizer("\"$@\"\n" + race_report("scan_tile", "single_pass.cu", 42));
  const Result r = judge(worker("--mode ok"), "--compute-sanitizer " + quote(fake_cs), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "sp.float32.n3000.real");
  EXPECT_EQ(c["status"], "race");
  EXPECT_EQ(c["points"], 0);
  EXPECT_TRUE(contains(c["message"], "kernel scan_tile at single_pass.cu:42")) << c["message"];
  EXPECT_EQ(c["sanitizer"]["ran"], true);
  ASSERT_EQ(c["sanitizer"]["findings"].size(), 1u);
  EXPECT_EQ(c["sanitizer"]["findings"][0]["line"], 42);
  EXPECT_EQ(r.results["sanitizer_pass"]["ran"], true);
  EXPECT_EQ(r.results["sanitizer_pass"]["cases"], 1);
  EXPECT_EQ(r.results["environment"]["compute_sanitizer"], "2099.1.0 fake");
  // a race costs the slot its performance points
  EXPECT_EQ(r.results["slots"]["single_pass"]["perf_points"], 0);
  expect_no_process_left();
}

TEST_F(Judge, SanitizerRunsOneProcessPerToolAndBlamesTheRightCase) {
  // 3 cases ask for racecheck, 2 for memcheck. The stand-in compute-sanitizer logs each start and
  // reports a race only when the worker it runs was given the case with n = 3001.
  write_text(suite_, R"({"suite": "san", "version": 1, "cases": [
    {"id": "hs.n1000", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 1000,
     "values": "random", "seed": 1, "why": "a", "sanitize": ["racecheck", "memcheck"]},
    {"id": "hs.n1001", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 1001,
     "values": "random", "seed": 2, "why": "b", "sanitize": ["racecheck"]},
    {"id": "sp.n3001", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 3001,
     "values": "random", "seed": 3, "why": "c", "sanitize": ["racecheck", "memcheck"]},
    {"id": "sp.n3002", "slot": "single_pass", "dtype": "int32", "kind": "inclusive", "n": 3002,
     "values": "random", "seed": 4, "why": "d"}]})");
  const std::string fake_cs = fake_sanitizer(R"SH(cmds="$save.cmds"
tee "$cmds" | "$@"
echo "$tool $(grep -c '"mode":"check"' "$cmds")" >> "$(dirname "$0")/cs.log"
if [ "$tool" = racecheck ] && grep -q '"n":3001' "$cmds"; then
)SH" + race_report("look_back", "single_pass.cu", 7) + R"SH(fi
echo '<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > "$save"
exit 0
)SH");
  const Result r = judge(worker("--mode ok"), "--compute-sanitizer " + quote(fake_cs), "gpu");
  ASSERT_TRUE(r.written) << r.err;
  expect_valid(r.results, dir_);
  // racecheck: once over its 3 cases, which found the race, then once per case to place it;
  // memcheck: once over its 2 cases, clean
  EXPECT_EQ(read_file(dir_ + "/cs.log").value_or(""), "racecheck 3\nracecheck 1\nracecheck 1\nracecheck 1\nmemcheck 2\n");
  EXPECT_EQ(r.results["sanitizer_pass"]["processes"], 5);
  EXPECT_EQ(r.results["sanitizer_pass"]["cases"], 3);
  const json& racy = case_of(r.results, "sp.n3001");
  EXPECT_EQ(racy["status"], "race");
  EXPECT_TRUE(contains(racy["message"], "kernel look_back at single_pass.cu:7")) << racy["message"];
  ASSERT_EQ(racy["sanitizer"]["findings"].size(), 1u);
  for (const char* id : {"hs.n1000", "hs.n1001"}) {
    const json& c = case_of(r.results, id);
    EXPECT_EQ(c["status"], "pass") << id << ": " << c["message"];
    EXPECT_EQ(c["sanitizer"]["ran"], true) << id;
    EXPECT_TRUE(c["sanitizer"]["findings"].empty()) << id;
  }
  EXPECT_TRUE(contains(case_of(r.results, "hs.n1000")["sanitizer"]["reason"], "memcheck: one process over every case"))
      << case_of(r.results, "hs.n1000")["sanitizer"]["reason"];
  EXPECT_TRUE(case_of(r.results, "sp.n3002")["sanitizer"].is_null());
  expect_no_process_left();
}

TEST_F(Judge, HiddenSuiteSeedsUseTheSecretWhichIsNeverWritten) {
  const std::string secret = "s3cr3t-instructor-value";
  const auto inputs = [&]() {
    std::map<std::string, std::string> m;
    for (const auto& entry : fs::directory_iterator(dir_ + "/dump"))
      m[entry.path().filename().string()] = read_file(entry.path().string()).value_or("");
    fs::remove_all(dir_ + "/dump");
    fs::create_directory(dir_ + "/dump");
    return m;
  };
  const Result plain = judge(worker("--mode ok"), "");
  ASSERT_EQ(plain.code, 0) << plain.err;
  const auto plain_inputs = inputs();
  const Result hidden = judge(worker("--mode ok"), "--hidden-suite " + quote(suite_) + " --secret " + quote(secret),
                              "emulate", false);
  ASSERT_EQ(hidden.code, 0) << hidden.err;
  const auto hidden_inputs = inputs();
  write_text(dir_ + "/secret.txt", secret + "\n");
  const Result from_file = judge(worker("--mode ok"), "--hidden-suite " + quote(suite_) + " --secret-file " +
                                                          quote(dir_ + "/secret.txt"), "emulate", false);
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  const auto file_inputs = inputs();

  ASSERT_EQ(plain_inputs.size(), 4u);
  ASSERT_EQ(hidden_inputs.size(), 4u);
  for (const auto& [name, data] : plain_inputs) {
    if (data.size() <= 8) continue;
    EXPECT_NE(data, hidden_inputs.at(name)) << name << ": the secret did not change the input";
    EXPECT_EQ(hidden_inputs.at(name), file_inputs.at(name)) << name;
  }
  EXPECT_EQ(hidden.results["suites"][0]["secret_mixed"], true);
  for (const json& c : hidden.results["cases"]) EXPECT_EQ(c["seed"], case_of(plain.results, c["id"])["seed"]);
  const std::string text = hidden.results.dump();
  EXPECT_EQ(text.find(secret), std::string::npos) << "the secret appears in results.json";
  expect_valid(hidden.results, dir_);
}

TEST_F(Judge, BuildFileFailedSlotsAreCompileErrors) {
  write_text(dir_ + "/build.json", R"({"status": "compile_error", "log": "  blelloch.cu(12): error: expected a ';'\n",
    "warnings": 2, "missing_slots": ["single_pass"], "failed_slots": ["blelloch"], "seconds": 1.5})");
  const Result r = judge(worker("--mode ok"), "--build-json " + quote(dir_ + "/build.json"));
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  const json& c = case_of(r.results, "bl.float32.n100");
  EXPECT_EQ(c["status"], "compile_error");
  EXPECT_TRUE(contains(c["message"], "expected a ';'")) << c["message"];
  expect_others_pass(r.results, {"bl.float32.n100"});
  EXPECT_EQ(r.results["build"]["failed_slots"], json::array({"blelloch"}));
  EXPECT_EQ(r.results["build"]["warnings"], 2);
}

TEST_F(Judge, LayoutErrorRunsNoWorker) {
  write_text(dir_ + "/build.json", R"({"status": "layout_error", "log": "no student/ folder in the archive"})");
  const Result r = judge("", "--build-json " + quote(dir_ + "/build.json"));
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 1);
  expect_valid(r.results, dir_);
  for (const json& c : r.results["cases"]) {
    EXPECT_EQ(c["status"], "compile_error");
    EXPECT_TRUE(contains(c["message"], "no student/ folder")) << c["message"];
  }
}

TEST_F(Judge, MalformedSuiteIsBadInput) {
  write_text(dir_ + "/bad.json", R"({"cases": [{"id": "x1", "slot": "hillis_steele"}]})");
  const Result r = judge(worker("--mode ok"), "--suite " + quote(dir_ + "/bad.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(r.written);
  EXPECT_NE(r.err.find("bad.json: cases[0] (id 'x1')"), std::string::npos) << r.err;
}

TEST_F(Judge, UsageErrorsAreBadInput) {
  EXPECT_EQ(judge(worker("--mode ok"), "--backend cpu").code, 2);
  EXPECT_EQ(judge(worker("--mode ok"), "--frobnicate").code, 2);
  EXPECT_EQ(std::system((quote(kJudge) + " --help > /dev/null").c_str()), 0);
}

TEST_F(Judge, MissingWorkerIsAnInternalError) {
  const Result r = judge(dir_ + "/no-such-worker", "");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 3);
  expect_valid(r.results, dir_);
  EXPECT_EQ(r.results["outcome"], "not_graded");
  EXPECT_EQ(r.results["exit_code"], 3);
  ASSERT_FALSE(r.results["errors"].empty());
  EXPECT_TRUE(contains(r.results["errors"][0], "no-such-worker")) << r.results["errors"];
  for (const json& c : r.results["cases"]) EXPECT_EQ(c["status"], "internal_error");
}

TEST_F(Judge, OnlySlotFiltersCases) {
  const Result r = judge(worker("--mode ok"), "--only-slot blelloch --verbose");
  ASSERT_TRUE(r.written) << r.err;
  EXPECT_EQ(r.code, 0);
  ASSERT_EQ(r.results["cases"].size(), 1u);
  EXPECT_EQ(r.results["cases"][0]["slot"], "blelloch");
  EXPECT_NE(r.err.find("[1/1] bl.float32.n100: pass"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace scangrade::grader
