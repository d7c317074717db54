//===- Pipeline.cpp - pipeline stages and the transfers between them ------===//
//
// Cuts one rank's program (after the tensor-parallel split, if any) into
// `pp` contiguous pipeline stages, Megatron-LM style, and marks every op
// with its stage (`sluice.stage`). The program stays SPMD: every rank runs
// the same function, and the code generator runs an op only on the ranks of
// its stage.
//
// - Stages are balanced by predicted time (CostModel.h: flops and bytes of
//   each op on the default device), not by counting layers.
// - A cut is allowed only where one activation crosses it (between
//   transformer layers, or between a layer's attention and its MLP; never
//   inside attention, where Q, K, V and the residual are live together).
//   Values that elementwise ops and views make from the graph's inputs and
//   weights alone (a mask made from the inputs, position ids) do not
//   count: a later stage recomputes its own copy, since every rank holds
//   the inputs.
// - A compute value used by a later stage goes through `sluice.transfer`
//   (send on the producing stage's ranks, receive on the consumer's).
//   Weights used by several stages are duplicated, one per stage, so that a
//   rank's weights file holds only its stage's.
// - With tensor parallelism (`sluice.tp` = T), the stages hold T ranks each
//   and the existing collectives get `mesh_axis = "tp"`: they span the
//   ranks of one stage (the runtime's per-axis communicator).
// - `main` records `sluice.pp`, `sluice.micro_batches` and the plan
//   (`sluice.pipeline`: per stage its ops, first and last ONNX node,
//   flops, bytes, predicted time and weights; the bubble fraction), which
//   --report prints as "pipeline".
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/parallel/CostModel.h"

#include "dialects/sluice/KernelForms.h"
#include "dialects/sluice/SluicePipelineOps.h"
#include "lib/support/Locations.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

namespace sluice {
#define GEN_PASS_DEF_PIPELINEPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::parallel;

namespace {

constexpr llvm::StringLiteral kStageAttr = "sluice.stage";

bool isWeight(Operation *op) { return isa<ConstantOp, ShardConstantOp>(op); }

class StageCutter {
public:
  StageCutter(func::FuncOp func, int64_t pp, int64_t stageSize)
      : func(func), pp(pp), stageSize(stageSize), block(func.getBody().front()) {}

  LogicalResult run() {
    classify();
    if (failed(cut()))
      return failure();
    for (auto [i, op] : llvm::enumerate(compute))
      op->setAttr(kStageAttr, builder().getI64IntegerAttr(stageOf[i]));
    // Operands from elsewhere: weights and input-only values materialized
    // in the stage, activations of an earlier stage transferred.
    for (auto [i, op] : llvm::enumerate(compute))
      for (OpOperand &use : op->getOpOperands())
        if (Value v = materialize(use.get(), stageOf[i]); v != use.get())
          use.set(v);
    return success();
  }

  /// Per stage: ops, first and last node, flops, bytes, predicted seconds
  /// and weight bytes.
  struct StageInfo {
    int64_t ops = 0;
    std::string firstNode, lastNode;
    OpCost cost;
    double seconds = 0;
    int64_t weightsBytes = 0;
  };
  std::vector<StageInfo> describe() const {
    std::vector<StageInfo> stages(pp);
    for (auto [i, op] : llvm::enumerate(compute)) {
      StageInfo &s = stages[stageOf[i]];
      if (s.ops++ == 0)
        s.firstNode = firstNodeName(op);
      s.lastNode = firstNodeName(op);
      s.cost += costOf(op);
      s.seconds += seconds[i];
    }
    for (Operation &op : block)
      if (auto stage = op.getAttrOfType<IntegerAttr>(kStageAttr); stage && isWeight(&op))
        stages[stage.getInt()].weightsBytes += (int64_t)tensorBytes(op.getResult(0).getType());
    return stages;
  }

private:
  OpBuilder builder() { return OpBuilder(func.getContext()); }

