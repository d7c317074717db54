//===- FuseGroups.cpp - grow kernel groups (F1-F5) ------------------------===//
//
// Marks the ops of each fused group with one `sluice.group` id (and its
// anchor with `sluice.group_anchor`); sluice-form-kernels then makes one
// sluice.kernel per group. Every merge goes through checkForm() (the group
// must stay one of the forms F1-F5) and a convexity check (no path leaves
// the group and comes back, so the kernel can be placed). Stages, in order:
//   1. attention (F4): views on q/k/v/mask/cos/sin, views on the result;
//   2. GEMMs (F2): views on the operands, elementwise epilogue;
//   3. row ops (F3): elementwise/layout-view prologue, elementwise epilogue;
//   4. elementwise chains (F1), leaf views included;
//   5. views left alone join their consumer's group (or their producer's).
// Views are duplicated freely (no code); a cheap elementwise producer used in
// other groups too may be duplicated (kDuplicateBudget per group); an
// expensive one is never recomputed.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "lib/kernel/Views.h"
#include "passes/fuse/FusionModel.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <memory>

namespace sluice {
#define GEN_PASS_DEF_FUSEGROUPSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::fusion;

namespace {

struct Group {
  SmallVector<Operation *> ops;
  int duplicates = 0; // cheap producers duplicated into this group
};

class Grouper {
public:
  /// Groups the ops of `block`: a function's body, or an if branch's or a
  /// loop body's (their ops fuse among themselves; control-flow ops
  /// themselves are no group's).
  Grouper(Block &block, bool allowViews, bool fp8Gemm, bool convEpilogue)
      : block(block), allowViews(allowViews), fp8Gemm(fp8Gemm), convEpilogue(convEpilogue) {
    for (Operation &op : block)
      if (!isa<ConstantOp, ShardConstantOp, KernelOp, func::ReturnOp, YieldOp, IfOp, LoopOp,
               ScanOp, SequenceMapOp>(op) &&
          !op.hasAttr(kGroupAttr))
        singleton(&op);
  }

  void run(bool all) {
    SmallVector<Operation *> order = computeOps();
    if (all) {
      for (Operation *op : order)
        if (kindOf(op) == Kind::Attention)
          growAttention(op);
      // Form F8 first: an fp8 GEMM's dequantizations join it before an
      // earlier anchor's epilogue could take the activation's.
      if (fp8Gemm) {
        llvm::SetVector<Operation *> shared;
        for (Operation *op : order)
          if (auto matmul = dyn_cast<MatMulOp>(op))
            absorbFp8Dequants(matmul, shared);
        // An activation's dequantization every GEMM took a copy of.
        for (Operation *dq : shared)
          if (dq->use_empty()) {
            groupOf.lookup(dq)->ops.clear();
            groupOf.erase(dq);
            dq->erase();
          }
      }
      // Float convolutions take their epilogue only where the target folds
      // it (conv-epilogue=true); elsewhere they stay single library calls.
      for (Operation *op : order)
        if (kindOf(op) == Kind::Gemm && (convEpilogue || !isa<ConvOp>(op)))
          growAnchor(op, /*prologue=*/false);
      for (Operation *op : order)
        if (kindOf(op) == Kind::Row)
          growAnchor(op, /*prologue=*/true);
        else if (isa<SoftmaxOp, ReduceOp>(op) && hasStaticShapes(op) &&
                 hasElementwiseNeighbour(op))
          refuse(op, "not fused: the reduced axes are not the innermost ones "
                     "(strided rows break vectorization)");
    }
    for (Operation *op : computeOps())
      if (kindOf(op) == Kind::Elementwise && !anchorOf(groupOf[op]))
        growElementwise(op);
    if (all)
      for (Operation *op : computeOps())
        if (kindOf(op) == Kind::View && groupOf[op]->ops.size() == 1)
          placeView(op);
    eraseDeadCopies();
    // Refusals matter only for ops that ended up fused with nothing (a
    // later stage may have placed the op after all).
    for (auto &[op, message] : refusals)
      if (groupOf.count(op) && groupOf[op]->ops.size() == 1)
        op->emitRemark() << message;
    mark();
  }

private:
  Block &block;
  bool allowViews;
  bool fp8Gemm;
  bool convEpilogue;
  std::vector<std::unique_ptr<Group>> groups;
  llvm::DenseMap<Operation *, Group *> groupOf;
  /// Refusals, remarked at the end on ops still alone (first reason wins).
  llvm::MapVector<Operation *, std::string> refusals;

