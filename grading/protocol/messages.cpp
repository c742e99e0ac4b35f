// The judge <-> worker messages (messages.h).
#include "messages.h"

namespace scangrade::grader {
namespace {

using nlohmann::json;

/// Reads an object's fields by type, without conversions; remembers how many keys it read.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {
    if (!j.is_object()) throw MessageError("not a JSON object");
  }
  const json* find(const char* key) {
    const auto it = j_.find(key);
    if (it == j_.end()) return nullptr;
    ++read_;
    return &*it;
  }
  const json& at(const char* key) {
    if (const json* v = find(key)) return *v;
    throw MessageError(std::string("field '") + key + "' is missing");
  }
  std::string text(const char* key) { return typed(key, at(key).is_string()).get<std::string>(); }
  bool flag(const char* key) { return typed(key, at(key).is_boolean()).get<bool>(); }
  double number(const char* key) { return typed(key, at(key).is_number()).get<double>(); }
  std::int64_t integer(const char* key) { return typed(key, at(key).is_number_integer()).get<std::int64_t>(); }
  std::uint64_t count(const char* key) { return typed(key, at(key).is_number_unsigned()).get<std::uint64_t>(); }
  /// Throws when the object has keys that were not read.
  void nothing_else() const {
    if (read_ != j_.size()) throw MessageError("unknown fields");
  }

 private:
  const json& typed(const char* key, bool ok) const {
    if (!ok) throw MessageError(std::string("field '") + key + "' has the wrong type");
    return j_[key];
  }
  const json& j_;
  std::size_t read_ = 0;
};

template <typename T>
T known(std::optional<T> value, const std::string& what) {
  if (!value) throw MessageError("unknown " + what);
  return *value;
}

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
    case Mode::Prepare: return "prepare";
    case Mode::Time: return "time";
  }
  return "?";
}

void to_json(json& j, const Hello& m) {
  j = {{"hello", 1}, {"device", m.device}, {"driver", m.driver}, {"cuda_runtime", m.cuda_runtime}, {"error", m.error}};
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
       {"n", m.c.n}};
  if (m.mode == Mode::Check) return;
  j["id"] = m.c.id;
  j["values"] = std::string(name(m.c.values));
  j["seed"] = m.c.seed;
  j["baselines"] = m.baselines ? json(*m.baselines) : json(nullptr);
}

void from_json(const json& j, Command& m) {
  Fields f(j);
  m.k = f.count("k");
  m.nonce = f.text("nonce");
  const std::string mode = f.text("mode");
  if (mode == "check") m.mode = Mode::Check;
  else if (mode == "prepare") m.mode = Mode::Prepare;
  else if (mode == "time") m.mode = Mode::Time;
  else throw MessageError("unknown mode '" + mode + "'");
  m.c = Case{};
  m.c.slot = known(parse_slot(f.text("slot")), "slot");
  m.c.dtype = known(parse_dtype(f.text("dtype")), "dtype");
  m.c.kind = known(parse_kind(f.text("kind")), "kind");
  m.c.n = f.count("n");
  m.baselines.reset();
  if (m.mode == Mode::Check) return;
  m.c.id = f.text("id");
  m.c.values = known(parse_value_kind(f.text("values")), "values");
  m.c.seed = f.count("seed");
  if (const json* b = f.find("baselines"); b && !b->is_null()) m.baselines = b->get<Baselines>();
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
  j["race"] = m.race;
  if (!m.not_recomputed.empty()) j["not_recomputed"] = m.not_recomputed;
  j["leaked_bytes"] = m.leaked_bytes;
  j["leak_detail"] = m.leak_detail;
  j["out_bytes"] = m.out_bytes;
}

void from_json(const json& j, CheckReply& m) {
  Fields f(j);
  try {
    m.not_implemented = f.flag("not_implemented");
    m.error = f.text("error");
    m.context_broken = f.flag("context_broken");
    m.leaked_bytes = f.integer("leaked_bytes");
    m.leak_detail = f.text("leak_detail");
    m.out_bytes = f.count("out_bytes");
  } catch (const MessageError&) {
    throw MessageError("a field is missing or has the wrong type");
  }
  m.race.clear();
  if (const json* race = f.find("race")) {  // emulation workers only
    if (!race->is_string()) throw MessageError("field 'race' is not a string");
    m.race = race->get<std::string>();
  }
  m.not_recomputed.clear();
  if (const json* stale = f.find("not_recomputed")) {  // emulation workers only
    if (!stale->is_string()) throw MessageError("field 'not_recomputed' is not a string");
    m.not_recomputed = stale->get<std::string>();
  }
}

void to_json(json& j, const PrepareReply& m) {
  j = json::object();
  put_header(j, m);
  j["prepared"] = m.prepared;
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
  f.nothing_else();
}

void to_json(json& j, const TimeReply& m) {
  j = json::object();
  put_header(j, m);
  j["timing"] = m.timing ? json(*m.timing) : json(nullptr);
  if (!m.wrong_output.empty()) j["wrong_output"] = m.wrong_output;
  if (m.baselines) {
    j["baselines"] = *m.baselines;
    j["baselines"]["measured"] = m.measured;
  }
}

void from_json(const json& j, TimeReply& m) {
  Fields f(j);
  const json* error = f.find("error");
  if (!error || !error->is_string() || !f.find("timing")) throw MessageError("a field of the timing reply is missing");
  m.error = error->get<std::string>();
  const json* broken = f.find("context_broken");
  m.context_broken = broken && broken->is_boolean() && broken->get<bool>();
  m.timing.reset();
  m.baselines.reset();
  m.measured = false;
  const json* wrong = f.find("wrong_output");
  if (wrong && !wrong->is_string()) throw MessageError("a field of the timing reply is not of its type");
  m.wrong_output = wrong ? wrong->get<std::string>() : "";
  if (!m.error.empty() || !m.wrong_output.empty()) return;
  try {
    m.timing = j["timing"].get<Timing>();
  } catch (const MessageError&) {
    throw MessageError("the timing object does not have the schema's fields");
  }
  // only a cache is fed from these: anything ill-formed is simply not kept
  const json* b = f.find("baselines");
  if (!b || !b->is_object() || !b->contains("measured") || !(*b)["measured"].is_boolean()) return;
  json numbers = *b;
  numbers.erase("measured");
  try {
    m.baselines = numbers.get<Baselines>();
    m.measured = (*b)["measured"].get<bool>();
  } catch (const MessageError&) {
  }
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
