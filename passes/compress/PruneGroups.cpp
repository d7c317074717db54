//===- PruneGroups.cpp - structurally tied dimensions of a function -------===//
//
// Discovery (a fixpoint over def and use edges, one rule per op family) and
// the rewrite of `sluice-prune`; see PruneGroups.h. The rules:
//   - elementwise ops (gelu and silu too): operands broadcast right-aligned;
//     an operand whose dim there is 1 or absent is not part of the group;
//   - transpose permutes the axis; reshape maps it by size products (a
//     split whose leading dim cannot hold whole units coarsens the group:
//     64 columns of a Q projection become 4 heads of 16);
//   - split into equal pieces along the axis: the pieces hold the same
//     units and the input is that many blocks of them (a fused QKV
//     projection: 3 blocks of the heads); concat of equal pieces the same
//     way; other axes of both pass through;
//   - matmul A[.., M, K] x B[.., K, N]: A's K with B's K (a constant B is
//     a sink), B's N with the result's N, M and batch dims through (a
//     batch axis of a product of two activations holds heads: attention
//     written out);
//   - conv: output channels with the weight's axis 0 and the bias, input
//     channels with the weight's axis 1 (a sink); a depthwise convolution
//     (a group per channel) passes channels through with their filters;
//     other groups stop;
//   - batch_norm: channels with its per-channel parameters; pool: batch
//     and channel axes through;
//   - layer_norm, rms_norm, softmax, reduce: their normalized / reduced
//     axes stop the group, other axes pass through;
//   - attention: the batch (head) axes of query, key, value, result and of
//     a mask or rotary tables that carry them; the query's head dim with
//     the key's, the value's with the result's; sequence axes stop, as do
//     broadcast key/value heads (grouped-query attention) and a head dim
//     with rotary embeddings.
//   - anything else, a function argument or result: unprunable.
//
//===----------------------------------------------------------------------===//

#include "passes/compress/PruneGroups.h"

#include "dialects/sluice/SluiceOps.h"
#include "dialects/sluice/SluiceTraits.h"
#include "lib/support/Locations.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

using namespace mlir;
using namespace sluice;
using namespace sluice::prune;

const char *sluice::prune::kindName(GroupKind kind) {
  switch (kind) {
  case GroupKind::Heads:
    return "heads";
  case GroupKind::Ffn:
    return "ffn";
  case GroupKind::Channels:
    return "channels";
  }
  return "ffn";
}

namespace {

bool isConstant(Value v) { return matchPattern(v, m_Constant()); }

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }
int64_t dimOf(Value v, int64_t axis) {
  return cast<RankedTensorType>(v.getType()).getDimSize(axis);
}

/// One end of an edge through an op: operand or result `index`, `axis`.
struct End {
  bool result = false;
  unsigned index = 0;
  int64_t axis = 0;
};

/// The GEMMs with a constant 2-D weight and the group-1 convolutions with a
/// constant weight: where groups start.
bool isSeed(Operation *op) {
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    auto a = dyn_cast<RankedTensorType>(mm.getLhs().getType());
    auto w = dyn_cast<RankedTensorType>(mm.getRhs().getType());
    return a && w && a.getRank() >= 2 && w.getRank() == 2 && isConstant(mm.getRhs()) &&
           !isConstant(mm.getLhs()) && cast<RankedTensorType>(mm.getType()).hasStaticShape();
  }
  if (auto conv = dyn_cast<ConvOp>(op))
    return conv.getGroup() == 1 && isConstant(conv.getWeight()) && !isConstant(conv.getInput()) &&
           cast<RankedTensorType>(conv.getType()).hasStaticShape();
  return false;
}

/// A depthwise convolution: as many groups as input and output channels
/// (one filter per channel, weight [C, 1, k...]).
bool isDepthwise(ConvOp op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto out = dyn_cast<RankedTensorType>(op.getOutput().getType());
  auto w = dyn_cast<RankedTensorType>(op.getWeight().getType());
  if (!in || !out || !w || in.getRank() < 3 || w.getRank() < 2)
    return false;
  int64_t channels = in.getDimSize(1);
  return op.getGroup() > 1 && (int64_t)op.getGroup() == channels && out.getDimSize(1) == channels &&
         w.getDimSize(0) == channels && w.getDimSize(1) == 1;
}

