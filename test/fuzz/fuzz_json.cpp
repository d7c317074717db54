//===- fuzz_json.cpp - libFuzzer target: the runtime's JSON reader --------===//
//
// Any bytes must parse or fail with a message: no crash, no hang, no
// quadratic blow-up, and a parsed value's accessors must be safe to walk.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Json.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {
/// Touches every node, as a reader of the manifest would.
size_t walk(const sluice::runtime::JsonValue &value) {
  size_t nodes = 1;
  for (const auto &item : value.array)
    nodes += walk(item);
  for (const auto &[key, item] : value.object)
    nodes += key.size() + walk(item);
  return nodes;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  sluice::runtime::JsonValue value;
  std::string error;
  if (sluice::runtime::parseJson(text, value, error))
    (void)walk(value);
  else if (error.empty())
    __builtin_trap(); // a failure must say why
  return 0;
}
