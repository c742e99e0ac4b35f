// The judge <-> worker messages (messages.h).
#include "messages.h"

#include <cctype>
#include <cmath>

#include "json_fields.h"

namespace scangrade::grader {
namespace {

using nlohmann::json;
using protocol_detail::Fields;
using protocol_detail::known;

void put_header(json& j, const ReplyHeader& m) {
  j["k"] = m.k ? json(*m.k) : json(nullptr);
  j["nonce"] = m.nonce;
  j["error"] = m.error;
  j["harness_error"] = m.harness_error;
  j["context_broken"] = m.context_broken;
}

}  // namespace

std::string name(Mode m) {
  switch (m) {
    case Mode::Check: return "check";
    case Mode::TimeBegin: return "time_begin";
    case Mode::TimeCall: return "time_call";
    case Mode::TimeEnd: return "time_end";
  }
  return "?";
}

void to_json(json& j, const Hello& m) {
  j = {{"hello", 1}, {"device", m.device}, {"driver", m.driver}, {"cuda_runtime", m.cuda_runtime}, {"error", m.error},
       {"monitor", m.monitor}, {"device_ms", m.device_ms}, {"monitor_ms", m.monitor_ms},
       {"loaded_ns", m.loaded_ns}, {"sent_ns", m.sent_ns}};
}

void from_json(const json& j, Hello& m) {
  Fields f(j);
  if (const json* h = f.find("hello"); !h || *h != 1) throw MessageError("not a hello");
  m.error = f.text("error");
  const auto optional_text = [&](const char* key) {
    const json* v = f.find(key);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };
  m.device = optional_text("device");
  m.driver = optional_text("driver");
  m.cuda_runtime = optional_text("cuda_runtime");
  m.monitor = optional_text("monitor");
  const auto optional_ms = [&](const char* key) {
    const json* v = f.find(key);
    return v && v->is_number() && std::isfinite(v->get<double>()) ? v->get<double>() : 0.0;
  };
  m.device_ms = optional_ms("device_ms");
  m.monitor_ms = optional_ms("monitor_ms");
  const auto optional_ns = [&](const char* key) {
    const json* v = f.find(key);
    return v && v->is_number_integer() ? v->get<std::int64_t>() : std::int64_t{0};
  };
  m.loaded_ns = optional_ns("loaded_ns");
  m.sent_ns = optional_ns("sent_ns");
}

void to_json(json& j, const Baselines& m) {
  j = {{"reference_ms", m.reference_ms}, {"cub_ms", m.cub_ms}, {"copy_ms", m.copy_ms}};
}

void from_json(const json& j, Baselines& m) {
  Fields f(j);
  m.reference_ms = f.number("reference_ms");
  m.cub_ms = f.number("cub_ms");
  m.copy_ms = f.number("copy_ms");
}

void to_json(json& j, const Command& m) {
  j = {{"k", m.k},
       {"nonce", m.nonce},
       {"mode", name(m.mode)},
       {"slot", std::string(name(m.c.slot))},
       {"dtype", std::string(name(m.c.dtype))},
       {"kind", std::string(name(m.c.kind))},
       {"n", m.c.n},
       {"shared", m.shared},
       {"kept", m.kept},
       {"sizes", m.sizes},
       {"call", m.call}};
  if (m.watch_slack) j["watch_slack"] = true;
  if (m.reverse) j["reverse"] = true;
}

void from_json(const json& j, Command& m) {
  Fields f(j);
  m.k = f.count("k");
  m.nonce = f.text("nonce");
  const std::string mode = f.text("mode");
  if (mode == "check") m.mode = Mode::Check;
  else if (mode == "time_begin") m.mode = Mode::TimeBegin;
  else if (mode == "time_call") m.mode = Mode::TimeCall;
  else if (mode == "time_end") m.mode = Mode::TimeEnd;
  else throw MessageError("unknown mode '" + mode + "'");
  m.c = Case{};
  m.c.slot = known(parse_slot(f.text("slot")), "slot");
  m.c.dtype = known(parse_dtype(f.text("dtype")), "dtype");
  m.c.kind = known(parse_kind(f.text("kind")), "kind");
  m.c.n = f.count("n");
  m.shared = f.flag("shared");
  m.kept = f.flag("kept");
  if (m.kept && !m.shared) throw MessageError("field 'kept' without 'shared'");
  const json& sizes = f.at("sizes");
  if (!sizes.is_array() || sizes.size() > kMaxSharedBuffers) throw MessageError("field 'sizes' is not a short array");
  m.sizes.clear();
  for (const json& s : sizes) {
    if (!s.is_number_unsigned()) throw MessageError("field 'sizes' holds a value that is not a byte count");
    m.sizes.push_back(s.get<std::uint64_t>());
  }
  m.call = static_cast<int>(f.integer("call"));
  m.watch_slack = false;
  if (const json* watch = f.find("watch_slack")) {
    if (!watch->is_boolean()) throw MessageError("field 'watch_slack' is not a boolean");
    m.watch_slack = watch->get<bool>();
  }
  m.reverse = false;
  if (const json* reverse = f.find("reverse")) {
    if (!reverse->is_boolean()) throw MessageError("field 'reverse' is not a boolean");
    m.reverse = reverse->get<bool>();
  }
  if (m.call < -1 || m.call > 1) throw MessageError("field 'call' is not -1, 0 or 1");
}

void to_json(json& j, const Stage& m) { j = {{"k", m.k}, {"nonce", m.nonce}, {"stage", m.stage}}; }

void from_json(const json& j, Stage& m) {
  Fields f(j);
  m.k = f.count("k");
  m.nonce = f.text("nonce");
  m.stage = f.text("stage");
}

void to_json(json& j, const ReplyHeader& m) {
  j = json::object();
  put_header(j, m);
}

void to_json(json& j, const CheckReply& m) {
  j = json::object();
  put_header(j, m);
  j["not_implemented"] = m.not_implemented;
  if (!m.not_implemented_at.empty()) j["not_implemented_at"] = m.not_implemented_at;
  j["race"] = m.race;
  if (!m.not_recomputed.empty()) j["not_recomputed"] = m.not_recomputed;
  if (!m.stray_write.empty()) j["stray_write"] = m.stray_write;
  if (!m.undefined.empty()) j["undefined"] = m.undefined;
  j["leaked_bytes"] = m.leaked_bytes;
  j["leak_detail"] = m.leak_detail;
  j["policy"] = m.policy;
  j["policy_rule"] = m.policy_rule;
}

/// "student/<file>:<line>" as not_implemented() writes it (a file name of letters, digits and ._+-,
/// a line number); anything else a submission puts there is dropped, and the message names the slot's file.
static bool is_student_line(const std::string& at) {
  const std::string prefix = "student/";
  const auto colon = at.rfind(':');
  if (at.size() > 160 || at.rfind(prefix, 0) != 0 || colon == std::string::npos || colon == prefix.size() ||
      colon + 1 == at.size() || at.size() - colon > 8)
    return false;
  for (std::size_t i = prefix.size(); i < colon; ++i)
    if (!std::isalnum(static_cast<unsigned char>(at[i])) && std::string("._+-").find(at[i]) == std::string::npos)
      return false;
  for (std::size_t i = colon + 1; i < at.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(at[i]))) return false;
  return true;
}

