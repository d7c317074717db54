//===- FormKernels.cpp - one sluice.kernel group per compute op -----------===//
//
// The first form of the fuse phase. After it, a function's body holds only
// weights (sluice.constant), kernel groups and the return: the form code
// generation and memory planning expect. Groups hold one op each here; the
// fusion passes merge groups.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "dialects/sluice/KernelForms.h"
#include "passes/fuse/FusionModel.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace sluice {
#define GEN_PASS_DEF_FORMKERNELSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace {

/// Small dense constants are cloned into the group (code generation reads
/// them as compile-time values); everything else is an input.
bool inlinesConstant(Value value, int64_t maxElements) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return false;
  // The zero points of int8 contractions, whatever their size: the kernel
  // model's judge (isInt8Contraction) reads B's as a constant in the body.
  bool zeroPoint = llvm::any_of(value.getUses(), [](OpOperand &use) {
    return isa<MatMulIntegerOp, ConvIntegerOp>(use.getOwner()) && use.getOperandNumber() >= 2;
  });
  return zeroPoint || dense.getNumElements() <= maxElements;
}

std::string kernelName(int64_t index, Operation *op) {
  std::string name = "k" + std::to_string(index) + "_";
  for (char c : op->getName().stripDialect())
    name += (c == '.') ? '_' : c;
  return name;
}

