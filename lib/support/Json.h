//===- Json.h - llvm::json helpers for the tools' JSON outputs --*- C++ -*-===//
//
// Manifests, reports and traces are written with llvm::json::OStream, which
// keeps members in the order written and escapes every string. These helpers
// add what it lacks: byte strings made valid UTF-8, string arrays, numbers
// with fixed decimals. (Reading JSON is the runtime's business:
// runtime/core/Json.h, which links no LLVM.)
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_SUPPORT_JSON_H
#define SLUICE_LIB_SUPPORT_JSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <string>

namespace sluice {

/// `text` as a JSON string value. llvm::json holds UTF-8 only (it asserts in
/// builds with assertions), while file paths and ONNX names are any bytes:
/// invalid sequences become U+FFFD instead.
inline std::string jsonText(llvm::StringRef text) {
  return llvm::json::isUTF8(text) ? text.str() : llvm::json::fixUTF8(text);
}

/// Writes the member `key` of the current object: `items` as an array of
/// strings.
template <typename Strings>
void writeJsonStrings(llvm::json::OStream &json, llvm::StringRef key, const Strings &items) {
  json.attributeArray(key, [&] {
    for (const auto &item : items)
      json.value(jsonText(item));
  });
}

/// Writes `number` with three decimals (milliseconds, microseconds), null if
/// it is not finite. llvm::json prints doubles with 17 significant digits,
/// and a whole number without a point, which Python then reads as an int.
inline void writeJsonFixed3(llvm::json::OStream &json, double number) {
  if (!std::isfinite(number))
    return json.value(nullptr);
  json.rawValue([&](llvm::raw_ostream &os) { os << llvm::format("%.3f", number); });
}

} // namespace sluice

#endif // SLUICE_LIB_SUPPORT_JSON_H