void from_json(const json& j, CheckReply& m) {
  Fields f(j);
  try {
    m.not_implemented = f.flag("not_implemented");
    m.error = f.text("error");
    m.context_broken = f.flag("context_broken");
    m.leaked_bytes = f.integer("leaked_bytes");
    m.leak_detail = f.text("leak_detail");
    m.policy = f.text("policy");
    m.policy_rule = f.text("policy_rule");
  } catch (const MessageError&) {
    throw MessageError("a field is missing or has the wrong type");
  }
  m.race.clear();
  if (const json* race = f.find("race")) {  // emulation workers only
    if (!race->is_string()) throw MessageError("field 'race' is not a string");
    m.race = race->get<std::string>();
  }
  m.not_implemented_at.clear();
  if (const json* at = f.find("not_implemented_at")) {  // the student process's word: kept only in its form
    if (!at->is_string()) throw MessageError("field 'not_implemented_at' is not a string");
    if (is_student_line(at->get<std::string>())) m.not_implemented_at = at->get<std::string>();
  }
  m.not_recomputed.clear();
  if (const json* stale = f.find("not_recomputed")) {  // emulation workers only
    if (!stale->is_string()) throw MessageError("field 'not_recomputed' is not a string");
    m.not_recomputed = stale->get<std::string>();
  }
  m.stray_write.clear();
  if (const json* stray = f.find("stray_write")) {  // emulation workers only
    if (!stray->is_string()) throw MessageError("field 'stray_write' is not a string");
    m.stray_write = stray->get<std::string>();
  }
  m.undefined.clear();
  if (const json* undefined = f.find("undefined")) {  // emulation workers only
    if (!undefined->is_string()) throw MessageError("field 'undefined' is not a string");
    m.undefined = undefined->get<std::string>();
  }
}

