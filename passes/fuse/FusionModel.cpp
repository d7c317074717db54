//===- FusionModel.cpp - fusion policy: op kinds, group legality, costs ---===//

#include "passes/fuse/FusionModel.h"


#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace sluice::fusion {

/// NumPy broadcasting of `shape` to `target` (right-aligned, size-1 dims).
static bool broadcastsTo(ArrayRef<int64_t> shape, ArrayRef<int64_t> target) {
  if (shape.size() > target.size())
    return false;
  size_t lead = target.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && shape[d] != target[lead + d])
      return false;
  return true;
}

namespace {

bool isConstant(Value v) {
  auto constant = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  return constant && isa<DenseElementsAttr>(constant.getValue());
}

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// Whether a view's parameter operands are constants, so that its group's
/// body holds no shape inputs (optional operands may be absent).
bool hasConstantParameters(Operation *op) {
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return isConstant(reshape.getShape());
  if (auto squeeze = dyn_cast<SqueezeOp>(op))
    return !squeeze.getAxes() || isConstant(squeeze.getAxes());
  if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op))
    return isConstant(unsqueeze.getAxes());
  if (auto slice = dyn_cast<SliceOp>(op))
    return isConstant(slice.getStarts()) && isConstant(slice.getEnds()) &&
           isConstant(slice.getAxes()) && isConstant(slice.getSteps());
  if (auto split = dyn_cast<SplitOp>(op))
    return !split.getSizes() || isConstant(split.getSizes());
  if (auto expand = dyn_cast<ExpandOp>(op))
    return isConstant(expand.getShape());
  return isa<TransposeOp>(op);
}

} // namespace

bool isLayoutView(Operation *op) {
  return op->hasTrait<OpCategory::LayoutPreservingView>() && hasConstantParameters(op);
}

Kind kindOf(Operation *op) {
  if (!hasStaticShapes(op) || op->getNumRegions() != 0)
    return Kind::Other;
  if (op->hasTrait<OpCategory::View>() && hasConstantParameters(op))
    return Kind::View;
  // Casts from or to strings are no scalar expression: a kernel of their own.
  if (auto castOp = dyn_cast<CastOp>(op))
    if (isa<StringType>(getElementTypeOrSelf(castOp.getInput().getType())) ||
        isa<StringType>(getElementTypeOrSelf(castOp.getOutput().getType())))
      return Kind::Other;
  if (kernel::isElementwise(op))
    return Kind::Elementwise;
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
    auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
    if (isLibraryFloat(lhs.getElementType()) && lhs.getRank() >= 2 && rhs.getRank() >= 2)
      return Kind::Gemm;
    return Kind::Other;
  }
  // A float 2-D convolution is a library call with an epilogue (the
  // grouping grows it only with conv-epilogue=true).
  if (kernel::isEpilogueConv(op))
    return Kind::Gemm;
  // Int8 contractions (Form I8) are GEMMs with an epilogue too: a
  // conv_integer runs as im2col + the int8 GEMM (KernelForms.h, libraryFor).
  if (isa<MatMulIntegerOp, ConvIntegerOp>(op))
    return kernel::isInt8Contraction(op) ? Kind::Gemm : Kind::Other;
  if (isa<AttentionOp>(op))
    return Kind::Attention;
  if (kernel::isTrailingRowOp(op))
    return Kind::Row;
  return Kind::Other;
}

bool isExpensive(Operation *op) {
  switch (kindOf(op)) {
  case Kind::View:
    return false;
  case Kind::Elementwise:
    return kernel::isTranscendental(op);
  default:
    return true;
  }
}

