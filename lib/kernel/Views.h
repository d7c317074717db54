//===- Views.h - view ops inside kernel groups as strided accesses -*- C++ -*-===//
//
// Part of the kernel model. Reshape, squeeze, unsqueeze, transpose, slice,
// split and expand move no data (kernel::isViewOp, dialects/sluice/
// KernelForms.h): inside a kernel group they become an element offset and
// per-dim strides into the buffer they view (NumPy's no-copy rules). Every group
// emitter reads its leaves and writes its results through these, so that
// the head split of a QKV GEMM output, the transposes around attention and
// the broadcast of a bias cost no pass over memory.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_KERNEL_VIEWS_H
#define SLUICE_LIB_KERNEL_VIEWS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::kernel {

/// Where the elements of a value live: `base` (a kernel-body block argument,
/// a constant, or a value computed inside the group) at element `offset`
/// with one stride per dim of the value (0 on broadcast dims).
struct StridedView {
  mlir::Value base;
  int64_t offset = 0;
  std::vector<int64_t> strides;
  /// Whether the view is the base's own row-major layout.
  bool isContiguous(llvm::ArrayRef<int64_t> shape) const;
};

/// Whether `view`, resolved from `value`, reads its base as one row-major
/// block of `value`'s shape (from its offset on): `value` itself, or an alias
/// of its base through layout-preserving views. What an op emitter that
/// takes plain buffers, not strides, needs of each operand.
bool readsContiguously(const StridedView &view, mlir::Value value);

/// Row-major strides of `shape`.
std::vector<int64_t> contiguousStrides(llvm::ArrayRef<int64_t> shape);

/// Follows `value` back through view ops to the first value that is not
/// the result of one and composes their strides. Fails (with an error on
/// the view op) when a reshape of a strided view cannot be expressed with
/// strides (quietly when `emitErrors` is false: the fuse phase asks).
mlir::FailureOr<StridedView> resolveView(mlir::Value value, bool emitErrors = true);

/// The strides `value` gets when it is written to a contiguous buffer of
/// shape `target` through the chain of view ops from `value` to `target`
/// (transposes and reshapes: what a group yields after its last compute
/// op). `target` must be reached from `value` through single-use view ops.
mlir::FailureOr<StridedView> resolveOutputView(mlir::Value value, mlir::Value target);

/// The value a yielded `result` is computed as: `result` itself, or the
/// operand at the start of the chain of transposes/reshapes ending in it.
mlir::Value stripOutputViews(mlir::Value result);

/// Broadcasts a view of shape `shape` to `target` (NumPy right-aligned):
/// stride 0 on new and size-1 dims. Fails if the shapes do not broadcast.
mlir::FailureOr<std::vector<int64_t>>
broadcastStridesTo(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> strides,
                   llvm::ArrayRef<int64_t> target);

/// Re-expresses a strided view of `inShape` as one of `outShape` with the
/// same elements in row-major order (NumPy's attempt_nocopy_reshape).
/// Fails when that needs a copy.
mlir::FailureOr<std::vector<int64_t>> reshapeStrides(llvm::ArrayRef<int64_t> inShape,
                                                     llvm::ArrayRef<int64_t> inStrides,
                                                     llvm::ArrayRef<int64_t> outShape);

} // namespace sluice::kernel

#endif // SLUICE_LIB_KERNEL_VIEWS_H
