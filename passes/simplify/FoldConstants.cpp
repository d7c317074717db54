//===- FoldConstants.cpp - evaluate all-constant ops ----------------------===//
//
// Constant folding through the reference evaluator, and the shape
// propagation that interleaves it with type inference (used by
// SpecializeShapes). Folding uses the evaluator rather than per-op folders so
// that every op with reference semantics folds, with exactly those semantics.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/sluice/KernelForms.h"
#include "lib/reference/Evaluator.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace sluice {
#define GEN_PASS_DEF_FOLDCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace {

/// Replaces `op` by constants if all its operands are constants and every
/// result is a static tensor of at most `maxElements`. Returns true if folded.
/// Evaluation errors leave the op in place (the evaluator reports them again
/// at run time, where they belong).
bool foldWithEvaluator(Operation *op, int64_t maxElements, bool foldDequantize = false) {
  if (isa<ConstantOp>(op) || op->getNumResults() == 0 ||
      op->getDialect() == nullptr ||
      !isa<SluiceDialect>(op->getDialect()))
    return false;
  // A weight-only quantized GEMM's B (docs/quantization.md, Form W) stays
  // quantized: the GEMM dequantizes it inside; folded, it would be a float
  // copy of the weight.
  if (kernel::isWeightPrologue(op))
    return false;
  // A dequantized weight stays integer until the compress phase, whose
  // sluice-fold-qdq runs the GEMM that reads it in integer arithmetic
  // (explicit quantization); what it leaves is folded there.
  if (auto dq = dyn_cast<DequantizeLinearOp>(op); dq && !foldDequantize) {
    Attribute input;
    if (matchPattern(dq.getInput(), m_Constant(&input)))
      if (auto elements = dyn_cast<ElementsAttr>(input))
        if (auto dtype = ::sluice::dtypeFromType(elements.getElementType());
            succeeded(dtype) && !::sluice::keepsDenseAttr(*dtype, elements.getNumElements()))
          return false;
  }
  std::vector<::sluice::Tensor> operandTensors;
  operandTensors.reserve(op->getNumOperands());
  for (Value operand : op->getOperands()) {
    Attribute attr;
    if (!matchPattern(operand, m_Constant(&attr)))
      return false;
    auto tensor = ::sluice::tensorFromAttr(attr);
    if (failed(tensor))
      return false;
    operandTensors.push_back(std::move(*tensor));
  }
  SmallVector<const ::sluice::Tensor *> operands;
  for (const auto &t : operandTensors)
    operands.push_back(&t);
  std::vector<::sluice::Tensor> results;
  {
    // A failing evaluation is not an error of this pass.
    ScopedDiagnosticHandler silence(op->getContext(),
                                    [](Diagnostic &) { return success(); });
    if (failed(::sluice::evaluateOp(op, operands, results)))
      return false;
  }
  for (const auto &t : results)
    // No elements attribute holds strings: string results stay computed.
    if (t.numElements() > maxElements || t.dtype() == ::sluice::DType::String)
      return false;
  OpBuilder builder(op);
  SmallVector<Value> replacements;
  for (auto [value, tensor] : llvm::zip(op->getResults(), results)) {
    auto type = RankedTensorType::get(
        tensor.shape(), ::sluice::typeFromDType(op->getContext(), tensor.dtype()));
    auto attr = ::sluice::attrFromTensor(op->getContext(), tensor, type);
    replacements.push_back(ConstantOp::create(builder, op->getLoc(), attr));
  }
  op->replaceAllUsesWith(replacements);
  op->erase();
  return true;
}

