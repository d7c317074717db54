//===- SluiceControlOps.cpp - structured control flow ---------------------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

/// Yielded values must agree with the op's results in count and element type
/// (shapes may differ: a branch can be more static than the join).
static LogicalResult verifyYieldTypes(Operation *op, TypeRange yielded,
                                      TypeRange expected, StringRef what) {
  if (yielded.size() != expected.size())
    return op->emitOpError() << what << " yields " << yielded.size()
                             << " values, expected " << expected.size();
  for (auto [index, pair] : llvm::enumerate(llvm::zip(yielded, expected))) {
    auto [y, e] = pair;
    if (!areCompatibleResultTypes(y, e))
      return op->emitOpError() << what << " value " << index << " has type " << y
                               << ", incompatible with " << e;
  }
  return success();
}

LogicalResult IfOp::verify() {
  auto condition = cast<TensorType>(getCondition().getType());
  if (condition.hasRank() && condition.getNumElements() != 1)
    return emitOpError("condition must hold exactly one element");
  for (Region *region : {&getThenRegion(), &getElseRegion()}) {
    auto yield = cast<YieldOp>(region->front().getTerminator());
    if (failed(verifyYieldTypes(*this, yield.getValues().getTypes(),
                                getResultTypes(),
                                region == &getThenRegion() ? "then branch"
                                                           : "else branch")))
      return failure();
  }
  return success();
}

LogicalResult LoopOp::verify() {
  Block &body = getBody().front();
  size_t carried = getInitialValues().size();
  if (body.getNumArguments() != carried + 2)
    return emitOpError("body takes ")
           << body.getNumArguments() << " arguments, expected " << carried + 2
           << " (iteration, condition, carried values)";
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() < carried + 1)
    return emitOpError("body yields ")
           << yield.getValues().size() << " values, expected at least "
           << carried + 1 << " (condition, carried values)";
  if (getNumResults() != yield.getValues().size() - 1)
    return emitOpError("has ") << getNumResults() << " results, body yields "
                               << yield.getValues().size() - 1
                               << " carried and scan values";
  TypeRange yielded = yield.getValues().getTypes();
  return verifyYieldTypes(*this, yielded.drop_front().take_front(carried),
                          TypeRange(getResultTypes()).take_front(carried), "body carried");
}

LogicalResult ScanOp::verify() {
  int64_t numInputs = getInputs().size();
  int64_t numScanInputs = getNumScanInputs();
  if (numScanInputs < 1 || numScanInputs > numInputs)
    return emitOpError("num_scan_inputs is ")
           << numScanInputs << ", must be in [1, " << numInputs << "]";
  int64_t numStates = numInputs - numScanInputs;
  if ((int64_t)getScanInputAxes().size() != numScanInputs ||
      (int64_t)getScanInputDirections().size() != numScanInputs)
    return emitOpError("needs one scan input axis and direction per scan input");
  if ((int64_t)getNumResults() < numStates)
    return emitOpError("has ") << getNumResults() << " results, fewer than its "
                               << numStates << " states";
  int64_t numScanOutputs = getNumResults() - numStates;
  if ((int64_t)getScanOutputAxes().size() != numScanOutputs ||
      (int64_t)getScanOutputDirections().size() != numScanOutputs)
    return emitOpError("needs one scan output axis and direction per scan output");
  for (ArrayRef<int64_t> directions :
       {getScanInputDirections(), getScanOutputDirections()})
    if (llvm::any_of(directions, [](int64_t d) { return d != 0 && d != 1; }))
      return emitOpError("directions must be 0 (forward) or 1 (reverse)");
  Block &body = getBody().front();
  if ((int64_t)body.getNumArguments() != numInputs)
    return emitOpError("body takes ")
           << body.getNumArguments() << " arguments, expected " << numInputs
           << " (states, scan input slices)";
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != getNumResults())
    return emitOpError("body yields ")
           << yield.getValues().size() << " values, expected " << getNumResults()
           << " (states, scan output slices)";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceControlOps.cpp.inc"
