//===- codegen/bundle/SanitizerFlags.h - a sanitizer build's flags -*- C++ -*-===//
//
// The sanitizer flags of a SLUICE_SANITIZE build of Sluice, which the
// generated code's compile line repeats so that a bundle's code is checked
// where the tests run it. Only SanitizerFlags.cpp sees the build's setting:
// the rest of the codegen library compiles the same in sanitizer and
// ordinary builds (so a sanitizer build that leaves it uninstrumented,
// SLUICE_SANITIZE_SKIP, reuses an ordinary build's objects from ccache).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_BUNDLE_SANITIZERFLAGS_H
#define SLUICE_CODEGEN_BUNDLE_SANITIZERFLAGS_H

#include <string>
#include <vector>

namespace sluice::codegen {

/// `-fsanitize=<list>` and its companions in a sanitizer build; empty in
/// an ordinary one.
std::vector<std::string> sanitizerCxxFlags();

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_BUNDLE_SANITIZERFLAGS_H
