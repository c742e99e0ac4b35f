// The timing pass (Session::time_cases): the passed perf cases timed after every functional run,
// with the GPU to this judge alone; baselines shared through --baseline-cache.
#include <iostream>

#include "protocol.h"
#include "session.h"
#include "results.h"
#include "text.h"

namespace scangrade::grader {

using nlohmann::json;

namespace {

/// The baseline cache's key of a case: the device, the harness version and everything that makes
/// the input.
std::string baseline_key(const std::string& device, const Entry& e) {
  const Case& c = e.input_case;
  return device + " | scangrade " + harness_version() + " | " + c.id + " | " + std::string(name(c.slot)) + " " +
         std::string(name(c.dtype)) + " " + std::string(name(c.kind)) + " n=" + std::to_string(c.n) + " " +
         std::string(name(c.values)) + " seed=" + std::to_string(c.seed);
}

/// The cache file's entries (an empty object when it is missing or unreadable: then it is rebuilt).
json load_baseline_cache(const std::string& path) {
  const auto text = read_file(path);
  if (!text || text->empty()) return json::object();
  try {
    json j = json::parse(*text);
    if (j.is_object() && j.value("version", 0) == 1 && j.contains("baselines") && j["baselines"].is_object())
      return j["baselines"];
  } catch (const json::exception&) {
  }
  std::cerr << "scangrade_judge: ignoring the unreadable baseline cache " << path << " (it is rebuilt)\n";
  return json::object();
}

void save_baseline_cache(const std::string& path, const json& cache) {
  const json file = {{"version", 1},
                     {"about", "scangrade_judge --baseline-cache: medians (ms) of the reference, CUB and a "
                               "device-to-device copy per device, harness version and case"},
                     {"baselines", cache}};
  const std::string text = file.dump(1) + "\n";
  if (const std::string why = write_file_atomic(path, text.data(), text.size()); !why.empty())
    std::cerr << "scangrade_judge: cannot update the baseline cache: " << why << "\n";
}

/// A cache entry's baselines, when it has them.
std::optional<Baselines> cached_baselines(const json& cache, const std::string& key) {
  if (!cache.is_object() || !cache.contains(key)) return std::nullopt;
  try {
    return cache[key].get<Baselines>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

void Session::time_cases(const std::vector<Entry>& entries, std::vector<CaseResult>& results) {
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].c.perf && results[i].status == Status::Pass) todo.push_back(i);
  if (todo.empty()) return;
  prepare_timed(entries, todo);
  // the GPU to this judge alone, for all its timed cases in one go
  std::optional<GpuLock> gpu;
  if (const std::string why = take_gpu(GpuLock::Exclusive, gpu); !why.empty()) {
    for (std::size_t i : todo) harness_fault(results[i], why);
    return;
  }
  json cache = o_.baseline_cache.empty() ? json(nullptr) : load_baseline_cache(o_.baseline_cache);
  bool cache_changed = false;
  const auto start = Clock::now();
  for (std::size_t i : todo) {
    const auto case_start = Clock::now();
    time_case(entries[i], results[i], cache, cache_changed);
    results[i].duration_s += seconds_since(case_start);
  }
  if (cache_changed) save_baseline_cache(o_.baseline_cache, cache);
  timing_s_ += seconds_since(start);
}

void Session::prepare_timed(const std::vector<Entry>& entries, const std::vector<std::size_t>& todo) {
  CaseResult unused;
  if (!ensure_worker(unused)) return;
  std::optional<GpuLock> gpu;
  if (!take_gpu(GpuLock::Shared, gpu).empty()) return;
  const auto start = Clock::now();
  for (std::size_t i : todo) {
    const Exchange x = exchange(*worker_, command(Mode::Prepare, entries[i]), case_deadline_s(entries[i].c), false,
                                log_path_);
    if (x.kind != Exchange::Reply) {  // only harness code ran: "time" makes its input itself
      drop_worker();
      break;
    }
  }
  prepare_s_ += seconds_since(start);
}

void Session::time_case(const Entry& e, CaseResult& r, json& cache, bool& cache_changed) {
  CaseResult start;
  if (!ensure_worker(start)) return;  // the pass stands; without a timing the slot gets no perf points
  const std::string key = hello_ ? baseline_key(hello_->device, e) : "";
  Command cmd = command(Mode::Time, e);
  cmd.baselines = cached_baselines(cache, key);
  bool capped = false;
  const double deadline = cut_at_budget(4 * case_deadline_s(e.c) + 30 * o_.timeout_scale, capped, e.c.slot);
  const Exchange t = exchange(*worker_, cmd, deadline, capped, log_path_);
  if (t.kind != Exchange::Reply) {
    if (t.kind == Exchange::Harness) {  // the harness could not time a passing case: keep the pass
      errors_.push_back(t.message);
    } else {
      from_exchange(t, r);
      r.message = "the timed repetitions failed: " + r.message;
    }
    drop_worker();
    return;
  }
  TimeReply reply;
  try {
    reply = t.reply.get<TimeReply>();
  } catch (const MessageError& ex) {
    garbled(r, ex.what());
    return;
  }
  if (!reply.wrong_output.empty()) {
    r.status = Status::Fail;
    r.message = "the case passed, but a timed call did not compute its result: " + reply.wrong_output +
                ". Results must be computed on every call: the timed calls get fresh, poisoned output buffers at "
                "alternating addresses, and a slot that returns a remembered result is not timed";
    return;
  }
  if (!reply.error.empty()) {
    r.status = Status::Crash;
    r.message = "the case passed, then failed during the timed repetitions: " + reply.error;
    if (reply.context_broken) drop_worker();
    return;
  }
  r.timing = reply.timing;
  // a baseline measured now goes to the cache (only the harness's own numbers: all three positive)
  const auto& b = reply.baselines;
  if (cache.is_object() && !key.empty() && b && reply.measured && b->reference_ms > 0 && b->cub_ms > 0 &&
      b->copy_ms > 0) {
    cache[key] = {{"reference_ms", b->reference_ms}, {"cub_ms", b->cub_ms}, {"copy_ms", b->copy_ms},
                  {"measured_by", o_.submission_name}, {"measured_at", utc_now()}};
    cache_changed = true;
  }
}

}  // namespace scangrade::grader
