//===- Bundle.h - write a bundle folder and build its library -----*- C++ -*-===//
//
// The last step of the emit phase: the bundle folder docs/runtime.md describes
// (manifest.json, the compiled library, weights.bin 64-byte aligned), built
// by invoking the system C++ compiler on the emitted source.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_BUNDLE_BUNDLE_H
#define SLUICE_CODEGEN_BUNDLE_BUNDLE_H

#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cuda/CudaEmitter.h"

#include "llvm/Support/JSON.h"

#include <string>

namespace sluice::codegen {

struct BundleOptions {
  std::string directory;   ///< the bundle folder (created)
  std::string modelName;   ///< for the manifest
  bool progress = true;    ///< progress lines on stderr for long steps
  /// Compiler flags after the defaults (-O2 -march=native -fopenmp ...).
  std::vector<std::string> extraFlags;
  /// cuda: the GPU architectures to build (sm_XY machine code, compute_XY
  /// PTX); empty: cudaArchitectures().
  std::vector<std::string> cudaArchitectures;
  /// The compress phase's --precision ("fp32", "fp16", "bf16"), recorded in
  /// the manifest.
  std::string precision = "fp32";
  /// cpu: the translation units the library is built from, compiled at once
  /// (`--jobs=N`); 0: the machine's cores, at most 8. Never more than the
  /// kernels plus one.
  int jobs = 0;
};

/// Writes the bundle and compiles model.so. On failure returns false with a
/// one-line `error` naming the file or the compiler's first error.
bool writeCpuBundle(const CpuModel &model, const BundleOptions &options,
                    std::string &error, double *compileSeconds = nullptr);

/// Builds the precompiled header of generated cpu code (Precompiled.h) for
/// the compiler and flags a cpu bundle of `options` is built with, ahead of
/// a first compile; `path` is the header. False (with `error`) when there
/// is no folder for it or it cannot be built.
bool precompileCpuHeaders(const BundleOptions &options, std::string &path, std::string &error);

/// The run function of shape variant `variant` (sluice-compile --shapes):
/// sluice_v<variant>_model_run, the manifest's "variants[i].entry".
std::string variantEntry(size_t variant);

/// Writes a bundle of shape variants (cpu): one weights.bin (`weights`,
/// which every variant's program reads), one library built from one
/// translation unit per variant (model.v<i>.cpp), each exporting its entry
/// (CpuModel::entry), and the manifest's "variants". Fails as
/// writeCpuBundle does.
bool writeCpuVariantsBundle(const std::vector<const CpuModel *> &variants,
                            const SharedWeights &weights, const BundleOptions &options,
                            std::string &error, double *compileSeconds = nullptr);

/// Writes a cuda bundle: model.cu (and host.cpp for host steps) built by
/// nvcc into model.so for the architectures of `options`.
bool writeCudaBundle(const CudaModel &model, const BundleOptions &options,
                     std::string &error, double *compileSeconds = nullptr);

/// The weights file of `rank`: weights.bin for a single-rank bundle,
/// weights.rank<R>.bin otherwise.
std::string weightsFileName(const ModelFacts &model, size_t rank);

/// The manifest's and the report's "parallel" object (tp, sp, pp,
/// micro_batches, ep, grid, axes, layers); the report writes it for every
/// bundle, the manifest for a multi-rank one.
void writeParallel(llvm::json::OStream &json, const ModelFacts &model);
/// The "moe" list of the manifest and the compile report: per sluice.moe,
/// {"node", "experts", "top_k", "gating", "experts_per_rank"}, in the order
/// of the expert-load counters. Written only when the model has one.
void writeMoe(llvm::json::OStream &json, const ModelFacts &model);

/// nvcc: $SLUICE_NVCC, else $CUDA_HOME/bin/nvcc, else nvcc on the PATH, else
/// /usr/local/cuda/bin/nvcc.
std::string nvccCompiler();

/// The C++ compiler command used: $SLUICE_CXX, else $CXX, else "c++".
std::string cxxCompiler();

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_BUNDLE_BUNDLE_H
