//===- PlanBuffers.cpp - arena offsets for every kernel result ------------===//
//
// The plan phase's memory planning: liveness over the kernel sequence, then
// first-fit placement in one arena (ArenaPlanner). An if or loop is one step
// of that sequence: its results and every buffer of its bodies live for the
// whole step. Results the function
// returns are written into the caller's output buffers instead, which saves a
// copy per output.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/plan/ArenaPlanner.h"

#include "llvm/ADT/DenseMap.h"

namespace sluice {
#define GEN_PASS_DEF_PLANBUFFERSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace sluice {
int64_t storageBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return -1;
  Type element = tensor.getElementType();
  int64_t width = element.isInteger(1) ? 1 : (element.getIntOrFloatBitWidth() + 7) / 8;
  return tensor.getNumElements() * width;
}
} // namespace sluice

namespace {

/// Where the plan puts the buffers of an if's or a loop's results.
constexpr const char *kControlOffsetsAttr = "sluice.arena_offsets";

struct PlanBuffersPass
    : public ::sluice::impl::PlanBuffersPassBase<PlanBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Block &block = func.getBody().front();
    auto ret = cast<func::ReturnOp>(block.getTerminator());

    // Dynamic inputs first: naming them is the useful error.
    auto inputNames = func->getAttrOfType<ArrayAttr>("sluice.input_names");
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (type && type.hasStaticShape())
        continue;
      std::string name = "#" + std::to_string(arg.getArgNumber());
      if (inputNames && arg.getArgNumber() < inputNames.size())
        if (auto s = dyn_cast<StringAttr>(inputNames[arg.getArgNumber()]))
          name = s.str();
      std::string dims;
      if (type)
        for (int64_t d : type.getShape())
          dims += (dims.empty() ? "" : "x") + (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
      emitError(func.getLoc()) << "input '" << name << "' has dynamic dims (" << dims
                               << "): bundles need static shapes; bind them with --shape="
                               << name << "=...";
      return signalPassFailure();
    }

    // Steps: the top-level kernels and control-flow ops, in order. The
    // kernels of an if's branches or a loop's body run within their op's
    // step: their results live for all of it (they share no space with
    // each other nor with what is live across the op), and the op's own
    // results (and a loop's iteration number and condition) likewise.
    llvm::DenseMap<Operation *, int64_t> step;
    SmallVector<Operation *> steps;
    for (Operation &op : block)
      if (isa<KernelOp, IfOp, LoopOp>(op)) {
        step[&op] = steps.size();
        steps.push_back(&op);
      }
    auto lastUse = [&](Value value, int64_t first) {
      int64_t last = first;
      for (Operation *user : value.getUsers()) {
        Operation *top = block.findAncestorOpInBlock(*user);
        auto it = top ? step.find(top) : step.end();
        // Returned (a second time: copied at the end) or read by the return.
        last = std::max(last, it == step.end() ? (int64_t)steps.size() : it->second);
      }
      return last;
    };

    // The first return of a kernel result writes it into that output.
    llvm::DenseMap<Value, int64_t> outputOf;
    for (auto [index, value] : llvm::enumerate(ret.getOperands()))
      if (value.getDefiningOp<KernelOp>() && !outputOf.count(value))
        outputOf[value] = index;

    std::vector<BufferLifetime> lifetimes;
    SmallVector<Value> arenaValues;
    auto place = [&](Operation *owner, Value result, int64_t first, int64_t last) {
      int64_t bytes = storageBytes(result.getType());
      if (bytes < 0) {
        owner->emitError() << "cannot plan memory for a result of type " << result.getType()
                           << ": code generation needs static shapes "
                              "(give input shapes with --shape; freeze shape-tensor inputs "
                              "with --bind)";
        return false;
      }
      lifetimes.push_back({bytes, first, last});
      arenaValues.push_back(result);
      return true;
    };
    SmallVector<KernelOp> kernels;
    for (Operation *op : steps) {
      int64_t s = step[op];
      if (auto kernel = dyn_cast<KernelOp>(op)) {
        kernels.push_back(kernel);
        for (Value result : kernel.getResults())
          if (!outputOf.count(result) && !place(kernel, result, s, lastUse(result, s)))
            return signalPassFailure();
        continue;
      }
      if (auto loop = dyn_cast<LoopOp>(op))
        for (Value result : loop.getResults().drop_front(loop.getInitialValues().size()))
          if (storageBytes(result.getType()) < 0) {
            loop.emitError() << "a loop's scan output (" << result.getType()
                             << ") needs a static trip count: give the trip count as a "
                                "constant or freeze it with --bind";
            return signalPassFailure();
          }
      for (Value result : op->getResults())
        if (!place(op, result, s, lastUse(result, s)))
          return signalPassFailure();
      if (isa<LoopOp>(op)) {
        // The iteration number and condition the body reads.
        Block &body = op->getRegion(0).front();
        for (unsigned i = 0; i < 2; ++i)
          if (!place(op, body.getArgument(i), s, s))
            return signalPassFailure();
      }
      bool failedNested = false;
      op->walk([&](KernelOp kernel) {
        kernels.push_back(kernel);
        for (Value result : kernel.getResults())
          failedNested |= !place(kernel, result, s, s);
        return WalkResult::skip();
      });
      if (failedNested)
        return signalPassFailure();
    }
    ArenaPlan plan = planArena(lifetimes);

    llvm::DenseMap<Value, int64_t> offsetOf;
    for (auto [value, offset] : llvm::zip(arenaValues, plan.offsets))
      offsetOf[value] = offset;
    OpBuilder builder(func.getContext());
    for (KernelOp kernel : kernels) {
      SmallVector<int64_t> offsets;
      for (Value result : kernel.getResults())
        offsets.push_back(outputOf.count(result) ? -(outputOf[result] + 1)
                                                 : offsetOf[result]);
      kernel.setArenaOffsetsAttr(builder.getDenseI64ArrayAttr(offsets));
    }
    // Control-flow ops: their results' offsets (a loop's then its iteration
    // number's and condition's), in `sluice.arena_offsets`.
    for (Operation *op : steps) {
      if (isa<KernelOp>(op))
        continue;
      SmallVector<int64_t> offsets;
      for (Value result : op->getResults())
        offsets.push_back(offsetOf[result]);
      if (isa<LoopOp>(op))
        for (unsigned i = 0; i < 2; ++i)
          offsets.push_back(offsetOf[op->getRegion(0).front().getArgument(i)]);
      op->setAttr(kControlOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr("sluice.arena_bytes",
                  builder.getI64IntegerAttr(plan.arenaBytes));
  }
};

} // namespace
