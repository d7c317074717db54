//===- Groups.cpp - the anatomy of a kernel group -------------------------===//

#include "lib/kernel/Groups.h"

#include "dialects/sluice/KernelForms.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace sluice::kernel {

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

} // namespace

GroupOps splitGroupOps(KernelOp kernel, llvm::function_ref<bool(Operation *)> isAnchor) {
  GroupOps ops;
  Block &block = kernel.getBody().front();
  ops.yield = cast<KernelYieldOp>(block.getTerminator());
  for (Operation &op : block.without_terminator()) {
    if (isa<ConstantOp>(op) || isViewOp(&op))
      continue;
    if (!ops.anchor && isAnchor(&op))
      ops.anchor = &op;
    else
      (ops.anchor ? ops.after : ops.before).push_back(&op);
  }
  return ops;
}

std::optional<unsigned> yieldSlotOf(KernelOp kernel, Value result) {
  auto yield = cast<KernelYieldOp>(kernel.getBody().front().getTerminator());
  for (auto [slot, value] : llvm::enumerate(yield.getValues())) {
    Value root = value;
    while (root != result && root.getDefiningOp() && isLayoutPreserving(root.getDefiningOp()))
      root = root.getDefiningOp()->getOperand(0);
    if (root == result)
      return slot;
  }
  return std::nullopt;
}

RowYield rowYieldOf(const GroupOps &parts, Value x, Value y, Value root) {
  Operation *def = root.getDefiningOp();
  bool inPrologue = def && llvm::is_contained(parts.before, def);
  bool inEpilogue = root == y || (def && llvm::is_contained(parts.after, def));
  if (!inPrologue && !inEpilogue)
    return RowYield::Neither;
  if (shapeOf(root) != shapeOf(inPrologue ? x : y))
    return RowYield::WrongShape;
  return inPrologue ? RowYield::Prologue : RowYield::Epilogue;
}

std::variant<int64_t, RowAxisProblem> rowAxisOf(Operation *op) {
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  int64_t rank = shape.size();
  auto normalize = [&](int64_t axis) -> std::variant<int64_t, RowAxisProblem> {
    if (axis < -rank || axis >= rank)
      return RowAxisProblem{RowAxisProblem::AxisOutOfRange, axis};
    return axis < 0 ? axis + rank : axis;
  };
  if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    auto axisOr = normalize(sm.getAxis());
    auto *axis = std::get_if<int64_t>(&axisOr);
    if (!axis)
      return axisOr;
    for (int64_t d = *axis + 1; d < rank; ++d)
      if (shape[d] != 1)
        return RowAxisProblem{RowAxisProblem::SoftmaxNotInnermost, *axis};
    return *axis;
  }
  if (auto ln = dyn_cast<LayerNormOp>(op))
    return normalize(ln.getAxis());
  if (auto rn = dyn_cast<RmsNormOp>(op))
    return normalize(rn.getAxis());
  auto reduce = cast<ReduceOp>(op);
  std::vector<bool> reduced(rank, false);
  if (reduce.getAxes()) {
    auto values = getConstantIntValues(reduce.getAxes());
    if (!values)
      return RowAxisProblem{RowAxisProblem::ReduceAxesNotConstant};
    for (int64_t axis : *values) {
      auto axisOr = normalize(axis);
      auto *a = std::get_if<int64_t>(&axisOr);
      if (!a)
        return axisOr;
      reduced[*a] = true;
    }
    if (values->empty())
      reduced.assign(rank, !reduce.getNoopWithEmptyAxes());
  } else {
    reduced.assign(rank, !reduce.getNoopWithEmptyAxes());
  }
  // Trailing: from some axis on, every dim of size > 1 is reduced, none before.
  int64_t first = rank;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (reduced[d] || shape[d] == 1)
      first = d;
    else
      break;
  }
  for (int64_t d = 0; d < first; ++d)
    if (reduced[d] && shape[d] != 1)
      return RowAxisProblem{RowAxisProblem::ReduceNotTrailing, d};
  return first;
}

} // namespace sluice::kernel
