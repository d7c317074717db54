//===- FormKernels.cpp - one sluice.kernel group per compute op -----------===//
//
// The first form of the fuse phase. After it, a function's body holds only
// weights (sluice.constant), kernel groups and the return: the form code
// generation and memory planning expect. Groups hold one op each here; the
// fusion passes merge groups.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

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

/// The library routine that computes `op`, if one does: GEMMs and
/// convolutions on floating-point data, where tuned BLAS/cuDNN routines beat
/// generated loops.
std::optional<StringRef> libraryFor(Operation *op) {
  auto isFloat = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && (type.getElementType().isF32() ||
                    type.getElementType().isF64());
  };
  if (isa<MatMulOp>(op) && isFloat(op->getOperand(0)))
    return StringRef("gemm");
  if (isa<ConvOp, ConvTransposeOp>(op) && isFloat(op->getOperand(0)))
    return StringRef("conv");
  return std::nullopt;
}

/// Small dense constants are cloned into the group (code generation reads
/// them as compile-time values); everything else is an input.
bool inlinesConstant(Value value, int64_t maxElements) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  return dense && dense.getNumElements() <= maxElements;
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
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      if (!isa<ConstantOp, KernelOp, func::ReturnOp>(op))
        ops.push_back(&op);
    int64_t index = 0;
    func.walk([&](KernelOp) { ++index; });
    for (Operation *op : ops)
      wrap(op, index++);
    // Constants now cloned into every group that reads them.
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front()))
      if (isa<ConstantOp>(op) && op.use_empty())
        op.erase();
  }

  void wrap(Operation *op, int64_t index) {
    // Everything the op reads from outside itself, nested regions included.
    llvm::SetVector<Value> used(op->operand_begin(), op->operand_end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    SmallVector<Value> inputs, inlined;
    for (Value v : used)
      (inlinesConstant(v, maxInlineElements) ? inlined : inputs).push_back(v);

    OpBuilder builder(op);
    auto kernel = KernelOp::create(builder, 
        op->getLoc(), op->getResultTypes(), inputs,
        builder.getStringAttr(kernelName(index, op)),
        libraryFor(op) ? builder.getStringAttr(*libraryFor(op)) : StringAttr());
    Block *body = builder.createBlock(&kernel.getBody());
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
    builder.setInsertionPointToStart(body);
    for (Value v : inlined)
      mapping.map(v, builder.clone(*v.getDefiningOp())->getResult(0));
    Operation *inner = builder.clone(*op, mapping);
    KernelYieldOp::create(builder, op->getLoc(), inner->getResults());
    op->replaceAllUsesWith(kernel.getResults());
    op->erase();
  }
};

} // namespace
