// The judge <-> checker messages (checker_messages.h).
#include "checker_messages.h"

#include <utility>

#include "json_fields.h"

namespace scangrade::grader {
namespace {

using nlohmann::json;
using protocol_detail::Fields;
using protocol_detail::known;

constexpr std::pair<CheckerOp, const char*> kOps[] = {
    {CheckerOp::Setup, "setup"},         {CheckerOp::Check, "check"},
    {CheckerOp::Collect, "collect"},     {CheckerOp::Release, "release"},
    {CheckerOp::TimeSetup, "time_setup"}, {CheckerOp::Prime, "prime"},
    {CheckerOp::Verify, "verify"},       {CheckerOp::ReferenceCall, "reference_call"},
    {CheckerOp::TimeEnd, "time_end"},
};

CheckerOp parse_op(const std::string& text) {
  for (const auto& [op, op_name] : kOps)
    if (text == op_name) return op;
  throw MessageError("unknown op '" + text + "'");
}

json parse_object(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) throw MessageError("not a JSON object");
  return j;
}

int pair_of(Fields& f) {
  const std::int64_t j = f.integer("j");
  if (j != 0 && j != 1) throw MessageError("field 'j' is not a buffer pair");
  return static_cast<int>(j);
}

}  // namespace

std::string name(CheckerOp op) {
  for (const auto& [known_op, op_name] : kOps)
    if (known_op == op) return op_name;
  return "?";
}

CheckerRequest CheckerRequest::of(CheckerOp op) {
  CheckerRequest m;
  m.op = op;
  return m;
}

CheckerRequest CheckerRequest::setup(std::uint64_t n, std::uint64_t element, std::uint64_t offset, bool share) {
  CheckerRequest m = of(CheckerOp::Setup);
  m.n = n;
  m.element = element;
  m.offset = offset;
  m.share = share;
  return m;
}

CheckerRequest CheckerRequest::check(ScanKind kind, DType dtype) {
  CheckerRequest m = of(CheckerOp::Check);
  m.kind = kind;
  m.dtype = dtype;
  return m;
}

CheckerRequest CheckerRequest::time_setup(const Case& c, std::uint64_t offset, bool baselines, bool paired_reference) {
  CheckerRequest m = of(CheckerOp::TimeSetup);
  m.slot = c.slot;
  m.dtype = c.dtype;
  m.kind = c.kind;
  m.values = c.values;
  m.n = c.n;
  m.offset = offset;
  m.baselines = baselines;
  m.paired_reference = paired_reference;
  return m;
}

CheckerRequest CheckerRequest::prime(int j) {
  CheckerRequest m = of(CheckerOp::Prime);
  m.j = j;
  return m;
}

CheckerRequest CheckerRequest::verify(int j) {
  CheckerRequest m = of(CheckerOp::Verify);
  m.j = j;
  return m;
}

CheckerReply CheckerReply::failed(std::string why) {
  CheckerReply m;
  m.error = why.empty() ? std::string("an error without a message") : std::move(why);  // never reads as success
  return m;
}

std::string encode(const CheckerHello& m) {
  return json{{"hello", 1}, {"device", m.device}, {"error", m.error}}.dump();
}

CheckerHello decode_checker_hello(const std::string& text) {
  const json j = parse_object(text);
  Fields f(j);
  if (const json* h = f.find("hello"); !h || *h != 1) throw MessageError("not a hello");
  CheckerHello m;
  m.device = f.text("device");
  m.error = f.text("error");
  return m;
}

std::string encode(const CheckerRequest& m) {
  json j = {{"op", name(m.op)}};
  switch (m.op) {
    case CheckerOp::Setup:
      j.update({{"n", m.n}, {"element", m.element}, {"offset", m.offset}, {"share", m.share}});
      break;
    case CheckerOp::Check:
      j.update({{"kind", std::string(name(m.kind))}, {"dtype", std::string(name(m.dtype))}});
      break;
    case CheckerOp::TimeSetup:
      j.update({{"slot", std::string(name(m.slot))},
                {"dtype", std::string(name(m.dtype))},
                {"kind", std::string(name(m.kind))},
                {"values", std::string(name(m.values))},
                {"n", m.n},
                {"offset", m.offset},
                {"baselines", m.baselines},
                {"paired_reference", m.paired_reference}});
      break;
    case CheckerOp::Prime:
    case CheckerOp::Verify:
      j["j"] = m.j;
      break;
    case CheckerOp::Collect:
    case CheckerOp::Release:
    case CheckerOp::ReferenceCall:
    case CheckerOp::TimeEnd:
      break;
  }
  return j.dump();
}

