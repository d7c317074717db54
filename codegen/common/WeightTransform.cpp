//===- WeightTransform.cpp - weights stored in a kernel's own layout ------===//

#include "codegen/common/WeightTransform.h"

using namespace mlir;

namespace sluice::codegen {

std::optional<WeightTransform> storedTransform(Value weight, WeightTransformQuery query) {
  if (!query || !weight.getDefiningOp<ConstantOp>() || weight.use_empty())
    return std::nullopt;
  std::optional<WeightTransform> agreed;
  for (OpOperand &use : weight.getUses()) {
    auto kernel = dyn_cast<KernelOp>(use.getOwner());
    if (!kernel)
      return std::nullopt; // read outside a kernel (returned as an output)
    std::optional<WeightTransform> wanted = query(kernel, use.getOperandNumber());
    if (!wanted || (agreed && agreed->key != wanted->key))
      return std::nullopt;
    agreed = std::move(wanted);
  }
  return agreed;
}

} // namespace sluice::codegen
