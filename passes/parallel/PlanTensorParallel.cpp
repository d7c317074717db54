//===- PlanTensorParallel.cpp - Megatron-style split of each weight -------===//
//
// The plan half of tensor parallelism: which weights are split and along
// which axis, found from the recognized composites rather than from the
// exporter's raw graph. From each attention, the trace walks back from its
// query/key/value operands (split by heads) through the reshapes,
// transposes, bias adds and the split of a fused QKV projection to the
// weights, and forward from its result to the output projection. From each
// matmul whose left operand is an elementwise chain of other matmuls (an
// MLP: gelu, silu, gated), the chain's matmuls are column-parallel and the
// last one row-parallel. The largest embedding table is vocab-parallel, and
// so is an LM head projecting onto its vocabulary. sluice-partition
// (Partition.cpp) then rewrites the function from these marks.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/parallel/Sharding.h"

#include "dialects/sluice/KernelForms.h"
#include "lib/support/Locations.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace sluice {
#define GEN_PASS_DEF_PLANTENSORPARALLELPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::parallel;

namespace {

using Split = std::pair<int64_t, int64_t>; ///< (axis, groups)

/// The weight uses a trace wants split, checked for agreement.
struct Marks {
  llvm::MapVector<OpOperand *, Split> uses;
  bool add(OpOperand &use, Split split, std::string &why) {
    auto [it, inserted] = uses.try_emplace(&use, split);
    if (!inserted && it->second != split) {
      why = "a weight would be split two ways (" + describeOp(use.getOwner()) + ")";
      return false;
    }
    return true;
  }
  void merge(const Marks &other) {
    for (auto &[use, split] : other.uses)
      uses[use] = split;
  }
};

struct Planner {
  int64_t parts;
  Marks committed;

  /// Marks the weights behind `use` so that its value is split along
  /// `axis` in `groups` groups: the column-parallel half of a layer.
  bool traceBack(OpOperand &use, int64_t axis, int64_t groups, Marks &marks, std::string &why,
                 int depth = 0) {
    Value v = use.get();
    Operation *def = v.getDefiningOp();
    if (depth > 64 || !def) {
      why = depth > 64 ? "the chain is too long" : "it reaches a graph input";
      return false;
    }
    if (isa<ConstantOp>(def)) {
      int64_t extent = shapeOf(v)[axis];
      if (extent % (parts * groups) != 0) {
        why = "a weight's dim " + std::to_string(axis) + " (" + std::to_string(extent) +
              ") does not divide into " + std::to_string(parts) + " ranks";
        return false;
      }
      return marks.add(use, {axis, groups}, why);
    }
    if (auto transpose = dyn_cast<TransposeOp>(def))
      return traceBack(transpose->getOpOperand(0), transpose.getPerm()[axis], groups, marks, why,
                       depth + 1);
    if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp>(def)) {
      auto mapped = mapSplitThroughReshape(shapeOf(v), shapeOf(def->getOperand(0)), axis, groups,
                                           parts);
      if (!mapped) {
        why = describeOp(def) + " merges the split dim with others";
        return false;
      }
      return traceBack(def->getOpOperand(0), mapped->first, mapped->second, marks, why, depth + 1);
    }
    if (auto split = dyn_cast<SplitOp>(def)) {
      int64_t splitAxis = normalized(split.getAxis(), rankOf(v));
      if (axis != splitAxis)
        return traceBack(split->getOpOperand(0), axis, groups, marks, why, depth + 1);
      bool equal = llvm::all_of(split.getResults(),
                                [&](Value r) { return shapeOf(r)[axis] == shapeOf(v)[axis]; });
      if (groups != 1 || !equal) {
        why = describeOp(def) + " splits into unequal parts along the split dim";
        return false;
      }
      return traceBack(split->getOpOperand(0), axis, split.getNumOutputs(), marks, why, depth + 1);
    }
    if (auto matmul = dyn_cast<MatMulOp>(def)) {
      int64_t rank = rankOf(v);
      if (axis != rank - 1 || rankOf(matmul.getRhs()) < 2 ||
          !matmul.getRhs().getDefiningOp<ConstantOp>()) {
        why = describeOp(def) + " is not a projection by a weight along its output features";
        return false;
      }
      return traceBack(matmul->getOpOperand(1), rankOf(matmul.getRhs()) - 1, groups, marks, why,
                       depth + 1);
    }
    if (auto gather = dyn_cast<GatherOp>(def)) {
      int64_t gatherAxis = normalized(gather.getAxis(), rankOf(gather.getInput()));
      int64_t indexRank = rankOf(gather.getIndices());
      int64_t dataAxis = axis < gatherAxis                ? axis
                         : axis >= gatherAxis + indexRank ? axis - indexRank + 1
                                                          : -1;
      if (dataAxis < 0) {
        why = describeOp(def) + " would be split along its indices";
        return false;
      }
      return traceBack(gather->getOpOperand(0), dataAxis, groups, marks, why, depth + 1);
    }
    if (auto expand = dyn_cast<ExpandOp>(def)) {
      // GQA's repeat_kv (key/value heads unsqueezed, expanded over the
      // query groups, merged): a dim the expand keeps carries the split.
      Value input = expand.getInput();
      int64_t aligned = axis - (rankOf(v) - rankOf(input));
      if (aligned < 0 || shapeOf(input)[aligned] != shapeOf(v)[axis]) {
        why = describeOp(def) + " broadcasts along the split dim";
        return false;
      }
      return traceBack(expand->getOpOperand(0), aligned, groups, marks, why, depth + 1);
    }
    if (actsElementwise(def)) {
      int64_t rank = rankOf(v);
      for (OpOperand &operand : def->getOpOperands()) {
        int64_t aligned = axis - (rank - rankOf(operand.get()));
        if (aligned < 0 || shapeOf(operand.get())[aligned] == 1)
          continue; // broadcast along the split dim: whole on every rank
        if (!traceBack(operand, aligned, groups, marks, why, depth + 1))
          return false;
      }
      return true;
    }
    why = "it reaches " + describeOp(def) + ", which has no split rule";
    return false;
  }

