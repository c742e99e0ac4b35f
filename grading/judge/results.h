// What the judge reads before grading (suites, the build file) and writes after: results.json
// (grading/results.schema.json).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "passes.h"
#include "scoring.h"

namespace scangrade::grader {

/// The harness version (results.tool.version; part of the baseline cache's keys).
const char* harness_version();

struct LoadedSuite {
  Suite suite;
  std::string sha256;
  bool secret_mixed = false;
};

/// Loads a suite file (throws SuiteError).
LoadedSuite load_suite_file(const std::string& path, bool hidden);
/// Reads --build-json; throws UsageError naming the problem.
nlohmann::json load_build(const std::string& path);
/// The build report (--build-json, or "ok" when none) and its failed slots; throws UsageError.
Build read_build(const std::string& build_json);

/// Seconds per phase of the grading (results.phases).
struct Phases {
  double correctness_s = 0;  // the functional runs, less the waits for the GPU lock
  double prepare_s = 0;      // timed inputs put on the GPU beforehand
  double timing_s = 0;       // timed cases, the GPU held exclusively
  double lock_wait_s = 0;    // waits for --gpu-lock
  double sanitizer_s = 0;    // the compute-sanitizer pass
  int worker_starts = 0;     // workers started (the first, and one after each crash or timeout)
  int kept_buffers = 0;      // check cases that ran in the buffers of the case before (no new ones)
  double worker_start_s = 0; // from each worker's start to its hello, summed (spares start ahead)
  double checker_start_s = 0;  // the checker's start (GPU), while the first worker starts
};

/// Everything results.json reports besides the options.
struct Graded {
  const std::vector<LoadedSuite>* suites = nullptr;
  const Build* build = nullptr;
  const std::vector<Entry>* entries = nullptr;
  const std::vector<CaseResult>* results = nullptr;
  nlohmann::json environment, sanitizer_pass, student_output, isolation;
  ScoreSheet sheet;
  Phases phases;
  std::vector<std::string> errors;
  int exit_code = 0;
  std::string started_at;
  double duration_s = 0;
};

nlohmann::json case_json(const Entry& e, const CaseResult& r, const std::string& backend);
/// results.environment: the worker's hello, this host, compute-sanitizer's version.
nlohmann::json environment_json(const Session* session, const std::string& compute_sanitizer);
/// results.student_output: what the workers printed (the channel's student log; null: none ran), at
/// most `limit` bytes of it (its first and last halves, and a count of what was left out).
nlohmann::json student_output_json(const LogFile* student_log, std::size_t limit);
nlohmann::json results_json(const Options& o, const Graded& g);
/// Writes results.json atomically; false (and a message on stderr) when it cannot.
bool write_results(const std::string& path, const nlohmann::json& results);

}  // namespace scangrade::grader