int64_t seedAxis(Operation *op) { return isa<ConvOp>(op) ? 1 : rankOf(op->getResult(0)) - 1; }

/// The fixpoint from one seed with a fixed unit count.
struct Explorer {
  int64_t units;
  PruneGroup group;
  llvm::DenseMap<std::pair<Value, int64_t>, std::pair<int64_t, int64_t>> layoutOf;
  std::vector<PruneNode> worklist;
  std::set<std::tuple<Operation *, unsigned, int64_t>> sliced;
  llvm::DenseSet<Operation *> sinkOps;
  /// A unit count that divides `units` and that a reshape needs (0: none).
  int64_t coarsenTo = 0;
  /// Pieces the seed's axis must be seen as (a split of it; 0: none).
  int64_t blocksTo = 0;
  bool heads = false;

  explicit Explorer(int64_t units) : units(units) { group.units = units; }

  /// Records why the group cannot shrink (the first reason wins); the
  /// exploration goes on to find every seed tied to it.
  bool fail(const std::string &why) {
    if (group.unprunable.empty())
      group.unprunable = why;
    return false;
  }

  void addNode(Value v, int64_t axis, int64_t inner, int64_t blocks) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape() || axis < 0 || axis >= type.getRank()) {
      fail("it reaches a value without a static shape");
      return;
    }
    if (type.getDimSize(axis) != blocks * units * inner) {
      fail("its units do not line up along a dim of " + std::to_string(type.getDimSize(axis)));
      return;
    }
    auto [it, inserted] = layoutOf.try_emplace({v, axis}, std::pair{inner, blocks});
    if (!inserted) {
      if (it->second != std::pair{inner, blocks})
        fail("one dim is reached with two different unit layouts");
      return;
    }
    group.nodes.push_back({v, axis, inner, blocks});
    worklist.push_back({v, axis, inner, blocks});
  }

  void addSlice(Operation *user, unsigned operand, int64_t axis, int64_t inner, int64_t blocks) {
    Value c = user->getOperand(operand);
    auto type = dyn_cast<RankedTensorType>(c.getType());
    if (!type || !type.hasStaticShape() || type.getDimSize(axis) != blocks * units * inner) {
      fail("a constant of " + describeOp(user) + " does not hold whole units");
      return;
    }
    if (sliced.insert({user, operand, axis}).second)
      group.slices.push_back({user, operand, axis, inner, blocks});
  }

  void run(Value seed, int64_t axis, int64_t inner, int64_t blocks) {
    addNode(seed, axis, inner, blocks);
    while (!worklist.empty() && !coarsenTo && !blocksTo) {
      PruneNode n = worklist.back();
      worklist.pop_back();
      if (isa<BlockArgument>(n.value))
        fail("it reaches the function's input");
      else
        visit(n.value.getDefiningOp(), {true, cast<OpResult>(n.value).getResultNumber(), n.axis},
              n);
      for (OpOperand &use : llvm::make_early_inc_range(n.value.getUses()))
        visit(use.getOwner(), {false, use.getOperandNumber(), n.axis}, n);
    }
  }

  Value valueOf(Operation *op, const End &e) {
    return e.result ? op->getResult(e.index) : op->getOperand(e.index);
  }

  /// Applies `op`'s rule to the end `from` (of `node`) and follows what it
  /// ties, with the node's layout.
  void visit(Operation *op, const End &from, const PruneNode &node) {
    SmallVector<End> to;
    if (!relate(op, from, node, to))
      return;
    for (const End &e : to) {
      if (e.result) {
        addNode(op->getResult(e.index), e.axis, node.inner, node.blocks);
      } else if (isConstant(op->getOperand(e.index))) {
        addSlice(op, e.index, e.axis, node.inner, node.blocks);
      } else {
        addNode(op->getOperand(e.index), e.axis, node.inner, node.blocks);
      }
    }
  }

  /// Requests a coarser unit (whole rows of a reshape's `rows`).
  bool coarsen(int64_t rows, Operation *op) {
    int64_t g = std::gcd(units, rows);
    if (!group.prunable() || g < 2 || g == units)
      return fail("units of " + std::to_string(group.nodes.front().inner) + " cannot follow " +
                  describeOp(op));
    coarsenTo = g;
    return false;
  }

  bool relate(Operation *op, const End &from, const PruneNode &node, SmallVectorImpl<End> &to);
  bool relateElementwise(Operation *op, const End &from, SmallVectorImpl<End> &to);
  bool relateReshape(ReshapeOp op, const End &from, const PruneNode &node);
  bool relateSplit(SplitOp op, const End &from, const PruneNode &node);
  bool relateConcat(ConcatOp op, const End &from, const PruneNode &node);
  bool relateMatMul(MatMulOp op, const End &from, const PruneNode &node, SmallVectorImpl<End> &to);
  bool relateConv(ConvOp op, const End &from, const PruneNode &node, SmallVectorImpl<End> &to);
  bool relateAttention(AttentionOp op, const End &from, SmallVectorImpl<End> &to);
  bool relateRowOp(Operation *op, const End &from, SmallVectorImpl<End> &to);
};