  /// Records why `op` was not fused (see run()).
  void refuse(Operation *op, const llvm::Twine &message) {
    refusals.try_emplace(op, message.str());
  }

  SmallVector<Operation *> computeOps() {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      if (groupOf.count(&op))
        ops.push_back(&op);
    return ops;
  }

  Group *singleton(Operation *op) {
    groups.push_back(std::make_unique<Group>());
    groups.back()->ops.push_back(op);
    groupOf[op] = groups.back().get();
    return groups.back().get();
  }

  static Operation *anchorOf(Group *g) {
    for (Operation *op : g->ops)
      if (kindOf(op) != Kind::View && kindOf(op) != Kind::Elementwise &&
          !(g->ops.size() > 1 && kernel::isWeightPrologue(op)))
        return op;
    return nullptr;
  }

  bool inGroup(Value v, Group *g) {
    Operation *def = v.getDefiningOp();
    return def && groupOf.lookup(def) == g;
  }

  /// Whether `ops` is convex: no path from one of them through an outside op
  /// back to one of them (the group could not be placed as one kernel).
  bool convex(ArrayRef<Operation *> ops) {
    llvm::SmallPtrSet<Operation *, 16> set(ops.begin(), ops.end());
    Operation *last = ops.front();
    for (Operation *op : ops)
      if (last->isBeforeInBlock(op))
        last = op;
    // Users inside a nested region count as the op of this block holding them.
    SmallVector<Operation *> work;
    llvm::SmallPtrSet<Operation *, 32> seen;
    auto push = [&](Operation *user) {
      if (Operation *top = block.findAncestorOpInBlock(*user))
        work.push_back(top);
    };
    for (Operation *op : ops)
      for (Operation *user : op->getUsers())
        if (!set.contains(user))
          push(user);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (set.contains(op))
        return false;
      if (!seen.insert(op).second || last->isBeforeInBlock(op))
        continue;
      for (Operation *user : op->getUsers())
        push(user);
    }
    return true;
  }

  /// Merges `from` into `into` when the union is a form and convex.
  bool merge(Group *into, Group *from, std::string &why) {
    if (into == from)
      return true;
    // Pipeline stages (sluice-pipeline) run on different ranks.
    auto stageOf = [](const Group *g) -> int64_t {
      for (Operation *op : g->ops)
        if (auto stage = op->getAttrOfType<IntegerAttr>("sluice.stage"))
          return stage.getInt();
      return -1;
    };
    if (int64_t a = stageOf(into), b = stageOf(from); a >= 0 && b >= 0 && a != b) {
      why = "the ops belong to different pipeline stages";
      return false;
    }
    SmallVector<Operation *> all(into->ops);
    all.append(from->ops.begin(), from->ops.end());
    if (failed(checkForm(all, allowViews, why)))
      return false;
    if (!convex(all)) {
      why = "fusing would create a cycle through ops outside the group";
      return false;
    }
    for (Operation *op : from->ops)
      groupOf[op] = into;
    into->ops = std::move(all);
    into->duplicates += from->duplicates;
    from->ops.clear();
    return true;
  }

  /// A copy of `op` (placed right after it) that only `user`'s operand
  /// `index` reads, in a group of its own.
  Operation *duplicateFor(Operation *op, Operation *user, unsigned index) {
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(op);
    Operation *copy = builder.clone(*op);
    Value used = user->getOperand(index);
    user->setOperand(index,
                     copy->getResult(cast<OpResult>(used).getResultNumber()));
    singleton(copy);
    return copy;
  }