  /// Follows the attention result (split along `axis`) through transposes
  /// and reshapes to the projection it feeds, whose weight becomes
  /// row-parallel.
  bool traceForward(Value v, int64_t axis, int64_t groups, Marks &marks, std::string &why) {
    for (int depth = 0; depth < 16; ++depth) {
      if (!v.hasOneUse()) {
        why = "the attention result has more than one use";
        return false;
      }
      OpOperand &use = *v.use_begin();
      Operation *user = use.getOwner();
      if (auto transpose = dyn_cast<TransposeOp>(user)) {
        ArrayRef<int64_t> perm = transpose.getPerm();
        axis = std::find(perm.begin(), perm.end(), axis) - perm.begin();
        v = transpose.getResult();
        continue;
      }
      if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp>(user)) {
        auto mapped = mapSplitThroughReshape(shapeOf(v), shapeOf(user->getResult(0)), axis,
                                             groups, parts);
        if (!mapped) {
          why = describeOp(user) + " merges the head dim with others";
          return false;
        }
        std::tie(axis, groups) = *mapped;
        v = user->getResult(0);
        continue;
      }
      auto matmul = dyn_cast<MatMulOp>(user);
      if (matmul && use.getOperandNumber() == 0 && axis == rankOf(v) - 1 && groups == 1 &&
          rankOf(matmul.getRhs()) == 2 && matmul.getRhs().getDefiningOp<ConstantOp>())
        return marks.add(matmul->getOpOperand(1), {0, 1}, why);
      why = "the attention result reaches " + describeOp(user) + ", not an output projection";
      return false;
    }
    why = "the attention result reaches no output projection";
    return false;
  }

  /// The column-parallel matmuls of an MLP: `use`'s value is an
  /// elementwise chain (activation, gate product, bias) of matmuls by
  /// weights with `width` output features.
  bool traceColumns(OpOperand &use, int64_t width, Marks &marks, int &matmuls, std::string &why,
                    int depth = 0) {
    Operation *def = use.get().getDefiningOp();
    if (!def || depth > 32) {
      why = "not an MLP";
      return false;
    }
    if (auto matmul = dyn_cast<MatMulOp>(def)) {
      Value rhs = matmul.getRhs();
      if (rankOf(rhs) != 2 || !rhs.getDefiningOp<ConstantOp>() || shapeOf(rhs)[1] != width ||
          committed.uses.count(&matmul->getOpOperand(1))) {
        why = "not an MLP";
        return false;
      }
      ++matmuls;
      return marks.add(matmul->getOpOperand(1), {1, 1}, why);
    }
    if (!actsElementwise(def)) {
      why = "not an MLP";
      return false;
    }
    int64_t rank = rankOf(use.get());
    for (OpOperand &operand : def->getOpOperands()) {
      Value x = operand.get();
      int64_t aligned = rank - 1 - (rank - rankOf(x));
      if (aligned < 0 || shapeOf(x)[aligned] == 1)
        continue;
      if (shapeOf(x)[aligned] != width) {
        why = "not an MLP";
        return false;
      }
      if (x.getDefiningOp<ConstantOp>()) {
        if (!marks.add(operand, {aligned, 1}, why))
          return false;
        continue;
      }
      if (!traceColumns(operand, width, marks, matmuls, why, depth + 1))
        return false;
    }
    return true;
  }
};

