//===- FusionModel.cpp - op categories, group forms and the cost model ----===//

#include "passes/fuse/FusionModel.h"

#include "codegen/common/ScalarEmitter.h"

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
  auto constant = v.getDefiningOp<ConstantOp>();
  return constant && isa<DenseElementsAttr>(constant.getValue());
}

std::optional<SmallVector<int64_t>> constantInts(Value v) {
  auto constant = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  auto dense = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                        : DenseIntElementsAttr();
  if (!dense)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : dense.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Whether a reduction-like op normalizes/reduces trailing axes only, so a
/// row is contiguous (the vectorizable case).
bool isRowOp(Operation *op) {
  if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    int64_t rank = rankOf(softmax.getInput());
    int64_t axis = softmax.getAxis();
    return rank > 0 && (axis < 0 ? axis + rank : axis) == rank - 1;
  }
  if (isa<LayerNormOp, RmsNormOp>(op))
    return true; // normalize dims [axis, rank): trailing by definition
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    int64_t rank = rankOf(reduce.getInput());
    if (!reduce.getAxes())
      return true; // all dims
    auto axes = constantInts(reduce.getAxes());
    if (!axes)
      return false;
    if (axes->empty())
      return !reduce.getNoopWithEmptyAxes();
    SmallVector<int64_t> sorted;
    for (int64_t a : *axes)
      sorted.push_back(a < 0 ? a + rank : a);
    llvm::sort(sorted);
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != rank - (int64_t)sorted.size() + (int64_t)i)
        return false;
    return true;
  }
  return false;
}

} // namespace

bool hasStaticShapes(Operation *op) {
  auto isStatic = [](Type t) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    return ranked && ranked.hasStaticShape();
  };
  return llvm::all_of(op->getResultTypes(), isStatic) &&
         llvm::all_of(op->getOperandTypes(), isStatic);
}

bool isLayoutView(Operation *op) {
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return isConstant(reshape.getShape());
  if (auto squeeze = dyn_cast<SqueezeOp>(op))
    return !squeeze.getAxes() || isConstant(squeeze.getAxes());
  if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op))
    return isConstant(unsqueeze.getAxes());
  return false;
}

bool isLibraryFloat(Type element) {
  return element.isF32() || element.isF64() || element.isF16() || element.isBF16();
}

Kind kindOf(Operation *op) {
  if (!hasStaticShapes(op) || op->getNumRegions() != 0)
    return Kind::Other;
  if (isLayoutView(op) || isa<TransposeOp>(op))
    return Kind::View;
  if (auto slice = dyn_cast<SliceOp>(op))
    if (isConstant(slice.getStarts()) && isConstant(slice.getEnds()) &&
        isConstant(slice.getAxes()) && isConstant(slice.getSteps()))
      return Kind::View;
  if (auto split = dyn_cast<SplitOp>(op))
    if (!split.getSizes() || isConstant(split.getSizes()))
      return Kind::View;
  if (auto expand = dyn_cast<ExpandOp>(op))
    if (isConstant(expand.getShape()))
      return Kind::View;
  // Casts from or to strings are no scalar expression: a kernel of their own.
  if (auto castOp = dyn_cast<CastOp>(op))
    if (isa<StringType>(getElementTypeOrSelf(castOp.getInput().getType())) ||
        isa<StringType>(getElementTypeOrSelf(castOp.getOutput().getType())))
      return Kind::Other;
  if (codegen::isElementwise(op))
    return Kind::Elementwise;
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    Type et =
        cast<RankedTensorType>(matmul.getLhs().getType()).getElementType();
    if (isLibraryFloat(et) && rankOf(matmul.getLhs()) >= 2 &&
        rankOf(matmul.getRhs()) >= 2)
      return Kind::Gemm;
    return Kind::Other;
  }
  if (isa<AttentionOp>(op))
    return Kind::Attention;
  if (isRowOp(op))
    return Kind::Row;
  return Kind::Other;
}

bool isExpensive(Operation *op) {
  switch (kindOf(op)) {
  case Kind::View:
    return false;
  case Kind::Elementwise:
    return isa<ExpOp, LogOp, ErfOp, TanhOp, SigmoidOp, GeluOp, SiluOp, PowOp,
               SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp,
               AsinhOp, AcoshOp, AtanhOp>(op);
  default:
    return true;
  }
}

std::string describeOp(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "'";
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (isa<NameLoc>(inner)) {
        loc = inner;
        break;
      }
  if (auto name = dyn_cast<NameLoc>(loc))
    s += " (node '" + name.getName().str() + "')";
  return s;
}

FailureOr<Form> checkForm(ArrayRef<Operation *> opsIn, bool allowViews,
                          std::string &why) {
  SmallVector<Operation *> ops;
  for (Operation *op : opsIn)
    if (!isa<ConstantOp>(op))
      ops.push_back(op);
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SmallPtrSet<Operation *, 16> inGroup(ops.begin(), ops.end());
  if (ops.size() <= 1)
    return Form::Single;

  Operation *anchor = nullptr;
  for (Operation *op : ops) {
    Kind kind = kindOf(op);
    if (kind == Kind::View || kind == Kind::Elementwise)
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
    return Form::Single;
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
    } else if (kind == Kind::Elementwise) {
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
    } else {
      for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
        std::optional<Role> in = roleOf(operand);
        if (in && *in == Prologue && !(anchorKind == Kind::Row && i == 0)) {
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
    return Form::Elementwise;
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
      if (op == anchor || kindOf(op) != Kind::Elementwise)
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
    return anchorKind == Kind::Gemm ? Form::Gemm : Form::Row;
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
    return anchorKind == Kind::Attention ? Form::Attention : Form::Single;
  }
  default:
    break;
  }
  why = "no form";
  return failure();
}

} // namespace sluice::fusion
