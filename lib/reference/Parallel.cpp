//===- Parallel.cpp - reference semantics of sharded weights and collectives ===//
//
// The evaluator runs one program on one process. A partitioned program
// (passes/parallel) is one rank's program: its collectives need the other
// ranks, which only the multi-rank runtime has. So these ops are computed
// here only for a group of one rank (where they are the identity and the
// whole weight), and refused otherwise with a message saying how to run it.
//
//===----------------------------------------------------------------------===//

#include "lib/reference/EvalUtils.h"
#include "lib/reference/Evaluator.h"
#include "dialects/sluice/SluiceOps.h"

using namespace mlir;

namespace sluice {
namespace {

LogicalResult needsRanks(Operation *op, int64_t ranks) {
  return op->emitOpError() << "belongs to a program partitioned over " << ranks
                           << " ranks; the reference evaluator runs one rank (compile the "
                              "model with --tp and run the bundle with sluice-run --ranks="
                           << ranks << ")";
}

LogicalResult evalShardConstant(Operation *op, ArrayRef<const Tensor *>,
                                std::vector<Tensor> &results) {
  auto shard = cast<ShardConstantOp>(op);
  if (shard.getParts() != 1)
    return needsRanks(op, shard.getParts());
  auto tensor = tensorFromAttr(shard.getValue());
  if (failed(tensor))
    return op->emitOpError("cannot read constant value");
  results.push_back(std::move(*tensor));
  return success();
}

/// A collective over one rank: its input is its result.
LogicalResult evalCollective(Operation *op, ArrayRef<const Tensor *> operands,
                             std::vector<Tensor> &results) {
  auto groupSize = op->getAttrOfType<IntegerAttr>("group_size");
  if (!groupSize || groupSize.getInt() != 1)
    return needsRanks(op, groupSize ? groupSize.getInt() : 0);
  results.push_back(*operands[0]);
  return success();
}

} // namespace

void registerParallelEvaluators(EvalRegistry &r) {
  r.add(ShardConstantOp::getOperationName(), evalShardConstant);
  for (StringRef name : {AllReduceOp::getOperationName(), AllGatherOp::getOperationName(),
                         ReduceScatterOp::getOperationName(), AllToAllOp::getOperationName()})
    r.add(name, evalCollective);
}

} // namespace sluice
