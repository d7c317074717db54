//===- Pipeline.h - compiler phases, options and driver ----------*- C++ -*-===//
//
// The named phases (docs/architecture.md, "The flow"), each a pipeline
// function over a module, and the driver that runs a model through them up
// to a stop phase. Each phase is also registered with sluice-opt
// (`--sluice-simplify-pipeline`, ...).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_PIPELINE_H
#define SLUICE_TOOLS_DRIVER_PIPELINE_H

#include "passes/parallel/AutoPlan.h"
#include "tools/driver/Choices.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"

#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

enum class Phase { Import, Simplify, Recognize, Compress, Parallelize, Fuse, Plan, Emit };

/// Phase names as the CLI spells them ("import", "simplify", ...).
const char *phaseName(Phase phase);
std::optional<Phase> parsePhase(llvm::StringRef name);
/// The last phase this build implements.
constexpr Phase kLastImplementedPhase = Phase::Emit;

struct CompilerOptions {
  /// Code generation target.
  Target target = Target::Cpu;
  /// Input shapes (`--shape=NAME=2x128`) bound at import.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// The inputs whose shapes `--shapes` lists (one per shape variant; the
  /// driver compiles each variant with its shapes in `inputShapes`): named
  /// so in the import's messages.
  std::set<std::string> variedInputs;
  /// Element shapes of sequence inputs (`--shape=NAME=3x4,2x4`,
  /// `NAME=empty`), bound in the simplify phase: sluice-specialize-shapes
  /// replaces each such input by its element tensors NAME.0, NAME.1 ...
  /// A one-shape `--shape` names a tensor or a one-element sequence; the
  /// import tells which, and compileModel moves the sequence ones here.
  std::map<std::string, std::vector<std::vector<int64_t>>> sequenceShapes;
  /// Optional inputs compiled absent (`--shape=NAME=none`); an optional
  /// given a shape is compiled present (its value's shape, moved into
  /// `sequenceShapes` like a sequence's, since the simplify phase binds it).
  std::set<std::string> absentInputs;
  /// Inputs frozen to the values of tensor files (`--bind=NAME=FILE`): they
  /// become constants and leave the bundle's inputs. For shape tensors (a
  /// Reshape target, Slice bounds, TopK's k) that a static bundle needs at
  /// build time, as TensorRT needs shape-tensor values in its profiles.
  std::map<std::string, std::string> boundInputs;
  /// When set, the passes' remarks (why a fusion was refused ...) are
  /// appended here as "where: message" lines (otherwise they are dropped).
  std::vector<std::string> *remarks = nullptr;
  /// When set, the passes' warnings (a request the accuracy guard mostly
  /// refused ...) are collected here too; each is also printed on stderr
  /// as it comes, `--quiet` or not.
  std::vector<std::string> *warnings = nullptr;
  /// Which kernel groups the fuse phase grows (`--fusion=`): none (one op
  /// per kernel), elementwise (chains of elementwise ops, F1 without
  /// views) or all (every form: GEMM epilogues, row ops, attention, views,
  /// and horizontal GEMMs), the default.
  Fusion fusion = Fusion::All;
  /// Whether the recognize phase forms composites (`--no-recognize`: off).
  bool recognize = true;
  /// `--precision`: fp32 (the model's types), fp16 or bf16 (the compress
  /// phase converts the graph).
  Precision precision = Precision::Fp32;
  /// `--tp=N`: ranks of the tensor-parallel grid (1: one device).
  int64_t tp = 1;
  /// `--sp`: Megatron sequence parallelism on top of `tp`.
  bool sp = false;
  /// `--pp=N`: pipeline stages (world size tp x pp; docs/parallel.md).
  int64_t pp = 1;
  /// `--micro-batches=M`: dim 0 of every input and output split M ways;
  /// the program is compiled at the micro-batch's shapes and a run streams
  /// the M micro-batches through the stages.
  int64_t microBatches = 1;
  /// `--ep=N`: ranks the experts of every `sluice.moe` are spread over
  /// (pure expert parallelism: world size N; docs/parallel.md).
  int64_t ep = 1;
  /// `--quantize`: none, int8 (calibrated, Form I8), fp8 (Form F8), w8a16
  /// or w4a16 (weight-only, Form W); docs/quantization.md.
  Quantize quantize = Quantize::None;
  /// `--calibration=DIR`: sample sets for int8 ranges and the guard.
  std::string calibration;
  /// `--calibration-method`: minmax (the default, as ONNX Runtime's),
  /// percentile or entropy.
  CalibrationMethod calibrationMethod = CalibrationMethod::MinMax;
  /// `--smooth-quant[=ALPHA]`: SmoothQuant's alpha; negative: off.
  double smoothQuant = -1;
  /// `--accuracy-metric`: how the accuracy guards judge the outputs on the
  /// calibration sets against the uncompressed model: rel-l2,
  /// top1-agreement or auto (top1-agreement for classifiers).
  AccuracyMetric accuracyMetric = AccuracyMetric::Auto;
  /// `--accuracy-budget`: the largest error of any output in the metric;
  /// negative: the metric's default (0.05 rel-l2, 0.01 top1-agreement).
  double accuracyBudget = -1;
  /// Where the calibration table is cached (JSON); empty: not cached.
  std::string quantizationCache;
  /// `--prune=heads=F,ffn=F,channels=F`: fractions of each attention
  /// layer's heads, each MLP's hidden units and each convolution's output
  /// channels to remove (structured pruning, docs/pruning.md); 0: none.
  double pruneHeads = 0, pruneFfn = 0, pruneChannels = 0;
  /// `--sparsity=2:4`: semi-structured sparsity of the GEMM weights.
  Sparsity sparsity = Sparsity::None;
  /// Whether any pruning or sparsity was asked for.
  bool prunes() const {
    return pruneHeads > 0 || pruneFfn > 0 || pruneChannels > 0 || sparsity != Sparsity::None;
  }
  /// Progress lines of long passes (calibration) on stderr.
  bool progress = false;
  /// One stderr line as each phase ends (`sluice-compile: [6/8] fuse 0.31 s`);
  /// sluice-compile sets it when it builds a bundle and is not --quiet.
  bool phaseProgress = false;
  /// `--devices=N`: the devices the automatic plan may use; 0: no plan.
  /// With it the plan runs after the compress phase (docs/parallel.md,
  /// "Automatic plan").
  int64_t devices = 0;
  /// `--auto`: the plan's choice is written into `tp` and `sp` before the
  /// parallelize phase; the rest of the compiler never knows.
  bool autoPlan = false;
  /// `--device-memory=BYTES`: the memory a rank may use; 0: the cluster's.
  int64_t deviceMemory = 0;
  /// `--objective`: what the plan minimizes.
  Objective objective = Objective::Latency;
  /// The cpu kernels' choices, recorded in the IR by the plan phase
  /// (sluice-configure-target, the module's `sluice.cpu_config`; the cuda
  /// target's host steps follow them too): `--cpu-isa` (sluice-compile's
  /// default: the host's), `--cpu-conv` and `--cpu-packed-weights` (their
  /// defaults: SLUICE_CPU_CONV and SLUICE_CPU_PACKED_WEIGHTS).
  CpuIsa cpuIsa = CpuIsa::Generic;
  CpuConv cpuConv = CpuConv::Onednn;
  bool cpuPackedWeights = false;
  /// cuda: cusparseLt.h and cuSPARSELt's library folder for 2:4 GEMMs, as
  /// sluice-compile found them (`--cusparselt-dir`, docs/pruning.md),
  /// recorded in the IR with the cpu choices (`sluice.cuda_config`); empty:
  /// none, 2:4 GEMMs run dense.
  std::string cusparseltHeader, cusparseltLibDir;
  /// `--cluster=FILE.json` as read (the defaults: 8x H100 SXM).
  parallel::ClusterModel cluster;
  /// `--emit=plan`: the plan is all that is asked, so initializers whose
  /// external data files are absent are imported as shapes only.
  bool planOnly = false;
  /// When set, receives the plan (also when no plan fits).
  parallel::PlanResult *planResult = nullptr;
  /// The plan's request as the driver made it from these options.
  parallel::PlanRequest planRequest() const;
};