bool Explorer::relate(Operation *op, const End &from, const PruneNode &node,
                      SmallVectorImpl<End> &to) {
  if (isa<func::ReturnOp>(op))
    return fail("it reaches the function's result");
  if (op->hasTrait<OpCategory::Elementwise>())
    return relateElementwise(op, from, to);
  if (auto t = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> perm = t.getPerm();
    if (from.result) {
      to.push_back({false, 0, perm[from.axis]});
    } else {
      for (size_t i = 0; i < perm.size(); ++i)
        if (perm[i] == from.axis)
          to.push_back({true, 0, (int64_t)i});
    }
    return true;
  }
  if (auto r = dyn_cast<ReshapeOp>(op))
    return relateReshape(r, from, node);
  if (auto split = dyn_cast<SplitOp>(op))
    return relateSplit(split, from, node);
  if (auto concat = dyn_cast<ConcatOp>(op))
    return relateConcat(concat, from, node);
  if (auto mm = dyn_cast<MatMulOp>(op))
    return relateMatMul(mm, from, node, to);
  if (auto conv = dyn_cast<ConvOp>(op))
    return relateConv(conv, from, node, to);
  if (auto att = dyn_cast<AttentionOp>(op)) {
    if (node.blocks != 1)
      return fail("it reaches " + describeOp(op) + " along an axis made of pieces");
    return relateAttention(att, from, to);
  }
  if (auto bn = dyn_cast<BatchNormOp>(op)) {
    bool channel = from.result || from.index == 0 ? from.axis == 1 : true;
    if (!channel) {
      to.push_back({!from.result, 0, from.axis});
      return true;
    }
    to.push_back({false, 0, 1});
    to.push_back({true, 0, 1});
    for (unsigned i = 1; i < 5; ++i)
      to.push_back({false, i, 0});
    return true;
  }
  if (auto pool = dyn_cast<PoolOp>(op)) {
    if (pool.getReturnIndices())
      return fail("it reaches " + describeOp(op) + ", which returns indices");
    if (from.axis > 1)
      return fail("it reaches a spatial axis of " + describeOp(op));
    to.push_back({!from.result, 0, from.axis});
    return true;
  }
  if (isa<LayerNormOp, RmsNormOp, SoftmaxOp, ReduceOp>(op))
    return relateRowOp(op, from, to);
  return fail("it reaches " + describeOp(op) + ", which has no pruning rule");
}

bool Explorer::relateElementwise(Operation *op, const End &from, SmallVectorImpl<End> &to) {
  Value fv = valueOf(op, from);
  int64_t fromEnd = rankOf(fv) - 1 - from.axis, full = dimOf(fv, from.axis);
  for (OpResult r : op->getResults()) {
    int64_t axis = rankOf(r) - 1 - fromEnd;
    if (axis < 0 || dimOf(r, axis) != full)
      return fail("it reaches a broadcast of " + describeOp(op));
    to.push_back({true, r.getResultNumber(), axis});
  }
  for (OpOperand &o : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(o.get().getType());
    if (!type)
      return fail("it reaches an unranked operand of " + describeOp(op));
    int64_t axis = type.getRank() - 1 - fromEnd;
    if (axis < 0 || type.getDimSize(axis) == 1)
      continue; // broadcast along the group's dim: not part of it
    if (type.getDimSize(axis) != full)
      return fail("it reaches an operand of " + describeOp(op) + " of another size");
    to.push_back({false, o.getOperandNumber(), axis});
  }
  return true;
}

