//===- SluiceTypes.h - shape and type helpers shared by op families -------===//
//
// Helpers that op verifiers and result-type inference share: NumPy
// broadcasting, axis normalization, reading constant operands, and the
// compatibility rule between inferred and declared result types.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_DIALECTS_SLUICE_SLUICETYPES_H
#define SLUICE_DIALECTS_SLUICE_SLUICETYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace sluice {

// The dialect lives in ::sluice beside the rest of the project; these are the
// MLIR names its helpers use.
using mlir::ArrayRef;
using mlir::FailureOr;
using mlir::Location;
using mlir::LogicalResult;
using mlir::SmallVector;
using mlir::TensorType;
using mlir::Type;
using mlir::TypeRange;
using mlir::Value;

/// Inferred and declared result types agree when they have the same element
/// type and, if both are ranked, the same rank and no two static dims differ.
/// This lets a declared type be more static than what inference could derive.
bool areCompatibleResultTypes(TypeRange inferred, TypeRange declared);

/// The most specific type both `a` and `b` are instances of: tensors of one
/// element type keep equal dims, differing dims become dynamic, differing
/// ranks unranked; sequences and optionals join what they hold. Fails on
/// different element types or kinds (If branches, sequence elements).
FailureOr<Type> joinTypes(Type a, Type b);
/// A type every later value of a loop-carried `type` is an instance of:
/// tensors keep their rank with dynamic dims, sequence elements become
/// unranked (a loop may insert tensors of any shape).
Type relaxShapes(Type type);

/// Broadcasts two shapes NumPy-style (dynamic dims stay dynamic unless the
/// other side is static and not 1). Fails on static dims that disagree.
FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b);

/// Broadcasts the shapes of tensor types; returns an unranked shape (nullopt)
/// if any is unranked. Emits an error at `loc` (when given) on mismatch.
FailureOr<std::optional<SmallVector<int64_t>>>
broadcastTypes(std::optional<Location> loc, TypeRange types);

/// Builds a tensor type with `shape` (or unranked when nullopt) and `element`.
TensorType makeTensorType(std::optional<ArrayRef<int64_t>> shape,
                          Type element);

/// Normalizes a possibly negative axis into [0, rank). Fails if out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The integer values of `value` if it is produced by a constant
/// (sluice.constant or anything ConstantLike) holding integers.
std::optional<SmallVector<int64_t>> getConstantIntValues(Value value);

/// The floating-point values of a constant operand (integers are converted;
/// f32 dense_resource blobs are read too).
std::optional<SmallVector<double>> getConstantFloatValues(Value value);

/// The [start, end) dim range of ONNX Shape (opset 15): negative values
/// count from the back, both are clamped to [0, rank].
std::pair<int64_t, int64_t> shapeRange(int64_t rank, int64_t start,
                                       std::optional<int64_t> end);

/// ONNX Slice clamping for one axis of (static) size `dim`: the first index
/// and the element count. INT64 extremes (INT_MAX ends) are safe.
std::pair<int64_t, int64_t> sliceRange(int64_t dim, int64_t start, int64_t end,
                                       int64_t step);

/// Shape of a ranked tensor value or nullopt for unranked.
std::optional<SmallVector<int64_t>> getShape(Value value);

} // namespace sluice

#endif // SLUICE_DIALECTS_SLUICE_SLUICETYPES_H