  /// Weights, input-only ops (elementwise ops and views whose every operand
  /// is a graph input, a weight or input-only: a mask, position ids) and
  /// the compute ops, in block order.
  void classify() {
    for (Operation &op : block.without_terminator()) {
      if (isWeight(&op)) {
        inputOnly.insert(&op);
        continue;
      }
      // Only cheap ops: the embedding lookup and everything after it are
      // functions of the inputs too, but they are the activations.
      bool fromInputs = op.getNumRegions() == 0 &&
                        (kernel::isElementwise(&op) || kernel::isViewOp(&op)) &&
                        llvm::all_of(op.getOperands(), [&](Value v) {
                          Operation *def = v.getDefiningOp();
                          return !def || inputOnly.contains(def);
                        });
      if (fromInputs) {
        inputOnly.insert(&op);
        continue;
      }
      index[&op] = compute.size();
      compute.push_back(&op);
    }
  }

  /// The layers the model has: its attention ops.
  int64_t layers() {
    int64_t n = 0;
    func.walk([&](AttentionOp) { ++n; });
    return n;
  }

  LogicalResult cut() {
    size_t n = compute.size();
    // Live activations across each boundary: values of compute ops used by
    // a later compute op (the graph's outputs do not cross: they leave
    // from their stage).
    std::vector<int64_t> live(n + 1, 0);
    for (auto [i, op] : llvm::enumerate(compute))
      for (Value result : op->getResults()) {
        size_t last = i;
        for (Operation *user : result.getUsers()) {
          Operation *top = block.findAncestorOpInBlock(*user);
          if (top && index.count(top))
            last = std::max(last, index[top]);
        }
        if (last > i) {
          live[i + 1] += 1;
          live[last + 1] -= 1;
        }
      }
    SmallVector<bool> canCut(n, false);
    int64_t running = 0, places = 0;
    for (size_t i = 0; i < n; ++i) {
      running += live[i];
      canCut[i] = i > 0 && running == 1;
      places += canCut[i];
    }
    int64_t attention = layers();
    if (attention > 0 && pp > attention)
      return func.emitError() << "--pp=" << pp << " exceeds the " << attention
                              << (attention == 1 ? " layer" : " layers")
                              << " (attention ops) of this model: a stage holds at least one "
                                 "layer";
    DeviceModel device;
    for (Operation *op : compute) {
      Type element =
          op->getNumResults() ? getElementTypeOrSelf(op->getResult(0).getType()) : Type();
      seconds.push_back(predictedSeconds(costOf(op), device, element && element.isF32()));
    }
    std::vector<size_t> starts = balancedCut(seconds, pp, canCut);
    if (starts.empty())
      return func.emitError() << "--pp=" << pp << " needs " << pp - 1
                              << " cuts between ops where one activation crosses, and this "
                                 "model has "
                              << places << " (at most --pp=" << places + 1 << ")";
    stageOf.assign(n, 0);
    for (size_t s = 0; s < starts.size(); ++s)
      for (size_t i = starts[s]; i < (s + 1 < starts.size() ? starts[s + 1] : n); ++i)
        stageOf[i] = s;
    return success();
  }

  /// `v` as stage `stage` reads it: a graph input as it is, a weight or an
  /// input-only value from that stage's own copy, an earlier stage's
  /// activation through a transfer (one per value and stage).
  Value materialize(Value v, int64_t stage) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &block)
      return v;
    if (inputOnly.contains(def)) {
      auto assigned = def->getAttrOfType<IntegerAttr>(kStageAttr);
      if (!assigned) {
        // Its own operands come from the same stage.
        def->setAttr(kStageAttr, builder().getI64IntegerAttr(stage));
        for (OpOperand &operand : def->getOpOperands())
          operand.set(materialize(operand.get(), stage));
        return v;
      }
      if (assigned.getInt() == stage)
        return v;
      auto key = std::make_pair(def, stage);
      auto it = copies.find(key);
      if (it == copies.end()) {
        OpBuilder b = builder();
        b.setInsertionPointAfter(def);
        Operation *copy = b.clone(*def);
        copy->setAttr(kStageAttr, b.getI64IntegerAttr(stage));
        for (OpOperand &operand : copy->getOpOperands())
          operand.set(materialize(operand.get(), stage));
        it = copies.insert({key, copy}).first;
      }
      return it->second->getResult(cast<OpResult>(v).getResultNumber());
    }
    auto found = index.find(def);
    if (found == index.end())
      return v;
    int64_t from = stageOf[found->second];
    if (from == stage)
      return v;
    auto key = std::make_pair(v.getAsOpaquePointer(), stage);
    auto it = transfers.find(key);
    if (it != transfers.end())
      return it->second;
    OpBuilder b = builder();
    b.setInsertionPointAfter(def);
    Value sent = TransferOp::create(b, v.getLoc(), v, b.getI64IntegerAttr(from),
                                    b.getI64IntegerAttr(stage), b.getI64IntegerAttr(stageSize))
                     .getResult();
    transfers[key] = sent;
    return sent;
  }