bool Explorer::relateReshape(ReshapeOp op, const End &from, const PruneNode &node) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getOutput().getType());
  if (!in.hasStaticShape() || !out.hasStaticShape())
    return fail("it reaches " + describeOp(op) + " without static shapes");
  if (!from.result && from.index != 0)
    return fail("it reaches the shape of " + describeOp(op));
  if (node.blocks != 1)
    return fail("it reaches " + describeOp(op) + " along an axis made of pieces");
  int64_t inner = node.inner;
  ArrayRef<int64_t> src = from.result ? out.getShape() : in.getShape();
  ArrayRef<int64_t> dst = from.result ? in.getShape() : out.getShape();
  int64_t axis = 0, newInner = 0, rows = 0;
  if (!mapReshapeAxis(src, dst, from.axis, inner, axis, newInner, rows)) {
    if (rows > 0)
      return coarsen(rows, op);
    return fail("it reaches " + describeOp(op) + ", which mixes its dim with the dims before it");
  }
  // The inner size changes across a reshape: the other end is added here
  // with its own inner (not through visit, which keeps the caller's).
  if (from.result)
    addNode(op.getInput(), axis, newInner, 1);
  else
    addNode(op.getOutput(), axis, newInner, 1);
  return true;
}

/// The axis `axis` of a value of rank `rank`, counted from 0.
int64_t normalizedAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

bool Explorer::relateSplit(SplitOp op, const End &from, const PruneNode &node) {
  int64_t rank = rankOf(op.getInput()), axis = normalizedAxis((int64_t)op.getAxis(), rank);
  if (!from.result && from.index != 0)
    return fail("it reaches the sizes of " + describeOp(op));
  if (from.axis != axis) {
    // Another axis: every piece has it whole.
    addNode(op.getInput(), from.axis, node.inner, node.blocks);
    for (Value piece : op.getOutputs())
      addNode(piece, from.axis, node.inner, node.blocks);
    return true;
  }
  int64_t pieces = op.getNumResults(), dim = dimOf(op.getInput(), axis);
  for (Value piece : op.getOutputs())
    if (dimOf(piece, axis) * pieces != dim)
      return fail("it reaches " + describeOp(op) + ", whose pieces differ in size");
  if (from.result) {
    if (node.blocks != 1)
      return fail("it reaches " + describeOp(op) + " along an axis made of pieces");
  } else if (node.blocks != pieces) {
    // The pieces hold the same units (Q, K and V of a fused projection):
    // the axis is that many blocks of them.
    if (node.blocks != 1 || units % pieces != 0 || !group.prunable())
      return fail("it reaches " + describeOp(op) + ", whose pieces do not hold whole units");
    blocksTo = pieces;
    return false;
  }
  addNode(op.getInput(), axis, node.inner, pieces);
  for (Value piece : op.getOutputs())
    addNode(piece, axis, node.inner, 1);
  return true;
}

bool Explorer::relateConcat(ConcatOp op, const End &from, const PruneNode &node) {
  int64_t rank = rankOf(op.getOutput()), axis = normalizedAxis((int64_t)op.getAxis(), rank);
  if (from.axis != axis) {
    addNode(op.getOutput(), from.axis, node.inner, node.blocks);
    for (Value input : op.getInputs())
      addNode(input, from.axis, node.inner, node.blocks);
    return true;
  }
  // Equal pieces of the same units, concatenated: the result is blocks of
  // them (what a split of it would give back).
  int64_t pieces = op.getInputs().size();
  if (from.result ? node.blocks != pieces : node.blocks != 1)
    return fail("it reaches " + describeOp(op) + " along its axis");
  for (Value input : op.getInputs())
    if (dimOf(input, axis) * pieces != dimOf(op.getOutput(), axis) || isConstant(input))
      return fail("it reaches " + describeOp(op) + " along its axis");
  addNode(op.getOutput(), axis, node.inner, pieces);
  for (Value input : op.getInputs())
    addNode(input, axis, node.inner, 1);
  return true;
}

