//===- SluicePipelineOps.cpp - pipeline stages' transfers -----------------===//

#include "dialects/sluice/SluicePipelineOps.h"

using namespace mlir;
using namespace sluice;

LogicalResult TransferOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                           TransferOp::Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult TransferOp::verify() {
  if (getTo() <= getFrom())
    return emitOpError() << "sends from stage " << getFrom() << " to stage " << getTo()
                         << "; activations go to a later stage";
  if (getStageSize() == 0)
    return emitOpError("stage_size must be at least 1");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluicePipelineOps.cpp.inc"
