//===- Installed.cpp - an installed compiler's own files ------------------===//
//
// PREFIX/bin/sluice-compile finds PREFIX/share/sluice/include through
// /proc/self/exe, so that an installed tree can move (a relocatable prefix).
//
//===----------------------------------------------------------------------===//

#include "tools/driver/Installed.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

namespace sluice {

void useInstalledHeaders() {
  if (const char *dirs = std::getenv("SLUICE_INCLUDE_DIRS"); dirs && *dirs)
    return;
  llvm::SmallString<256> exe;
  if (llvm::sys::fs::real_path("/proc/self/exe", exe))
    return;
  llvm::SmallString<256> prefix(exe);
  llvm::sys::path::remove_filename(prefix); // PREFIX/bin
  llvm::sys::path::remove_filename(prefix); // PREFIX
  llvm::SmallString<256> include(prefix);
  llvm::sys::path::append(include, "share", "sluice", "include");
  llvm::SmallString<256> marker(include);
  llvm::sys::path::append(marker, "sluice_gen", "cpu.h");
  if (llvm::sys::fs::exists(marker))
    ::setenv("SLUICE_INCLUDE_DIRS", include.c_str(), /*overwrite=*/0);
}

} // namespace sluice
