//===- Epilogue.h - elementwise code around GEMMs and row ops -*- C++ -*-===//
//
// What forms F2 (GEMM + epilogue) and F3 (row op + prologue/epilogue) share:
// elementwise ops evaluated over a space split into "rows" (outer dims, one
// flat row index R) and an inner run (trailing dims, index j). Every leaf
// and output is an access with strides over the space; per row each gets a
// base offset, and the inner loop steps it by one collapsed stride, so the
// inner loop is a plain `omp simd` loop over the scalar emitter's
// expressions (as in groups/Elementwise.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_EPILOGUE_H
#define SLUICE_CODEGEN_COMMON_EPILOGUE_H

#include "codegen/common/CodeWriter.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/GroupContext.h"
#include "codegen/common/ModelFacts.h"
#include "lib/kernel/Access.h"

#include "llvm/ADT/MapVector.h"

#include <optional>

namespace sluice::codegen::epilogue {

/// The one stride of `strides` over dims [split, rank) of `space` when they
/// collapse into a single run (size-1 dims ignored).
inline std::optional<int64_t> innerStride(llvm::ArrayRef<int64_t> space, int64_t split,
                                          llvm::ArrayRef<int64_t> strides) {
  std::optional<int64_t> stride;
  int64_t expected = 0;
  bool first = true;
  for (int64_t d = (int64_t)space.size() - 1; d >= split; --d) {
    if (space[d] == 1)
      continue;
    if (first) {
      stride = strides[d];
      expected = strides[d] * space[d];
      first = false;
      continue;
    }
    if (strides[d] != expected)
      return std::nullopt;
    expected = strides[d] * space[d];
  }
  return stride ? stride : std::optional<int64_t>(0);
}

/// Elementwise ops over the space, as scalar C++ in an inner loop.
struct Body {
  GroupContext &ctx;
  llvm::ArrayRef<int64_t> space;
  int64_t split; // dims [0, split) are rows, [split, rank) the inner run
  /// Every leaf and output, with strides over the space.
  std::vector<kernel::Access> accesses;
  std::vector<int64_t> inner; // collapsed inner stride per access
  llvm::MapVector<mlir::Value, unsigned> leafAccess;
  llvm::DenseMap<mlir::Value, std::string> expr;
  /// Names of the per-row bases: <prefix><access>.
  std::string prefix = "b";

  Body(GroupContext &ctx, llvm::ArrayRef<int64_t> space, int64_t split)
      : ctx(ctx), space(space), split(split) {}

  mlir::LogicalResult addAccess(kernel::Access a, const char *what) {
    auto s = innerStride(space, split, a.strides);
    if (!s)
      return ctx.kernel.emitOpError("cpu target: ")
             << what << " is not one strided run over the trailing dims of a row";
    inner.push_back(*s);
    accesses.push_back(std::move(a));
    return mlir::success();
  }

  /// The element index of access `a` in the inner loop (index `j`).
  std::string index(unsigned a, const std::string &j = "j") const {
    std::string base = prefix + std::to_string(a);
    if (inner[a] == 0)
      return base;
    if (inner[a] == 1)
      return base + " + " + j;
    return base + " + " + j + " * " + std::to_string(inner[a]);
  }

  /// Statements computing each access's base `<prefix><a>` for flat row
  /// `row`: one multiply when the access's row dims collapse into one
  /// stride, else through the row's coordinates.
  void rowBases(CodeWriter &w, const std::string &row) const {
    std::vector<std::string> coords(split);
    bool needCoords = false;
    for (const kernel::Access &a : accesses)
      needCoords |= !rowStride(a).has_value();
    if (needCoords) {
      const std::string rest = prefix + "rest_";
      w.line("int64_t {0} = {1};", rest, row);
      for (int64_t d = split - 1; d >= 0; --d) {
        coords[d] = prefix + "r" + std::to_string(d) + "_";
        w.line("const int64_t {0} = {1} % {2}; {1} /= {2};", coords[d], rest, space[d]);
      }
      std::string unused = "(void)" + rest + ";";
      for (int64_t d = 0; d < split; ++d)
        unused += " (void)" + coords[d] + ";";
      w.line("{0}", unused);
    }
    for (auto [i, a] : llvm::enumerate(accesses)) {
      std::string e = std::to_string(a.offset);
      if (auto f = rowStride(a)) {
        if (*f)
          e += " + " + row + " * " + std::to_string(*f);
      } else {
        for (int64_t d = 0; d < split; ++d)
          if (a.strides[d] && space[d] != 1)
            e += " + " + coords[d] + " * " + std::to_string(a.strides[d]);
      }
      w.line("const int64_t {0}{1} = {2}; (void){0}{1};", prefix, i, e);
    }
  }