bool Explorer::relateMatMul(MatMulOp op, const End &from, const PruneNode &node,
                            SmallVectorImpl<End> &to) {
  int64_t ra = rankOf(op.getLhs()), rb = rankOf(op.getRhs()), rr = rankOf(op.getOutput());
  if (ra < 2 || rb < 2)
    return fail("it reaches " + describeOp(op) + ", a product with a vector");
  // Batch dims, counted from the end (2 is the last batch dim), broadcast.
  auto batch = [&](int64_t fromEnd, int64_t full) {
    // A product of two activations batched over this axis is attention
    // written out (Q K^T, P V): the axis holds heads.
    heads |= !isConstant(op.getLhs()) && !isConstant(op.getRhs());
    int64_t ar = rr - 1 - fromEnd, aa = ra - 1 - fromEnd, ab = rb - 1 - fromEnd;
    to.push_back({true, 0, ar});
    if (aa >= 0 && dimOf(op.getLhs(), aa) == full)
      to.push_back({false, 0, aa});
    if (ab >= 0 && dimOf(op.getRhs(), ab) == full)
      to.push_back({false, 1, ab});
  };
  Value fv = valueOf(op, from);
  int64_t fromEnd = rankOf(fv) - 1 - from.axis, full = dimOf(fv, from.axis);
  if (from.result) {
    if (fromEnd == 0)
      to.push_back({false, 1, rb - 1});
    else if (fromEnd == 1)
      to.push_back({false, 0, ra - 2});
    else
      batch(fromEnd, full);
  } else if (from.index == 0) {
    if (fromEnd == 0) {
      // K: the weight's rows. A constant weight ends the group here.
      to.push_back({false, 1, rb - 2});
      if (isConstant(op.getRhs()) && sinkOps.insert(op).second)
        group.sinks.push_back({op, from.axis, rb - 2, node.inner, node.blocks});
    } else if (fromEnd == 1) {
      to.push_back({true, 0, rr - 2});
    } else {
      batch(fromEnd, full);
    }
  } else {
    if (fromEnd == 0)
      to.push_back({true, 0, rr - 1});
    else if (fromEnd == 1)
      to.push_back({false, 0, ra - 1});
    else
      batch(fromEnd, full);
  }
  return true;
}

bool Explorer::relateConv(ConvOp op, const End &from, const PruneNode &node,
                          SmallVectorImpl<End> &to) {
  if (from.axis > 1)
    return fail("it reaches a spatial axis of " + describeOp(op));
  if (from.axis == 0 && (from.result || from.index == 0)) {
    to.push_back({!from.result, 0, 0});
    return true;
  }
  if (!isConstant(op.getWeight()) || (op.getBias() && !isConstant(op.getBias())))
    return fail("it reaches " + describeOp(op) + ", whose weight is computed");
  if (isDepthwise(op)) {
    // One filter per channel: channels pass through, with their filters
    // and biases (and the group count follows, see applyPruning).
    if (!from.result && from.index != 0)
      return fail("it reaches the weight of " + describeOp(op));
    to.push_back({!from.result, 0, 1});
    to.push_back({false, 1, 0});
    if (op.getBias())
      to.push_back({false, 2, 0});
    return true;
  }
  if (op.getGroup() != 1)
    return fail("it reaches the channels of " + describeOp(op) + ", a grouped convolution");
  if (from.result) {
    to.push_back({false, 1, 0});
    if (op.getBias())
      to.push_back({false, 2, 0});
    return true;
  }
  if (from.index != 0)
    return fail("it reaches the weight of " + describeOp(op));
  to.push_back({false, 1, 1});
  if (sinkOps.insert(op).second)
    group.sinks.push_back({op, 1, 1, node.inner, node.blocks});
  return true;
}

