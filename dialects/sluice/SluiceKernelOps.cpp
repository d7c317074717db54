//===- SluiceKernelOps.cpp - kernel groups --------------------------------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

/// The body takes the inputs and yields the results, type for type: code
/// generation maps block arguments and yielded values to buffers one to one.
LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments, expected one per input ("
                         << getInputs().size() << ")";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs().getTypes())))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError() << "body argument " << index << " has type "
                           << std::get<0>(pair) << ", input has "
                           << std::get<1>(pair);
  auto yield = dyn_cast<KernelYieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in sluice.kernel_yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types must equal the kernel's result types");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceKernelOps.cpp.inc"
