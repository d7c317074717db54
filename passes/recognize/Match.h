//===- Match.h - helpers shared by the recognize-phase passes ----*- C++ -*-===//
//
// Reading scalar constants, checking that a chain's intermediates feed only
// the chain, naming the ONNX nodes a composite came from, and erasing the
// chain (through the pattern's rewriter) once its root has been replaced.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_RECOGNIZE_MATCH_H
#define SLUICE_PASSES_RECOGNIZE_MATCH_H

#include "dialects/sluice/SluiceOps.h"
#include "lib/reference/Evaluator.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <optional>

namespace sluice {
namespace recognize {

/// The locations of `ops` (one block), fused in program order.
inline mlir::Location fusedLoc(llvm::ArrayRef<mlir::Operation *> ops) {
  llvm::SmallVector<mlir::Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted, [](mlir::Operation *a, mlir::Operation *b) { return a->isBeforeInBlock(b); });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  llvm::SmallVector<mlir::Location> locs;
  for (mlir::Operation *op : sorted)
    locs.push_back(op->getLoc());
  return locs.size() == 1 ? locs.front() : mlir::FusedLoc::get(sorted.front()->getContext(), locs);
}

/// The location of a composite that replaces the chain ending at `root`:
/// the locations of `root` and of the single-use ops feeding it (stopping at
/// `stops`, the composite's operands, at constants and at values other ops
/// read too), fused in program order, so that the composite names every
/// ONNX node it came from (--emit=kernels, --report, errors).
inline mlir::Location chainLoc(mlir::Operation *root, llvm::ArrayRef<mlir::Value> stops) {
  llvm::SmallVector<mlir::Operation *> chain{root};
  llvm::SmallPtrSet<mlir::Operation *, 16> seen{root};
  for (size_t i = 0; i < chain.size(); ++i)
    for (mlir::Value operand : chain[i]->getOperands()) {
      mlir::Operation *def = operand.getDefiningOp();
      if (!def || llvm::is_contained(stops, operand) || mlir::isa<ConstantOp>(def) ||
          def->getBlock() != root->getBlock() || !operand.hasOneUse() || !seen.insert(def).second)
        continue;
      chain.push_back(def);
    }
  return fusedLoc(chain);
}

/// The value every element of a constant holds, when they all hold one
/// (a scalar, or a splat of any shape up to 4096 elements).
inline std::optional<double> splatValue(mlir::Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto tensor = tensorFromAttr(constant.getValue());
  if (mlir::failed(tensor) || tensor->numElements() < 1 ||
      tensor->numElements() > 4096 || tensor->dtype() == DType::String ||
      tensor->dtype() == DType::Bool)
    return std::nullopt;
  double first = tensor->getDouble(0);
  for (int64_t i = 1; i < tensor->numElements(); ++i)
    if (tensor->getDouble(i) != first &&
        !(std::isnan(first) && std::isnan(tensor->getDouble(i))))
      return std::nullopt;
  return first;
}

/// Whether `value` is a constant splat close to `expected` (relative
/// tolerance `rtol`: exporters write constants like 1.4142 or 0.7071).
inline bool isSplatNear(mlir::Value value, double expected, double rtol = 1e-4) {
  auto v = splatValue(value);
  return v && std::abs(*v - expected) <= rtol * std::abs(expected);
}

/// The integers a constant holds (axes, shapes), if it is one.
inline std::optional<llvm::SmallVector<int64_t>> intConstant(mlir::Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto tensor = tensorFromAttr(constant.getValue());
  if (mlir::failed(tensor))
    return std::nullopt;
  auto values = tensor->toInt64Vector();
  return llvm::SmallVector<int64_t>(values.begin(), values.end());
}

/// Whether every user of `value` is one of `users`.
inline bool onlyUsedBy(mlir::Value value, llvm::ArrayRef<mlir::Operation *> users) {
  return llvm::all_of(value.getUsers(),
                      [&](mlir::Operation *u) { return llvm::is_contained(users, u); });
}

/// Whether `value` has exactly one use.
inline bool singleUse(mlir::Value value) { return value.hasOneUse(); }

/// The operand of a two-operand op other than `one` (null if `one` is not
/// an operand, or is both).
inline mlir::Value otherOperand(mlir::Operation *op, mlir::Value one) {
  if (op->getNumOperands() != 2)
    return {};
  if (op->getOperand(0) == one && op->getOperand(1) != one)
    return op->getOperand(1);
  if (op->getOperand(1) == one && op->getOperand(0) != one)
    return op->getOperand(0);
  return {};
}

/// A rank-0 constant of `elementType` (a float type) holding `value`.
inline mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Type elementType, double value) {
  auto type = mlir::RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc, mlir::DenseElementsAttr::get(type, mlir::FloatAttr::get(elementType, value)));
}

/// A 1-D i64 constant (axes, shapes, slice bounds).
inline mlir::Value i64Constant(mlir::OpBuilder &b, mlir::Location loc,
                               llvm::ArrayRef<int64_t> values) {
  auto type = mlir::RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
  return ConstantOp::create(b, loc, mlir::DenseElementsAttr::get(type, values));
}

/// Erases, through `rewriter`, the ops of a replaced chain that have no users
/// left (in any order: repeats until nothing more goes), and the constants
/// they alone read.
inline void eraseDeadOps(mlir::RewriterBase &rewriter,
                         llvm::ArrayRef<mlir::Operation *> chain) {
  llvm::SmallVector<mlir::Operation *> ops(chain.begin(), chain.end());
  llvm::SmallPtrSet<mlir::Operation *, 16> seen(chain.begin(), chain.end()), erased;
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      mlir::Operation *op = ops[i];
      if (erased.contains(op) || !op->use_empty())
        continue;
      for (mlir::Value operand : op->getOperands())
        if (auto constant = operand.getDefiningOp<ConstantOp>())
          if (seen.insert(constant).second)
            ops.push_back(constant);
      erased.insert(op);
      rewriter.eraseOp(op);
      changed = true;
    }
  }
}

/// The ranked tensor type of `value`, or null.
inline mlir::RankedTensorType rankedType(mlir::Value value) {
  return llvm::dyn_cast<mlir::RankedTensorType>(value.getType());
}

} // namespace recognize
} // namespace sluice

#endif // SLUICE_PASSES_RECOGNIZE_MATCH_H
