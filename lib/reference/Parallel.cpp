//===- Parallel.cpp - reference semantics of sharded weights and collectives ===//
//
// A partitioned program (passes/parallel) is what each of N ranks runs. The
// evaluator runs it as N ranks in lockstep: `evaluate` on a function with
// `sluice.tp = N` starts one interpreter per rank on its own thread; a
// shard constant gives that rank's block, and every collective is a
// rendezvous where each rank hands in its operand and computes its result
// from all of them (all ranks call the same collectives in the same order,
// as on the real runtime). That makes the partitioner checkable against the
// unpartitioned model on the evaluator alone (test/passes/parallel), with
// no MPI. Outside such a run (a lone rank), these ops are computed only for
// a group of one.
//
//===----------------------------------------------------------------------===//

#include "lib/reference/EvalUtils.h"
#include "lib/reference/Evaluator.h"
#include "dialects/sluice/SluicePipelineOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <condition_variable>
#include <mutex>
#include <thread>

using namespace mlir;

namespace sluice {
namespace {

/// Where the ranks of one simulated run meet at each collective.
class RankGroup {
public:
  explicit RankGroup(int64_t world) : world(world), slots(world) {}

  /// Hands in `mine` for rank `rank` and, once every rank has, copies all
  /// of them (by rank) into `all`. False when another rank failed.
  bool exchange(int64_t rank, const Tensor &mine, std::vector<Tensor> &all) {
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait(lock, [&] { return aborted || !draining; });
    if (aborted)
      return false;
    slots[rank] = mine;
    if (++arrived == world) {
      draining = true;
      ready.notify_all();
    } else {
      ready.wait(lock, [&] { return aborted || draining; });
      if (aborted)
        return false;
    }
    all = slots;
    if (++departed == world) {
      arrived = departed = 0;
      draining = false;
      ready.notify_all();
    }
    return true;
  }

  /// A rank failed: wake and fail every other rank waiting or to come.
  void abort() {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
    ready.notify_all();
  }

  const int64_t world;

private:
  std::mutex mutex;
  std::condition_variable ready;
  std::vector<Tensor> slots;
  int64_t arrived = 0, departed = 0;
  bool draining = false, aborted = false;
};

/// The rank this thread simulates, if any.
struct RankContext {
  RankGroup *group = nullptr;
  int64_t rank = 0;
};
thread_local RankContext currentRank;

LogicalResult needsRanks(Operation *op, int64_t ranks) {
  return op->emitOpError() << "belongs to a program partitioned over " << ranks
                           << " ranks; evaluate the partitioned function (its sluice.tp "
                              "attribute runs it as "
                           << ranks << " ranks) or run the bundle with sluice-run --ranks="
                           << ranks;
}

LogicalResult evalShardConstant(Operation *op, ArrayRef<const Tensor *>,
                                std::vector<Tensor> &results) {
  auto shard = cast<ShardConstantOp>(op);
  auto tensor = tensorFromAttr(shard.getValue());
  if (failed(tensor))
    return op->emitOpError("cannot read constant value");
  if (shard.getParts() == 1) {
    results.push_back(std::move(*tensor));
    return success();
  }
  RankContext &ctx = currentRank;
  if (!ctx.group || ctx.group->world != (int64_t)shard.getParts())
    return needsRanks(op, shard.getParts());
  SmallVector<std::pair<int64_t, int64_t>> blocks = shard.blocksOf(ctx.rank);
  results.push_back(tensor->takeAlong(shard.getAxis(), {blocks.begin(), blocks.end()}));
  return success();
}

/// The elementwise sum of equally shaped tensors.
Tensor sumOf(const std::vector<Tensor> &parts) {
  Tensor sum = parts[0].castTo(parts[0].dtype()); // a copy of its own
  bool isFloat = isFloatDType(sum.dtype());
  for (size_t p = 1; p < parts.size(); ++p)
    for (int64_t i = 0; i < sum.numElements(); ++i) {
      if (isFloat)
        sum.setDouble(i, sum.getDouble(i) + parts[p].getDouble(i));
      else
        sum.setInt(i, sum.getInt(i) + parts[p].getInt(i));
    }
  return sum;
}

/// Block `index` of `count` equal blocks along `axis`.
Tensor blockOf(const Tensor &t, int64_t axis, int64_t index, int64_t count) {
  int64_t block = t.dim(axis) / count;
  return t.takeAlong(axis, {{index * block, (index + 1) * block}});
}

/// Tensors of equal shapes concatenated along `axis`.
Tensor concatOf(const std::vector<Tensor> &parts, int64_t axis) {
  // Concatenation is taking every part's whole extent in turn: stack them
  // along a new leading dim, then move that dim to `axis` by blocks.
  std::vector<int64_t> shape = parts[0].shape();
  int64_t outer = 1, inner = (int64_t)dtypeSize(parts[0].dtype());
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis; d < shape.size(); ++d)
    inner *= shape[d];
  shape[axis] *= (int64_t)parts.size();
  Tensor result(parts[0].dtype(), shape);
  auto *to = static_cast<unsigned char *>(result.mutableData());
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor &part : parts) {
      std::memcpy(to, static_cast<const unsigned char *>(part.rawData()) + o * inner,
                  (size_t)inner);
      to += inner;
    }
  return result;
}