/// What planning one attention or MLP did.
enum class LayerPlan { Split, Replicated, BadSizes };

/// How an attention's heads divide over the ranks.
struct HeadSplit {
  int64_t axis;    ///< the query dim that is split
  int64_t heads;   ///< query heads
  int64_t kvHeads; ///< key/value heads
  int64_t divided; ///< what the ranks must divide
};

/// The head split of an attention whose query has a head dim (rank >= 3).
/// Grouped-query attention as recognized ([..., Hkv, G, S, D] with the key
/// and value [..., Hkv, 1, S, D]) is split by key/value heads, each rank
/// taking whole groups. When the ranks do not divide the key/value heads
/// the query groups are tried instead (key and value replicated), which the
/// projections' layout usually refuses: then the attention stays
/// replicated, with a remark.
HeadSplit headSplitOf(AttentionOp attention, int64_t tp) {
  Value q = attention.getQuery();
  Value key = attention.getKey();
  int64_t rank = rankOf(q);
  HeadSplit split;
  split.axis = rank - 3;
  split.heads = shapeOf(q)[split.axis];
  split.kvHeads = shapeOf(key)[rankOf(key) - 3];
  split.divided = split.kvHeads;
  if (rank >= 4 && split.kvHeads == 1 && split.heads > 1 && rankOf(key) == rank) {
    int64_t kvGroups = shapeOf(key)[rank - 4];
    int64_t groups = split.heads;
    split.heads = kvGroups * groups;
    split.kvHeads = split.divided = kvGroups;
    if (kvGroups % tp == 0)
      split.axis = rank - 4;
    else
      split.divided = split.heads; // the broadcast key and value stay whole
  }
  return split;
}

/// Marks the weights behind an attention's query, key and value (split
/// along `headAxis`) and its output projection (row-parallel).
bool traceAttention(Planner &planner, AttentionOp attention, int64_t headAxis, Marks &marks,
                    std::string &why) {
  int64_t rank = rankOf(attention.getQuery());
  for (OpOperand *operand :
       {&attention->getOpOperand(0), &attention->getOpOperand(1), &attention->getOpOperand(2)}) {
    int64_t axis = headAxis - (rank - rankOf(operand->get()));
    // A key or value that broadcasts over the split dim (grouped-query
    // attention's shared heads) is read whole by every rank.
    if (axis >= 0 && shapeOf(operand->get())[axis] == 1)
      continue;
    if (!planner.traceBack(*operand, axis, 1, marks, why))
      return false;
  }
  return planner.traceForward(attention.getResult(), headAxis, 1, marks, why);
}

/// A per-head bias or mask is split with the heads where its weights can
/// be found (T5's relative-position table); otherwise each rank takes its
/// heads' slice when the partitioner gets there.
void traceMask(Planner &planner, AttentionOp attention, int64_t headAxis, Marks &marks) {
  Value mask = attention.getMask();
  if (!mask)
    return;
  Value q = attention.getQuery();
  int64_t aligned = headAxis - (rankOf(q) - rankOf(mask));
  Marks maskMarks;
  std::string maskWhy;
  if (aligned >= 0 && shapeOf(mask)[aligned] == shapeOf(q)[headAxis] &&
      planner.traceBack(attention.getMaskMutable()[0], aligned, 1, maskMarks, maskWhy))
    marks.merge(maskMarks);
}

