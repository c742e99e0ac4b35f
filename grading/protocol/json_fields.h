// Reading a message's JSON fields by type, for the codecs (messages.cpp, checker_messages.cpp) only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "messages.h"  // MessageError

namespace scangrade::grader::protocol_detail {

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

}  // namespace scangrade::grader::protocol_detail
