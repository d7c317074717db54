//===- Json.h - JSON text helpers for the tools' outputs --------*- C++ -*-===//
//
// Manifests, reports and traces are written by hand; this is their one
// string quoting. (Reading JSON is the runtime's business: runtime/core/Json.)
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_SUPPORT_JSON_H
#define SLUICE_LIB_SUPPORT_JSON_H

#include <cstdio>
#include <string>
#include <string_view>

namespace sluice {

/// `text` as a JSON string literal: quotes, backslashes and control
/// characters escaped.
inline std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if ((unsigned char)c < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
        out += escaped;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

/// `["a", "b"]`: a JSON array of strings.
template <typename Strings> inline std::string jsonStringList(const Strings &items) {
  std::string out = "[";
  bool first = true;
  for (const auto &item : items) {
    out += (first ? "" : ", ") + jsonString(item);
    first = false;
  }
  return out + "]";
}

} // namespace sluice

#endif // SLUICE_LIB_SUPPORT_JSON_H