/// Attention: split by heads, or replicated with a remark saying why.
LayerPlan planAttention(Planner &planner, AttentionOp attention, int64_t tp) {
  if (rankOf(attention.getQuery()) < 3) {
    attention.emitRemark() << "attention has no head dim; replicated";
    return LayerPlan::Replicated;
  }
  HeadSplit split = headSplitOf(attention, tp);
  if (split.heads % tp != 0 || split.divided % tp != 0) {
    attention.emitError() << "--tp=" << tp << " does not divide the heads of "
                          << describeOp(attention) << ": " << split.heads << " query heads, "
                          << split.kvHeads << " key/value heads";
    return LayerPlan::BadSizes;
  }
  Marks marks;
  std::string why;
  if (!traceAttention(planner, attention, split.axis, marks, why)) {
    attention.emitRemark() << describeOp(attention) << " stays replicated: " << why;
    return LayerPlan::Replicated;
  }
  traceMask(planner, attention, split.axis, marks);
  planner.committed.merge(marks);
  return LayerPlan::Split;
}

/// An MLP ending in `down`: matmul <- elementwise chain <- matmuls.
LayerPlan planMlp(Planner &planner, MatMulOp down, int64_t tp) {
  Value rhs = down.getRhs();
  if (rankOf(rhs) != 2 || !rhs.getDefiningOp<ConstantOp>() ||
      planner.committed.uses.count(&down->getOpOperand(1)))
    return LayerPlan::Replicated;
  int64_t width = shapeOf(rhs)[0];
  Marks marks;
  std::string why;
  int matmuls = 0;
  if (!planner.traceColumns(down->getOpOperand(0), width, marks, matmuls, why) || matmuls == 0)
    return LayerPlan::Replicated;
  if (width % tp != 0) {
    down.emitError() << "--tp=" << tp << " does not divide the width of the MLP ending in "
                     << describeOp(down) << ": " << width << " hidden units";
    return LayerPlan::BadSizes;
  }
  if (!marks.add(down->getOpOperand(1), {0, 1}, why))
    return LayerPlan::Replicated;
  planner.committed.merge(marks);
  return LayerPlan::Split;
}

/// Whether any tensor in `func` has a dynamic (or unknown) shape.
bool hasDynamicShapes(func::FuncOp func) {
  bool dynamic = false;
  func.walk([&](Operation *op) {
    for (Type t : llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes()))
      if (auto ranked = dyn_cast<RankedTensorType>(t); !ranked || !ranked.hasStaticShape())
        if (isa<TensorType>(t))
          dynamic = true;
  });
  return dynamic;
}

/// The embedding: the largest table looked up by token ids (its rows in
/// `vocab`), or null when there is none or its rows do not divide into
/// `tp` ranks (with a remark).
GatherOp vocabParallelEmbedding(func::FuncOp func, int64_t tp, int64_t &vocab) {
  GatherOp embedding;
  vocab = 0;
  func.walk([&](GatherOp gather) {
    Value table = gather.getInput();
    if (rankOf(table) == 2 && gather.getAxis() == 0 && table.getDefiningOp<ConstantOp>() &&
        !gather.getIndices().getDefiningOp<ConstantOp>() && shapeOf(table)[0] > vocab) {
      embedding = gather;
      vocab = shapeOf(table)[0];
    }
  });
  if (embedding && vocab % tp != 0) {
    embedding.emitRemark() << "the embedding table's " << vocab << " rows do not divide into " << tp
                           << " ranks; replicated";
    return nullptr;
  }
  return embedding;
}

/// Splits the embedding table by rows and each LM head onto the same
/// vocabulary by columns; returns the number of LM heads.
int64_t planVocab(Planner &planner, func::FuncOp func, GatherOp embedding, int64_t vocab) {
  std::string why;
  planner.committed.add(embedding->getOpOperand(0), {0, 1}, why);
  embedding->setAttr(kVocabParallelAttr, UnitAttr::get(func.getContext()));
  int64_t heads = 0;
  func.walk([&](MatMulOp head) {
    Value rhs = head.getRhs();
    if (rankOf(rhs) == 2 && shapeOf(rhs)[1] == vocab && rhs.getDefiningOp<ConstantOp>() &&
        !planner.committed.uses.count(&head->getOpOperand(1)) &&
        planner.committed.add(head->getOpOperand(1), {1, 1}, why))
      ++heads;
  });
  return heads;
}