bool Explorer::relateAttention(AttentionOp op, const End &from, SmallVectorImpl<End> &to) {
  enum Role { Query, Key, ValueRole, Output, Mask, Rotary };
  auto roleOf = [&](const End &e) {
    if (e.result)
      return Output;
    if (e.index < 3)
      return Role(e.index);
    Value v = op->getOperand(e.index);
    return v == op.getMask() ? Mask : Rotary;
  };
  Role role = roleOf(from);
  Value fv = valueOf(op, from);
  int64_t fromEnd = rankOf(fv) - 1 - from.axis, full = dimOf(fv, from.axis);
  bool rotary = (bool)op.getRotaryCos();
  if (fromEnd == 0) {
    if (role == Mask)
      return fail("it reaches the key axis of " + describeOp(op) + "'s mask");
    if (role == Rotary || ((role == Query || role == Key) && rotary))
      return fail("it reaches the head dim of " + describeOp(op) +
                  ", which rotary embeddings rotate by halves");
    // The query's and key's head dims contract; the value's is the output's.
    if (role == Query)
      to.push_back({false, 1, rankOf(op.getKey()) - 1});
    else if (role == Key)
      to.push_back({false, 0, rankOf(op.getQuery()) - 1});
    else if (role == ValueRole)
      to.push_back({true, 0, rankOf(op.getOutput()) - 1});
    else
      to.push_back({false, 2, rankOf(op.getValue()) - 1});
    return true;
  }
  if (fromEnd == 1)
    return fail("it reaches a sequence axis of " + describeOp(op));
  // A batch (head) axis: every operand that carries it, and the output.
  heads = true;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    End e{false, i, 0};
    Role r = roleOf(e);
    Value v = op->getOperand(i);
    int64_t axis = rankOf(v) - 1 - fromEnd;
    int64_t dim = axis >= 0 ? dimOf(v, axis) : 1;
    if (dim == full) {
      e.axis = axis;
      to.push_back(e);
    } else if (r == Key || r == ValueRole) {
      return fail("it reaches " + describeOp(op) +
                  ", whose key/value heads are broadcast (grouped-query attention)");
    } else if (dim != 1) {
      return fail("it reaches an operand of " + describeOp(op) + " with another head count");
    }
  }
  to.push_back({true, 0, rankOf(op.getOutput()) - 1 - fromEnd});
  return true;
}

bool Explorer::relateRowOp(Operation *op, const End &from, SmallVectorImpl<End> &to) {
  Value input = op->getOperand(0);
  int64_t rank = rankOf(input);
  if (!from.result && from.index != 0)
    return fail("it reaches a parameter of " + describeOp(op));
  auto stop = [&] {
    return fail("it reaches the normalized or reduced axis of " + describeOp(op));
  };
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    llvm::SmallVector<bool> reduced(rank, false);
    bool any = false;
    if (reduce.getAxes()) {
      auto axes = compress::constantTensor(reduce.getAxes());
      if (!axes)
        return fail("it reaches " + describeOp(op) + " with computed axes");
      for (int64_t a : axes->toInt64Vector()) {
        reduced[a < 0 ? a + rank : a] = true;
        any = true;
      }
    }
    if (!any && !reduce.getNoopWithEmptyAxes())
      return stop();
    bool keep = reduce.getKeepdims();
    if (!from.result) {
      if (reduced[from.axis])
        return stop();
      int64_t axis = from.axis;
      if (!keep)
        axis -= std::count(reduced.begin(), reduced.begin() + from.axis, true);
      to.push_back({true, 0, axis});
      return true;
    }
    int64_t axis = from.axis;
    if (!keep) {
      // The from.axis-th kept input axis.
      int64_t seen = -1;
      for (int64_t a = 0; a < rank; ++a)
        if (!reduced[a] && ++seen == from.axis) {
          axis = a;
          break;
        }
    }
    to.push_back({false, 0, axis});
    return true;
  }
  int64_t first = 0;
  if (auto ln = dyn_cast<LayerNormOp>(op))
    first = (int64_t)ln.getAxis();
  else if (auto rms = dyn_cast<RmsNormOp>(op))
    first = (int64_t)rms.getAxis();
  if (first < 0)
    first += rank;
  if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    int64_t axis = (int64_t)sm.getAxis();
    if (axis < 0)
      axis += rank;
    if (from.axis == axis)
      return stop();
  } else if (from.axis >= first) {
    return stop();
  }
  to.push_back({false, 0, from.axis});
  for (OpResult r : op->getResults())
    to.push_back({true, r.getResultNumber(), from.axis});
  return true;
}

/// Runs discovery from `seed` with `units` units, coarsening as reshapes
/// ask.
PruneGroup exploreFrom(Operation *seed, bool &isHeads) {
  Value v = seed->getResult(0);
  int64_t axis = seedAxis(seed), dim = dimOf(v, axis), units = dim, blocks = 1;
  while (true) {
    Explorer ex(units);
    ex.run(v, axis, dim / (units * blocks), blocks);
    if (ex.coarsenTo) {
      units = ex.coarsenTo;
      continue;
    }
    if (ex.blocksTo) {
      blocks *= ex.blocksTo;
      units /= ex.blocksTo;
      continue;
    }
    isHeads = ex.heads;
    return std::move(ex.group);
  }
}

} // namespace

