//===- Groups.h - the anatomy of a kernel group -----------------*- C++ -*-===//
//
// Part of the kernel model: what a group body of forms F2-F4 is made of (its
// anchor, the ops before and after it) and where a row op's rows start. Pure
// analysis of the IR, shared by the fuse passes' checks and both targets'
// emitters, which report problems their own way.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_KERNEL_GROUPS_H
#define SLUICE_LIB_KERNEL_GROUPS_H

#include "dialects/sluice/SluiceOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <variant>

namespace sluice::kernel {

/// The compute ops of a group body with one anchor op (forms F2-F4):
/// constants and views are passed over; the first op `isAnchor` accepts is
/// the anchor (null when none is), the others are the ops before and after
/// it, in block order; `yield` is the body's terminator.
struct GroupOps {
  KernelYieldOp yield;
  mlir::Operation *anchor = nullptr;
  llvm::SmallVector<mlir::Operation *> before, after;
};
GroupOps splitGroupOps(KernelOp kernel, llvm::function_ref<bool(mlir::Operation *)> isAnchor);

/// The first yield operand of `kernel` that carries `result` (a value of the
/// body): `result` itself or a chain of layout-preserving views of it.
std::optional<unsigned> yieldSlotOf(KernelOp kernel, mlir::Value result);

/// Where a value a row group (form F3) yields is computed: in the prologue
/// (before the row op, in its input's shape) or the epilogue (the row op's
/// result or after it, in the result's shape); or why it is neither.
enum class RowYield { Prologue, Epilogue, Neither, WrongShape };
/// The RowYield of `root` (a yielded value with its output views stripped)
/// in the row group `parts`, whose row op reads `x` and yields `y`.
RowYield rowYieldOf(const GroupOps &parts, mlir::Value x, mlir::Value y, mlir::Value root);

/// Why a row op has no row axis (see rowAxisOf): the check that failed and
/// the axis it names (as written for AxisOutOfRange, normalized otherwise).
struct RowAxisProblem {
  enum Kind { AxisOutOfRange, SoftmaxNotInnermost, ReduceAxesNotConstant, ReduceNotTrailing };
  Kind kind;
  int64_t axis = 0;
};

/// The first normalized / reduced dim of a row op over trailing dims
/// (softmax: its axis, every later dim of size 1; layer_norm / rms_norm:
/// their axis; reduce: the first dim from which on every dim of size > 1 is
/// reduced, none before), or the problem. Shared by the cpu and cuda row
/// emitters, which report problems their own way (op error / host step).
std::variant<int64_t, RowAxisProblem> rowAxisOf(mlir::Operation *op);

} // namespace sluice::kernel

#endif // SLUICE_LIB_KERNEL_GROUPS_H