/// simplify: shape propagation with constant folding of shape subgraphs,
/// then canonicalization and CSE (which also remove dead code).
void buildSimplifyPipeline(mlir::OpPassManager &pm, const CompilerOptions &options);

/// recognize: LayerNorm/RMSNorm, GELU/SiLU and attention chains become
/// composite ops (passes/recognize).
void buildRecognizePipeline(mlir::OpPassManager &pm, const CompilerOptions &options);

/// compress: structured pruning and 2:4 sparsity (sluice-prune,
/// sluice-sparsify), explicit and calibrated quantization, and with a half
/// `precision` the graph in f16/bf16 with fp32 where numerics need it
/// (sluice-convert-precision). Prune first, then quantize.
void buildCompressPipeline(mlir::OpPassManager &pm, const CompilerOptions &options);

/// The precision `module`'s main function was converted to (its
/// `sluice.precision` attribute, set by sluice-convert-precision): "fp16",
/// "bf16", or "fp32" when it has none.
std::string modulePrecision(mlir::ModuleOp module);

/// parallelize: with `tp` > 1, the Megatron-style plan of every weight's
/// split (sluice-plan-tensor-parallel), then one rank's program with its
/// collectives (sluice-partition), then cleanup; with `pp` > 1 then the
/// pipeline stages and their transfers (sluice-pipeline); nothing otherwise.
void buildParallelizePipeline(mlir::OpPassManager &pm, const CompilerOptions &options);

