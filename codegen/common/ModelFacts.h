//===- ModelFacts.h - what every target reads off a planned module -*- C++ -*-===//
//
// The target-neutral part of the emit phase: the bundle's boundary tensors,
// weights and arena (ModelFacts), the manifest's step entries, where each
// value lives while the run function runs (RunBuffers), and small queries on
// values and shapes that both targets' emitters use.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_MODELFACTS_H
#define SLUICE_CODEGEN_COMMON_MODELFACTS_H

#include "codegen/common/CodeWriter.h"
#include "codegen/common/WeightTransform.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace sluice::codegen {

/// The product of dims [begin, end).
int64_t product(llvm::ArrayRef<int64_t> dims, size_t begin = 0,
                size_t end = SIZE_MAX);
/// `axis` normalized against `rank`, or failure with an error on `op`.
mlir::FailureOr<int64_t> axisOf(mlir::Operation *op, int64_t axis, int64_t rank);
/// outer x extent x inner sizes of `shape` around `axis`.
struct AxisSplit {
  int64_t outer = 1, extent = 1, inner = 1;
};
AxisSplit splitAt(llvm::ArrayRef<int64_t> shape, int64_t axis);
/// storageType of a value's element type.
std::string typeOf(mlir::Value value);
/// Static shape of a value's ranked tensor type.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value value);
mlir::Type elementOf(mlir::Value value);

/// One tensor at the bundle boundary.
struct TensorInfo {
  std::string name, dtype; ///< dtype: NumPy's name (float32, bool ...)
  std::vector<int64_t> shape;    ///< -1: a data-dependent dim
  std::vector<int64_t> maxShape; ///< bounds; empty when the shape is static
};

/// The largest shape result `index` of `op` can take when its type has
/// data-dependent (dynamic) dims: NonZero, Compress, Unique and
/// NonMaxSuppression results are bounded by their inputs' sizes. None for
/// other ops.
std::optional<std::vector<int64_t>> upperBoundShape(mlir::Operation *op,
                                                    unsigned index);

/// One step of a run (a kernel or a library call), for the manifest.
struct StepInfo {
  std::string name, kind, op, node;
  /// The arithmetic of the launch (computeOf, Compute.h): "f32", "int8" ...
  std::string compute;
  /// Every op of the group (op names) and the ONNX nodes they came from.
  std::vector<std::string> ops, nodes;
};

/// The ops of a `sluice.kernel` body (full names, constants left out) and
/// the ONNX nodes they came from, in order, without repeats.
void describeKernel(mlir::Operation *kernel, std::vector<std::string> &ops,
                    std::vector<std::string> &nodes);

/// The op a step is named after: the group's anchor (its first op that is
/// not elementwise), else its first compute op, else its first view.
mlir::Operation *stepOp(KernelOp kernel);
/// The manifest entry of a kernel step of `kind` ("kernel", "library" ...).
StepInfo describeStep(KernelOp kernel, llvm::StringRef kind);

/// The collectives of one run of one rank, by op.
struct CollectiveInfo {
  /// "all_reduce", "all_gather", "reduce_scatter", "all_to_all"; pipeline
  /// bundles: "send" and "recv" (activations between stages, bytes = what
  /// the sending or receiving rank moves) and "broadcast" (the outputs from
  /// their stage to every rank, bytes = what the root sends once).
  std::string op;
  int64_t count = 0;
  /// Bytes one rank sends in a ring algorithm: all_reduce 2(W-1)/W x S,
  /// reduce_scatter and all_gather (W-1)/W x S, all_to_all (W-1)/W x S,
  /// S the whole tensor's bytes (docs/parallel.md).
  int64_t bytes = 0;
};

/// One sluice.moe of the bundle, for the manifest's and the report's "moe"
/// list (in walk order of `main`: the order of the expert-load counters,
/// kernel::moeLoadOffset).
struct MoeInfo {
  std::string node;   ///< its ONNX node ("" when it has none)
  std::string gating; ///< "top_k" or "hard"
  int64_t experts = 0, topK = 1;
  /// Experts one rank holds (w1's first dim): experts / ep.
  int64_t expertsPerRank = 0;
};

/// The one weights file of a bundle of shape variants (sluice-compile
/// --shapes): every variant's constants, each distinct content stored once
/// (64-byte aligned), so that variants share the model's weights.
struct SharedWeights {
  std::vector<unsigned char> bytes;
  /// Content hash -> (offset, size) of each stored block.
  std::unordered_multimap<uint64_t, std::pair<size_t, size_t>> stored;
  /// Bytes the constants would take without sharing (what N single-shape
  /// weights files hold together, alignment included).
  int64_t unsharedBytes = 0;
  /// The offset of `block`: where the same bytes already are, else appended.
  int64_t add(llvm::ArrayRef<unsigned char> block);
};

