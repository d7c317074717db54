//===- CommModule.cpp - load the communication libraries on first use -----===//
//
// libsluice_runtime.so links no MPI and no NCCL: libsluice_comm.so (MPI) is
// dlopened when a program starts a multi-rank job (sluice_comm_init), and
// libsluice_comm_cuda.so (NCCL, CUDA) when a cuda context of such a job is
// created. Both from the folder of libsluice_runtime.so first
// (runtime/core/Module.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Comm.h"
#include "runtime/core/Module.h"

#include <mutex>

namespace sluice::runtime {

namespace {

template <typename Factory> struct Library {
  Factory factory = nullptr;
  std::string error; ///< why it cannot be used
};

} // namespace

std::unique_ptr<ProcessGroup> createProcessGroup(const void *mpiComm,
                                                 std::string &error) {
  static Library<CommGroupFactory> library;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    // RTLD_GLOBAL: Open MPI's components (plugins it dlopens itself) resolve
    // libmpi's symbols through the global scope.
    library.factory = reinterpret_cast<CommGroupFactory>(openModuleSymbol(
        kCommLibraryFile, kCommGroupFactory, /*global=*/true, why));
    if (!library.factory)
      library.error = "this runtime cannot run multi-rank bundles: " +
                      std::string(kCommLibraryFile) +
                      " (MPI) cannot be loaded (" + why + ")";
  });
  if (!library.factory) {
    error = library.error;
    return nullptr;
  }
  ProcessGroup *group = nullptr;
  std::string why;
  if (library.factory(kCommInterface, mpiComm, &group, &why) != 0 || !group) {
    error = why.empty() ? "the communication library could not start" : why;
    return nullptr;
  }
  return std::unique_ptr<ProcessGroup>(group);
}

CudaCommFactory cudaCommFactory(std::string &error) {
  static Library<CudaCommFactory> library;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    library.factory = reinterpret_cast<CudaCommFactory>(openModuleSymbol(
        kCudaCommLibraryFile, kCudaCommFactory, /*global=*/false, why));
    if (!library.factory)
      library.error = "this runtime cannot run multi-rank cuda bundles: " +
                      std::string(kCudaCommLibraryFile) +
                      " (NCCL) cannot be loaded (" + why + ")";
  });
  if (!library.factory)
    error = library.error;
  return library.factory;
}

} // namespace sluice::runtime