std::vector<PruneGroup> sluice::prune::discoverGroups(func::FuncOp func) {
  std::vector<Operation *> seeds;
  for (Operation &op : func.getBody().front())
    if (isSeed(&op))
      seeds.push_back(&op);
  std::vector<PruneGroup> groups;
  llvm::DenseSet<Operation *> covered;
  for (Operation *seed : seeds) {
    if (covered.contains(seed))
      continue;
    bool heads = false;
    PruneGroup group = exploreFrom(seed, heads);
    llvm::DenseSet<std::pair<Value, int64_t>> nodes;
    for (const PruneNode &n : group.nodes)
      nodes.insert({n.value, n.axis});
    bool conv = false;
    for (Operation *other : seeds)
      if (other == seed || nodes.contains({other->getResult(0), seedAxis(other)})) {
        covered.insert(other);
        group.seeds.push_back(other);
        conv |= isa<ConvOp>(other);
      }
    group.kind = heads ? GroupKind::Heads : conv ? GroupKind::Channels : GroupKind::Ffn;
    if (group.prunable() && group.sinks.empty())
      group.unprunable = "no GEMM or convolution with a constant weight consumes it";
    if (group.prunable() && group.units < 2)
      group.unprunable = "it has a single unit";
    groups.push_back(std::move(group));
  }
  return groups;
}

PruneGroup sluice::prune::mapGroup(const PruneGroup &group, IRMapping &mapping) {
  PruneGroup out = group;
  for (Operation *&op : out.seeds)
    op = mapping.lookup(op);
  for (PruneNode &n : out.nodes)
    n.value = mapping.lookup(n.value);
  for (ConstantSlice &s : out.slices)
    s.user = mapping.lookup(s.user);
  for (Sink &s : out.sinks)
    s.op = mapping.lookup(s.op);
  return out;
}

namespace {

/// Positions [lo, hi) of the kept units, runs of consecutive units merged.
std::vector<std::pair<int64_t, int64_t>> keptRanges(ArrayRef<int64_t> kept, int64_t units,
                                                    int64_t inner, int64_t blocks) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t u : kept) {
      int64_t lo = (b * units + u) * inner;
      if (!ranges.empty() && ranges.back().second == lo)
        ranges.back().second += inner;
      else
        ranges.push_back({lo, lo + inner});
    }
  return ranges;
}

} // namespace

LogicalResult sluice::prune::applyPruning(func::FuncOp func, ArrayRef<const PruneGroup *> groups,
                                          ArrayRef<std::vector<int64_t>> kept,
                                          compress::ScratchBlobs *scratch, std::string &error) {
  llvm::MapVector<Value, SmallVector<std::pair<int64_t, int64_t>>> newDims;
  llvm::SetVector<Operation *> replaced;
  for (size_t g = 0; g < groups.size(); ++g) {
    const PruneGroup &group = *groups[g];
    if ((int64_t)kept[g].size() == group.units)
      continue;
    for (const PruneNode &n : group.nodes)
      newDims[n.value].push_back({n.axis, n.blocks * (int64_t)kept[g].size() * n.inner});
    for (const ConstantSlice &s : group.slices) {
      Value operand = s.user->getOperand(s.operand);
      std::optional<Tensor> t = compress::constantTensor(operand);
      if (!t) {
        error = "sluice-prune: internal error: a sliced operand of " + describeOp(s.user) +
                " is not a constant";
        return failure();
      }
      Tensor slice = t->takeAlong(s.axis, keptRanges(kept[g], group.units, s.inner, s.blocks));
      OpBuilder b(s.user);
      replaced.insert(operand.getDefiningOp());
      s.user->setOperand(s.operand, compress::makeConstant(b, operand.getLoc(), slice, scratch));
    }
  }
  for (auto &[value, dims] : newDims) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    for (auto [axis, dim] : dims)
      shape[axis] = dim;
    value.setType(type.clone(shape));
  }
  // Reshape targets: the (now static) result shapes.
  for (auto &[value, dims] : newDims)
    if (auto reshape = value.getDefiningOp<ReshapeOp>()) {
      auto type = cast<RankedTensorType>(value.getType());
      Tensor shape = Tensor::fromInt64(std::vector<int64_t>(type.getShape()));
      OpBuilder b(reshape);
      Value old = reshape.getShape();
      reshape.getShapeMutable().assign(compress::makeConstant(b, old.getLoc(), shape, scratch));
      if (Operation *def = old.getDefiningOp())
        replaced.insert(def);
    }
  // Depthwise convolutions: a group per (kept) channel.
  for (auto &[value, dims] : newDims)
    for (Operation *user : value.getUsers())
      if (auto conv = dyn_cast<ConvOp>(user); conv && conv.getInput() == value)
        if (int64_t channels = dimOf(value, 1); conv.getGroup() > 1 &&
                                                dimOf(conv.getWeight(), 0) == channels &&
                                                dimOf(conv.getWeight(), 1) == 1)
          conv.setGroup(channels);
  // Split sizes: the (now static) pieces.
  llvm::SetVector<SplitOp> splits;
  for (auto &[value, dims] : newDims)
    if (auto split = value.getDefiningOp<SplitOp>())
      splits.insert(split);
  for (SplitOp split : splits) {
    Value sizes = split.getSizes();
    if (!sizes)
      continue;
    int64_t axis = normalizedAxis((int64_t)split.getAxis(), rankOf(split.getInput()));
    std::vector<int64_t> pieces;
    for (Value piece : split.getOutputs())
      pieces.push_back(dimOf(piece, axis));
    OpBuilder b(split);
    split.getSizesMutable().assign(
        compress::makeConstant(b, sizes.getLoc(), Tensor::fromInt64(pieces), scratch));
    if (Operation *def = sizes.getDefiningOp())
      replaced.insert(def);
  }
  for (Operation *op : replaced)
    if (op->use_empty())
      op->erase();
  if (failed(verify(func))) {
    error = "sluice-prune: internal error: the pruned function does not verify";
    return failure();
  }
  return success();
}