/// What every target's emitter reads off a planned module first.
struct ModelFacts {
  /// When set (a single-rank program of a bundle of shape variants), the
  /// weights go into it instead of `weights`, shared with the other variants.
  SharedWeights *sharedWeights = nullptr;
  mlir::func::FuncOp func;
  /// weights.bin of a single-rank bundle (empty when worldSize > 1).
  std::vector<unsigned char> weights;
  /// A multi-rank bundle's weights, weights.rank<R>.bin for rank R: the
  /// replicated constants in every one, each shard constant's block of
  /// that rank; the offsets are the same in all ranks of a pipeline stage,
  /// whose files hold only that stage's weights (and the unstaged ones, at
  /// the same offset in every file).
  std::vector<std::vector<unsigned char>> rankWeights;
  /// Top-level constants -> their byte offset in weights.bin (64-aligned).
  llvm::DenseMap<mlir::Value, int64_t> weightOffset;
  /// The grid: ranks that run the bundle, tp x pp, or ep for pure expert
  /// parallelism (`main`'s sluice.tp, sluice.pp and sluice.ep, 1 without).
  int64_t worldSize = 1;
  int64_t tp = 1, pp = 1, ep = 1;
  /// Micro-batches of a pipeline run (`main`'s sluice.micro_batches): the
  /// program computes one, dim 0 of `inputs` and `outputs` holds all.
  int64_t microBatches = 1;
  /// Pipeline bundles: the stage whose ranks run each kernel, and that
  /// holds each value (kernel results, staged weights); absent or -1: every
  /// rank (a transfer kernel decides per rank itself).
  llvm::DenseMap<mlir::Operation *, int64_t> kernelStage;
  llvm::DenseMap<mlir::Value, int64_t> valueStage;
  int64_t stageOf(mlir::Value v) const {
    auto it = valueStage.find(v);
    return it == valueStage.end() ? -1 : it->second;
  }
  bool sequenceParallel = false;
  int64_t layers = 0; ///< transformer layers the parallel plan split
  std::vector<CollectiveInfo> collectives;
  /// The largest buffer a collective sends or receives (bytes).
  int64_t collectiveMaxBytes = 0;
  /// Bytes of each rank's weights file.
  std::vector<int64_t> weightsBytesPerRank() const;
  int64_t arenaBytes = 0;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<MoeInfo> moe;
};

/// Fills `facts` from the planned `main` of `module`: the boundary tensors
/// (static shapes or bounded data-dependent outputs), the weights, the
/// arena. Fails with errors on the ops, listing at once every op of a kernel
/// body that is neither elementwise, attention nor `implemented` by the
/// target ("unsupported ops on target <target> (N): ..."). Weights the
/// kernels want in a layout of their own (`transforms`, WeightTransform.h)
/// are stored transformed.
mlir::LogicalResult collectModelFacts(mlir::ModuleOp module, ModelFacts &facts,
                                      llvm::StringRef target,
                                      llvm::function_ref<bool(mlir::Operation *)> implemented,
                                      WeightTransformQuery transforms = nullptr);

/// How a target's run function spells the host side of runtime control
/// flow (`if` and `loop` steps): reading a condition or trip count from a
/// buffer, storing the iteration number and condition a loop body reads,
/// and copying a value between buffers. Each appends statements to `run`
/// that return from the run function on failure.
struct ControlFlowCode {
  /// Declares the C++ local `var` (`bool`/`int64_t`) from the scalar at `ptr`.
  std::function<void(CodeWriter &run, const std::string &var, const std::string &ptr,
                     bool isBool)>
      read;
  /// Stores the host expression `value` (`bool`/`int64_t`) at `ptr`.
  std::function<void(CodeWriter &run, const std::string &ptr, const std::string &value,
                     bool isBool)>
      store;
  /// Copies `bytes` bytes from `src` to `dst`.
  std::function<void(CodeWriter &run, const std::string &dst, const std::string &src,
                     int64_t bytes)>
      copy;
};

