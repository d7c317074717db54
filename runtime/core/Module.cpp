//===- Module.cpp - dlopen a library of the runtime -----------------------===//

#include "runtime/core/Module.h"
#include "runtime/core/Paths.h"

#include <dlfcn.h>
#include <sys/stat.h>

namespace sluice::runtime {

namespace {

/// The folder of the library this code is in ("" if unknown).
std::string ownFolder() {
  Dl_info info;
  if (!::dladdr(reinterpret_cast<void *>(&ownFolder), &info) || !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string loaderError(const std::string &fallback) {
  const char *why = ::dlerror();
  return why ? why : fallback;
}

} // namespace

void *openModuleSymbol(const char *file, const char *symbol, bool global,
                       std::string &error) {
  int flags = RTLD_NOW | RTLD_NODELETE | (global ? RTLD_GLOBAL : RTLD_LOCAL);
  void *handle = nullptr;
  std::string folder = ownFolder();
  std::string besideUs = joinPath(folder, file);
  struct stat info;
  if (!folder.empty() && ::stat(besideUs.c_str(), &info) == 0) {
    handle = ::dlopen(besideUs.c_str(), flags);
    if (!handle) {
      error = loaderError(besideUs + ": cannot load");
      return nullptr;
    }
  } else {
    handle = ::dlopen(file, flags);
    if (!handle) {
      error = loaderError(std::string(file) + ": not found");
      return nullptr;
    }
  }
  void *address = ::dlsym(handle, symbol);
  if (!address)
    error = std::string(file) + " does not export " + symbol +
            " (a library from another build?)";
  return address;
}

} // namespace sluice::runtime