  /// The single stride of the flat row index when the access's row dims
  /// collapse (size-1 dims ignored; 0 when every row dim is 1).
  std::optional<int64_t> rowStride(const kernel::Access &a) const {
    std::optional<int64_t> stride;
    int64_t expected = 0;
    for (int64_t d = split - 1; d >= 0; --d) {
      if (space[d] == 1)
        continue;
      if (!stride) {
        stride = a.strides[d];
        expected = a.strides[d] * space[d];
      } else if (a.strides[d] != expected) {
        return std::nullopt;
      } else {
        expected = a.strides[d] * space[d];
      }
    }
    return stride ? *stride : 0;
  }

  /// Registers `operand` (read by an elementwise op) as a leaf access unless
  /// it is computed in the group or a literal.
  mlir::LogicalResult addLeaf(mlir::Value operand) {
    if (leafAccess.count(operand) || expr.count(operand) || ctx.literals.count(operand))
      return mlir::success();
    if (mlir::Operation *def = operand.getDefiningOp();
        def && !mlir::isa<ConstantOp>(def) && !isViewOp(def))
      return mlir::success(); // computed in the group
    auto view = resolveView(operand);
    if (failed(view))
      return mlir::failure();
    if (ctx.literals.count(view->base))
      return mlir::success();
    if (mlir::Operation *def = view->base.getDefiningOp(); def && !mlir::isa<ConstantOp>(def)) {
      // A layout-preserving view of a value computed per element (lookup
      // reads the base's expression).
      if (shapeOf(view->base) == shapeOf(operand) && view->isContiguous(shapeOf(operand)))
        return mlir::success();
      return ctx.kernel.emitOpError("cpu target: a strided view of a computed value in an epilogue");
    }
    if (!ctx.pointers.count(view->base))
      return ctx.kernel.emitOpError("cpu target: a view of a computed value in an epilogue");
    auto strides = broadcastStridesTo(shapeOf(operand), view->strides, space);
    if (failed(strides))
      return ctx.kernel.emitOpError("cpu target: an epilogue operand does not broadcast to the group's shape");
    leafAccess[operand] = accesses.size();
    return addAccess({ctx.pointers.lookup(view->base), view->offset, *strides}, "an operand");
  }

  std::string lookup(mlir::Value v) const {
    if (expr.count(v))
      return expr.lookup(v);
    if (ctx.literals.count(v))
      return ctx.literals.lookup(v);
    auto view = resolveView(v);
    if (succeeded(view) && ctx.literals.count(view->base))
      return ctx.literals.lookup(view->base);
    if (succeeded(view) && expr.count(view->base))
      return expr.lookup(view->base);
    return "";
  }

  /// Loads of the leaves read by `ops`: call after addLeaf on all of them.
  void bindLeaves() {
    for (auto &[value, a] : leafAccess)
      expr[value] = loadExpr(elementOf(value), accesses[a].pointer + "[" + index(a) + "]");
  }

  /// One `const T vN = ...;` per op (N counts on from `locals`).
  mlir::LogicalResult emitOps(CodeWriter &w, llvm::ArrayRef<mlir::Operation *> ops, int &locals) {
    for (mlir::Operation *op : ops) {
      std::vector<std::string> operands;
      for (mlir::Value operand : op->getOperands()) {
        operands.push_back(lookup(operand));
        if (operands.back().empty())
          return op->emitOpError("cpu target: an operand of this epilogue op has no value");
      }
      auto e = emitScalar(op, operands);
      if (failed(e))
        return mlir::failure();
      std::string local = "v" + std::to_string(locals++);
      w.line("const {0} {1} = {2};", computeType(elementOf(op->getResult(0))), local, *e);
      expr[op->getResult(0)] = local;
    }
    return mlir::success();
  }
};

} // namespace sluice::codegen::epilogue

#endif // SLUICE_CODEGEN_COMMON_EPILOGUE_H
