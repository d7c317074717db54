//===- Installed.h - an installed compiler's own files ----------*- C++ -*-===//
//
// The bundle writer (codegen/bundle) compiles generated code against the
// headers of codegen/include and include/, which it finds through
// $SLUICE_INCLUDE_DIRS or, by default, in the source tree the compiler was
// built from. An installed sluice-compile (cmake --install) must not need
// that tree: it finds the headers installed beside it instead.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_INSTALLED_H
#define SLUICE_TOOLS_DRIVER_INSTALLED_H

namespace sluice {

/// When this program runs from an installed tree (PREFIX/bin, with the
/// headers generated code includes in PREFIX/share/sluice/include) and
/// SLUICE_INCLUDE_DIRS is not set, sets it to that folder, so that the
/// bundle writer and the compile cache's key both use the installed
/// headers. In the build tree (build/bin has no ../share/sluice) it changes
/// nothing.
void useInstalledHeaders();

} // namespace sluice

#endif // SLUICE_TOOLS_DRIVER_INSTALLED_H
