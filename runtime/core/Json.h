//===- Json.h - a small strict JSON reader for bundle manifests -*- C++ -*-===//
//
// The runtime links nothing beyond libc, so it reads manifest.json with this
// parser: RFC 8259 JSON (objects, arrays, strings with every escape, numbers,
// true/false/null), strict about what it accepts (no trailing commas, no
// comments, no duplicate keys), and every error says at which byte offset.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_JSON_H
#define SLUICE_RUNTIME_CORE_JSON_H

#include <string>
#include <utility>
#include <vector>

namespace sluice::runtime {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  /// Members in document order.
  std::vector<std::pair<std::string, JsonValue>> object;

  bool isNull() const { return kind == Kind::Null; }
  bool isBool() const { return kind == Kind::Bool; }
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isArray() const { return kind == Kind::Array; }
  bool isObject() const { return kind == Kind::Object; }
  /// The member named `key` of an object, or null if absent (or not an
  /// object).
  const JsonValue *get(const std::string &key) const;
};

/// "object", "array", "string", ... for messages.
const char *jsonKindName(JsonValue::Kind kind);

/// Parses `text` as one JSON value. On failure returns false and sets
/// `error` to "at byte N: what was wrong".
bool parseJson(const std::string &text, JsonValue &value, std::string &error);

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_JSON_H