FailureOr<KernelForm> checkForm(ArrayRef<Operation *> opsIn, bool allowViews, std::string &why) {
  SmallVector<Operation *> ops;
  for (Operation *op : opsIn)
    if (!isa<ConstantOp>(op))
      ops.push_back(op);
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SmallPtrSet<Operation *, 16> inGroup(ops.begin(), ops.end());
  if (ops.size() <= 1)
    return kernel::judgeForm(ops, why);

  // Form W: the dequantization (and its cast) of a GEMM's B in the group
  // is that GEMM's prologue, not a second anchor.
  llvm::SmallPtrSet<Operation *, 4> weightPrologue;
  // Form F8: the dequantizations of an fp8 GEMM's A and B in the group
  // are its prologue too (the GEMM reads the E4M3 operands).
  for (Operation *op : ops)
    if (auto matmul = dyn_cast<MatMulOp>(op)) {
      if (auto w = kernel::weightDequantOf(matmul); w && inGroup.contains(w->dequant)) {
        weightPrologue.insert(w->dequant);
        if (w->cast)
          weightPrologue.insert(w->cast);
      }
      if (auto f8 = kernel::fp8OperandsOf(matmul);
          f8 && inGroup.contains(f8->a) && inGroup.contains(f8->b)) {
        weightPrologue.insert(f8->a);
        weightPrologue.insert(f8->b);
      }
    }
  Operation *anchor = nullptr;
  for (Operation *op : ops) {
    Kind kind = kindOf(op);
    if (kind == Kind::View || kind == Kind::Elementwise || weightPrologue.contains(op))
      continue;
    if (anchor) {
      why = "the group would hold two compute anchors (" + describeOp(anchor) +
            " and " + describeOp(op) + ")";
      return failure();
    }
    anchor = op;
  }
  Kind anchorKind = anchor ? kindOf(anchor) : Kind::Elementwise;
  if (!anchor && llvm::none_of(ops, [](Operation *op) {
        return kindOf(op) == Kind::Elementwise;
      })) {
    // Only views: one data-moving view (the F5 op) and layout-preserving
    // aliases of its operand or result.
    if (!allowViews) {
      why = "view ops are not fused in this mode";
      return failure();
    }
    int nonLayout =
        llvm::count_if(ops, [](Operation *op) { return !isLayoutView(op); });
    if (nonLayout != 1) {
      why = "a group of views holds exactly one view that moves data";
      return failure();
    }
    return kernel::judgeForm(ops, why);
  }

  // Roles, in program order (a topological order of the group).
  enum Role { LeafView, Prologue, Main, Trailing };
  llvm::DenseMap<Value, Role> role;
  auto roleOf = [&](Value v) -> std::optional<Role> {
    Operation *def = v.getDefiningOp();
    if (!def || !inGroup.contains(def))
      return std::nullopt; // an input (or a constant)
    return role.lookup(v);
  };
  bool anyView = false;
  for (Operation *op : ops) {
    Kind kind = kindOf(op);
    Role r;
    if (kind == Kind::View) {
      anyView = true;
      std::optional<Role> in = roleOf(op->getOperand(0));
      if (!in || *in == LeafView)
        r = LeafView;
      else if (*in == Main || *in == Trailing)
        r = Trailing;
      else
        r = Prologue;
    } else if (kind == Kind::Elementwise && !weightPrologue.contains(op)) {
      bool main = false;
      for (Value operand : op->getOperands()) {
        std::optional<Role> in = roleOf(operand);
        if (in && *in == Trailing) {
          why = describeOp(op) + " would read a view of a computed value";
          return failure();
        }
        main |= in && *in == Main;
      }
      if (main)
        r = Main;
      else if (anchor && op->isBeforeInBlock(anchor))
        r = Prologue;
      else if (anchor) {
        why = describeOp(op) + " computes on side inputs only, after " +
              describeOp(anchor);
        return failure();
      } else
        r = Main;
    } else if (weightPrologue.contains(op)) {
      r = Prologue;
    } else {
      for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
        std::optional<Role> in = roleOf(operand);
        // Form W's B, Form F8's A and B: dequantized inside the GEMM.
        bool weightB = operand.getDefiningOp() && weightPrologue.contains(operand.getDefiningOp());
        if (in && *in == Prologue && !(anchorKind == Kind::Row && i == 0) && !weightB) {
          why = "only a row op's input may be computed in its group";
          return failure();
        }
      }
      r = Main;
    }
    for (Value result : op->getResults())
      role[result] = r;
  }
  if (anyView && !allowViews) {
    why = "view ops are not fused in this mode";
    return failure();
  }

  // What leaves the group, and what each form admits.
  SmallVector<Value> yields;
  for (Operation *op : ops)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !inGroup.contains(user);
          }))
        yields.push_back(result);
  auto mainShape = [&](Value v) -> ArrayRef<int64_t> {
    while (role.lookup(v) == Trailing)
      v = v.getDefiningOp()->getOperand(0);
    return shapeOf(v);
  };
  for (Value y : yields) {
    Role r = role.lookup(y);
    if (r == LeafView || r == Prologue) {
      why = describeOp(y.getDefiningOp()) +
            " would be an output computed before the group's anchor";
      return failure();
    }
  }
  for (Operation *op : ops) {
    Role r = role.lookup(op->getResult(0));
    Kind kind = kindOf(op);
    if (kind == Kind::View && r == Trailing && anchorKind != Kind::Attention &&
        !isLayoutView(op)) {
      why = describeOp(op) +
            " on a computed value changes the layout of the output";
      return failure();
    }
    if (kind == Kind::View && r == Prologue && !isLayoutView(op)) {
      why = describeOp(op) + " on a computed row input breaks unit-stride rows";
      return failure();
    }
    // Vectorization: an elementwise group reads every leaf unit-stride along
    // the innermost axis; a transpose that moves the last axis does not.
    if (!anchor && kind == Kind::View && r == LeafView)
      if (auto transpose = dyn_cast<TransposeOp>(op)) {
        ArrayRef<int64_t> perm = transpose.getPerm();
        if (!perm.empty() && perm.back() != (int64_t)perm.size() - 1 &&
            shapeOf(transpose.getOutput()).back() > 1) {
          why = describeOp(op) + " moves the innermost axis (non-unit-stride "
                                 "reads break vectorization)";
          return failure();
        }
      }
  }

  switch (anchorKind) {
  case Kind::Elementwise: {
    std::optional<SmallVector<int64_t>> space;
    for (Value y : yields) {
      ArrayRef<int64_t> s = mainShape(y);
      if (space && ArrayRef<int64_t>(*space) != s) {
        why = "the group's outputs would have different shapes";
        return failure();
      }
      space = SmallVector<int64_t>(s);
    }
    return kernel::judgeForm(ops, why);
  }
  case Kind::Gemm:
  case Kind::Row: {
    Value result = anchor->getResult(0);
    if (anchorKind == Kind::Row && isa<LayerNormOp>(anchor) &&
        (!anchor->getResult(1).use_empty() ||
         !anchor->getResult(2).use_empty())) {
      why = "the layer_norm's mean or inv_std_dev are used";
      return failure();
    }
    for (Operation *op : ops) {
      if (op == anchor || kindOf(op) != Kind::Elementwise || weightPrologue.contains(op))
        continue;
      Role r = role.lookup(op->getResult(0));
      if (r == Prologue && anchorKind == Kind::Gemm) {
        why = "a GEMM's operands are views of its inputs only";
        return failure();
      }
      // The row emitter evaluates the prologue in the row input's index
      // space: every prologue value has that shape or broadcasts to it.
      if (r == Prologue &&
          !broadcastsTo(shapeOf(op->getResult(0)), shapeOf(anchor->getOperand(0)))) {
        why = describeOp(op) + " computes the row input in another shape (" +
              "a reshape of a computed value between it and the row op)";
        return failure();
      }
      if (r == Main && shapeOf(op->getResult(0)) != shapeOf(result)) {
        why = describeOp(op) + " changes the shape of " + describeOp(anchor) +
              "'s result";
        return failure();
      }
      if (r == Main)
        for (Value operand : op->getOperands())
          if (roleOf(operand) == Prologue) {
            why = describeOp(op) + " reads a value of the prologue";
            return failure();
          }
    }
    return kernel::judgeForm(ops, why);
  }
  case Kind::Attention:
  case Kind::Other: {
    for (Operation *op : ops) {
      if (op == anchor)
        continue;
      if (kindOf(op) != Kind::View) {
        why = describeOp(op) + " cannot join " + describeOp(anchor) +
              " (only views do)";
        return failure();
      }
      if (anchorKind == Kind::Other && !isLayoutView(op)) {
        why = describeOp(op) + " is not a layout-preserving view";
        return failure();
      }
    }
    return kernel::judgeForm(ops, why);
  }
  default:
    break;
  }
  why = "no form";
  return failure();
}

} // namespace sluice::fusion
