// Suite loading and validation (suite.h).
#include "scangrade/suite.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace scangrade {
namespace {

using nlohmann::json;

const std::set<std::string> kCaseFields = {"id",     "slot",   "dtype",      "kind", "n",    "values",
                                           "seed",   "points", "visibility", "why",  "perf", "timeout_s",
                                           "sanitize"};
constexpr const char* kIdChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
const std::set<std::string> kTopFields = {"suite", "version", "description", "defaults", "cases", "performance", "policy"};

/// Builds "FILE: cases[3] (id 'x'): field 'n': MESSAGE".
class RowContext {
 public:
  RowContext(const std::string& origin, std::size_t index, const json& row) : origin_(origin), index_(index) {
    if (row.is_object() && row.contains("id") && row["id"].is_string()) id_ = row["id"].get<std::string>();
  }
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    std::ostringstream out;
    out << origin_ << ": cases[" << index_ << "]";
    if (!id_.empty()) out << " (id '" << id_ << "')";
    if (!field.empty()) out << ": field '" << field << "'";
    out << ": " << message;
    throw SuiteError(out.str());
  }

 private:
  std::string origin_;
  std::size_t index_;
  std::string id_;
};

/// Looks a field up in the row, then in the suite's defaults.
const json* find_field(const json& row, const json& defaults, const std::string& field) {
  if (row.contains(field)) return &row[field];
  if (defaults.is_object() && defaults.contains(field)) return &defaults[field];
  return nullptr;
}

const json& require(const RowContext& ctx, const json& row, const json& defaults, const std::string& field) {
  const json* value = find_field(row, defaults, field);
  if (!value) ctx.fail(field, "missing (every case needs it, or the suite's \"defaults\")");
  return *value;
}

std::string require_string(const RowContext& ctx, const json& row, const json& defaults, const std::string& field) {
  const json& v = require(ctx, row, defaults, field);
  if (!v.is_string()) ctx.fail(field, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

std::uint64_t require_uint(const RowContext& ctx, const json& row, const json& defaults, const std::string& field) {
  const json& v = require(ctx, row, defaults, field);
  if (!v.is_number_unsigned()) ctx.fail(field, "expected a non-negative integer, got " + v.dump());
  return v.get<std::uint64_t>();
}

double optional_number(const RowContext& ctx, const json& row, const json& defaults, const std::string& field,
                       double fallback) {
  const json* v = find_field(row, defaults, field);
  if (!v) return fallback;
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)
    ctx.fail(field, "expected a non-negative number, got " + v->dump());
  return v->get<double>();
}

template <typename E>
E require_enum(const RowContext& ctx, const json& row, const json& defaults, const std::string& field,
               std::optional<E> (*parse)(std::string_view), const char* allowed) {
  const std::string text = require_string(ctx, row, defaults, field);
  const std::optional<E> value = parse(text);
  if (!value) ctx.fail(field, "'" + text + "' is not one of: " + allowed);
  return *value;
}

Case parse_case(const std::string& origin, std::size_t index, const json& row, const json& defaults) {
  const RowContext ctx(origin, index, row);
  if (!row.is_object()) ctx.fail("", "expected an object, got " + row.dump());
  for (const auto& item : row.items())
    if (!kCaseFields.count(item.key()))
      ctx.fail(item.key(), "unknown field (known: id, slot, dtype, kind, n, values, seed, points, visibility, why, "
                           "perf, timeout_s, sanitize)");

  Case c;
  c.id = require_string(ctx, row, defaults, "id");
  if (c.id.empty() || c.id.find_first_not_of(kIdChars) != std::string::npos)
    ctx.fail("id", "'" + c.id + "' must be non-empty and use only letters, digits, '_', '.' and '-'");
  c.slot = require_enum<Slot>(ctx, row, defaults, "slot", parse_slot,
                              "hillis_steele, blelloch, hierarchical, single_pass");
  c.dtype = require_enum<DType>(ctx, row, defaults, "dtype", parse_dtype, "int32, float32");
  c.kind = require_enum<ScanKind>(ctx, row, defaults, "kind", parse_kind, "inclusive, exclusive");
  c.n = require_uint(ctx, row, defaults, "n");
  c.values = require_enum<ValueKind>(ctx, row, defaults, "values", parse_value_kind,
                                     "random, real, zeros, ones, alternating, large");
  c.seed = require_uint(ctx, row, defaults, "seed");
  c.points = optional_number(ctx, row, defaults, "points", 1.0);
  c.visibility = Visibility::Visible;
  if (find_field(row, defaults, "visibility"))
    c.visibility = require_enum<Visibility>(ctx, row, defaults, "visibility", parse_visibility,
                                            "visible, hidden, after_due_date, after_published");
  c.why = require_string(ctx, row, defaults, "why");
  if (const json* perf = find_field(row, defaults, "perf")) {
    if (!perf->is_boolean()) ctx.fail("perf", "expected true or false, got " + perf->dump());
    c.perf = perf->get<bool>();
  }
  c.timeout_s = optional_number(ctx, row, defaults, "timeout_s", 0.0);
  if (const json* tools = find_field(row, defaults, "sanitize")) {
    if (!tools->is_array())
      ctx.fail("sanitize", "expected a list of tool names (racecheck, memcheck, synccheck), got " + tools->dump());
    for (const json& tool : *tools) {
      const bool known = tool.is_string() && std::any_of(std::begin(kSanitizerTools), std::end(kSanitizerTools),
                                                         [&](const char* t) { return tool == t; });
      if (!known) ctx.fail("sanitize", tool.dump() + " is not one of: racecheck, memcheck, synccheck");
      if (std::find(c.sanitize.begin(), c.sanitize.end(), tool.get<std::string>()) != c.sanitize.end())
        ctx.fail("sanitize", "'" + tool.get<std::string>() + "' is listed twice");
      c.sanitize.push_back(tool.get<std::string>());
    }
  }

  // The contract's limits.
  if (c.n > max_n(c.slot))
    ctx.fail("n", std::to_string(c.n) + " is above the " + std::string(name(c.slot)) + " slot's limit of " +
                      std::to_string(max_n(c.slot)));
  if (const auto kind = fixed_kind(c.slot); kind && *kind != c.kind)
    ctx.fail("kind", "the " + std::string(name(c.slot)) + " slot computes only the " + std::string(name(*kind)) +
                         " scan");
  if (c.values == ValueKind::Real && c.dtype != DType::Float32)
    ctx.fail("values", "'real' values need dtype float32");
  return c;
}

}  // namespace