  void undoDuplicate(Operation *copy, Operation *original, Operation *user,
                     unsigned index) {
    Value used = user->getOperand(index);
    user->setOperand(
        index, original->getResult(cast<OpResult>(used).getResultNumber()));
    groupOf.lookup(copy)->ops.clear();
    groupOf.erase(copy);
    copy->erase();
  }

  /// Whether `ops` (producers of `consumer`) hold an expensive op with fewer
  /// elements than `consumer`'s result: fused, it would be evaluated once per
  /// element of the larger iteration space.
  static bool recomputesExpensive(ArrayRef<Operation *> ops,
                                  Operation *consumer) {
    auto elements = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getNumElements();
    };
    int64_t space = elements(consumer->getResult(0));
    return llvm::any_of(ops, [&](Operation *op) {
      return isExpensive(op) && op->getNumResults() == 1 &&
             elements(op->getResult(0)) < space;
    });
  }

  /// Whether an elementwise op computes `op`'s input or reads its result
  /// (a fusion users would expect).
  static bool hasElementwiseNeighbour(Operation *op) {
    Operation *def = op->getOperand(0).getDefiningOp();
    return (def && kindOf(def) == Kind::Elementwise) ||
           llvm::any_of(op->getUsers(), [](Operation *user) {
             return kindOf(user) == Kind::Elementwise;
           });
  }

  bool onlyUsedIn(Operation *op, Group *g) {
    return llvm::all_of(op->getUsers(), [&](Operation *user) {
      return groupOf.lookup(user) == g;
    });
  }

  /// Pulls the chain of views that computes `user`'s operand `index` into
  /// `g` (duplicating views other groups read too). `accept` filters views.
  void absorbViews(Group *g, Operation *user, unsigned index,
                   function_ref<bool(Operation *)> accept = nullptr) {
    Operation *def = user->getOperand(index).getDefiningOp();
    if (!def || kindOf(def) != Kind::View || groupOf.lookup(def) == g ||
        !groupOf.count(def) || (accept && !accept(def)))
      return;
    // GEMMs pack their operands from unit-stride rows (the int8 GEMM packs
    // B from any strides, its A must have unit-stride rows); a
    // convolution, int8 or float, reads its operands contiguously.
    if (needsUnitStrideRows(user, index) && !unitStrideRows(user->getOperand(index)))
      return;
    if (isa<ConvIntegerOp, ConvOp>(user) && !isLayoutView(def))
      return;
    // The same view already in g (say the split of a fused QKV projection
    // read for q and for k): read that one.
    for (Operation *member : g->ops)
      if (member != def && member->isBeforeInBlock(user) &&
          OperationEquivalence::isEquivalentTo(
              member, def, OperationEquivalence::IgnoreLocations)) {
        Value used = user->getOperand(index);
        user->setOperand(
            index, member->getResult(cast<OpResult>(used).getResultNumber()));
        return;
      }
    // A view alone and read only here moves; one other groups read too, or
    // a leaf view of another group, is duplicated (views cost nothing). A
    // view of a value computed inside another group stays there.
    Group *owner = groupOf[def];
    bool alone = owner->ops.size() == 1;
    Operation *target = def;
    bool copied = false;
    if (!alone || !onlyUsedIn(def, g)) {
      if (!alone && inGroup(def->getOperand(0), owner))
        return;
      target = duplicateFor(def, user, index);
      copied = true;
    }
    std::string why;
    if (!merge(g, groupOf[target], why)) {
      if (copied)
        undoDuplicate(target, def, user, index);
      return;
    }
    absorbViews(g, target, 0, accept);
  }