LogicalResult evalCollective(Operation *op, ArrayRef<const Tensor *> operands,
                             std::vector<Tensor> &results) {
  int64_t groupSize = op->getAttrOfType<IntegerAttr>("group_size").getInt();
  if (groupSize == 1) {
    results.push_back(*operands[0]);
    return success();
  }
  RankContext &ctx = currentRank;
  if (!ctx.group || ctx.group->world != groupSize)
    return needsRanks(op, groupSize);
  if (operands[0]->dtype() == DType::String)
    return op->emitOpError("cannot exchange string tensors");
  std::vector<Tensor> all;
  if (!ctx.group->exchange(ctx.rank, *operands[0], all))
    return op->emitOpError("another rank failed before this collective");
  if (isa<AllReduceOp>(op)) {
    results.push_back(sumOf(all));
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    results.push_back(concatOf(all, gather.getAxis()));
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    results.push_back(blockOf(sumOf(all), scatter.getAxis(), ctx.rank, groupSize));
  } else {
    // all_to_all: block r of rank p's operand becomes block p of rank r's.
    std::vector<Tensor> blocks;
    for (int64_t p = 0; p < groupSize; ++p)
      blocks.push_back(blockOf(all[p], 0, ctx.rank, groupSize));
    results.push_back(concatOf(blocks, 0));
  }
  return success();
}

/// A pipeline transfer: the stages of one evaluated program are one process,
/// so the activation is already where the later stage reads it.
LogicalResult evalTransfer(Operation *, ArrayRef<const Tensor *> operands,
                           std::vector<Tensor> &results) {
  results.push_back(*operands[0]);
  return success();
}

} // namespace

void registerParallelEvaluators(EvalRegistry &r) {
  r.add(TransferOp::getOperationName(), evalTransfer);
  r.add(ShardConstantOp::getOperationName(), evalShardConstant);
  for (StringRef name : {AllReduceOp::getOperationName(), AllGatherOp::getOperationName(),
                         ReduceScatterOp::getOperationName(), AllToAllOp::getOperationName()})
    r.add(name, evalCollective);
}

FailureOr<std::vector<RuntimeValue>>
evaluateRanks(func::FuncOp func, const std::vector<RuntimeValue> &inputs, int64_t world,
              FailureOr<std::vector<RuntimeValue>> (*evaluateOne)(func::FuncOp,
                                                                  const std::vector<RuntimeValue> &)) {
  RankGroup group(world);
  std::vector<FailureOr<std::vector<RuntimeValue>>> outputs(world, failure());
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      currentRank = {&group, rank};
      outputs[rank] = evaluateOne(func, inputs);
      if (failed(outputs[rank]))
        group.abort();
      currentRank = {};
    });
  for (std::thread &t : threads)
    t.join();
  for (int64_t rank = 0; rank < world; ++rank)
    if (failed(outputs[rank]))
      return failure();
  return std::move(outputs[0]);
}

} // namespace sluice
