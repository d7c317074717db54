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

namespace {

/// What a value of the group is, in program order (a topological order of
/// the group): a view of inputs only, part of the anchor's prologue, the
/// anchor or what computes on its result, or a view of a computed value.
enum Role { LeafView, Prologue, Main, Trailing };

/// A candidate group as checkForm reads it.
struct Group {
  /// The group's ops less its constants, in program order.
  SmallVector<Operation *> ops;
  llvm::SmallPtrSet<Operation *, 16> inGroup;
  /// Form W: the dequantization (and its cast) of a GEMM's B in the group
  /// is that GEMM's prologue, not a second anchor. Form F8: the
  /// dequantizations of an fp8 GEMM's A and B in the group are its prologue
  /// too (the GEMM reads the E4M3 operands).
  llvm::SmallPtrSet<Operation *, 4> weightPrologue;
  /// The one op that is neither a view, elementwise nor a weight prologue.
  Operation *anchor = nullptr;
  Kind anchorKind = Kind::Elementwise;
  llvm::DenseMap<Value, Role> role;
  /// The results used outside the group.
  SmallVector<Value> yields;

  /// The role of `v`, or nullopt for an input (or a constant).
  std::optional<Role> roleOf(Value v) const {
    Operation *def = v.getDefiningOp();
    if (!def || !inGroup.contains(def))
      return std::nullopt;
    return role.lookup(v);
  }