  /// Stage 1 (F4): views into the attention's operands and onto its result.
  void growAttention(Operation *attention) {
    Group *g = groupOf[attention];
    for (unsigned i = 0; i < attention->getNumOperands(); ++i)
      absorbViews(g, attention, i);
    Value tail = attention->getResult(0);
    while (tail.hasOneUse()) {
      Operation *user = *tail.getUsers().begin();
      std::string why;
      if (!groupOf.count(user) || kindOf(user) != Kind::View ||
          groupOf[user]->ops.size() != 1 || !merge(g, groupOf[user], why))
        break;
      tail = user->getResult(0);
    }
  }

  /// Stages 2 and 3 (F2, F3): operand views, a row op's prologue, and the
  /// elementwise epilogue.
  void growAnchor(Operation *anchor, bool prologue) {
    Group *g = groupOf[anchor];
    if (!prologue) {
      // A float convolution reads its operands as whole buffers.
      for (unsigned i = 0; i < anchor->getNumOperands() && !isa<ConvOp>(anchor); ++i) {
        if (needsUnitStrideRows(anchor, i) && !unitStrideRows(anchor->getOperand(i))) {
          if (Operation *def = anchor->getOperand(i).getDefiningOp())
            refuse(def, std::string("not fused into ") + describeOp(anchor) +
                            ": the GEMM would read this operand transposed (its rows "
                            "are not unit-stride); it is copied first");
          continue;
        }
        absorbViews(g, anchor, i);
      }
      if (auto matmul = dyn_cast<MatMulOp>(anchor))
        absorbWeightDequant(g, matmul);
    } else {
      if (isa<LayerNormOp>(anchor) && (!anchor->getResult(1).use_empty() ||
                                       !anchor->getResult(2).use_empty())) {
        refuse(anchor,
               std::string("not fused: the layer_norm's mean or inv_std_dev "
                           "are used by other ops"));
        return;
      }
      absorbProducer(g, anchor, 0);
      for (unsigned i = 1; i < anchor->getNumOperands(); ++i)
        absorbViews(g, anchor, i, isLayoutView);
    }
    absorbEpilogue(g, anchor);
  }

  /// Whether operand `index` of `op` is a GEMM operand that must have
  /// unit-stride rows: both of a float matmul, the A of an int8 one.
  static bool needsUnitStrideRows(Operation *op, unsigned index) {
    return isa<MatMulOp>(op) || (isa<MatMulIntegerOp>(op) && index == 0);
  }

  /// Form W: the dequantization of a constant weight (and the cast after
  /// it) that `matmul` reads as B joins its group, so that the GEMM
  /// dequantizes inside and no float copy of the weight exists.
  void absorbWeightDequant(Group *g, MatMulOp matmul) {
    auto w = kernel::weightDequantOf(matmul);
    if (!w)
      return;
    auto isConstant = [](Value v) { return !v || isa_and_nonnull<ConstantOp>(v.getDefiningOp()); };
    DequantizeLinearOp dq = w->dequant;
    if (!isConstant(dq.getInput()) || !isConstant(dq.getScale()) ||
        !isConstant(dq.getZeroPoint()) || !groupOf.count(dq) ||
        (w->cast && !groupOf.count(w->cast)))
      return;
    // Both at once: {dequantize, cast} alone is no form.
    SmallVector<Group *, 2> from = {groupOf[dq]};
    if (w->cast && groupOf[w->cast] != from[0])
      from.push_back(groupOf[w->cast]);
    SmallVector<Operation *> all(g->ops);
    for (Group *f : from) {
      if (f == g)
        return;
      all.append(f->ops.begin(), f->ops.end());
    }
    std::string why;
    if (failed(checkForm(all, allowViews, why)) || !convex(all)) {
      refuse(dq, "not fused into " + describeOp(matmul) + ": " +
                     (why.empty() ? std::string("it would create a cycle") : why));
      return;
    }
    for (Group *f : from) {
      for (Operation *op : f->ops)
        groupOf[op] = g;
      g->duplicates += f->duplicates;
      f->ops.clear();
    }
    g->ops = std::move(all);
  }

