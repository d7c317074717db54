//===- Report.h - the compile report (--report) ------------------*- C++ -*-===//
//
// Everything `sluice-compile --report=FILE.json` says about one compile, as
// one struct that the compile session fills and writes once (also for the
// compile cache, which stores it beside the bundle and hands it back on a
// hit with that compile's paths).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_REPORT_H
#define SLUICE_TOOLS_DRIVER_REPORT_H

#include "codegen/common/ModelFacts.h"
#include "passes/parallel/AutoPlan.h"
#include "tools/driver/Pipeline.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice {

struct CompileReport {
  std::string model, target, precision;
  /// The automatic plan (--devices), written with its request.
  const parallel::PlanResult *plan = nullptr;
  parallel::PlanRequest planRequest;

  /// The emitted program's figures (absent when the compile stopped
  /// before the emit phase).
  struct Program {
    int64_t kernels = 0, libraryCalls = 0;
    /// Its facts: arena, weights per rank, grid, experts, collectives.
    const codegen::ModelFacts *facts = nullptr;
    const std::vector<codegen::StepInfo> *steps = nullptr;
    /// The target's own keys, in order (cpu_gemm, host_steps ...): string
    /// or integer values.
    std::vector<std::pair<std::string, std::string>> targetStrings;
    std::vector<std::pair<std::string, int64_t>> targetCounts;
  };
  std::optional<Program> program;

  /// A bundle of shape variants (--shapes): each variant's program.
  struct Variant {
    std::string entry;
    std::vector<codegen::TensorInfo> inputs;
    int64_t kernels = 0, libraryCalls = 0, arenaBytes = 0;
  };
  struct Variants {
    std::vector<Variant> variants;
    int64_t weightsBytes = 0, weightsBytesUnshared = 0;
  };
  std::optional<Variants> variants;

  /// What the compress phase recorded on the function (quantization,
  /// pruning, sparsity, pipeline), by report key.
  std::vector<std::pair<std::string, mlir::DictionaryAttr>> recorded;
  std::vector<std::string> remarks, warnings;
  /// The bundle written ("": none).
  std::string bundle;
  std::vector<PhaseTiming> phases;
  /// The cache entry this compile stored (a miss) or was served from.
  struct CacheEntry {
    bool hit = false;
    std::string key, dir;
    int64_t microseconds = 0;
  };
  std::optional<CacheEntry> cache;

  /// The report as JSON (two-space indent, a final newline).
  std::string json() const;
};

/// The report of the compile that made a cache entry (`cachedText`), with
/// this compile's model, bundle and cache hit.
std::string reportOfCacheHit(const std::string &cachedText, const std::string &model,
                             const std::string &bundle, const CompileReport::CacheEntry &hit);

} // namespace sluice

#endif // SLUICE_TOOLS_DRIVER_REPORT_H