/// Recomputes the result types of `op` from its operands.
void reinferTypes(Operation *op) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer) {
    // Cast (its element type is an attribute, no inference): the operand's
    // shape, so that a dynamic dim the importer declared becomes static (HF
    // GPT-2's attention_mask.to(float) after view(batch, -1)).
    if (!op->hasTrait<OpTrait::SameOperandsAndResultShape>() || op->getNumOperands() < 1)
      return;
    auto operand = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!operand)
      return;
    for (OpResult result : op->getResults()) {
      auto declared = dyn_cast<TensorType>(result.getType());
      if (!declared || (declared.hasRank() && declared.hasStaticShape()) ||
          failed(verifyCompatibleShape(declared, operand)))
        continue;
      // Each dim static where either says so.
      SmallVector<int64_t> shape(operand.getShape());
      for (int64_t i = 0; declared.hasRank() && i < declared.getRank(); ++i)
        if (ShapedType::isDynamic(shape[i]))
          shape[i] = declared.getDimSize(i);
      result.setType(RankedTensorType::get(shape, declared.getElementType()));
    }
    return;
  }
  SmallVector<Type> types;
  ScopedDiagnosticHandler silence(op->getContext(),
                                  [](Diagnostic &) { return success(); });
  if (failed(infer.inferReturnTypes(op->getContext(), op->getLoc(),
                                    op->getOperands(), op->getRawDictionaryAttrs(),
                                    op->getPropertiesStorage(), op->getRegions(),
                                    types)))
    return;
  for (auto [result, type] : llvm::zip(op->getResults(), types)) {
    // Keep a declared static dim where inference could only say dynamic.
    if (areCompatibleResultTypes(type, result.getType()) &&
        isa<RankedTensorType>(result.getType())) {
      auto declared = cast<RankedTensorType>(result.getType());
      auto inferred = dyn_cast<RankedTensorType>(type);
      if (!inferred)
        continue;
      SmallVector<int64_t> shape;
      for (auto [d, i] : llvm::zip(declared.getShape(), inferred.getShape()))
        shape.push_back(ShapedType::isDynamic(d) ? i : d);
      result.setType(RankedTensorType::get(shape, declared.getElementType()));
    } else {
      result.setType(type);
    }
  }
}

/// Removes constants left without users by folding.
void eraseDeadConstants(func::FuncOp func) {
  SmallVector<Operation *> dead;
  func.walk([&](ConstantOp op) {
    if (op->use_empty())
      dead.push_back(op);
  });
  for (Operation *op : dead)
    op->erase();
}

struct FoldConstantsPass
    : public sluice::impl::FoldConstantsPassBase<FoldConstantsPass> {
  using FoldConstantsPassBase::FoldConstantsPassBase;
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops)
      foldWithEvaluator(op, maxElements, foldDequantize);
    eraseDeadConstants(getOperation());
  }
};

} // namespace

/// Folds and re-infers the ops of `block` in order, descending into the
/// regions of control-flow ops (their bodies read values refined here).
static void propagateInBlock(Block &block, int64_t maxElements) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  sluice::propagateOps(ops, maxElements);
}

void sluice::propagateOps(ArrayRef<Operation *> ops, int64_t maxElements) {
  for (Operation *op : ops) {
    if (op->hasTrait<OpTrait::IsTerminator>())
      continue;
    for (Region &region : op->getRegions())
      for (Block &nested : region)
        propagateInBlock(nested, maxElements);
    // Ops with their own folders (Shape of a static tensor) fold first.
    SmallVector<OpFoldResult> folded;
    if (!isa<ConstantOp>(op) && op->getNumResults() == 1 &&
        succeeded(op->fold(folded)) && folded.size() == 1) {
      if (auto attr = dyn_cast<Attribute>(folded[0])) {
        if (auto elements = dyn_cast<ElementsAttr>(attr)) {
          OpBuilder builder(op);
          Value c = ConstantOp::create(builder, op->getLoc(), elements);
          op->getResult(0).replaceAllUsesWith(c);
          op->erase();
          continue;
        }
      }
    }
    if (foldWithEvaluator(op, maxElements))
      continue;
    reinferTypes(op);
  }
}

LogicalResult sluice::propagateShapes(func::FuncOp func, int64_t maxElements) {
  propagateInBlock(func.getBody().front(), maxElements);
  eraseDeadConstants(func);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  func.setFunctionType(FunctionType::get(func.getContext(),
                                         func.getArgumentTypes(),
                                         ret.getOperandTypes()));
  return success();
}
