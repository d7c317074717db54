//===- Compute.cpp - the arithmetic of a kernel step ----------------------===//

#include "codegen/common/Compute.h"

#include "dialects/sluice/KernelForms.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

std::string spell(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// Whether `v` (a value of `kernel`'s body) is a constant: one in the body,
/// or a block argument fed by a top-level constant (a weight).
bool isConstant(KernelOp kernel, Value v) {
  if (v.getDefiningOp<ConstantOp>())
    return true;
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return false;
  Value input = kernel.getInputs()[arg.getArgNumber()];
  return input.getDefiningOp<ConstantOp>() || input.getDefiningOp<ShardConstantOp>();
}

/// The weight-only / fp8 class of a matmul's B: the dequantize_linear it
/// is (through casts and views) of a constant, by the quantized type.
std::optional<std::string> dequantizedWeight(KernelOp kernel, Value b) {
  while (Operation *def = b.getDefiningOp()) {
    if (isa<CastOp>(def) || kernel::isViewOp(def)) {
      b = def->getOperand(0);
      continue;
    }
    auto dq = dyn_cast<DequantizeLinearOp>(def);
    if (!dq || !isConstant(kernel, dq.getInput()))
      return std::nullopt;
    Type q = elementOf(dq.getInput());
    if (q.isInteger(8) && !q.isUnsignedInteger())
      return std::string("int8w");
    if (q.isInteger(4))
      return std::string("int4w");
    if (isa<FloatType>(q) && q.getIntOrFloatBitWidth() == 8)
      return std::string("fp8");
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> floatName(Type t) {
  if (t.isF32() || t.isF16() || t.isBF16() || t.isF64())
    return spell(t);
  return std::nullopt;
}

} // namespace

std::string computeOf(KernelOp kernel) {
  Block &body = kernel.getBody().front();
  Operation *anchor = nullptr;
  for (Operation &op : body.without_terminator())
    if (!isa<ConstantOp>(op) && !kernel::isViewOp(&op) && !kernel::isElementwise(&op) &&
        !kernel::isWeightPrologue(&op)) {
      anchor = &op;
      break;
    }
  if (anchor) {
    if (isa<MatMulIntegerOp, ConvIntegerOp>(anchor) &&
        elementOf(anchor->getOperand(0)).isInteger(8) &&
        elementOf(anchor->getOperand(1)).isInteger(8))
      return "int8";
    if (isa<MatMulOp>(anchor))
      if (auto weight = dequantizedWeight(kernel, anchor->getOperand(1)))
        return *weight;
    for (Value r : anchor->getResults())
      if (isa<ShapedType>(r.getType()))
        if (auto name = floatName(elementOf(r)))
          return *name;
    for (Value v : anchor->getOperands())
      if (isa<ShapedType>(v.getType()))
        if (auto name = floatName(elementOf(v)))
          return *name;
  }
  auto yield = cast<KernelYieldOp>(body.getTerminator());
  for (Value v : yield.getValues())
    if (auto shaped = dyn_cast<ShapedType>(v.getType()))
      return spell(shaped.getElementType());
  return "";
}

} // namespace sluice::codegen
