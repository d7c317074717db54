//===- AutoPlan.h - choose tp/sp/pp for a model and a cluster ---*- C++ -*-===//
//
// The automatic parallel plan (`sluice-compile --devices=N --auto`): from the
// recognized, compressed graph, enumerate the grids that fit N devices,
// predict each one's memory per rank and time with the one cost model
// (CostModel.h), and choose the fastest that fits the device memory (or the
// best throughput per device). The tensor-parallel candidates are not
// re-derived: each is the real rank program that sluice-plan-tensor-parallel
// and sluice-partition make of a clone of the module, so a candidate's
// weights per rank, its collectives and its per-rank op costs are those the
// bundle would have. A pipeline cut is balancedCut over those ops' times.
// docs/parallel.md "Automatic plan" gives the formulas and the cluster file.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_PARALLEL_AUTOPLAN_H
#define SLUICE_PASSES_PARALLEL_AUTOPLAN_H

#include "passes/parallel/CostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::parallel {

/// Reads a cluster file (JSON, docs/parallel.md "The cluster file") into
/// `cluster`. Every field is required; on a missing or bad one returns false
/// with `error` naming the field and the file.
bool readClusterFile(const std::string &path, ClusterModel &cluster, std::string &error);

/// Parses a byte count with an optional suffix: 80GB (1e9), 80GiB (2^30),
/// 512MB, 4KiB, or plain bytes. False on anything else or on zero.
bool parseByteSize(llvm::StringRef text, int64_t &bytes);

/// What the plan is asked for.
struct PlanRequest {
  int64_t devices = 1;
  /// Bytes per device a rank may use; 0: the cluster's device memory.
  int64_t deviceMemory = 0;
  /// "latency" (the fastest run) or "throughput" (batch / time x replicas,
  /// the devices a plan leaves idle running replicas of it).
  std::string objective = "latency";
  ClusterModel cluster;
  /// Whether this build can compile plans with pp > 1 (the pipeline part)
  /// and ep > 1 (expert parallelism): the others are predicted and listed
  /// but not chosen.
  bool pipelineCompiles = false;
  bool expertsCompile = false;
};

/// One candidate grid and its prediction (times in seconds, per run).
struct PlanCandidate {
  int64_t tp = 1, pp = 1, microBatches = 1, ep = 1;
  bool sp = false;
  int64_t worldSize = 1;
  double weightsBytesPerRank = 0;    ///< the largest rank's weights
  double activationBytesPerRank = 0; ///< the largest rank's live activations
  double computeSeconds = 0;         ///< M x the slowest stage's ops
  double commSeconds = 0;            ///< M x (tp collectives + pp send)
  double bubbleSeconds = 0;          ///< (P-1) x the slowest stage
  double predictedSeconds = 0;       ///< compute + comm + bubble
  double throughput = 0;             ///< samples per second over all devices
  bool valid = true;                 ///< the split exists (sizes divide)
  bool fits = false;                 ///< weights + activations <= memory
  bool compiles = true;              ///< this build can compile it
  std::string why;                   ///< why not valid / not fitting / chosen
  /// What the tp plan left replicated and why (its remarks, deduplicated).
  std::vector<std::string> remarks;
  /// "tp=2 sp pp=2 M=4" (only what differs from one device).
  std::string describe() const;
};

struct PlanResult {
  std::vector<PlanCandidate> candidates;
  int chosen = -1; ///< index into candidates; -1 with `error` set
  std::string reason;
  std::string error;
  double deviceMemory = 0;
  int64_t batch = 1, layers = 0;
  /// Planning without weights: the initializers whose external data was
  /// absent (imported as shapes only; the driver fills these in).
  int64_t absentWeights = 0;
  double absentBytes = 0;
};

/// Plans `module` (after the compress phase, before parallelize; static
/// shapes) for `request`. The module is not changed.
PlanResult planParallel(mlir::ModuleOp module, const PlanRequest &request);

/// The plan as the table `--emit=plan` prints.
void printPlan(const PlanResult &plan, const PlanRequest &request, llvm::raw_ostream &out);

/// The plan as `--report`'s `plan` key (docs/parallel.md): the request,
/// the cluster, every candidate, the chosen one and why.
void writePlanJson(llvm::json::OStream &json, const PlanResult &plan, const PlanRequest &request);

} // namespace sluice::parallel

#endif // SLUICE_PASSES_PARALLEL_AUTOPLAN_H
