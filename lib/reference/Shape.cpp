//===- Shape.cpp - evaluators for shape and data-movement ops -------------===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <cstring>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

LogicalResult evalShape(Operation *op, ArrayRef<const Tensor *> operands,
                        std::vector<Tensor> &results) {
  auto shapeOp = cast<ShapeOp>(op);
  const auto &shape = operands[0]->shape();
  int64_t rank = shape.size();
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clamp(shapeOp.getStart());
  int64_t end = shapeOp.getEnd() ? clamp(*shapeOp.getEnd()) : rank;
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(shape[i]);
  results.push_back(Tensor::fromInt64(dims));
  return success();
}

LogicalResult evalReshape(Operation *op, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> target = operands[1]->toInt64Vector();
  bool allowZero = cast<ReshapeOp>(op).getAllowzero();
  int64_t inferIndex = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= x.shape().size())
        return op->emitOpError("shape entry ") << i << " copies a missing dim";
      target[i] = x.dim(i);
    }
    if (target[i] == -1) {
      if (inferIndex >= 0)
        return op->emitOpError("shape has more than one -1");
      inferIndex = i;
      continue;
    }
    if (target[i] < 0)
      return op->emitOpError("shape has negative entry ") << target[i];
    known *= target[i];
  }
  if (inferIndex >= 0) {
    if (known == 0 || x.numElements() % known)
      return op->emitOpError("cannot infer -1 reshaping ") << x.describe();
    target[inferIndex] = x.numElements() / known;
  } else if (known != x.numElements()) {
    return op->emitOpError("cannot reshape ")
           << x.describe() << " to " << shapeToString(target);
  }
  results.push_back(x.reshaped(target));
  return success();
}

LogicalResult evalTranspose(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  ArrayRef<int64_t> perm = cast<TransposeOp>(op).getPerm();
  std::vector<int64_t> outShape;
  for (int64_t p : perm)
    outShape.push_back(x.dim(p));
  // Iterate the output with the input's strides permuted.
  std::vector<int64_t> inStrides = x.strides(), permuted;
  for (int64_t p : perm)
    permuted.push_back(inStrides[p]);
  Tensor out(x.dtype(), outShape);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  int64_t total = out.numElements(), rank = outShape.size();
  std::vector<int64_t> counter(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(dst + i * width, src + offset * width, width);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++counter[d] < outShape[d]) {
        offset += permuted[d];
        break;
      }
      offset -= permuted[d] * (outShape[d] - 1);
      counter[d] = 0;
    }
  }
  results.push_back(std::move(out));
  return success();
}

} // namespace

void registerShapeEvaluators(EvalRegistry &r) {
  r.add(ShapeOp::getOperationName(), evalShape);
  r.add(ReshapeOp::getOperationName(), evalReshape);
  r.add(TransposeOp::getOperationName(), evalTranspose);
}

} // namespace sluice