CheckerRequest decode_checker_request(const std::string& text) {
  const json j = parse_object(text);
  Fields f(j);
  CheckerRequest m = CheckerRequest::of(parse_op(f.text("op")));
  switch (m.op) {
    case CheckerOp::Setup:
      m.n = f.count("n");
      m.element = f.count("element");
      m.offset = f.count("offset");
      m.share = f.flag("share");
      break;
    case CheckerOp::Check:
      m.kind = known(parse_kind(f.text("kind")), "kind");
      m.dtype = known(parse_dtype(f.text("dtype")), "dtype");
      break;
    case CheckerOp::TimeSetup:
      m.slot = known(parse_slot(f.text("slot")), "slot");
      m.dtype = known(parse_dtype(f.text("dtype")), "dtype");
      m.kind = known(parse_kind(f.text("kind")), "kind");
      m.values = known(parse_value_kind(f.text("values")), "values kind");
      m.n = f.count("n");
      m.offset = f.count("offset");
      m.baselines = f.flag("baselines");
      m.paired_reference = f.flag("paired_reference");
      break;
    case CheckerOp::Prime:
    case CheckerOp::Verify:
      m.j = pair_of(f);
      break;
    case CheckerOp::Collect:
    case CheckerOp::Release:
    case CheckerOp::ReferenceCall:
    case CheckerOp::TimeEnd:
      break;
  }
  f.nothing_else();
  return m;
}

std::string encode(const CheckerReply& m, CheckerOp op) {
  if (!m.error.empty()) return json{{"error", m.error}}.dump();
  json j = {{"ok", true}};
  switch (op) {
    case CheckerOp::Setup:
      j.update({{"sizes", m.sizes}, {"kept", m.kept}});
      break;
    case CheckerOp::Check:
      j["verified"] = m.verified;
      break;
    case CheckerOp::TimeSetup:
      j.update({{"sizes", m.sizes},
                {"baselines", m.baselines ? json(*m.baselines) : json(nullptr)},
                {"flush_bytes", m.flush_bytes},
                {"fresh_input", m.fresh_input}});
      break;
    case CheckerOp::Verify:
      j["outside"] = m.outside ? json(*m.outside) : json(nullptr);
      break;
    case CheckerOp::ReferenceCall:
      j["ms"] = m.ms;
      break;
    case CheckerOp::Collect:
    case CheckerOp::Release:
    case CheckerOp::Prime:
    case CheckerOp::TimeEnd:
      break;
  }
  return j.dump();
}

CheckerReply decode_checker_reply(const std::string& text, CheckerOp op) {
  const json j = parse_object(text);
  Fields f(j);
  CheckerReply m;
  if (f.find("error")) {
    m.error = f.text("error");
    if (m.error.empty()) throw MessageError("field 'error' is empty");
    return m;
  }
  if (!f.flag("ok")) throw MessageError("neither ok nor an error");
  const auto sizes = [&f] {
    const json& s = f.at("sizes");
    std::vector<std::uint64_t> out;
    if (!s.is_array()) throw MessageError("field 'sizes' has the wrong type");
    for (const json& v : s) {
      if (!v.is_number_unsigned()) throw MessageError("field 'sizes' has the wrong type");
      out.push_back(v.get<std::uint64_t>());
    }
    return out;
  };
  switch (op) {
    case CheckerOp::Setup:
      m.sizes = sizes();
      m.kept = f.flag("kept");
      break;
    case CheckerOp::Check:
      m.verified = f.flag("verified");
      break;
    case CheckerOp::TimeSetup:
      m.sizes = sizes();
      if (const json& b = f.at("baselines"); !b.is_null()) {
        if (!b.is_object()) throw MessageError("field 'baselines' has the wrong type");
        m.baselines = b.get<Baselines>();
      }
      m.flush_bytes = f.count("flush_bytes");
      m.fresh_input = f.flag("fresh_input");
      break;
    case CheckerOp::Verify:
      if (const json& at = f.at("outside"); !at.is_null()) {
        if (!at.is_number_unsigned()) throw MessageError("field 'outside' has the wrong type");
        m.outside = at.get<std::uint64_t>();
      }
      break;
    case CheckerOp::ReferenceCall:
      m.ms = f.number("ms");
      break;
    case CheckerOp::Collect:
    case CheckerOp::Release:
    case CheckerOp::Prime:
    case CheckerOp::TimeEnd:
      break;
  }
  return m;
}

}  // namespace scangrade::grader