void to_json(json& j, const Timing& m) {
  j = {{"median_ms", m.median_ms},
       {"min_ms", m.min_ms},
       {"max_ms", m.max_ms},
       {"reps", m.reps},
       {"spread", m.spread},
       {"gbps", m.gbps},
       {"copy_gbps", m.copy_gbps},
       {"fraction_of_copy", m.fraction_of_copy},
       {"reference_ms", m.reference_ms},
       {"cub_ms", m.cub_ms},
       {"ratio_to_reference", m.ratio_to_reference},
       {"ratio_to_cub", m.ratio_to_cub},
       {"method", m.method}};
  if (m.ratio_interval) j["ratio_interval"] = {m.ratio_interval->first, m.ratio_interval->second};
  if (!m.clock.empty()) {
    j["clock"] = m.clock;
    j["raised_to_bound"] = m.raised_to_bound;
    j["judge_overhead_ms"] = m.judge_overhead_ms;
  }
  if (!m.stopped.empty()) j["stopped"] = m.stopped;
}

void from_json(const json& j, Timing& m) {
  Fields f(j);
  m.median_ms = f.number("median_ms");
  m.min_ms = f.number("min_ms");
  m.max_ms = f.number("max_ms");
  m.reps = f.integer("reps");
  if (m.reps < 1) throw MessageError("field 'reps' is below 1");
  m.spread = f.number("spread");
  m.gbps = f.number("gbps");
  m.copy_gbps = f.number("copy_gbps");
  m.fraction_of_copy = f.number("fraction_of_copy");
  m.reference_ms = f.number("reference_ms");
  m.cub_ms = f.number("cub_ms");
  m.ratio_to_reference = f.number("ratio_to_reference");
  m.ratio_to_cub = f.number("ratio_to_cub");
  m.method = f.text("method");
  if (const json* found = f.find("ratio_interval")) {
    const json& r = *found;
    if (!r.is_array() || r.size() != 2 || !r[0].is_number() || !r[1].is_number())
      throw MessageError("field 'ratio_interval' is not two numbers");
    m.ratio_interval = std::make_pair(r[0].get<double>(), r[1].get<double>());
  }
  if (const json* clock = f.find("clock")) {
    if (!clock->is_string()) throw MessageError("field 'clock' has the wrong type");
    m.clock = clock->get<std::string>();
    m.raised_to_bound = f.integer("raised_to_bound");
    m.judge_overhead_ms = f.number("judge_overhead_ms");
  }
  if (const json* stopped = f.find("stopped")) {
    if (!stopped->is_string()) throw MessageError("field 'stopped' has the wrong type");
    m.stopped = stopped->get<std::string>();
  }
  f.nothing_else();
}

void to_json(json& j, const TimeCallReply& m) {
  j = json::object();
  put_header(j, m);
  j["event_ms"] = m.event_ms;
  j["host_ms"] = m.host_ms;
}

void from_json(const json& j, TimeCallReply& m) {
  Fields f(j);
  try {
    m.error = f.text("error");
    m.context_broken = f.flag("context_broken");
    m.event_ms = f.number("event_ms");
    m.host_ms = f.number("host_ms");
  } catch (const MessageError&) {
    throw MessageError("a field of the time_call reply is missing or has the wrong type");
  }
  if (!(m.event_ms >= 0 && m.host_ms >= 0 && m.event_ms < 1e9 && m.host_ms < 1e9))
    throw MessageError("a time of the time_call reply is not a finite time");
}

bool answers(const json& reply, const Command& command) {
  return reply.is_object() && reply.value("k", json()) == json(command.k) &&
         reply.value("nonce", json()) == json(command.nonce);
}

std::string harness_error_of(const json& reply) {
  const json he = reply.value("harness_error", json(""));
  if (!he.is_string()) throw MessageError("field 'harness_error' is not a string");
  return he.get<std::string>();
}

std::string encode(const json& message) {
  // replace: a student's exception text need not be UTF-8
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace scangrade::grader