/// The composite op names (`sluice.attention`, ...) that `target` has no
/// kernels for: the fuse phase decomposes them first.
std::vector<std::string> compositesToDecompose(Target target);

/// fuse: the composites the target lacks back to primitive ops
/// (compositesToDecompose), then every compute op into one sluice.kernel
/// group or library call.
void buildFusePipeline(mlir::OpPassManager &pm, const CompilerOptions &options);

/// plan: buffer liveness and arena offsets, then the cpu kernels' choices
/// recorded on the module (sluice-configure-target).
void buildPlanPipeline(mlir::OpPassManager &pm, const CompilerOptions &options);

/// Registers every phase pipeline with the pass registry (for sluice-opt).
void registerPipelines();

/// Timing of one phase, for --report.
struct PhaseTiming {
  std::string name;
  double milliseconds;
};

/// Records that `name` (a phase, or a step inside `phase` such as the
/// automatic plan) took `milliseconds`: appends it to `timings` (when given)
/// and, with `options.phaseProgress`, prints its progress line on stderr.
void notePhase(const CompilerOptions &options, std::vector<PhaseTiming> *timings,
               Phase phase, const std::string &name, double milliseconds);

/// Imports `modelPath` and runs the phases up to and including `stopAfter`.
/// On failure returns null with one line per problem in `error`.
mlir::OwningOpRef<mlir::ModuleOp>
compileModel(mlir::MLIRContext &context, const std::string &modelPath,
             const CompilerOptions &options, Phase stopAfter,
             std::string &error, std::vector<PhaseTiming> *timings = nullptr);

/// Runs the phases after `after` up to and including `stopAfter` on an
/// imported module (used when input shapes are bound after import).
mlir::LogicalResult runPhases(mlir::ModuleOp module, const CompilerOptions &options,
                              Phase after, Phase stopAfter, std::string &error,
                              std::vector<PhaseTiming> *timings = nullptr);

/// Parses "NAME=2x128" into `shapes`; false (with `error`) on bad syntax.
bool parseShapeOption(llvm::StringRef text,
                      std::map<std::string, std::vector<int64_t>> &shapes,
                      std::string &error);

/// Parses sluice-compile's --shape: "NAME=2x128" into `options.inputShapes`,
/// a sequence input's element shapes "NAME=3x4,2x4" (or "NAME=empty") into
/// `options.sequenceShapes`; false (with `error`) on bad syntax.
bool parseShapeOption(llvm::StringRef text, CompilerOptions &options, std::string &error);

/// The shape variants of `--shapes=x=1x128,x=8x128` (repeatable): each
/// listed input's shapes in order; variant i takes the i-th of each.
using ShapeVariants = std::map<std::string, std::vector<std::vector<int64_t>>>;

/// Parses one `--shapes` value, comma-separated NAME=DIMS items, appending
/// each item's shape to its input's list in `variants`; false (with `error`)
/// on bad syntax.
bool parseShapesOption(llvm::StringRef text, ShapeVariants &variants, std::string &error);

/// Checks the parsed `--shapes` against each other and `options` (every
/// listed input lists as many shapes, at least two; no input also given by
/// --shape; no variant listed twice) and returns the variants' shape maps,
/// each `options.inputShapes` plus that variant's shapes; false with
/// `error` otherwise.
bool shapeVariants(const ShapeVariants &variants, const CompilerOptions &options,
                   std::vector<std::map<std::string, std::vector<int64_t>>> &result,
                   std::string &error);

/// "x: 1x128 | 8x128 | 32x128", one line per input of `variants`.
std::string describeShapeVariants(const ShapeVariants &variants);

/// The sluice-specialize-shapes spelling of one sequence input's element
/// shapes: "NAME=3x4,2x4", "NAME=scalar", "NAME=empty".
std::string sequenceShapeSpec(const std::string &name,
                              const std::vector<std::vector<int64_t>> &shapes);

} // namespace sluice

#endif // SLUICE_TOOLS_DRIVER_PIPELINE_H
