//===- Passes.h - sluice passes ----------------------------------*- C++ -*-===//

#ifndef SLUICE_PASSES_PASSES_H
#define SLUICE_PASSES_PASSES_H

#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Folds every op of `func` whose operands are all constants (results up to
/// `maxElements` elements) and re-infers every other op's result types, in
/// program order; updates the function's result types.
mlir::LogicalResult propagateShapes(mlir::func::FuncOp func, int64_t maxElements);

/// propagateShapes on `ops` only (in this order; ops of one block, each
/// folded or re-inferred after its operands, descending into their regions).
/// Folded ops are erased, so `ops` must not be used afterwards.
void propagateOps(llvm::ArrayRef<mlir::Operation *> ops, int64_t maxElements);

/// Bytes a static tensor of `type` takes in a buffer (i1: one byte per
/// element); -1 when the shape is not static.
int64_t storageBytes(mlir::Type type);

/// The canonical name ("fp32", "fp16", "bf16") of a --precision value, also
/// accepting aliases (f32/float32/float, f16/float16/half, bfloat16; any
/// case); nullopt for anything else.
std::optional<std::string> parsePrecision(llvm::StringRef name);

/// Parses "2x128" ("scalar" or "" for rank 0) into dims.
mlir::FailureOr<std::vector<int64_t>> parseShape(llvm::StringRef text);

/// Parses a sequence's element shapes, "3x4,3x4,2x4" (one shape per element,
/// "scalar" for rank 0), or "empty" for no elements.
mlir::FailureOr<std::vector<std::vector<int64_t>>> parseShapeList(llvm::StringRef text);

} // namespace sluice

#endif // SLUICE_PASSES_PASSES_H
