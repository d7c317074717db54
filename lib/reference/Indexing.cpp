//===- Indexing.cpp - evaluators for gathers, scatters, index-driven ops --===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <cstring>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

LogicalResult evalGather(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  const Tensor &x = *operands[0], &indices = *operands[1];
  auto axis = normalizeAxis(op, cast<GatherOp>(op).getAxis(), x.rank());
  if (failed(axis))
    return failure();
  int64_t outer = 1, inner = 1, extent = x.dim(*axis);
  for (int64_t i = 0; i < *axis; ++i)
    outer *= x.dim(i);
  for (int64_t i = *axis + 1; i < x.rank(); ++i)
    inner *= x.dim(i);
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + *axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), x.shape().begin() + *axis + 1, x.shape().end());
  Tensor out(x.dtype(), shape);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  int64_t count = indices.numElements();
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = indices.getInt(j);
    if (index < -extent || index >= extent)
      return op->emitOpError("index ") << index << " out of range for dim of size "
                                       << extent;
    if (index < 0)
      index += extent;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + ((o * count + j) * inner) * width,
                  src + ((o * extent + index) * inner) * width, inner * width);
  }
  results.push_back(std::move(out));
  return success();
}

} // namespace

void registerIndexingEvaluators(EvalRegistry &r) {
  r.add(GatherOp::getOperationName(), evalGather);
}

} // namespace sluice
