//===- EvalUtils.cpp - helpers shared by evaluator families ---------------===//

#include "lib/reference/EvalUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace sluice {

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &inShape,
                                      const std::vector<int64_t> &outShape) {
  size_t rank = outShape.size(), offset = rank - inShape.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int64_t d = (int64_t)inShape.size() - 1; d >= 0; --d) {
    strides[d + offset] = inShape[d] == 1 ? 0 : stride;
    stride *= inShape[d];
  }
  return strides;
}

FailureOr<std::vector<int64_t>>
broadcastShapes(Operation *op, const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[i + offset];
      if (s[i] == o || s[i] == 1)
        continue;
      if (o != 1) {
        std::string a = shapeToString(s), b = shapeToString(out);
        return op->emitOpError("operand shapes ")
               << a << " and " << b << " do not broadcast";
      }
      o = s[i];
    }
  }
  return out;
}

void unravelIndex(int64_t flat, const std::vector<int64_t> &shape,
                  std::vector<int64_t> &index) {
  index.resize(shape.size());
  for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
}

FailureOr<int64_t> normalizeAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return op->emitOpError("axis ") << axis << " out of range for rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

DType resultDType(Operation *op, unsigned index) {
  auto type = cast<ShapedType>(op->getResult(index).getType());
  return *dtypeFromType(type.getElementType());
}

} // namespace sluice
