//===- sluice_gen/cuda_sparse_load.h - finding cuSPARSELt -*- C++ -*-===//
//
// The host side of cuSPARSELt's loading in cuda bundles (the search order is
// sluice_gen/cuda_sparse.cuh's file header): the candidate files and the
// dlopen of the first that defines every symbol the bundle calls. Plain
// C++ and POSIX (no CUDA), so that its unit tests run without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_SPARSE_LOAD_H
#define SLUICE_GEN_CUDA_SPARSE_LOAD_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string>
#include <vector>

/// The files cuSPARSELt is loaded from, in order (cuda_sparse.cuh):
/// $SLUICE_CUSPARSELT_LIB, the soname through the dynamic loader, then
/// `recordedDir`/libcusparseLt.so.0 when the compile recorded a folder.
static inline std::vector<std::string> sluice_cusparselt_paths(const char *recordedDir) {
  std::vector<std::string> paths;
  if (const char *env = getenv("SLUICE_CUSPARSELT_LIB"); env && *env)
    paths.push_back(env);
  paths.push_back("libcusparseLt.so.0");
  if (recordedDir && *recordedDir)
    paths.push_back(std::string(recordedDir) + "/libcusparseLt.so.0");
  return paths;
}

/// dlopens the first of `paths` that loads and defines every one of
/// `names`, filling fns[i] with names[i]'s address; returns its handle, or
/// null with `why` saying what each try gave (a missing file, a missing
/// symbol). A library lacking a symbol is closed again.
static inline void *sluice_dlopen_first(const std::vector<std::string> &paths,
                                        const char *const *names, int numNames, void **fns,
                                        std::string &why) {
  why.clear();
  for (const std::string &path : paths) {
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *err = dlerror();
      why += (why.empty() ? "" : "; ") + path + ": " + (err ? err : "cannot be loaded");
      continue;
    }
    int i = 0;
    for (; i < numNames; ++i)
      if (!(fns[i] = dlsym(lib, names[i])))
        break;
    if (i == numNames)
      return lib;
    why += (why.empty() ? "" : "; ") + path + ": no symbol " + names[i];
    dlclose(lib);
  }
  return nullptr;
}

#endif // SLUICE_GEN_CUDA_SPARSE_LOAD_H
