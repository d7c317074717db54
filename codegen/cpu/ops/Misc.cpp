//===- Misc.cpp - cpu emitters: ops with data-dependent result sizes ------===//
//
// NonZero, Compress, Unique and NonMaxSuppression: their result extents depend
// on input values. Their buffers are sized by upperBoundShape; the emitted
// code stores the actual extents into the graph output's dims
// (CpuOpContext::outDims), so these results must be graph outputs.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;

namespace sluice::codegen {

std::optional<std::vector<int64_t>> upperBoundShape(Operation *op, unsigned index) {
  auto staticShape = [](Value v) -> std::optional<std::vector<int64_t>> {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape())
      return std::nullopt;
    return std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
  };
  auto count = [](const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  };
  if (auto nonZero = dyn_cast<NonZeroOp>(op)) {
    auto in = staticShape(nonZero.getInput());
    if (!in)
      return std::nullopt;
    return std::vector<int64_t>{(int64_t)in->size(), count(*in)};
  }
  if (auto compress = dyn_cast<CompressOp>(op)) {
    auto in = staticShape(compress.getInput());
    if (!in)
      return std::nullopt;
    if (!compress.getAxis())
      return std::vector<int64_t>{count(*in)};
    int64_t axis = (int64_t)*compress.getAxis();
    if (axis < 0)
      axis += (int64_t)in->size();
    return *in; // the selected dim is at most the input's
  }
  if (auto unique = dyn_cast<UniqueOp>(op)) {
    auto in = staticShape(unique.getInput());
    if (!in)
      return std::nullopt;
    int64_t slices = count(*in);
    std::vector<int64_t> values = {slices};
    if (unique.getAxis()) {
      int64_t axis = *unique.getAxis();
      if (axis < 0)
        axis += (int64_t)in->size();
      slices = (*in)[axis];
      values = *in;
    }
    switch (index) {
    case 0: return values;
    case 2: return std::vector<int64_t>{unique.getAxis() ? slices : count(*in)};
    default: return std::vector<int64_t>{slices};
    }
  }
  if (auto nms = dyn_cast<NonMaxSuppressionOp>(op)) {
    auto scores = staticShape(nms.getScores());
    if (!scores || scores->size() != 3)
      return std::nullopt;
    int64_t boxes = (*scores)[2];
    if (Value max = nms.getMaxOutputBoxesPerClass())
      if (auto values = getConstantIntValues(max); values && values->size() == 1)
        boxes = std::min(boxes, std::max<int64_t>((*values)[0], 0));
    return std::vector<int64_t>{(*scores)[0] * (*scores)[1] * boxes, 3};
  }
  return std::nullopt;
}

void registerCpuMiscEmitters(CpuOpRegistry &registry) {}

} // namespace sluice::codegen
