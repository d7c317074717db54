//===- Module.h - dlopen a library of the runtime ---------------*- C++ -*-===//
//
// libsluice_runtime.so links only libc, libdl and pthread; what needs more
// (the cuda module, the communication libraries) is a separate library that
// it dlopens on first use: from its own folder first (a build tree or an
// install keeps them side by side), then from the library search path.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_MODULE_H
#define SLUICE_RUNTIME_CORE_MODULE_H

#include <string>

namespace sluice::runtime {

/// Opens `file` (a bare file name) next to libsluice_runtime.so, else on the
/// search path, and returns its symbol `symbol`; null with `error` saying
/// why (the loader's message, or a missing symbol). RTLD_NODELETE: these
/// libraries link runtimes (CUDA, MPI) that register exit handlers and keep
/// threads; they must never be unmapped. RTLD_GLOBAL when `global`, for a
/// library whose dependencies dlopen plugins that resolve against it (Open
/// MPI's components against libmpi).
void *openModuleSymbol(const char *file, const char *symbol, bool global,
                       std::string &error);

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_MODULE_H
