//===- Partition.cpp - one rank's program, with collectives ---------------===//
//
// Propagates shardings forward from the planned weights (Sharding.h) and
// rewrites every op into what one rank computes. Values not in the map are
// replicated; the map also keeps each rewritten value's whole (global) type.
// An op whose operands' layouts no rule covers gets whole operands
// (toReplicated: all_gather / all_reduce) and stays replicated, with a
// remark; a replicated operand that an op needs split (a bias over the
// split features, a position table over a split sequence) is sliced: a
// constant at compile time (shard_constant), anything else by a gather of
// this rank's indices.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/parallel/Sharding.h"

#include "dialects/sluice/KernelForms.h"
#include "lib/support/Locations.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <numeric>

namespace sluice {
#define GEN_PASS_DEF_PARTITIONPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::parallel;

namespace {

class Partitioner {
public:
  Partitioner(func::FuncOp func, int64_t parts, bool sequenceParallel)
      : func(func), parts(parts), sp(sequenceParallel), ctx(func.getContext()) {}

  LogicalResult run() {
    Block &block = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (failed(partition(&op)))
        return failure();
    }
    for (Operation *op : erase)
      if (op->use_empty())
        op->erase();
    auto ret = cast<func::ReturnOp>(block.getTerminator());
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

private:
  struct Info {
    Sharding sharding;
    RankedTensorType global;
  };

  Sharding stateOf(Value v) const {
    auto it = info.find(v);
    return it == info.end() ? Sharding::replicated() : it->second.sharding;
  }
  RankedTensorType globalType(Value v) const {
    auto it = info.find(v);
    return it == info.end() ? cast<RankedTensorType>(v.getType()) : it->second.global;
  }
  RankedTensorType localType(RankedTensorType global, Sharding s) const {
    if (!s.isSplit())
      return global;
    SmallVector<int64_t> shape(global.getShape());
    shape[s.axis] /= parts;
    return RankedTensorType::get(shape, global.getElementType());
  }
  /// Records `v`'s sharding and gives it its per-rank type.
  void setState(Value v, Sharding s) {
    RankedTensorType global = globalType(v);
    info[v] = {s, global};
    v.setType(localType(global, s));
  }
  bool divides(RankedTensorType global, int64_t axis, int64_t groups) const {
    return axis >= 0 && axis < global.getRank() &&
           global.getDimSize(axis) % (parts * groups) == 0;
  }

  OpBuilder builderAfter(Value v) {
    OpBuilder b(ctx);
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(v.getParentBlock());
    return b;
  }

  Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
    auto type = RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
  }

  /// Reshapes `v` to `type` (a static shape).
  Value reshape(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
    return ReshapeOp::create(b, loc, type, v, i64Constant(b, loc, type.getShape()));
  }

  /// `v` whole on every rank.
  Value toReplicated(Value v) {
    Sharding s = stateOf(v);
    if (s.isReplicated())
      return v;
    if (Value cached = whole.lookup(v))
      return cached;
    OpBuilder b = builderAfter(v);
    Location loc = v.getLoc();
    RankedTensorType global = globalType(v);
    Value result;
    if (s.isPartial()) {
      result = AllReduceOp::create(b, loc, global, v, b.getI64IntegerAttr(parts));
    } else if (s.groups == 1) {
      result = AllGatherOp::create(b, loc, global, v, b.getI64IntegerAttr(s.axis),
                                   b.getI64IntegerAttr(parts));
    } else {
      // Each rank holds its block of every group: gather along a dim of
      // its own inside the groups, so that blocks land group by group.
      auto local = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> grouped(local.getShape());
      grouped[s.axis] = s.groups;
      grouped.insert(grouped.begin() + s.axis + 1, local.getDimSize(s.axis) / s.groups);
      Value split = reshape(b, loc, v, RankedTensorType::get(grouped, local.getElementType()));
      SmallVector<int64_t> gatheredShape(grouped);
      gatheredShape[s.axis + 1] *= parts;
      Value gathered = AllGatherOp::create(
          b, loc, RankedTensorType::get(gatheredShape, local.getElementType()), split,
          b.getI64IntegerAttr(s.axis + 1), b.getI64IntegerAttr(parts));
      result = reshape(b, loc, gathered, global);
    }
    whole[v] = result;
    return result;
  }

