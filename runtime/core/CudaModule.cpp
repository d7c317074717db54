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
#include "runtime/core/Module.h"
#include "runtime/core/RunContext.h"

#include <mutex>

namespace sluice::runtime {

namespace {

struct CudaModule {
  CudaContextFactory factory = nullptr;
  std::string error; ///< why the module cannot be used
};

/// Opens the module once per process (kept loaded: the CUDA runtime it
/// links must never be unmapped).
const CudaModule &cudaModule() {
  static CudaModule module;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string reasons;
    module.factory = reinterpret_cast<CudaContextFactory>(openModuleSymbol(
        kCudaModuleFile, kCudaModuleFactory, /*global=*/false, reasons));
    if (!module.factory)
      module.error = "this runtime has no CUDA support (" + reasons + ")";
  });
  return module;
}

} // namespace

RunContext *createCudaContext(const Bundle &bundle, int32_t device,
                              const CudaCommRequest *comm, std::string &error) {
  const CudaModule &module = cudaModule();
  if (!module.factory) {
    error = "bundle '" + bundle.dir() + "' targets cuda: " + module.error;
    return nullptr;
  }
  RunContext *context = nullptr;
  std::string why;
  if (module.factory(kCudaModuleInterface, &bundle, device, comm, &context,
                     &why) !=
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
