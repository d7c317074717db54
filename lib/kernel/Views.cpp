//===- Views.cpp - view ops inside kernel groups as strided accesses ------===//

#include "lib/kernel/Views.h"

#include "dialects/sluice/KernelForms.h"
#include "dialects/sluice/SluiceOps.h"

using namespace mlir;

namespace sluice::kernel {

static bool staticShaped(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape();
}

static ArrayRef<int64_t> dimsOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

bool readsContiguously(const StridedView &view, Value value) {
  if (view.base == value)
    return true;
  StridedView fromOffset = view;
  fromOffset.offset = 0;
  return fromOffset.isContiguous(dimsOf(value));
}

std::vector<int64_t> contiguousStrides(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

bool StridedView::isContiguous(ArrayRef<int64_t> shape) const {
  if (offset != 0)
    return false;
  std::vector<int64_t> c = contiguousStrides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && strides[d] != c[d])
      return false;
  return true;
}

FailureOr<std::vector<int64_t>> reshapeStrides(ArrayRef<int64_t> inShape,
                                               ArrayRef<int64_t> inStrides,
                                               ArrayRef<int64_t> outShape) {
  // Drop size-1 input dims; they carry no stride information.
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < inShape.size(); ++d)
    if (inShape[d] != 1) {
      shape.push_back(inShape[d]);
      strides.push_back(inStrides[d]);
    }
  std::vector<int64_t> out(outShape.size(), 0);
  int64_t total = 1;
  for (int64_t d : inShape)
    total *= d;
  if (total == 0) {
    // Empty tensors: any strides do.
    return contiguousStrides(outShape);
  }
  size_t oi = 0, oj = 1, ii = 0, ij = 1;
  size_t on = outShape.size(), in = shape.size();
  while (ii < in && oi < on) {
    int64_t np = shape[ii], op = outShape[oi];
    while (np != op) {
      if (np < op) {
        if (ij >= in)
          return failure();
        np *= shape[ij++];
      } else {
        if (oj >= on)
          return failure();
        op *= outShape[oj++];
      }
    }
    // Input dims [ii, ij) must be contiguous among themselves.
    for (size_t k = ii; k + 1 < ij; ++k)
      if (strides[k] != shape[k + 1] * strides[k + 1])
        return failure();
    out[oj - 1] = strides[ij - 1];
    for (size_t k = oj - 1; k > oi; --k)
      out[k - 1] = out[k] * outShape[k];
    ii = ij++;
    oi = oj++;
  }
  // Trailing size-1 output dims.
  for (size_t k = oi; k < on; ++k)
    out[k] = 1;
  return out;
}

FailureOr<std::vector<int64_t>> broadcastStridesTo(ArrayRef<int64_t> shape,
                                                   ArrayRef<int64_t> strides,
                                                   ArrayRef<int64_t> target) {
  if (shape.size() > target.size())
    return failure();
  std::vector<int64_t> out(target.size(), 0);
  size_t lead = target.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == target[lead + d])
      out[lead + d] = shape[d] == 1 ? 0 : strides[d];
    else if (shape[d] == 1)
      out[lead + d] = 0;
    else
      return failure();
  }
  return out;
}

/// ONNX Slice's effective start of one axis.
static int64_t sliceStart(int64_t start, int64_t step, int64_t dim) {
  if (start < 0)
    start += dim;
  if (step > 0)
    return std::clamp<int64_t>(start, 0, dim);
  return std::clamp<int64_t>(start, 0, dim - 1);
}

FailureOr<StridedView> resolveView(Value value, bool emitErrors) {
  Operation *op = value.getDefiningOp();
  if (!op || !isViewOp(op) || !staticShaped(value)) {
    StridedView v;
    v.base = value;
    if (auto t = dyn_cast<RankedTensorType>(value.getType()))
      v.strides = contiguousStrides(t.getShape());
    return v;
  }
  auto inner = resolveView(op->getOperand(0), emitErrors);
  if (failed(inner))
    return failure();
  ArrayRef<int64_t> inShape = dimsOf(op->getOperand(0)), outShape = dimsOf(value);
  StridedView v = *inner;
  if (auto t = dyn_cast<TransposeOp>(op)) {
    std::vector<int64_t> s;
    for (int64_t p : t.getPerm())
      s.push_back(inner->strides[p]);
    v.strides = s;
    return v;
  }
  if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp>(op)) {
    auto s = reshapeStrides(inShape, inner->strides, outShape);
    if (failed(s))
      return emitErrors ? op->emitOpError("cpu target: this reshape of a strided view needs a copy")
                        : failure();
    v.strides = *s;
    return v;
  }
  if (isa<ExpandOp>(op)) {
    auto s = broadcastStridesTo(inShape, inner->strides, outShape);
    if (failed(s))
      return emitErrors ? op->emitOpError("cpu target: expand shapes do not broadcast") : failure();
    v.strides = *s;
    return v;
  }
  if (auto split = dyn_cast<SplitOp>(op)) {
    int64_t rank = inShape.size();
    int64_t axis = (int64_t)split.getAxis();
    if (axis < 0)
      axis += rank;
    unsigned index = cast<OpResult>(value).getResultNumber();
    for (unsigned r = 0; r < index; ++r)
      v.offset += dimsOf(op->getResult(r))[axis] * inner->strides[axis];
    return v;
  }
  auto slice = cast<SliceOp>(op);
  auto starts = *getConstantIntValues(slice.getStarts());
  auto axes = *getConstantIntValues(slice.getAxes());
  auto steps = *getConstantIntValues(slice.getSteps());
  int64_t rank = inShape.size();
  for (size_t i = 0; i < axes.size() && i < starts.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    int64_t step = i < steps.size() ? steps[i] : 1;
    if (a < 0 || a >= rank || step == 0)
      return emitErrors ? op->emitOpError("cpu target: bad slice parameters") : failure();
    if (outShape[a] == 0)
      continue;
    v.offset += sliceStart(starts[i], step, inShape[a]) * inner->strides[a];
    v.strides[a] = inner->strides[a] * step;
  }
  return v;
}

Value stripOutputViews(Value result) {
  Value v = result;
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<TransposeOp, ReshapeOp, SqueezeOp, UnsqueezeOp>(op) || !isViewOp(op))
      break;
    v = op->getOperand(0);
  }
  return v;
}

FailureOr<StridedView> resolveOutputView(Value value, Value target) {
  // Walk from the target back to the value, turning the buffer's strides
  // (contiguous for the target's shape) into strides for each operand.
  StridedView v;
  v.base = target;
  v.strides = contiguousStrides(dimsOf(target));
  Value current = target;
  while (current != value) {
    Operation *op = current.getDefiningOp();
    if (!op || !isViewOp(op) || !isa<TransposeOp, ReshapeOp, SqueezeOp, UnsqueezeOp>(op))
      return failure();
    Value operand = op->getOperand(0);
    if (auto t = dyn_cast<TransposeOp>(op)) {
      std::vector<int64_t> s(v.strides.size());
      for (auto [i, p] : llvm::enumerate(t.getPerm()))
        s[p] = v.strides[i];
      v.strides = s;
    } else {
      auto s = reshapeStrides(dimsOf(current), v.strides, dimsOf(operand));
      if (failed(s))
        return failure();
      v.strides = *s;
    }
    current = operand;
  }
  return v;
}

} // namespace sluice::kernel