  /// Partial sums resolved: with sequence parallelism a reduce_scatter
  /// along the sequence (dim rank-2 of [.., S, D]) when it divides, else
  /// an all_reduce.
  Value resolvePartial(Value v) {
    if (!stateOf(v).isPartial())
      return v;
    RankedTensorType global = globalType(v);
    int64_t seq = global.getRank() - 2;
    if (sp && (global.getRank() < 3 || !divides(global, seq, 1)) && !spRemarked) {
      spRemarked = true;
      if (Operation *def = v.getDefiningOp())
        def->emitRemark() << "--sp: the sequence dim of " << global
                          << " does not divide into " << parts
                          << " ranks; partial sums are all-reduced (tensor parallelism only)";
    }
    if (!sp || global.getRank() < 3 || !divides(global, seq, 1))
      return toReplicated(v);
    if (Value cached = scattered.lookup(v))
      return cached;
    OpBuilder b = builderAfter(v);
    Value result = ReduceScatterOp::create(b, v.getLoc(), localType(global, Sharding::split(seq)),
                                           v, b.getI64IntegerAttr(seq),
                                           b.getI64IntegerAttr(parts));
    info[result] = {Sharding::split(seq), global};
    scattered[v] = result;
    return result;
  }

  /// This rank's block of the replicated `v` along `axis`: a constant is
  /// sliced at compile time, anything else gathered by this rank's indices.
  Value localSlice(Value v, int64_t axis, int64_t groups) {
    RankedTensorType global = globalType(v);
    auto key = std::make_tuple(v.getAsOpaquePointer(), axis, groups);
    if (auto it = slices.find(key); it != slices.end())
      return it->second;
    OpBuilder b = builderAfter(v);
    Location loc = v.getLoc();
    Value result;
    Sharding s = Sharding::split(axis, groups);
    if (auto constant = v.getDefiningOp<ConstantOp>()) {
      result = ShardConstantOp::create(b, loc, localType(global, s), constant.getValue(),
                                       b.getI64IntegerAttr(axis), b.getI64IntegerAttr(parts),
                                       b.getI64IntegerAttr(groups));
    } else {
      int64_t extent = global.getDimSize(axis);
      SmallVector<int64_t> iota(extent);
      std::iota(iota.begin(), iota.end(), 0);
      auto indexType = RankedTensorType::get({extent}, b.getI64Type());
      Value indices = ShardConstantOp::create(
          b, loc, RankedTensorType::get({extent / parts}, b.getI64Type()),
          DenseElementsAttr::get(indexType, ArrayRef<int64_t>(iota)), b.getI64IntegerAttr(0),
          b.getI64IntegerAttr(parts), b.getI64IntegerAttr(groups));
      result = GatherOp::create(b, loc, localType(global, s), v, indices,
                                b.getI64IntegerAttr(axis));
    }
    info[result] = {s, global};
    slices[key] = result;
    return result;
  }

  /// Makes operand `i` of `op` replicated.
  void gatherOperand(Operation *op, unsigned i) {
    Value v = op->getOperand(i);
    if (!stateOf(v).isReplicated())
      op->setOperand(i, toReplicated(v));
  }

  /// The op gets whole operands and stays replicated.
  void fallback(Operation *op) {
    bool changed = false;
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Sharding s = stateOf(op->getOperand(i));
      if (s.isReplicated())
        continue;
      if (!isa<func::ReturnOp>(op))
        op->emitRemark() << describeOp(op) << " has no split rule for operand " << i << " ("
                         << s.describe() << "): it is made whole ("
                         << (s.isPartial() ? "all_reduce" : "all_gather")
                         << ") and the op replicated";
      gatherOperand(op, i);
      changed = true;
    }
    (void)changed;
  }