struct FormKernelsPass
    : public ::sluice::impl::FormKernelsPassBase<FormKernelsPass> {
  using FormKernelsPassBase::FormKernelsPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Block &block = func.getBody().front();
    // Weights live at the top level: constants of if/loop bodies move out
    // (they are pure), so that the bodies hold only kernels.
    SmallVector<ConstantOp> nested;
    func.walk([&](ConstantOp c) {
      if (c->getBlock() != &block)
        nested.push_back(c);
    });
    for (ConstantOp c : nested)
      c->moveBefore(block.findAncestorOpInBlock(*c));
    int64_t index = 0;
    func.walk([&](KernelOp) { ++index; });
    int64_t first = index;
    llvm::SmallPtrSet<Operation *, 32> formed;
    if (failed(formBlock(block, index, formed)))
      return signalPassFailure();
    // Numbers follow the final program order, branch and loop bodies
    // included (a body's kernels between its op and the next).
    index = first;
    func.walk<WalkOrder::PreOrder>([&](KernelOp kernel) {
      if (formed.contains(kernel)) {
        StringRef suffix = kernel.getSymName().split('_').second;
        kernel.setSymName(("k" + std::to_string(index++) + "_" + suffix).str());
      }
      return WalkResult::skip();
    });
    // Constants now cloned into every group that reads them.
    for (Operation &op : llvm::make_early_inc_range(block))
      if (isa<ConstantOp>(op) && op.use_empty())
        op.erase();
  }

  /// Forms the groups of `block`: the ops marked with one `sluice.group` id
  /// by the fusion passes, every other op alone, in program order of their
  /// first op. The bodies of `if` and `loop` ops are formed as blocks of
  /// their own (the targets run them as steps under runtime control flow).
  LogicalResult formBlock(Block &block, int64_t &index,
                          llvm::SmallPtrSetImpl<Operation *> &formed) {
    SmallVector<SmallVector<Operation *>> groups;
    llvm::DenseMap<int64_t, size_t> groupIndex;
    for (Operation &op : block) {
      if (isa<ConstantOp, ShardConstantOp, KernelOp, func::ReturnOp, YieldOp>(op))
        continue;
      if (isa<IfOp, LoopOp>(op)) {
        for (Region &region : op.getRegions())
          for (Block &body : region)
            if (failed(formBlock(body, index, formed)))
              return failure();
        continue;
      }
      auto id = op.getAttrOfType<IntegerAttr>(fusion::kGroupAttr);
      if (!id) {
        groups.push_back({&op});
        continue;
      }
      auto [it, inserted] = groupIndex.try_emplace(id.getInt(), groups.size());
      if (inserted)
        groups.push_back({});
      groups[it->second].push_back(&op);
    }
    for (auto &group : groups) {
      FailureOr<KernelOp> kernel = wrap(group, index++);
      if (failed(kernel))
        return failure();
      formed.insert(*kernel);
    }
    // A kernel sits where its group's last op was; outside users of the
    // group's earlier ops may precede it. Groups are convex, so the block
    // has a topological order.
    if (!sortTopologically(&block))
      return block.getParentOp()->emitError() << "kernel groups form a cycle";
    return success();
  }

  /// Moves `ops` into one sluice.kernel of the form the kernel model judges
  /// them to be; GEMMs and convolutions on floating-point data become
  /// library calls (tuned BLAS/cuDNN routines beat generated loops).
  FailureOr<KernelOp> wrap(ArrayRef<Operation *> ops, int64_t index) {
    std::string why;
    FailureOr<KernelForm> form = kernel::judgeForm(ops, why);
    if (failed(form))
      return ops.front()->emitOpError("cannot form a kernel group: ") << why;
    llvm::SmallPtrSet<Operation *, 8> members(ops.begin(), ops.end());
    // Everything the group reads from outside itself, nested regions
    // included, and the results used outside it.
    llvm::SetVector<Value> used;
    SmallVector<Value> results;
    Operation *anchor = ops.front();
    for (Operation *op : ops) {
      for (Value v : op->getOperands())
        if (!members.contains(v.getDefiningOp()))
          used.insert(v);
      llvm::SetVector<Value> nested;
      getUsedValuesDefinedAbove(op->getRegions(), nested);
      used.insert(nested.begin(), nested.end());
      // A lone op yields all its results (emitters write every one).
      for (Value r : op->getResults())
        if (ops.size() == 1 ||
            llvm::any_of(r.getUsers(),
                         [&](Operation *u) { return !members.contains(u); }))
          results.push_back(r);
      if (op->hasAttr(fusion::kAnchorAttr))
        anchor = op;
    }
    SmallVector<Value> inputs, inlined;
    for (Value v : used)
      (inlinesConstant(v, maxInlineElements) ? inlined : inputs).push_back(v);

    OpBuilder builder(ops.back());
    std::optional<StringRef> library;
    if (*form == KernelForm::gemm || *form == KernelForm::library ||
        *form == KernelForm::collective)
      for (Operation *op : ops)
        if (!library)
          library = kernel::libraryFor(op);
    SmallVector<Type> resultTypes;
    for (Value r : results)
      resultTypes.push_back(r.getType());
    auto kernel = KernelOp::create(builder,
        anchor->getLoc(), resultTypes, inputs,
        builder.getStringAttr(kernelName(index, anchor)), *form,
        library ? builder.getStringAttr(*library) : StringAttr(), DenseI64ArrayAttr());
    Block *body = builder.createBlock(&kernel.getBody());
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
    builder.setInsertionPointToStart(body);
    for (Value v : inlined)
      mapping.map(v, builder.clone(*v.getDefiningOp())->getResult(0));
    for (Operation *op : ops) {
      Operation *inner = builder.clone(*op, mapping);
      inner->removeAttr(fusion::kGroupAttr);
      inner->removeAttr(fusion::kAnchorAttr);
    }
    SmallVector<Value> yielded;
    for (Value r : results)
      yielded.push_back(mapping.lookup(r));
    KernelYieldOp::create(builder, anchor->getLoc(), yielded);
    for (auto [r, k] : llvm::zip(results, kernel.getResults()))
      r.replaceUsesWithIf(k, [&](OpOperand &use) {
        return !members.contains(use.getOwner());
      });
    for (Operation *op : llvm::reverse(ops)) {
      op->dropAllUses();
      op->erase();
    }
    return kernel;
  }
};

} // namespace
