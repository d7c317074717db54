//===- Shape.cpp - ONNX shape and data-movement ops -----------------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

LogicalResult shapeHandler(Binder &b) {
  std::optional<int64_t> end;
  if (b.hasAttr("end"))
    end = b.attrInt("end", 0);
  return b.output(b.create<ShapeOp>(b.input(0), b.attrInt("start", 0),
                                    end ? b.b.getI64IntegerAttr(*end) : IntegerAttr()));
}

LogicalResult reshapeHandler(Binder &b) {
  Value shape;
  if (b.opset() < 5)
    shape = b.constI64(b.attrInts("shape"));
  else
    shape = b.input(1);
  return b.output(b.create<ReshapeOp>(b.input(0), shape,
                                      b.attrInt("allowzero", 0) != 0));
}

LogicalResult transposeHandler(Binder &b) {
  auto type = b.rankedType(0);
  std::vector<int64_t> perm = b.attrInts("perm");
  if (perm.empty()) {
    if (!type)
      return b.fail("Transpose without perm needs a ranked input");
    for (int64_t i = type.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  }
  return b.output(b.create<TransposeOp>(b.input(0), ArrayRef<int64_t>(perm)));
}

} // namespace

void registerShapeHandlers(OpRegistry &r) {
  r.on("Shape", 1, shapeHandler);
  r.on("Reshape", 1, reshapeHandler);
  r.on("Transpose", 1, transposeHandler);
}

} // namespace sluice::onnx_import
