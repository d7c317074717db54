//===- CudaModule.cpp - load the cuda module on first use -----------------===//
//
// libsluice_runtime.so links only libc, libdl and pthread so that it embeds
// anywhere, CI machines without CUDA included. The cuda target's run state
// lives in libsluice_runtime_cuda.so (linked with the CUDA runtime), which
// is dlopened here the first time a cuda bundle gets a context: from the
// folder of libsluice_runtime.so first (a build tree or an install keep the
// two side by side), then from the default library search path.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Bundle.h"
#include "runtime/core/Paths.h"
#include "runtime/core/RunContext.h"

#include <dlfcn.h>
#include <mutex>
#include <sys/stat.h>

namespace sluice::runtime {

namespace {

/// The folder of the library this code is in ("" if unknown).
std::string ownFolder() {
  Dl_info info;
  if (!::dladdr(reinterpret_cast<void *>(&ownFolder), &info) ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

struct CudaModule {
  CudaContextFactory factory = nullptr;
  std::string error; ///< why the module cannot be used
};

/// Opens the module once per process. RTLD_NODELETE: the CUDA runtime it
/// links registers exit handlers and keeps driver threads; it must never be
/// unmapped.
const CudaModule &cudaModule() {
  static CudaModule module;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string reasons;
    void *handle = nullptr;
    std::string folder = ownFolder();
    struct stat info;
    std::string besideUs = joinPath(folder, kCudaModuleFile);
    if (!folder.empty() && ::stat(besideUs.c_str(), &info) == 0) {
      handle = ::dlopen(besideUs.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (!handle) {
        const char *why = ::dlerror();
        reasons = why ? why : besideUs + ": cannot load";
      }
    }
    if (!handle && reasons.empty()) {
      handle = ::dlopen(kCudaModuleFile, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (!handle) {
        const char *why = ::dlerror();
        reasons = why ? why : std::string(kCudaModuleFile) + ": not found";
      }
    }
    if (!handle) {
      module.error = "this runtime has no CUDA support (" + reasons + ")";
      return;
    }
    module.factory = reinterpret_cast<CudaContextFactory>(
        ::dlsym(handle, kCudaModuleFactory));
    if (!module.factory)
      module.error = std::string(kCudaModuleFile) + " does not export " +
                     kCudaModuleFactory + " (a module from another build?)";
  });
  return module;
}

} // namespace

RunContext *createCudaContext(const Bundle &bundle, int32_t device,
                              std::string &error) {
  const CudaModule &module = cudaModule();
  if (!module.factory) {
    error = "bundle '" + bundle.dir() + "' targets cuda: " + module.error;
    return nullptr;
  }
  RunContext *context = nullptr;
  std::string why;
  if (module.factory(kCudaModuleInterface, &bundle, device, &context, &why) !=
          0 ||
      !context) {
    error = why.empty() ? "bundle '" + bundle.dir() +
                              "' targets cuda: the cuda module could not "
                              "create a context"
                        : why;
    return nullptr;
  }
  return context;
}

} // namespace sluice::runtime