void sluice::prune::maskPruned(func::FuncOp func, ArrayRef<const PruneGroup *> groups,
                               ArrayRef<std::vector<int64_t>> kept) {
  for (size_t g = 0; g < groups.size(); ++g) {
    const PruneGroup &group = *groups[g];
    std::vector<bool> keep(group.units, false);
    for (int64_t u : kept[g])
      keep[u] = true;
    for (const Sink &s : group.sinks) {
      Value w = s.op->getOperand(1);
      std::optional<Tensor> t = compress::constantTensor(w);
      if (!t)
        continue;
      Tensor z = Tensor::copyOf(t->dtype(), t->shape(), t->rawData());
      int64_t stride = 1;
      for (int64_t d = s.weightAxis + 1; d < z.rank(); ++d)
        stride *= z.dim(d);
      int64_t dim = z.dim(s.weightAxis);
      for (int64_t i = 0; i < z.numElements(); ++i)
        if (!keep[unitAt((i / stride) % dim, group.units, s.inner)])
          z.setDouble(i, 0.0);
      OpBuilder b(s.op);
      s.op->setOperand(1, compress::makeConstant(b, w.getLoc(), z));
    }
  }
  (void)func;
}

int64_t sluice::prune::removedAt(int64_t units, double fraction) {
  return (int64_t)std::floor(fraction * (double)units + 0.5);
}

int64_t sluice::prune::keptAfter(int64_t units, int64_t removed, int64_t inner) {
  int64_t kept = std::max<int64_t>(1, units - removed), k = kept;
  while (k < units && (k * inner) % 8 != 0)
    ++k;
  // Whole vectors are a kernel nicety: never worth half of the removal.
  return k < units && 2 * (k - kept) <= units - kept ? k : kept;
}

bool sluice::prune::mapReshapeAxis(ArrayRef<int64_t> from, ArrayRef<int64_t> to, int64_t axis,
                                   int64_t inner, int64_t &outAxis, int64_t &outInner,
                                   int64_t &rows) {
  rows = 0;
  int64_t outer = 1, after = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= from[d];
  for (size_t d = axis + 1; d < from.size(); ++d)
    after *= from[d];
  int64_t prefix = 1;
  for (size_t j = 0; j < to.size(); ++j) {
    if (prefix == outer && to[j] > 1) {
      int64_t afterOut = 1;
      for (size_t d = j + 1; d < to.size(); ++d)
        afterOut *= to[d];
      if ((inner * after) % afterOut != 0) {
        rows = to[j];
        return false;
      }
      outAxis = (int64_t)j;
      outInner = inner * after / afterOut;
      return true;
    }
    prefix *= to[j];
    if (prefix > outer)
      break;
  }
  return false;
}