  /// Form F8 (targets with fp8 GEMMs): the dequantizations of the E4M3
  /// activation and of the constant E4M3 weight that `matmul` reads join
  /// its group, so that the GEMM reads one byte per element and the
  /// activation's producer stores the E4M3 value (its quantize_linear ends
  /// that group). Both or neither; layout views on the activation follow.
  void absorbFp8Dequants(MatMulOp matmul, llvm::SetVector<Operation *> &shared) {
    // One activation read by several fp8 GEMMs (q, k and v of one
    // layer_norm): each takes its own copy of the dequantization (free in
    // a GEMM's prologue); the original goes once no one reads it.
    auto lhs = matmul.getLhs().getDefiningOp<DequantizeLinearOp>();
    auto rhs = matmul.getRhs().getDefiningOp<DequantizeLinearOp>();
    if (lhs && !lhs->hasOneUse() && kernel::isFp8TensorDequant(lhs) &&
        kernel::isFp8TensorDequant(rhs) && rhs->hasOneUse() && groupOf.count(lhs) &&
        groupOf[lhs]->ops.size() == 1) {
      shared.insert(lhs);
      duplicateFor(lhs, matmul, 0);
    }
    auto f8 = kernel::fp8OperandsOf(matmul);
    if (!f8)
      return;
    auto isConstant = [](Value v) {
      return isa_and_nonnull<ConstantOp, ShardConstantOp>(v.getDefiningOp());
    };
    if (!isConstant(f8->b.getInput()) || !groupOf.count(matmul) || !groupOf.count(f8->a) ||
        !groupOf.count(f8->b))
      return;
    Group *g = groupOf[matmul];
    SmallVector<Group *, 2> from = {groupOf[f8->a]};
    if (groupOf[f8->b] != from[0])
      from.push_back(groupOf[f8->b]);
    SmallVector<Operation *> all(g->ops);
    for (Group *f : from) {
      if (f == g || f->ops.size() != 1)
        return;
      all.append(f->ops.begin(), f->ops.end());
    }
    std::string why;
    if (failed(checkForm(all, allowViews, why)) || !convex(all)) {
      refuse(f8->a, "not fused into " + describeOp(matmul) + " as an fp8 GEMM: " +
                        (why.empty() ? std::string("it would create a cycle") : why));
      return;
    }
    for (Group *f : from) {
      for (Operation *op : f->ops)
        groupOf[op] = g;
      f->ops.clear();
    }
    g->ops = std::move(all);
    absorbViews(g, f8->a, 0, isLayoutView);
  }

  /// Whether a GEMM operand, read through its chain of views, has unit
  /// stride along its last dim (what the GEMM kernels pack from).
  static bool unitStrideRows(Value operand) {
    auto view = kernel::resolveView(operand, /*emitErrors=*/false);
    if (failed(view) || view->strides.empty())
      return succeeded(view);
    auto shape = cast<RankedTensorType>(operand.getType()).getShape();
    return shape.back() == 1 || view->strides.back() == 1;
  }