/// "performance": {"points": {"<slot>": <non-negative number>, ...}}
std::map<Slot, double> parse_performance(const json& perf, const std::string& origin) {
  const std::string where = origin + ": field 'performance'";
  if (!perf.is_object()) throw SuiteError(where + ": expected an object like {\"points\": {\"hierarchical\": 5}}");
  for (const auto& item : perf.items())
    if (item.key() != "points") throw SuiteError(where + ": unknown field '" + item.key() + "' (known: points)");
  std::map<Slot, double> points;
  if (!perf.contains("points")) return points;
  const json& table = perf["points"];
  if (!table.is_object()) throw SuiteError(where + ".points: expected an object of slot: points, got " + table.dump());
  for (const auto& item : table.items()) {
    const std::optional<Slot> slot = parse_slot(item.key());
    if (!slot)
      throw SuiteError(where + ".points: '" + item.key() +
                       "' is not one of: hillis_steele, blelloch, hierarchical, single_pass");
    const json& v = item.value();
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      throw SuiteError(where + ".points." + item.key() + ": expected a non-negative number, got " + v.dump());
    points[*slot] = v.get<double>();
  }
  return points;
}

std::map<std::string, PolicyAction> parse_policy(const json& policy, const std::string& origin) {
  const std::string where = origin + ": field 'policy'";
  if (!policy.is_object())
    throw SuiteError(where + ": expected an object like {\"host_compute\": \"zero_slot\", \"launch\": \"flag\"}");
  std::map<std::string, PolicyAction> actions;
  for (const auto& item : policy.items()) {
    if (std::find(std::begin(kPolicyRules), std::end(kPolicyRules), item.key()) == std::end(kPolicyRules))
      throw SuiteError(where + ": unknown rule '" + item.key() + "' (known: host_compute, library, launch)");
    const json& v = item.value();
    const std::string action = v.is_string() ? v.get<std::string>() : "";
    if (action == "zero_slot") actions[item.key()] = PolicyAction::ZeroSlot;
    else if (action == "flag") actions[item.key()] = PolicyAction::Flag;
    else if (action == "off") actions[item.key()] = PolicyAction::Off;
    else throw SuiteError(where + "." + item.key() + ": expected \"zero_slot\", \"flag\" or \"off\", got " + v.dump());
  }
  return actions;
}

Suite parse_suite(const std::string& text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw SuiteError(origin + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object()) throw SuiteError(origin + ": the top level must be an object with a \"cases\" list");
  for (const auto& item : doc.items())
    if (!kTopFields.count(item.key()))
      throw SuiteError(origin + ": unknown top-level field '" + item.key() +
                       "' (known: suite, version, description, defaults, cases, performance, policy)");
  if (doc.contains("version") && doc["version"] != 1)
    throw SuiteError(origin + ": field 'version': this harness reads suite format version 1, got " +
                     doc["version"].dump());
  if (!doc.contains("cases") || !doc["cases"].is_array())
    throw SuiteError(origin + ": field 'cases': missing or not a list");
  const json defaults = doc.value("defaults", json::object());
  if (!defaults.is_object()) throw SuiteError(origin + ": field 'defaults': expected an object");

  Suite suite;
  if (doc.contains("performance")) suite.performance_points = parse_performance(doc["performance"], origin);
  if (doc.contains("policy")) suite.policy = parse_policy(doc["policy"], origin);
  suite.name = doc.contains("suite") && doc["suite"].is_string() ? doc["suite"].get<std::string>() : origin;
  std::set<std::string> ids;
  const json& rows = doc["cases"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Case c = parse_case(origin, i, rows[i], defaults);
    if (!ids.insert(c.id).second) RowContext(origin, i, rows[i]).fail("id", "duplicate id '" + c.id + "'");
    suite.cases.push_back(std::move(c));
  }
  return suite;
}

Suite load_suite(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SuiteError(path.string() + ": cannot open the suite file");
  std::ostringstream text;
  text << in.rdbuf();
  Suite suite = parse_suite(text.str(), path.string());
  suite.path = path;
  return suite;
}

std::string case_label(const Case& c) {
  std::string label = c.id;
  const std::string prefix = std::string(name(c.slot)) + ".";
  if (label.rfind(prefix, 0) == 0) label.erase(0, prefix.size());
  for (char& ch : label)
    if (ch == '.' || ch == '-') ch = '_';
  return label;
}

double default_deadline_s(std::size_t n, bool emulated) {
  const double elements = static_cast<double>(n);
  return emulated ? 20.0 + 3e-6 * elements : 10.0 + 50e-9 * elements;
}

}  // namespace scangrade