  /// The shape of the main computation behind `v`: trailing views undone.
  ArrayRef<int64_t> mainShape(Value v) const {
    while (role.lookup(v) == Trailing)
      v = v.getDefiningOp()->getOperand(0);
    return shapeOf(v);
  }
};

/// Fills the group's ops (constants left out) in program order.
void collectOps(Group &g, ArrayRef<Operation *> opsIn) {
  for (Operation *op : opsIn)
    if (!isa<ConstantOp>(op))
      g.ops.push_back(op);
  llvm::sort(g.ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  g.inGroup.insert(g.ops.begin(), g.ops.end());
}

/// Finds the dequantizations that are a GEMM's prologue (Forms W and F8).
void collectWeightPrologue(Group &g) {
  for (Operation *op : g.ops) {
    auto matmul = dyn_cast<MatMulOp>(op);
    if (!matmul)
      continue;
    if (auto w = kernel::weightDequantOf(matmul); w && g.inGroup.contains(w->dequant)) {
      g.weightPrologue.insert(w->dequant);
      if (w->cast)
        g.weightPrologue.insert(w->cast);
    }
    if (auto f8 = kernel::fp8OperandsOf(matmul);
        f8 && g.inGroup.contains(f8->a) && g.inGroup.contains(f8->b)) {
      g.weightPrologue.insert(f8->a);
      g.weightPrologue.insert(f8->b);
    }
  }
}

/// Finds the group's compute anchor, if any; fails on two.
LogicalResult findAnchor(Group &g, std::string &why) {
  for (Operation *op : g.ops) {
    Kind kind = kindOf(op);
    if (kind == Kind::View || kind == Kind::Elementwise || g.weightPrologue.contains(op))
      continue;
    if (g.anchor) {
      why = "the group would hold two compute anchors (" + describeOp(g.anchor) + " and " +
            describeOp(op) + ")";
      return failure();
    }
    g.anchor = op;
  }
  g.anchorKind = g.anchor ? kindOf(g.anchor) : Kind::Elementwise;
  return success();
}

/// Whether the group holds views only (no anchor, nothing elementwise).
bool onlyViews(const Group &g) {
  return !g.anchor &&
         llvm::none_of(g.ops, [](Operation *op) { return kindOf(op) == Kind::Elementwise; });
}

/// A group of views only: one data-moving view (the F5 op) and
/// layout-preserving aliases of its operand or result.
FailureOr<KernelForm> checkViewGroup(const Group &g, bool allowViews, std::string &why) {
  if (!allowViews) {
    why = "view ops are not fused in this mode";
    return failure();
  }
  int nonLayout = llvm::count_if(g.ops, [](Operation *op) { return !isLayoutView(op); });
  if (nonLayout != 1) {
    why = "a group of views holds exactly one view that moves data";
    return failure();
  }
  return kernel::judgeForm(g.ops, why);
}

/// A view's role follows its operand's.
Role viewRole(const Group &g, Operation *op) {
  std::optional<Role> in = g.roleOf(op->getOperand(0));
  if (!in || *in == LeafView)
    return LeafView;
  if (*in == Main || *in == Trailing)
    return Trailing;
  return Prologue;
}

/// An elementwise op (not a weight prologue) is main when it reads the main
/// computation, prologue when it comes before the anchor.
FailureOr<Role> elementwiseRole(const Group &g, Operation *op, std::string &why) {
  bool main = false;
  for (Value operand : op->getOperands()) {
    std::optional<Role> in = g.roleOf(operand);
    if (in && *in == Trailing) {
      why = describeOp(op) + " would read a view of a computed value";
      return failure();
    }
    main |= in && *in == Main;
  }
  if (main)
    return Main;
  if (g.anchor && op->isBeforeInBlock(g.anchor))
    return Prologue;
  if (g.anchor) {
    why = describeOp(op) + " computes on side inputs only, after " + describeOp(g.anchor);
    return failure();
  }
  return Main;
}

/// The anchor reads computed values only as a row op's input or as a
/// weight dequantized inside the GEMM (Form W's B, Form F8's A and B).
LogicalResult checkAnchorOperands(const Group &g, Operation *op, std::string &why) {
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    std::optional<Role> in = g.roleOf(operand);
    bool weightB = operand.getDefiningOp() && g.weightPrologue.contains(operand.getDefiningOp());
    if (in && *in == Prologue && !(g.anchorKind == Kind::Row && i == 0) && !weightB) {
      why = "only a row op's input may be computed in its group";
      return failure();
    }
  }
  return success();
}

/// Gives each value computed in the group its role, in program order.
LogicalResult assignRoles(Group &g, bool allowViews, std::string &why) {
  bool anyView = false;
  for (Operation *op : g.ops) {
    Kind kind = kindOf(op);
    Role r;
    if (kind == Kind::View) {
      anyView = true;
      r = viewRole(g, op);
    } else if (kind == Kind::Elementwise && !g.weightPrologue.contains(op)) {
      FailureOr<Role> elementwise = elementwiseRole(g, op, why);
      if (failed(elementwise))
        return failure();
      r = *elementwise;
    } else if (g.weightPrologue.contains(op)) {
      r = Prologue;
    } else {
      if (failed(checkAnchorOperands(g, op, why)))
        return failure();
      r = Main;
    }
    for (Value result : op->getResults())
      g.role[result] = r;
  }
  if (anyView && !allowViews) {
    why = "view ops are not fused in this mode";
    return failure();
  }
  return success();
}

/// Finds what leaves the group; each must be computed by or after the anchor.
LogicalResult collectYields(Group &g, std::string &why) {
  for (Operation *op : g.ops)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !g.inGroup.contains(user); }))
        g.yields.push_back(result);
  for (Value y : g.yields) {
    Role r = g.role.lookup(y);
    if (r == LeafView || r == Prologue) {
      why = describeOp(y.getDefiningOp()) +
            " would be an output computed before the group's anchor";
      return failure();
    }
  }
  return success();
}

