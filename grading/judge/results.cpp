// What the judge reads before grading (suites, the build file) and writes after (results.json):
// results.h.
#include "results.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "process.h"
#include "protocol.h"
#include "sha256.h"
#include "text.h"

#ifndef SCANGRADE_VERSION
#define SCANGRADE_VERSION "0.0.0"
#endif

namespace scangrade::grader {

using nlohmann::json;

const char* harness_version() { return SCANGRADE_VERSION; }

namespace {

json default_build() {
  return {{"status", "ok"}, {"log", ""}, {"missing_slots", json::array()}, {"failed_slots", json::array()}};
}

std::string compute_sanitizer_version(const std::string& path) {
  const auto out = capture_output({path, "--version"}, 30);
  if (!out) return "";
  std::istringstream lines(*out);
  std::string line;
  while (std::getline(lines, line)) {
    const auto at = line.find("Version");
    if (at != std::string::npos) return trim(line.substr(at + 7));
  }
  return trim(*out).substr(0, 100);
}

/// Where the channel folder goes: $SCANGRADE_CHANNEL_DIR; else /dev/shm when it is a writable
/// memory file system with 8 GiB free (inputs and outputs of large cases, hundreds of MB each,
/// never touch a disk); else $TMPDIR, else /tmp.
}  // namespace

LoadedSuite load_suite_file(const std::string& path, bool hidden) {
  LoadedSuite s;
  s.suite = load_suite(path);
  const auto bytes = read_file(path);
  s.sha256 = sha256_hex(bytes ? *bytes : "");
  s.secret_mixed = hidden;
  return s;
}

json load_build(const std::string& path) {
  const auto text = read_file(path);
  if (!text) throw UsageError(path + ": cannot read the build file");
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) {
    throw UsageError(path + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw UsageError(path + ": expected an object");
  json b = default_build();
  const std::string status = j.value("status", std::string());
  if (status != "ok" && status != "compile_error" && status != "layout_error")
    throw UsageError(path + ": field 'status': expected ok, compile_error or layout_error");
  b["status"] = status;
  if (j.contains("log")) {
    if (!j["log"].is_string()) throw UsageError(path + ": field 'log': expected a string");
    b["log"] = j["log"];
  }
  for (const char* key : {"missing_slots", "failed_slots"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array()) throw UsageError(path + ": field '" + key + "': expected a list of slot names");
    for (const json& s : j[key])
      if (!s.is_string() || !parse_slot(s.get<std::string>()))
        throw UsageError(path + ": field '" + key + "': " + s.dump() + " is not a slot name");
    b[key] = j[key];
  }
  if (j.contains("policy_violations")) {  // {slot: evidence}
    const json& p = j["policy_violations"];
    if (!p.is_object()) throw UsageError(path + ": field 'policy_violations': expected an object {slot: message}");
    for (const auto& [slot, why] : p.items())
      if (!parse_slot(slot) || !why.is_string())
        throw UsageError(path + ": field 'policy_violations': '" + slot + "' must be a slot name with a message");
    b["policy_violations"] = p;
  }
  if (j.contains("warnings")) {
    if (!j["warnings"].is_number_unsigned()) throw UsageError(path + ": field 'warnings': expected a count");
    b["warnings"] = j["warnings"];
  }
  if (j.contains("seconds")) {
    if (!j["seconds"].is_number() || j["seconds"].get<double>() < 0)
      throw UsageError(path + ": field 'seconds': expected a non-negative number");
    b["seconds"] = j["seconds"];
  }
  return b;
}


Build read_build(const std::string& build_json) {
  Build b;
  b.report = build_json.empty() ? default_build() : load_build(build_json);
  b.status = b.report["status"];
  for (const json& s : b.report["failed_slots"]) b.failed_slots.insert(*parse_slot(s.get<std::string>()));
  if (b.report.contains("policy_violations"))
    for (const auto& [slot, why] : b.report["policy_violations"].items())
      b.policy_violations[*parse_slot(slot)] = why.get<std::string>();
  return b;
}

json case_json(const Entry& e, const CaseResult& r, const std::string& backend) {
  const Case& c = e.c;
  const bool pass = r.status == Status::Pass;
  return {{"id", c.id},
          {"suite", e.suite->name},
          {"slot", std::string(name(c.slot))},
          {"dtype", std::string(name(c.dtype))},
          {"kind", std::string(name(c.kind))},
          {"n", c.n},
          {"values", std::string(name(c.values))},
          {"seed", c.seed},
          {"visibility", std::string(name(c.visibility))},
          {"why", c.why},
          {"status", std::string(name(r.status))},
          {"message", pass ? "" : r.message},
          {"points", pass ? c.points : 0.0},
          {"max_points", c.points},
          {"backend", backend},
          {"duration_s", r.duration_s},
          {"timing", r.timing ? json(*r.timing) : json(nullptr)},
          {"sanitizer", r.sanitizer}};
}

bool write_results(const std::string& path, const json& results) {
  const std::string text = results.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
  const std::string why = write_file_atomic(path, text.data(), text.size());
  if (!why.empty()) {
    std::cerr << "scangrade_judge: cannot write the results: " << why << " (harness fault: please report)\n";
    return false;
  }
  return true;
}

json environment_json(const Session* session, const std::string& compute_sanitizer) {
  json environment = {{"device", "unknown: no worker ran"}, {"driver", nullptr}, {"cuda_runtime", nullptr}};
  if (session && session->hello()) {
    const Hello& h = *session->hello();
    environment["device"] = h.device;
    environment["driver"] = h.driver.empty() ? json(nullptr) : json(h.driver);
    environment["cuda_runtime"] = h.cuda_runtime.empty() ? json(nullptr) : json(h.cuda_runtime);
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  environment["host"] = host;
  environment["compute_sanitizer"] = nullptr;
  if (!compute_sanitizer.empty()) {
    const std::string v = compute_sanitizer_version(compute_sanitizer);
    if (!v.empty()) environment["compute_sanitizer"] = v;
  }
  return environment;
}

json student_output_json(const LogFile* student_log, std::size_t limit) {
  json student_output = {{"text", ""}, {"truncated", false}};
  if (student_log == nullptr) return student_output;
  const CappedText log = student_log->read_capped(limit / 2, limit - limit / 2);
  student_output["text"] = log.text;
  student_output["truncated"] = log.dropped > 0;
  return student_output;
}

json results_json(const Options& o, const Graded& g) {
  json suites = json::array();
  for (const LoadedSuite& s : *g.suites)
    suites.push_back({{"name", s.suite.name},
                      {"path", s.suite.path.string()},
                      {"sha256", s.sha256},
                      {"cases", s.suite.cases.size()},
                      {"secret_mixed", s.secret_mixed}});
  json cases = json::array();
  for (std::size_t i = 0; i < g.entries->size(); ++i)
    cases.push_back(case_json((*g.entries)[i], (*g.results)[i], o.backend));
  json out = {{"schema_version", 1},
              {"tool", {{"name", "scangrade"}, {"version", harness_version()}}},
              {"submission", {{"name", o.submission_name}, {"path", o.submission_path}}},
              {"backend", o.backend},
              {"max_n", o.max_n ? json(*o.max_n) : json(nullptr)},
              {"environment", g.environment},
              {"suites", suites},
              {"build", g.build->report},
              {"cases", cases},
              {"slots", g.sheet.slots},
              {"score", g.sheet.score},
              {"sanitizer_pass", g.sanitizer_pass},
              {"phases", {{"correctness_s", g.phases.correctness_s},
                          {"prepare_s", g.phases.prepare_s},
                          {"timing_s", g.phases.timing_s},
                          {"lock_wait_s", g.phases.lock_wait_s},
                          {"sanitizer_s", g.phases.sanitizer_s},
                          {"worker_starts", g.phases.worker_starts},
                          {"worker_start_s", g.phases.worker_start_s},
                          {"checker_start_s", g.phases.checker_start_s}}},
              {"student_output", g.student_output},
              {"isolation", g.isolation},
              {"outcome", g.errors.empty() ? "graded" : "not_graded"},
              {"exit_code", g.exit_code},
              {"started_at", g.started_at},
              {"duration_s", g.duration_s}};
  if (!g.errors.empty()) out["errors"] = g.errors;
  return out;
}

}  // namespace scangrade::grader
