// The fixture of the judge's end-to-end tests (test_judge.cpp, test_judge_gpu_passes.cpp):
// scangrade_judge as a subprocess, driving the fake worker (fake_worker.cpp). Included by each test
// file.
#pragma once

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

using nlohmann::json;
namespace fs = std::filesystem;

inline const std::string kJudge = SCANGRADE_JUDGE;
inline const std::string kFake = SCANGRADE_FAKE_WORKER;
inline const std::string kFakeChecker = SCANGRADE_FAKE_CHECKER;
inline const std::string kSource = SCANGRADE_SOURCE_DIR;
inline const std::string kSchema = kSource + "/grading/results.schema.json";

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string sha256_of_file(const std::string& path) { return sha256_hex(read_file(path).value_or("")); }

// Four cases, one per slot; k = 1..4 on the emulate backend (no timing commands).
inline const char* kSuite = R"({"suite": "fake", "version": 1,
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

  /// The fake worker reporting the times its calls really take (the reference solution's role when
  /// the judge calibrates its clock); only its pid is written down.
  std::string honest_worker() {
    const std::string path = dir_ + "/honest-worker.sh";
    write_text(path, "#!/bin/sh\nexec " + quote(kFake) + " --pid-dir " + quote(dir_ + "/pids") +
                         " --mode ok --report-scale 1 \"$@\"\n");
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
    if (backend == "gpu") cmd += " --checker " + quote(kFakeChecker);
    // the judge's clock is calibrated by a worker with an honest clock (the reference's role)
    if (backend == "gpu" && extra.find("--reference-worker") == std::string::npos)
      cmd += " --reference-worker " + quote(honest_worker());
    // the protocol tests run the fake worker unsandboxed (it writes its pids and dumps into dir_);
    // the sandbox has its own tests below (SandboxedJudge) and the exploit gallery
    if (extra.find("--sandbox") == std::string::npos) cmd += " --sandbox off";
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
inline void expect_valid(const json& r, const std::string& dir) {
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

inline const json& case_of(const json& r, const std::string& id) {
  for (const json& c : r["cases"])
    if (c["id"] == id) return c;
  static const json none;
  ADD_FAILURE() << "no case " << id;
  return none;
}

inline bool contains(const json& j, const std::string& text) { return j.is_string() && j.get<std::string>().find(text) != std::string::npos; }

/// Every case but `bad` passed with full points.
inline void expect_others_pass(const json& r, const std::set<std::string>& bad) {
  for (const json& c : r["cases"]) {
    if (bad.count(c["id"])) continue;
    EXPECT_EQ(c["status"], "pass") << c["id"] << ": " << c["message"];
    EXPECT_EQ(c["points"], c["max_points"]) << c["id"];
  }
}

}  // namespace scangrade::grader
