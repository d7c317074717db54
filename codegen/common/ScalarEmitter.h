//===- ScalarEmitter.h - elementwise ops as C++ scalar expressions -*- C++ -*-===//
//
// The one scalar-expression emitter both targets share: it spells the body
// of a kernel group, one op at a time, as C++ expressions over the helpers of
// codegen/include/sluice_gen/scalar.h. The cpu target wraps the expressions in
// OpenMP loops; the cuda target in a grid-stride loop. Nothing here knows
// about loops, threads or memory.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_SCALAREMITTER_H
#define SLUICE_CODEGEN_COMMON_SCALAREMITTER_H

#include "dialects/sluice/KernelForms.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <string>

namespace sluice::codegen {

/// C++ storage type of an element type (float, sluice_f16, int64_t, bool ...).
std::string storageType(mlir::Type elementType);
/// The type arithmetic happens in: float for f16/bf16/f32, double for f64,
/// int64_t for every integer type (as the evaluator does), bool for i1.
std::string computeType(mlir::Type elementType);
/// Bytes one element takes in a buffer (i1: one byte).
int64_t storageBytes(mlir::Type elementType);
/// `expr` (a storage-typed value) converted to its compute type.
std::string loadExpr(mlir::Type elementType, const std::string &expr);
/// `expr` (any arithmetic value) converted to storage type of `elementType`.
std::string storeExpr(mlir::Type elementType, const std::string &expr);
/// A C++ literal of `elementType`'s compute type holding element `index` of
/// `value` (handles inf and NaN).
std::string literal(mlir::DenseElementsAttr value, int64_t index);

/// Whether `op` is computed one element at a time from the elements at the
/// same (broadcast) position of its operands (the kernel model's category).
using kernel::isElementwise;

/// The expression computing one element of `op`'s result (in the result's
/// compute type) from its operands' elements (each in its own compute type).
/// Fails (with an error on the op) for ops that are not elementwise.
mlir::FailureOr<std::string> emitScalar(mlir::Operation *op,
                                        llvm::ArrayRef<std::string> operands);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_SCALAREMITTER_H