  func::FuncOp func;
  int64_t pp, stageSize;
  Block &block;
  llvm::DenseSet<Operation *> inputOnly;
  std::vector<Operation *> compute;
  llvm::DenseMap<Operation *, size_t> index;
  std::vector<int64_t> stageOf;
  std::vector<double> seconds;
  std::map<std::pair<Operation *, int64_t>, Operation *> copies;
  std::map<std::pair<void *, int64_t>, Value> transfers;
};

struct PipelinePass : public ::sluice::impl::PipelinePassBase<PipelinePass> {
  using PipelinePassBase::PipelinePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t stages = pp, micro = microBatches;
    if (stages < 1 || micro < 1) {
      func.emitError() << "--pp and --micro-batches must be at least 1, got " << stages << " and "
                       << micro;
      return signalPassFailure();
    }
    if (stages == 1)
      return;
    if (func->hasAttr("sluice.pp")) {
      func.emitError() << "--pp=" << stages << ": this function is already cut into stages";
      return signalPassFailure();
    }
    int64_t stageSize = 1;
    if (auto tp = func->getAttrOfType<IntegerAttr>("sluice.tp"))
      stageSize = std::max<int64_t>(tp.getInt(), 1);
    StageCutter cutter(func, stages, stageSize);
    if (failed(cutter.run()))
      return signalPassFailure();
    // The tensor-parallel collectives now span the ranks of one stage: the
    // grid's "tp" axis, not the whole job.
    if (stageSize > 1)
      func.walk([&](Operation *op) {
        if (kernel::isCollective(op) && !isa<TransferOp>(op))
          op->setAttr("mesh_axis", StringAttr::get(op->getContext(), "tp"));
      });

    Builder b(func.getContext());
    SmallVector<Attribute> list;
    for (auto [s, info] : llvm::enumerate(cutter.describe()))
      list.push_back(b.getDictionaryAttr({
          b.getNamedAttr("stage", b.getI64IntegerAttr(s)),
          b.getNamedAttr("ops", b.getI64IntegerAttr(info.ops)),
          b.getNamedAttr("first_node", b.getStringAttr(info.firstNode)),
          b.getNamedAttr("last_node", b.getStringAttr(info.lastNode)),
          b.getNamedAttr("flops", b.getF64FloatAttr(info.cost.flops)),
          b.getNamedAttr("bytes", b.getF64FloatAttr(info.cost.bytes)),
          b.getNamedAttr("predicted_ms", b.getF64FloatAttr(info.seconds * 1e3)),
          b.getNamedAttr("weights_bytes", b.getI64IntegerAttr(info.weightsBytes)),
      }));
    // GPipe's forward schedule: M + P - 1 steps of which each stage idles
    // P - 1.
    double bubble = double(stages - 1) / double(micro + stages - 1);
    // The report's parallel.layers: the tensor-parallel plan's count, else
    // the layers (attention ops) the stages hold.
    if (!func->hasAttr("sluice.layers")) {
      int64_t layers = 0;
      func.walk([&](AttentionOp) { ++layers; });
      func->setAttr("sluice.layers", b.getI64IntegerAttr(layers));
    }
    func->setAttr("sluice.pp", b.getI64IntegerAttr(stages));
    func->setAttr("sluice.micro_batches", b.getI64IntegerAttr(micro));
    func->setAttr("sluice.pipeline",
                  b.getDictionaryAttr({
                      b.getNamedAttr("stages", b.getArrayAttr(list)),
                      b.getNamedAttr("micro_batches", b.getI64IntegerAttr(micro)),
                      b.getNamedAttr("bubble_fraction", b.getF64FloatAttr(bubble)),
                  }));
  }
};

} // namespace