  /// A row op's prologue: the elementwise ops (and layout views) computing
  /// `user`'s operand `index`, recursively.
  void absorbProducer(Group *g, Operation *user, unsigned index) {
    Operation *def = user->getOperand(index).getDefiningOp();
    if (!def || !groupOf.count(def) || groupOf[def] == g)
      return;
    if (kindOf(def) == Kind::View) {
      if (!isLayoutView(def)) {
        refuse(def, std::string("not fused into the prologue of ") +
                        describeOp(anchorOf(g)) +
                        ": a non-layout view on the row input breaks "
                        "unit-stride rows");
        return;
      }
      size_t before = g->ops.size();
      absorbViews(g, user, index, isLayoutView);
      if (g->ops.size() == before)
        return;
      // The view now in g is user's operand's definer; go on above it.
      Operation *view = user->getOperand(index).getDefiningOp();
      absorbProducer(g, view, 0);
      return;
    }
    if (kindOf(def) != Kind::Elementwise || groupOf[def]->ops.size() != 1)
      return; // an anchor, or already fused (e.g. a GEMM epilogue)
    if (recomputesExpensive(def, user)) {
      refuse(def, std::string("not fused into the prologue of ") +
                      describeOp(anchorOf(g)) +
                      ": it is expensive and would be recomputed for "
                      "every broadcast element");
      return;
    }
    Operation *target = def;
    bool copied = false;
    if (!onlyUsedIn(def, g)) {
      int users = 0;
      for (Operation *u : def->getUsers())
        users += groupOf.lookup(u) != g;
      if (isExpensive(def)) {
        refuse(def, std::string("not fused into the prologue of ") +
                        describeOp(anchorOf(g)) + ": it has " +
                        std::to_string(users) +
                        " user(s) in other groups and is expensive to "
                        "recompute");
        return;
      }
      if (g->duplicates >= kDuplicateBudget) {
        refuse(def, std::string("not fused into the prologue of ") +
                        describeOp(anchorOf(g)) +
                        ": the group's duplication budget is spent");
        return;
      }
      target = duplicateFor(def, user, index);
      copied = true;
      g->duplicates++;
    }
    std::string why;
    if (!merge(g, groupOf[target], why)) {
      if (copied) {
        undoDuplicate(target, def, user, index);
        g->duplicates--;
      }
      refuse(def, std::string("not fused into the prologue of ") +
                      describeOp(anchorOf(g)) + ": " + why);
      return;
    }
    for (unsigned i = 0; i < target->getNumOperands(); ++i)
      absorbProducer(g, target, i);
  }

  /// Elementwise consumers of the anchor's result (and of values already in
  /// the epilogue), with views on their side operands.
  void absorbEpilogue(Group *g, Operation *anchor) {
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> candidates;
      for (Operation *op : g->ops) {
        if (op != anchor &&
            (kindOf(op) != Kind::Elementwise || op->isBeforeInBlock(anchor)))
          continue;
        Value result = op->getResult(0);
        for (Operation *user : result.getUsers())
          if (groupOf.count(user) && groupOf[user] != g &&
              kindOf(user) == Kind::Elementwise &&
              !llvm::is_contained(candidates, user))
            candidates.push_back(user);
      }
      llvm::sort(candidates, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      for (Operation *user : candidates) {
        if (groupOf[user] == g)
          continue;
        std::string why;
        if (groupOf[user]->ops.size() != 1)
          continue; // already in another group
        if (!merge(g, groupOf[user], why)) {
          refuse(user, std::string("not fused into the epilogue of ") +
                           describeOp(anchor) + ": " + why);
          continue;
        }
        for (unsigned i = 0; i < user->getNumOperands(); ++i)
          if (!inGroup(user->getOperand(i), g))
            absorbViews(g, user, i);
        changed = true;
      }
    }
  }

