//===- fuzz_manifest.cpp - libFuzzer target: the bundle manifest parser ---===//
//
// A manifest is the first thing the runtime reads from a bundle; any text
// must be accepted with consistent sizes or refused with one message.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Manifest.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  sluice::runtime::Manifest manifest;
  std::string error;
  if (!sluice::runtime::parseManifest(text, "/nonexistent/fuzz.sluice", manifest, error)) {
    if (error.empty())
      __builtin_trap(); // a refusal must say why
    return 0;
  }
  // An accepted manifest's sizes must be what its shapes say, so that the
  // runtime's buffers are as large as the model writes.
  for (const auto *list : {&manifest.inputs, &manifest.outputs})
    for (const auto &spec : *list) {
      unsigned __int128 elements = 1;
      for (int64_t d : spec.maxShape)
        elements *= (unsigned __int128)d;
      if (elements * spec.elementBytes != spec.bytes)
        __builtin_trap();
    }
  return 0;
}