struct PlanTensorParallelPass
    : public ::sluice::impl::PlanTensorParallelPassBase<PlanTensorParallelPass> {
  using PlanTensorParallelPassBase::PlanTensorParallelPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t tp = this->tp; // the option as a number: streams print it so
    if (tp < 1) {
      func.emitError() << "--tp must be at least 1, got " << tp;
      return signalPassFailure();
    }
    if (tp == 1)
      return;
    if (failed(checkPlannable(func, tp)))
      return signalPassFailure();
    Planner planner{tp, {}};
    int64_t layers = 0, mlps = 0;
    bool failedSizes = false;
    func.walk([&](AttentionOp attention) {
      LayerPlan plan = planAttention(planner, attention, tp);
      layers += plan == LayerPlan::Split;
      failedSizes |= plan == LayerPlan::BadSizes;
    });
    func.walk([&](MatMulOp down) {
      LayerPlan plan = planMlp(planner, down, tp);
      mlps += plan == LayerPlan::Split;
      failedSizes |= plan == LayerPlan::BadSizes;
    });
    if (failedSizes)
      return signalPassFailure();
    int64_t vocab = 0;
    GatherOp embedding = vocabParallelEmbedding(func, tp, vocab);
    int64_t heads = embedding ? planVocab(planner, func, embedding, vocab) : 0;
    if (planner.committed.uses.empty()) {
      func.emitError() << "--tp=" << tp
                       << " found nothing to split: no attention, MLP or embedding whose "
                          "sizes divide into "
                       << tp << " ranks";
      return signalPassFailure();
    }
    applyMarks(planner.committed);
    annotate(func, tp, layers, mlps, static_cast<bool>(embedding), heads);
  }

  /// Refuses a function already partitioned or with dynamic shapes.
  LogicalResult checkPlannable(func::FuncOp func, int64_t tp) {
    if (auto done = func->getAttrOfType<IntegerAttr>(kTensorParallelAttr)) {
      func.emitError() << "--tp=" << tp << ": this function is already partitioned over "
                       << done.getInt() << " ranks";
      return failure();
    }
    if (hasDynamicShapes(func)) {
      func.emitError() << "--tp=" << tp
                       << " needs static shapes: bind every input's shape with --shape=NAME=DIMS";
      return failure();
    }
    return success();
  }

  /// Records the plan on the function for the partitioner and says what
  /// was split.
  void annotate(func::FuncOp func, int64_t tp, int64_t layers, int64_t mlps, bool embedding,
                int64_t heads) {
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    func->setAttr(kTensorParallelAttr, b.getI64IntegerAttr(tp));
    func->setAttr(kLayersAttr, b.getI64IntegerAttr(layers));
    if (sp)
      func->setAttr(kSequenceParallelAttr, UnitAttr::get(ctx));
    func.emitRemark() << "tensor parallel over " << tp << " ranks"
                      << (sp ? " with sequence parallelism" : "") << ": " << layers
                      << " attention layers split by heads, " << mlps << " MLPs, "
                      << (embedding ? "vocab-parallel embedding" : "no split embedding")
                      << (heads ? " and LM head" : "");
  }

  /// Records the splits on the weights: a weight whose uses all want one
  /// split carries it; a use that wants another gets a copy of its own.
  void applyMarks(const Marks &marks) {
    llvm::MapVector<Operation *, SmallVector<std::pair<OpOperand *, Split>>> byConstant;
    for (auto &[use, split] : marks.uses)
      byConstant[use->get().getDefiningOp()].push_back({use, split});
    for (auto &[op, uses] : byConstant) {
      auto constant = cast<ConstantOp>(op);
      bool uniform = (size_t)std::distance(constant->use_begin(), constant->use_end()) ==
                         uses.size() &&
                     llvm::all_of(uses, [&](auto &u) { return u.second == uses[0].second; });
      Builder b(constant.getContext());
      auto attr = [&](Split s) { return b.getDenseI64ArrayAttr({s.first, s.second}); };
      if (uniform) {
        constant->setAttr(kSplitAttr, attr(uses[0].second));
        continue;
      }
      OpBuilder builder(constant);
      builder.setInsertionPointAfter(constant);
      for (auto &[use, split] : uses) {
        Operation *copy = builder.clone(*constant);
        copy->setAttr(kSplitAttr, attr(split));
        use->set(copy->getResult(0));
      }
    }
  }
};

} // namespace