/// Views keep the layout of computed values, and an elementwise group reads
/// every leaf unit-stride along the innermost axis (vectorization); a
/// transpose that moves the last axis does not.
LogicalResult checkViews(const Group &g, std::string &why) {
  for (Operation *op : g.ops) {
    Role r = g.role.lookup(op->getResult(0));
    Kind kind = kindOf(op);
    if (kind == Kind::View && r == Trailing && g.anchorKind != Kind::Attention &&
        !isLayoutView(op)) {
      why = describeOp(op) + " on a computed value changes the layout of the output";
      return failure();
    }
    if (kind == Kind::View && r == Prologue && !isLayoutView(op)) {
      why = describeOp(op) + " on a computed row input breaks unit-stride rows";
      return failure();
    }
    if (!g.anchor && kind == Kind::View && r == LeafView)
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
  return success();
}

/// An elementwise group: every output in one index space.
FailureOr<KernelForm> checkElementwiseForm(const Group &g, std::string &why) {
  std::optional<SmallVector<int64_t>> space;
  for (Value y : g.yields) {
    ArrayRef<int64_t> s = g.mainShape(y);
    if (space && ArrayRef<int64_t>(*space) != s) {
      why = "the group's outputs would have different shapes";
      return failure();
    }
    space = SmallVector<int64_t>(s);
  }
  return kernel::judgeForm(g.ops, why);
}

/// A GEMM or row op with its prologue (row ops only) and epilogue.
FailureOr<KernelForm> checkEpilogueForm(const Group &g, std::string &why) {
  Operation *anchor = g.anchor;
  Value result = anchor->getResult(0);
  if (g.anchorKind == Kind::Row && isa<LayerNormOp>(anchor) &&
      (!anchor->getResult(1).use_empty() || !anchor->getResult(2).use_empty())) {
    why = "the layer_norm's mean or inv_std_dev are used";
    return failure();
  }
  for (Operation *op : g.ops) {
    if (op == anchor || kindOf(op) != Kind::Elementwise || g.weightPrologue.contains(op))
      continue;
    Role r = g.role.lookup(op->getResult(0));
    if (r == Prologue && g.anchorKind == Kind::Gemm) {
      why = "a GEMM's operands are views of its inputs only";
      return failure();
    }
    // The row emitter evaluates the prologue in the row input's index
    // space: every prologue value has that shape or broadcasts to it.
    if (r == Prologue && !broadcastsTo(shapeOf(op->getResult(0)), shapeOf(anchor->getOperand(0)))) {
      why = describeOp(op) + " computes the row input in another shape (" +
            "a reshape of a computed value between it and the row op)";
      return failure();
    }
    if (r == Main && shapeOf(op->getResult(0)) != shapeOf(result)) {
      why = describeOp(op) + " changes the shape of " + describeOp(anchor) + "'s result";
      return failure();
    }
    if (r == Main)
      for (Value operand : op->getOperands())
        if (g.roleOf(operand) == Prologue) {
          why = describeOp(op) + " reads a value of the prologue";
          return failure();
        }
  }
  return kernel::judgeForm(g.ops, why);
}

/// An attention or another op: only views join it (layout-preserving ones
/// for another op).
FailureOr<KernelForm> checkViewsOnlyForm(const Group &g, std::string &why) {
  for (Operation *op : g.ops) {
    if (op == g.anchor)
      continue;
    if (kindOf(op) != Kind::View) {
      why = describeOp(op) + " cannot join " + describeOp(g.anchor) + " (only views do)";
      return failure();
    }
    if (g.anchorKind == Kind::Other && !isLayoutView(op)) {
      why = describeOp(op) + " is not a layout-preserving view";
      return failure();
    }
  }
  return kernel::judgeForm(g.ops, why);
}

} // namespace

FailureOr<KernelForm> checkForm(ArrayRef<Operation *> opsIn, bool allowViews, std::string &why) {
  Group g;
  collectOps(g, opsIn);
  if (g.ops.size() <= 1)
    return kernel::judgeForm(g.ops, why);
  collectWeightPrologue(g);
  if (failed(findAnchor(g, why)))
    return failure();
  if (onlyViews(g))
    return checkViewGroup(g, allowViews, why);
  if (failed(assignRoles(g, allowViews, why)) || failed(collectYields(g, why)) ||
      failed(checkViews(g, why)))
    return failure();
  switch (g.anchorKind) {
  case Kind::Elementwise:
    return checkElementwiseForm(g, why);
  case Kind::Gemm:
  case Kind::Row:
    return checkEpilogueForm(g, why);
  case Kind::Attention:
  case Kind::Other:
    return checkViewsOnlyForm(g, why);
  default:
    break;
  }
  why = "no form";
  return failure();
}

} // namespace sluice::fusion