  /// Stage 4 (F1): elementwise producers into their consumers' groups.
  void growElementwise(Operation *op) {
    Group *g = groupOf[op];
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Operation *def = op->getOperand(i).getDefiningOp();
      if (!def || !groupOf.count(def) || groupOf[def] == g)
        continue;
      if (kindOf(def) == Kind::View) {
        if (allowViews)
          absorbViews(g, op, i, [&](Operation *view) {
            std::string why;
            SmallVector<Operation *> trial(g->ops);
            trial.push_back(view);
            if (succeeded(checkForm(trial, true, why)))
              return true;
            refuse(view,
                   std::string("not fused into the elementwise group of ") +
                       describeOp(op) + ": " + why);
            return false;
          });
        continue;
      }
      Group *producer = groupOf[def];
      if (kindOf(def) != Kind::Elementwise || anchorOf(producer))
        continue;
      if (recomputesExpensive(producer->ops, op)) {
        refuse(def, std::string("not fused into the elementwise group of ") +
                        describeOp(op) +
                        ": it is expensive and would be recomputed for "
                        "every broadcast element");
        continue;
      }
      std::string why;
      if (merge(g, producer, why))
        continue;
      // The producer's value is needed elsewhere too, with another shape or
      // through a path that would make a cycle: duplicate it if cheap.
      bool cheap = !isExpensive(def);
      if (onlyUsedIn(def, g) || producer->ops.size() != 1 || !cheap ||
          g->duplicates >= kDuplicateBudget) {
        if (!cheap)
          refuse(def, std::string("not fused into the elementwise group of ") +
                          describeOp(op) + ": " + why +
                          "; it is expensive to recompute");
        continue;
      }
      Operation *copy = duplicateFor(def, op, i);
      std::string why2;
      if (!merge(g, groupOf[copy], why2)) {
        undoDuplicate(copy, def, op, i);
        continue;
      }
      g->duplicates++;
    }
  }

  /// Stage 5: a view still alone joins its consumer's group (a copy per
  /// consumer), or its producer's when it is an output.
  void placeView(Operation *view) {
    SmallVector<std::pair<Operation *, unsigned>> uses;
    for (OpOperand &use : view->getUses())
      uses.push_back({use.getOwner(), use.getOperandNumber()});
    for (auto [user, index] : uses) {
      if (!groupOf.count(user))
        continue;
      absorbViews(groupOf[user], user, index);
    }
    if (!view->use_empty() && groupOf[view]->ops.size() == 1 &&
        isLayoutView(view))
      if (Operation *def = view->getOperand(0).getDefiningOp())
        if (groupOf.count(def)) {
          std::string why;
          (void)merge(groupOf[def], groupOf[view], why);
        }
  }

  void eraseDeadCopies() {
    // Originals whose every use moved to copies, and unused copies.
    SmallVector<Operation *> order = computeOps();
    for (Operation *op : llvm::reverse(order)) {
      Kind kind = kindOf(op);
      if ((kind != Kind::View && kind != Kind::Elementwise) || !op->use_empty())
        continue;
      Group *g = groupOf[op];
      llvm::erase(g->ops, op);
      groupOf.erase(op);
      op->erase();
    }
  }

  void mark() {
    Builder b(block.getParentOp()->getContext());
    int64_t id = 0;
    for (Operation &op : block) {
      auto it = groupOf.find(&op);
      if (it == groupOf.end())
        continue;
      Group *g = it->second;
      if (g->ops.size() < 2 || g->ops.front()->hasAttr(kGroupAttr))
        continue;
      Operation *anchor = anchorOf(g);
      if (!anchor) // F1: named after its last elementwise op
        for (Operation *member : g->ops)
          if (kindOf(member) == Kind::Elementwise &&
              (!anchor || anchor->isBeforeInBlock(member)))
            anchor = member;
      if (!anchor)
        for (Operation *member : g->ops)
          if (!isLayoutView(member))
            anchor = member;
      if (!anchor)
        anchor = g->ops.front();
      for (Operation *member : g->ops)
        member->setAttr(kGroupAttr, b.getI64IntegerAttr(id));
      anchor->setAttr(kAnchorAttr, b.getUnitAttr());
      ++id;
    }
  }
};

struct FuseGroupsPass
    : public ::sluice::impl::FuseGroupsPassBase<FuseGroupsPass> {
  using FuseGroupsPassBase::FuseGroupsPassBase;

  void runOnOperation() override {
    if (mode != "elementwise" && mode != "all") {
      getOperation().emitError() << "sluice-fuse-groups: unknown mode '" << mode
                                 << "' (elementwise, all)";
      return signalPassFailure();
    }
    bool all = mode == "all";
    Grouper(getOperation().getBody().front(), /*allowViews=*/all, fp8Gemm, convEpilogue).run(all);
    // The bodies of the ifs and loops the targets run as control flow.
    SmallVector<Block *> bodies;
    getOperation().walk([&](Operation *op) {
      if (isa<IfOp, LoopOp>(op))
        for (Region &region : op->getRegions())
          for (Block &body : region)
            bodies.push_back(&body);
    });
    for (Block *body : bodies)
      Grouper(*body, /*allowViews=*/all, fp8Gemm, convEpilogue).run(all);
  }
};

} // namespace
