//===- lib/support/CacheFolder.h - the user's cache folders -----*- C++ -*-===//
//
// Where Sluice keeps what it builds once per user: the compile cache
// (tools/driver/Cache.cpp, SLUICE_CACHE_DIR) and the precompiled headers of
// generated code (codegen/bundle/Precompiled.cpp, SLUICE_PCH_DIR). One rule
// for both: the variable names the folder, "none", "off" or "0" turn it
// off, and otherwise it is <$XDG_CACHE_HOME or ~/.cache>/sluice[/<sub>].
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_SUPPORT_CACHEFOLDER_H
#define SLUICE_LIB_SUPPORT_CACHEFOLDER_H

#include <cstdlib>
#include <string>

namespace sluice {

/// The folder that the environment variable `variable` names, or the
/// user's cache folder for Sluice followed by `/sub` (when `sub` is not
/// empty); "" when the variable turns it off or there is no home to name.
inline std::string userCacheFolder(const char *variable, const std::string &sub) {
  auto env = [](const char *name) -> std::string {
    const char *value = std::getenv(name);
    return value ? value : "";
  };
  std::string dir = env(variable);
  if (dir == "none" || dir == "off" || dir == "0")
    return "";
  if (!dir.empty())
    return dir;
  std::string tail = sub.empty() ? "/sluice" : "/sluice/" + sub;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
    return xdg + tail;
  if (std::string home = env("HOME"); !home.empty())
    return home + "/.cache" + tail;
  return "";
}

} // namespace sluice

#endif // SLUICE_LIB_SUPPORT_CACHEFOLDER_H