  LogicalResult partition(Operation *op) {
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      if (auto split = constant->getAttrOfType<DenseI64ArrayAttr>(kSplitAttr)) {
        Value slice = localSlice(constant, split[0], split[1]);
        constant.getResult().replaceAllUsesWith(slice);
        // localSlice's operand use went too: the shard constant keeps the
        // value itself, so the constant is dead.
        erase.push_back(constant);
      }
      return success();
    }
    if (isa<func::ReturnOp>(op)) {
      fallback(op);
      return success();
    }
    if (auto gather = dyn_cast<GatherOp>(op); gather && gather->hasAttr(kVocabParallelAttr))
      return vocabParallelLookup(gather);
    bool allReplicated = llvm::all_of(op->getOperands(),
                                      [&](Value v) { return stateOf(v).isReplicated(); });
    if (allReplicated)
      return success();
    // Partial sums become whole (or sequence-split) before any op but the
    // final return: every rule below takes split or replicated operands.
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (stateOf(op->getOperand(i)).isPartial())
        op->setOperand(i, resolvePartial(op->getOperand(i)));
    if (!applyRule(op))
      fallback(op);
    return success();
  }

  /// The rule for `op`'s operand layouts; false when none applies (nothing
  /// changed then).
  bool applyRule(Operation *op) {
    if (actsElementwise(op))
      return elementwise(op);
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      Sharding s = stateOf(transpose.getInput());
      ArrayRef<int64_t> perm = transpose.getPerm();
      int64_t axis = std::find(perm.begin(), perm.end(), s.axis) - perm.begin();
      setState(transpose.getResult(), Sharding::split(axis, s.groups));
      return true;
    }
    if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp>(op))
      return reshapeLike(op);
    if (auto split = dyn_cast<SplitOp>(op))
      return splitRule(split);
    if (auto matmul = dyn_cast<MatMulOp>(op))
      return matmulRule(matmul);
    if (auto attention = dyn_cast<AttentionOp>(op))
      return attentionRule(attention);
    if (isa<LayerNormOp, RmsNormOp, SoftmaxOp>(op))
      return rowRule(op);
    if (auto gather = dyn_cast<GatherOp>(op))
      return gatherRule(gather);
    if (auto expand = dyn_cast<ExpandOp>(op))
      return expandRule(expand);
    return false;
  }

  /// A split on a dim the expand keeps (not broadcast) stays, and the
  /// target shape becomes the rank's (GQA's repeat_kv over split key/value
  /// heads).
  bool expandRule(ExpandOp expand) {
    Value input = expand.getInput();
    Sharding s = stateOf(input);
    if (!s.isSplit() || !stateOf(expand.getShape()).isReplicated())
      return false;
    RankedTensorType outGlobal = globalType(expand.getOutput());
    int64_t axis = s.axis + outGlobal.getRank() - rankOf(input);
    if (globalType(input).getDimSize(s.axis) != outGlobal.getDimSize(axis))
      return false;
    Sharding out = Sharding::split(axis, s.groups);
    OpBuilder b(expand);
    expand->setOperand(1, i64Constant(b, expand.getLoc(), localType(outGlobal, out).getShape()));
    setState(expand.getOutput(), out);
    return true;
  }

  /// Operands split along one (broadcast-aligned) axis give a result split
  /// along it; replicated operands that span that axis are sliced.
  bool elementwise(Operation *op) {
    int64_t rank = rankOf(op->getResult(0));
    std::optional<Sharding> target;
    for (Value v : op->getOperands()) {
      Sharding s = stateOf(v);
      if (!s.isSplit())
        continue;
      Sharding aligned = Sharding::split(s.axis + rank - rankOf(v), s.groups);
      if (target && *target != aligned)
        return false;
      target = aligned;
    }
    if (!target)
      return true;
    RankedTensorType resultGlobal = globalType(op->getResult(0));
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value v = op->getOperand(i);
      if (!stateOf(v).isReplicated())
        continue;
      int64_t aligned = target->axis - (rank - rankOf(v));
      if (aligned < 0 || globalType(v).getDimSize(aligned) == 1)
        continue;
      if (globalType(v).getDimSize(aligned) != resultGlobal.getDimSize(target->axis) ||
          !divides(globalType(v), aligned, target->groups))
        return false;
      op->setOperand(i, localSlice(v, aligned, target->groups));
    }
    for (Value result : op->getResults())
      setState(result, *target);
    return true;
  }

  bool reshapeLike(Operation *op) {
    Value input = op->getOperand(0);
    Sharding s = stateOf(input);
    RankedTensorType outGlobal = globalType(op->getResult(0));
    auto mapped = mapSplitThroughReshape(globalType(input).getShape(), outGlobal.getShape(),
                                         s.axis, s.groups, parts);
    if (!mapped || !divides(outGlobal, mapped->first, mapped->second))
      return false;
    Sharding out = Sharding::split(mapped->first, mapped->second);
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      OpBuilder b(op);
      reshape->setOperand(1, i64Constant(b, op->getLoc(), localType(outGlobal, out).getShape()));
    }
    setState(op->getResult(0), out);
    return true;
  }

  bool splitRule(SplitOp split) {
    Sharding s = stateOf(split.getInput());
    int64_t rank = rankOf(split.getInput());
    int64_t axis = normalized(split.getAxis(), rank);
    if (s.axis != axis) {
      for (Value r : split.getResults())
        setState(r, s);
      return true;
    }
    int64_t first = globalType(split.getResult(0)).getDimSize(axis);
    bool equal = llvm::all_of(split.getResults(), [&](Value r) {
      return globalType(r).getDimSize(axis) == first;
    });
    if (s.groups != (int64_t)split.getNumResults() || !equal || first % parts != 0)
      return false;
    if (split.getSizes()) {
      OpBuilder b(split);
      SmallVector<int64_t> sizes(split.getNumResults(), first / parts);
      split->setOperand(1, i64Constant(b, split.getLoc(), sizes));
    }
    for (Value r : split.getResults())
      setState(r, Sharding::split(axis, 1));
    return true;
  }

  bool matmulRule(MatMulOp matmul) {
    Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
    int64_t rl = rankOf(lhs), rr = rankOf(rhs), r = rankOf(matmul.getResult());
    if (rl < 2 || rr < 2)
      return false;
    for (int attempt = 0; attempt < 2; ++attempt) {
      Sharding a = stateOf(lhs), w = stateOf(rhs);
      // Column-parallel: the weight's output features split.
      if (a.isReplicated() && w.isSplit() && w.axis == rr - 1) {
        setState(matmul.getResult(), Sharding::split(r - 1, w.groups));
        return true;
      }
      // Row-parallel: the contraction split on both sides.
      if (a.isSplit() && a.axis == rl - 1 && a.groups == 1 && w.isSplit() && w.axis == rr - 2 &&
          w.groups == 1) {
        setState(matmul.getResult(), Sharding::partial());
        return true;
      }
      // A replicated weight slices by rows to meet a split contraction.
      if (a.isSplit() && a.axis == rl - 1 && a.groups == 1 && w.isReplicated() &&
          divides(globalType(rhs), rr - 2, 1)) {
        matmul->setOperand(1, localSlice(rhs, rr - 2, 1));
        setState(matmul.getResult(), Sharding::partial());
        return true;
      }
      // Rows or batches split on one side (or the same batch dim on both).
      auto batchOf = [&](Sharding s, int64_t rank, bool isLhs) -> std::optional<int64_t> {
        if (!s.isSplit() || s.groups != 1)
          return std::nullopt;
        if (s.axis < rank - 2 || (isLhs && s.axis == rank - 2))
          return s.axis + r - rank;
        return std::nullopt;
      };
      auto la = batchOf(a, rl, true), wa = batchOf(w, rr, false);
      if (la && w.isReplicated()) {
        // A batch dim the weight has too (not broadcast) is sliced with it.
        int64_t wAxis = *la - (r - rr);
        if (*la != r - 2 && wAxis >= 0 && wAxis < rr - 2 &&
            globalType(rhs).getDimSize(wAxis) != 1) {
          if (!divides(globalType(rhs), wAxis, 1))
            return false;
          matmul->setOperand(1, localSlice(rhs, wAxis, 1));
        }
        setState(matmul.getResult(), Sharding::split(*la));
        return true;
      }
      if (la && wa && *la == *wa) {
        setState(matmul.getResult(), Sharding::split(*la));
        return true;
      }
      // Otherwise the activation is made whole and the rules tried again
      // (a sequence-split activation into a column-parallel weight).
      if (attempt == 0 && !a.isReplicated())
        matmul->setOperand(0, lhs = toReplicated(lhs));
      else
        break;
    }
    return false;
  }

  bool attentionRule(AttentionOp attention) {
    Sharding q = stateOf(attention.getQuery());
    int64_t rank = rankOf(attention.getQuery());
    if (!q.isSplit() || q.groups != 1 || q.axis >= rank - 2)
      return false;
    for (unsigned i = 0; i < attention->getNumOperands(); ++i) {
      Value v = attention->getOperand(i);
      Sharding s = stateOf(v);
      int64_t aligned = q.axis - (rank - rankOf(v));
      if (s.isSplit()) {
        if (s.axis != aligned || s.groups != 1)
          return false;
        continue;
      }
      if (aligned < 0 || globalType(v).getDimSize(aligned) == 1)
        continue;
      if (!divides(globalType(v), aligned, 1))
        return false;
      attention->setOperand(i, localSlice(v, aligned, 1));
    }
    setState(attention.getResult(), q);
    return true;
  }

  /// Norms and softmax keep a split that is not on a normalized dim.
  bool rowRule(Operation *op) {
    Value input = op->getOperand(0);
    Sharding s = stateOf(input);
    int64_t rank = rankOf(input);
    if (!s.isSplit())
      return false;
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      if (!stateOf(op->getOperand(i)).isReplicated())
        return false;
    int64_t first = rank;
    if (auto ln = dyn_cast<LayerNormOp>(op))
      first = normalized(ln.getAxis(), rank);
    else if (auto rms = dyn_cast<RmsNormOp>(op))
      first = normalized(rms.getAxis(), rank);
    else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      int64_t axis = normalized(softmax.getAxis(), rank);
      if (axis == s.axis)
        return false;
      first = rank;
    }
    if (s.axis >= first)
      return false;
    for (Value result : op->getResults())
      setState(result, s);
    return true;
  }

  /// A split table looked up along another dim.
  bool gatherRule(GatherOp gather) {
    Sharding d = stateOf(gather.getInput());
    if (!d.isSplit() || !stateOf(gather.getIndices()).isReplicated())
      return false;
    int64_t rank = rankOf(gather.getInput());
    int64_t axis = normalized(gather.getAxis(), rank);
    if (d.axis == axis)
      return false;
    int64_t out = d.axis < axis ? d.axis : d.axis + rankOf(gather.getIndices()) - 1;
    setState(gather.getResult(), Sharding::split(out, d.groups));
    return true;
  }

  /// Megatron's vocab-parallel embedding: each rank holds rows
  /// [r*V/N, (r+1)*V/N) of the table, looks up the ids that fall there and
  /// zeroes the rest; the sum over ranks is the lookup.
  LogicalResult vocabParallelLookup(GatherOp gather) {
    Value table = gather.getInput(), ids = gather.getIndices();
    Sharding t = stateOf(table);
    if (!t.isSplit() || t.axis != 0 || !stateOf(ids).isReplicated()) {
      fallback(gather);
      return success();
    }
    int64_t vocab = globalType(table).getDimSize(0), rows = vocab / parts;
    OpBuilder b(gather);
    Location loc = gather.getLoc();
    auto idsType = cast<RankedTensorType>(ids.getType());
    Type idType = idsType.getElementType();
    SmallVector<APInt> starts;
    unsigned width = idType.getIntOrFloatBitWidth();
    for (int64_t r = 0; r < parts; ++r)
      starts.push_back(APInt(width, r * rows, /*isSigned=*/true));
    auto startsType = RankedTensorType::get({parts}, idType);
    Value start = ShardConstantOp::create(b, loc, RankedTensorType::get({1}, idType),
                                          DenseElementsAttr::get(startsType, starts),
                                          b.getI64IntegerAttr(0), b.getI64IntegerAttr(parts),
                                          b.getI64IntegerAttr(1));
    auto scalar = [&](int64_t value) {
      auto type = RankedTensorType::get({}, idType);
      return ConstantOp::create(b, loc, DenseElementsAttr::get(type, APInt(width, value, true)));
    };
    Value zero = scalar(0), limit = scalar(rows);
    Value local = buildInferred<SubOp>(b, loc, ids, start)->getResult(0);
    Value above = buildInferred<GreaterEqualOp>(b, loc, local, zero)->getResult(0);
    Value below = buildInferred<LessOp>(b, loc, local, limit)->getResult(0);
    Value inside = buildInferred<AndOp>(b, loc, above, below)->getResult(0);
    Value safe = buildInferred<SelectOp>(b, loc, inside, local, zero)->getResult(0);
    Value rowsOut = GatherOp::create(b, loc, gather.getResult().getType(), table, safe,
                                     b.getI64IntegerAttr(0));
    Value axes = i64Constant(b, loc, {idsType.getRank()});
    Value keep = buildInferred<UnsqueezeOp>(b, loc, inside, axes)->getResult(0);
    auto elementType = cast<RankedTensorType>(table.getType()).getElementType();
    Value zeroRow = ConstantOp::create(
        b, loc, DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                                       b.getZeroAttr(elementType)));
    Value result = buildInferred<SelectOp>(b, loc, keep, rowsOut, zeroRow)->getResult(0);
    gather.getResult().replaceAllUsesWith(result);
    gather.erase();
    info[result] = {Sharding::partial(), cast<RankedTensorType>(result.getType())};
    return success();
  }

  func::FuncOp func;
  int64_t parts;
  bool sp;
  bool spRemarked = false;
  MLIRContext *ctx;
  llvm::DenseMap<Value, Info> info;
  llvm::DenseMap<Value, Value> whole, scattered;
  std::map<std::tuple<const void *, int64_t, int64_t>, Value> slices;
  SmallVector<Operation *> erase;
};

struct PartitionPass : public ::sluice::impl::PartitionPassBase<PartitionPass> {
  using PartitionPassBase::PartitionPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto tp = func->getAttrOfType<IntegerAttr>(kTensorParallelAttr);
    if (!tp || tp.getInt() <= 1)
      return;
    Partitioner partitioner(func, tp.getInt(), func->hasAttr(kSequenceParallelAttr));
    if (failed(partitioner.run()))
      return signalPassFailure();
  }
};

} // namespace
