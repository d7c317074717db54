//===- Precompiled.h - The generated code's precompiled header -*- C++ -*-===//
//
// Generated cpu translation units spend most of a small model's build
// parsing the same headers (sluice_gen/cpu.h and <immintrin.h> at
// -march=native: about 2 of 3 seconds). The bundle writer compiles them
// once per compiler, flags and header contents into a folder of
// precompiled headers and passes `-include` to every build that matches.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_CODEGEN_BUNDLE_PRECOMPILED_H
#define SLUICE_CODEGEN_BUNDLE_PRECOMPILED_H

#include <string>
#include <vector>

namespace sluice::codegen {

/// The folder of precompiled headers: $SLUICE_PCH_DIR ("none", "off" or
/// "0": none), else $XDG_CACHE_HOME/sluice/pch or ~/.cache/sluice/pch.
/// Empty when turned off or there is no such folder to name.
std::string precompiledHeaderRoot();

/// The header to pass with `-include` to a compile by `compile` (the
/// compiler, then its flags and -I folders; no inputs, outputs, -c or
/// -shared) of generated cpu code, building it first when the folder does
/// not hold one for this compiler, these flags and these headers (a second
/// compile finds it; concurrent ones each build and rename theirs into
/// place). Empty when there is no folder or the build failed: the caller
/// compiles without it, and `note` (when `progress`) said why on stderr.
std::string precompiledHeader(const std::vector<std::string> &compile, bool progress);

/// The first line of the compiler log `log` that mentions an error, else
/// its first line ("" when empty or unreadable): what a failed build of
/// generated code (a bundle's or a precompiled header's) reports.
std::string firstCompilerError(const std::string &log);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_BUNDLE_PRECOMPILED_H
