//===- Collective.cpp - a collective's library call, for both targets -----===//

#include "codegen/common/Collective.h"

#include "codegen/common/Format.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/common/ScalarEmitter.h"
#include "dialects/sluice/SluicePipelineOps.h"

#include "sluice/bundle_abi.h"

using namespace mlir;

namespace sluice::codegen {

namespace {

/// The communicator's code for an element type, or -1.
int commDType(Type t) {
  if (t.isF32())
    return SLUICE_COMM_F32;
  if (t.isF16())
    return SLUICE_COMM_F16;
  if (t.isBF16())
    return SLUICE_COMM_BF16;
  if (t.isF64())
    return SLUICE_COMM_F64;
  if (t.isInteger(32))
    return SLUICE_COMM_I32;
  if (t.isInteger(64))
    return SLUICE_COMM_I64;
  if (t.isSignedInteger(8) || t.isSignlessInteger(8))
    return SLUICE_COMM_I8;
  if (t.isUnsignedInteger(8) || t.isInteger(1))
    return SLUICE_COMM_U8;
  return -1;
}

} // namespace

FailureOr<std::string> collectiveCall(Operation *op, const std::string &kernel,
                                      const std::string &in, const std::string &out,
                                      const std::string &stream) {
  Value input = op->getOperand(0), result = op->getResult(0);
  if (auto transfer = dyn_cast<TransferOp>(op)) {
    // Bytes, whatever the element type: nothing is summed.
    int64_t bytes = product(shapeOf(input)) * storageBytes(elementOf(input));
    return "if (sluice_transfer(args, \"" + kernel + "\", " + in + ", " + out + ", " +
           cInt64(bytes) + ", " + decimal(transfer.getFrom()) + ", " +
           decimal(transfer.getTo()) + ", " + decimal(transfer.getStageSize()) + ", (void *)" +
           stream + "))\n    return 1;";
  }
  int dtype = commDType(elementOf(input));
  if (dtype < 0)
    return op->emitOpError("has an element type the communicator does not carry");
  bool sums = isa<AllReduceOp, ReduceScatterOp>(op);
  if (sums && dtype == SLUICE_COMM_U8)
    return op->emitOpError("sums booleans or unsigned bytes, which no communicator reduces");
  // The grid axis it spans (`mesh_axis`, set where the grid has several):
  // its communicator; none: every rank's.
  std::string meshAxis = "-1";
  if (auto mesh = op->getAttrOfType<StringAttr>("mesh_axis")) {
    if (mesh.getValue() == "tp")
      meshAxis = "SLUICE_AXIS_TP";
    else if (mesh.getValue() == "ep")
      meshAxis = "SLUICE_AXIS_EP";
    else
      return op->emitOpError() << "spans grid axis '" << mesh.getValue()
                               << "', which has no communicator (tp, ep)";
  }
  std::string tail =
      ", " + decimal(dtype) + ", (void *)" + stream + ", " + meshAxis + "))\n    return 1;";
  std::string head = "if (sluice_";
  std::string args = "(args, \"" + kernel + "\", " + in + ", " + out + ", ";
  ArrayRef<int64_t> inShape = shapeOf(input);
  int64_t world = op->getAttrOfType<IntegerAttr>("group_size").getInt();
  if (isa<AllReduceOp>(op))
    return head + "all_reduce" + args + cInt64(product(inShape)) + tail;
  if (isa<AllToAllOp>(op))
    return head + "all_to_all" + args + cInt64(product(inShape) / world) + tail;
  int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  // all_gather: [outer, inner] per rank -> [outer, W, inner];
  // reduce_scatter: [outer, W, inner] -> [outer, inner] per rank.
  ArrayRef<int64_t> local = isa<AllGatherOp>(op) ? inShape : shapeOf(result);
  int64_t outer = product(local, 0, axis), inner = product(local, axis);
  const char *name = isa<AllGatherOp>(op) ? "all_gather" : "reduce_scatter";
  return head + name + args + cInt64(outer) + ", " + cInt64(inner) + tail;
}

} // namespace sluice::codegen
