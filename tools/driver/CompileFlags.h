//===- CompileFlags.h - sluice-compile's options, parsed and checked -*- C++ -*-===//
//
// What one compile is asked to do (CompileRequest), and the one table of
// sluice-compile's flags that fills it. Parsing reads every argument and
// collects every problem; the cross-option checks then run together, so a
// command line with three mistakes gets three error lines at once.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_COMPILEFLAGS_H
#define SLUICE_TOOLS_DRIVER_COMPILEFLAGS_H

#include "tools/driver/Choices.h"
#include "tools/driver/Pipeline.h"

#include <string>
#include <vector>

namespace sluice {

/// One compile: the model, what to write where, and the compiler options.
struct CompileRequest {
  /// The model (.onnx, .onnxtxt or a .mlir of an earlier phase).
  std::string model;
  /// `-o`: the bundle folder, or the listing's file ("" : the default
  /// bundle path, or stdout for listings).
  std::string output;
  Emit emit = Emit::Bundle;
  /// `--stop-after`; unset: emit (plan for --emit=kernels).
  std::optional<Phase> stopAfter;
  /// `--report=FILE.json`; "": none.
  std::string reportPath;
  /// `--gpu-arch`: cuda architectures; empty: the bundle writer's default.
  std::vector<std::string> gpuArchitectures;
  /// `--cluster=FILE.json` as given (read into options.cluster).
  std::string clusterFile;
  /// `--quantization-cache`: "" (beside the bundle), "none" or a file.
  std::string quantizationCache;
  /// `--cache-dir` and `--no-cache`.
  std::string cacheDir;
  bool noCache = false;
  /// `--jobs`: translation units compiled at once; 0: the bundle writer's
  /// default.
  int jobs = 0;
  bool elideWeights = false;
  bool quiet = false;
  /// `--precompile-headers`: build the cpu precompiled header and stop.
  bool precompileHeaders = false;
  bool help = false;
  /// `--shapes`: the shape variants as listed, and (after the checks) each
  /// variant's input shapes.
  ShapeVariants shapeVariants;
  std::vector<std::map<std::string, std::vector<int64_t>>> variantShapes;
  /// The command line's flags as the compile cache keys them
  /// (cache::keyFlags).
  std::vector<std::string> keyFlags;
  /// Which of the options the command line gave (for the cross checks).
  bool tpGiven = false, spGiven = false, calibrationGiven = false, methodGiven = false,
       budgetGiven = false, metricGiven = false;
  /// Which cpu target options the command line gave (the others take their
  /// defaults from the environment and the host in checkCompileRequest).
  bool cpuIsaGiven = false, cpuConvGiven = false, cpuPackedWeightsGiven = false;
  /// `--cusparselt-dir`: a folder with include/cusparseLt.h and lib/, or
  /// "none"; "": found as checkCompileRequest says.
  std::string cusparseltDir;
  CompilerOptions options;

  /// The bundle folder: `-o`, else the model's name with .sluice.
  std::string bundlePath() const;
  /// The phase the compile stops after.
  Phase stopPhase() const;
};

/// Fills `request` from sluice-compile's command line; every bad flag or
/// value adds one line to `errors` (and parsing goes on).
void parseCompileFlags(int argc, char **argv, CompileRequest &request,
                       std::vector<std::string> &errors);

/// The checks across options (what needs what, what does not combine);
/// also reads --cluster, and gives the cpu target options the command line
/// left out their defaults: --cpu-isa the host's, --cpu-conv
/// $SLUICE_CPU_CONV, --cpu-packed-weights $SLUICE_CPU_PACKED_WEIGHTS, and
/// for cuda finds cuSPARSELt (--cusparselt-dir, else $SLUICE_CUSPARSELT_DIR,
/// else the nvidia-cusparselt package of $VIRTUAL_ENV, else of the source
/// tree's .venv): the only place the compiler reads those. Every problem
/// adds one line to `errors`.
void checkCompileRequest(CompileRequest &request, std::vector<std::string> &errors);

} // namespace sluice

#endif // SLUICE_TOOLS_DRIVER_COMPILEFLAGS_H