/// Where the values of a planned `main` live while it runs, as pointer
/// expressions of the run function (`args->inputs[i]`, the weights, the
/// arena, `args->outputs[i]`), and the step calls that hand them to the
/// kernels. Both targets write their run function through it.
class RunBuffers {
public:
  /// The graph inputs and the weights of `facts`.
  explicit RunBuffers(const ModelFacts &facts);
  /// The results of `kernel`, at its `arena_offsets` (arena bytes; -1 - i:
  /// graph output i, written in place), which it returns; fails with an
  /// error on the kernel when the plan phase has not set them.
  mlir::FailureOr<llvm::ArrayRef<int64_t>> addResults(KernelOp kernel);
  /// The pointer expression of `value`; "" when it has no buffer.
  std::string lookup(mlir::Value value) const { return where.lookup(value); }
  /// The condition under which the ranks of pipeline stage `stage` run a
  /// step ("sluice_stage(args, tp) == s"); "" for every rank.
  std::string stageGuard(int64_t stage) const;
  /// Step `step` of the run function: the kernel's buffer table (inputs,
  /// then results) and `SLUICE_STEP(step, <kernel>(b, args))` in a block,
  /// guarded by the kernel's stage in a pipeline bundle.
  /// Fails with an error on the kernel ("<target> target: ...") when an
  /// input has no buffer.
  mlir::LogicalResult writeStep(CodeWriter &run, KernelOp kernel, int64_t step,
                                llvm::StringRef target) const;
  /// Every kernel of `block` in program order as a step of the run
  /// function: its results placed (addResults), `emit` called with the
  /// kernel, its offsets and its step number (the target's code for it),
  /// then the step written to `run`. Returns the number of steps.
  /// An `if` is a branch of the run function on its condition, each branch
  /// its kernels' steps and copies of what it yields into the if's results;
  /// a `loop` is a C++ loop over its body's steps (see writeLoop), both
  /// spelled by `control`.
  mlir::FailureOr<int64_t>
  writeSteps(mlir::Block &block, CodeWriter &run, llvm::StringRef target,
             llvm::function_ref<mlir::LogicalResult(KernelOp, llvm::ArrayRef<int64_t>, int64_t)>
                 emit,
             const ControlFlowCode &control);
  /// The graph outputs of `ret` that no kernel wrote in place, as (output
  /// pointer, the value's buffer, the value): the run function copies them at
  /// its end. Fails with an error ("<target> target: ...") on an output
  /// without a buffer or with data-dependent dims returned twice.
  struct OutputCopy {
    std::string out, from;
    mlir::Value value;
  };
  mlir::FailureOr<std::vector<OutputCopy>> outputCopies(mlir::func::ReturnOp ret,
                                                        llvm::StringRef target) const;

private:
  using EmitFn =
      llvm::function_ref<mlir::LogicalResult(KernelOp, llvm::ArrayRef<int64_t>, int64_t)>;
  mlir::LogicalResult writeBlock(mlir::Block &block, CodeWriter &run, llvm::StringRef target,
                                 EmitFn emit, const ControlFlowCode &control, int64_t &step);
  mlir::LogicalResult writeIf(IfOp op, CodeWriter &run, llvm::StringRef target, EmitFn emit,
                              const ControlFlowCode &control, int64_t &step);
  mlir::LogicalResult writeLoop(LoopOp op, CodeWriter &run, llvm::StringRef target,
                                EmitFn emit, const ControlFlowCode &control, int64_t &step);
  /// The planned buffers of a control-flow op (`sluice.arena_offsets`).
  mlir::FailureOr<llvm::ArrayRef<int64_t>> controlOffsets(mlir::Operation *op, size_t count);
  llvm::DenseMap<mlir::Value, std::string> where;
  int64_t controlIds = 0; ///< unique names of control-flow locals
  const ModelFacts *facts;
  /// What addResults checks offsets against: a hand-written .mlir's
  /// arena_offsets are not trusted.
  int64_t arenaBytes = 0;
  int64_t numOutputs = 0;
};

/// The name of the function that runs one micro-batch of one stage in a
/// pipeline bundle's source: the emitters write their steps into it, and
/// `sluice_model_run` calls it (writePipelinedRun).
constexpr const char *kStageRunFunction = "sluice_stage_run";

/// The body of a pipeline bundle's `sluice_model_run` (worldSize > 1 with
/// pp > 1): every micro-batch's slice of the inputs and outputs through
/// kStageRunFunction in turn, so that stage s works on micro-batch m + 1
/// while stage s + 1 works on m, then each output broadcast from the first
/// rank of the stage that computed it. `stream` is "0" on cpu.
void writePipelinedRun(CodeWriter &run, const ModelFacts &facts, llvm::StringRef stream);

/// NumPy's name of an element type.
std::string numpyDtype(mlir::Type elementType);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_MODELFACTS_H
