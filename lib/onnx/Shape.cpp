//===- Shape.cpp - ONNX shape and data-movement ops -----------------------===//

#include "lib/onnx/Binder.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/TensorFiles.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

LogicalResult shapeHandler(Binder &b) {
  std::optional<int64_t> end;
  if (b.hasAttr("end"))
    end = b.attrInt("end", 0);
  return b.output(b.create<ShapeOp>(b.input(0), b.attrInt("start", 0),
                                    end ? b.b.getI64IntegerAttr(*end) : IntegerAttr()));
}

LogicalResult reshapeHandler(Binder &b) {
  Value shape;
  if (b.opset() < 5)
    shape = b.constI64(b.attrInts("shape"));
  else
    shape = b.input(1);
  return b.output(b.create<ReshapeOp>(b.input(0), shape,
                                      b.attrInt("allowzero", 0) != 0));
}

LogicalResult transposeHandler(Binder &b) {
  auto type = b.rankedType(0);
  std::vector<int64_t> perm = b.attrInts("perm");
  if (perm.empty()) {
    if (!type)
      return b.fail("Transpose without perm needs a ranked input");
    for (int64_t i = type.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  }
  return b.output(b.create<TransposeOp>(b.input(0), ArrayRef<int64_t>(perm)));
}


/// A 1-D i64 parameter (Slice starts, Expand shape, ...): ONNX allows int32
/// for some, the sluice ops take i64.
Value asI64(Binder &b, Value v) {
  return v ? b.castTo(v, b.b.getI64Type()) : v;
}

/// The static number of entries of a 1-D parameter, or nullopt.
std::optional<int64_t> staticLength(Value v) {
  auto type = v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
  if (!type || type.getRank() != 1 || type.isDynamicDim(0))
    return std::nullopt;
  return type.getDimSize(0);
}

/// Replaces a rank-changing op whose result turned out static by a reshape
/// to a constant shape: the form the rest of the compiler knows best.
Value reshapeIfStatic(Binder &b, Value x, Value changed) {
  if (!changed)
    return changed;
  auto inType = dyn_cast<RankedTensorType>(x.getType());
  auto outType = dyn_cast<RankedTensorType>(changed.getType());
  if (!inType || !outType || !inType.hasStaticShape() ||
      !outType.hasStaticShape())
    return changed;
  changed.getDefiningOp()->erase();
  return b.create<ReshapeOp>(x, b.constI64(outType.getShape()), false);
}

/// Slice: attributes before opset 10, inputs (starts, ends, axes, steps)
/// after; absent axes and steps become constants.
LogicalResult sliceHandler(Binder &b) {
  Value starts, ends, axes, steps;
  if (b.opset() < 10) {
    std::vector<int64_t> s = b.attrInts("starts"), e = b.attrInts("ends");
    if (s.size() != e.size())
      return b.fail("Slice starts and ends differ in length");
    starts = b.constI64(s);
    ends = b.constI64(e);
    if (b.hasAttr("axes"))
      axes = b.constI64(b.attrInts("axes"));
  } else {
    starts = asI64(b, b.input(1));
    ends = asI64(b, b.input(2));
    axes = asI64(b, b.input(3));
    steps = asI64(b, b.input(4));
  }
  if (!starts || !ends)
    return b.fail("Slice needs starts and ends");
  if (!axes || !steps) {
    auto n = staticLength(starts);
    if (!n)
      return b.fail("Slice without axes or steps needs starts of static length");
    std::vector<int64_t> defaults(*n, 1);
    if (!steps)
      steps = b.constI64(defaults);
    for (int64_t i = 0; i < *n; ++i)
      defaults[i] = i;
    if (!axes)
      axes = b.constI64(defaults);
  }
  return b.output(b.create<SliceOp>(b.input(0), starts, ends, axes, steps));
}

LogicalResult concatHandler(Binder &b) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < b.numInputs(); ++i)
    if (b.hasInput(i))
      inputs.push_back(b.input(i));
  if (inputs.empty())
    return b.fail("Concat needs at least one input");
  if (b.opset() >= 4 && !b.hasAttr("axis"))
    return b.fail("Concat needs an axis");
  return b.output(b.create<ConcatOp>(ValueRange(inputs), b.attrInt("axis", 1)));
}

/// Split: sizes from the `split` attribute before opset 13 (or input 1 in
/// opset 1), from input 1 after; without sizes, an even split into as many
/// pieces as the node has outputs (opset 18's num_outputs agrees with it).
LogicalResult splitHandler(Binder &b) {
  Value sizes;
  if (b.opset() < 13 && b.hasAttr("split"))
    sizes = b.constI64(b.attrInts("split"));
  else
    sizes = asI64(b, b.input(1));
  int64_t count = b.numOutputs();
  if (b.hasAttr("num_outputs") && b.attrInt("num_outputs", 0) != count)
    return b.fail("Split num_outputs disagrees with the node's outputs");
  Operation *op = b.createOp<SplitOp>(b.input(0), sizes, b.attrInt("axis", 0),
                                      count);
  if (!op)
    return failure();
  for (int64_t i = 0; i < count; ++i)
    b.setOutput(i, op->getResult(i));
  return success();
}

/// Squeeze and Unsqueeze: axes attribute before opset 13, input after.
Value axesOperand(Binder &b) {
  if (b.opset() >= 13) {
    Value axes = asI64(b, b.input(1));
    // A scalar axes input means one axis (the ONNX reference accepts it, and
    // the Loop sequence tests feed one).
    auto type = axes ? dyn_cast<RankedTensorType>(axes.getType()) : nullptr;
    if (type && type.getRank() == 0)
      axes = b.create<ReshapeOp>(axes, b.constI64({1}), false);
    return axes;
  }
  if (!b.hasAttr("axes"))
    return Value();
  return b.constI64(b.attrInts("axes"));
}

LogicalResult squeezeHandler(Binder &b) {
  Value x = b.input(0);
  return b.output(reshapeIfStatic(b, x, b.create<SqueezeOp>(x, axesOperand(b))));
}

LogicalResult unsqueezeHandler(Binder &b) {
  Value x = b.input(0), axes = axesOperand(b);
  if (!axes)
    return b.fail("Unsqueeze needs axes");
  return b.output(reshapeIfStatic(b, x, b.create<UnsqueezeOp>(x, axes)));
}

/// Flatten is a reshape to [prod(dims[:axis]), prod(dims[axis:])]. When both
/// products are unknown at import, they are computed from the shape at run
/// time (shape, reduce prod, concat), which the simplify phase folds.
LogicalResult flattenHandler(Binder &b) {
  Value x = b.input(0);
  auto type = b.rankedType(0);
  if (!type)
    return b.fail("Flatten needs a ranked input");
  int64_t rank = type.getRank(), given = b.attrInt("axis", 1);
  int64_t axis = given < 0 ? given + rank : given;
  if (axis < 0 || axis > rank)
    return b.fail("flatten axis " + Twine(given) + " is out of range for rank " +
                  Twine(rank) + " (" + Twine(-rank) + " to " + Twine(rank) + ")");
  auto product = [&](int64_t from, int64_t to) -> std::optional<int64_t> {
    int64_t p = 1;
    for (int64_t d = from; d < to; ++d) {
      if (type.isDynamicDim(d))
        return std::nullopt;
      p *= type.getDimSize(d);
    }
    return p;
  };
  auto outer = product(0, axis), inner = product(axis, rank);
  if (outer && inner)
    return b.output(b.create<ReshapeOp>(x, b.constI64({*outer, *inner}), false));
  if (inner && *inner != 0)
    return b.output(b.create<ReshapeOp>(x, b.constI64({-1, *inner}), false));
  if (outer && *outer != 0)
    return b.output(b.create<ReshapeOp>(x, b.constI64({*outer, -1}), false));
  auto count = [&](int64_t from, int64_t to) {
    Value dims = b.create<ShapeOp>(x, from, b.b.getI64IntegerAttr(to));
    return b.create<ReduceOp>(dims, Value(), ReduceKind::prod, true, false);
  };
  Value target = b.create<ConcatOp>(ValueRange{count(0, axis), count(axis, rank)},
                                    int64_t(0));
  return b.output(b.create<ReshapeOp>(x, target, false));
}

/// ConstantOfShape: the value attribute (default float 0) as a one-element
/// dense attribute of the output's element type.
LogicalResult constantOfShapeHandler(Binder &b) {
  Tensor value = Tensor::scalar(DType::F32, 0);
  if (b.hasAttr("value")) {
    auto t = b.attrTensor("value");
    if (!t)
      return failure();
    if (t->numElements() != 1)
      return b.fail("ConstantOfShape value must hold one element");
    value = *t;
  }
  value = value.reshaped({1});
  MLIRContext *ctx = b.b.getContext();
  auto type = RankedTensorType::get({1}, typeFromDType(ctx, value.dtype()));
  return b.output(b.create<ConstantOfShapeOp>(asI64(b, b.input(0)),
                                              attrFromTensor(ctx, value, type)));
}

/// Size = the product of the shape (a rank-0 i64).
LogicalResult sizeHandler(Binder &b) {
  Value dims = b.create<ShapeOp>(b.input(0), int64_t(0), IntegerAttr());
  return b.output(
      b.create<ReduceOp>(dims, Value(), ReduceKind::prod, false, false));
}

LogicalResult rangeHandler(Binder &b) {
  return b.output(b.create<RangeOp>(b.input(0), b.input(1), b.input(2)));
}

/// Pad: attributes (`paddings` in opset 1, `pads` until 10, with `value`)
/// before opset 11, inputs (pads, constant_value, axes in 18) after.
LogicalResult padHandler(Binder &b) {
  Value x = b.input(0), pads, value;
  std::string modeName = b.attrString("mode", "constant");
  std::optional<PadMode> mode = symbolizePadMode(modeName);
  if (!mode)
    return b.fail("Pad mode '" + modeName + "' is not supported");
  if (b.opset() < 11) {
    pads = b.constI64(b.attrInts(b.opset() < 2 ? "paddings" : "pads"));
    if (*mode == PadMode::constant)
      value = b.constScalar(b.elementType(0), b.attrFloat("value", 0));
  } else {
    pads = asI64(b, b.input(1));
    value = b.input(2);
    if (b.hasInput(3)) {
      // Pads for a subset of axes: spread them over all dims.
      auto axes = getConstantIntValues(b.input(3));
      auto padValues = getConstantIntValues(pads);
      auto type = b.rankedType(0);
      if (!axes || !padValues || !type)
        return b.fail("Pad with axes needs constant axes and pads and a ranked input");
      int64_t rank = type.getRank(), n = axes->size();
      if ((int64_t)padValues->size() != 2 * n)
        return b.fail("Pad has the wrong number of pads for its axes");
      std::vector<int64_t> full(2 * rank, 0);
      for (int64_t i = 0; i < n; ++i) {
        int64_t a = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
        if (a < 0 || a >= rank)
          return b.fail("pad axis " + Twine((*axes)[i]) + " is out of range for rank " +
                        Twine(rank));
        full[a] = (*padValues)[i];
        full[a + rank] = (*padValues)[i + n];
      }
      pads = b.constI64(full);
    }
  }
  if (!x || !pads)
    return b.fail("Pad needs an input and pads");
  return b.output(b.create<PadOp>(x, pads, value, *mode));
}

LogicalResult expandHandler(Binder &b) {
  return b.output(b.create<ExpandOp>(b.input(0), asI64(b, b.input(1))));
}

LogicalResult tileHandler(Binder &b) {
  if (b.opset() < 6)
    return b.fail("Tile before opset 6 (tiles and axis inputs) is not supported");
  return b.output(b.create<TileOp>(b.input(0), asI64(b, b.input(1))));
}

LogicalResult triluHandler(Binder &b) {
  return b.output(b.create<TriluOp>(b.input(0), asI64(b, b.input(1)),
                                    b.attrInt("upper", 1) != 0));
}

/// EyeLike: ones of the input's shape masked to diagonal k by an upper and a
/// lower trilu, so that it works for dynamic shapes too; with a static shape
/// every operand is a constant and the simplify phase folds it.
LogicalResult eyeLikeHandler(Binder &b) {
  Value x = b.input(0);
  auto type = b.rankedType(0);
  if (type && type.getRank() != 2)
    return b.fail("EyeLike needs a 2-D input");
  DType dtype;
  if (b.hasAttr("dtype")) {
    if (!dtypeFromOnnx(b.attrInt("dtype", 1), dtype))
      return b.fail("EyeLike dtype is not supported");
  } else {
    auto fromInput = dtypeFromType(b.elementType(0));
    if (failed(fromInput))
      return b.fail("EyeLike input type is not supported");
    dtype = *fromInput;
  }
  MLIRContext *ctx = b.b.getContext();
  Tensor one = Tensor::scalar(dtype, 1).reshaped({1});
  auto oneType = RankedTensorType::get({1}, typeFromDType(ctx, dtype));
  Value dims = type && type.hasStaticShape()
                   ? b.constI64(type.getShape())
                   : b.create<ShapeOp>(x, int64_t(0), IntegerAttr());
  Value ones = b.create<ConstantOfShapeOp>(dims, attrFromTensor(ctx, one, oneType));
  Value k = b.constI64Scalar(b.attrInt("k", 0));
  Value upper = b.create<TriluOp>(ones, k, true);
  return b.output(b.create<TriluOp>(upper, k, false));
}

/// DepthToSpace and SpaceToDepth: reshape, transpose, reshape. The channel
/// and spatial dims must be static; the batch dim is copied (reshape 0).
LogicalResult depthToSpaceHandler(Binder &b) {
  auto type = b.rankedType(0);
  int64_t bs = b.attrInt("blocksize", 0);
  if (!type || type.getRank() != 4 || bs <= 0)
    return b.fail("DepthToSpace needs a 4-D input and a positive blocksize");
  int64_t c = type.getDimSize(1), h = type.getDimSize(2), w = type.getDimSize(3);
  if (ShapedType::isDynamic(c) || ShapedType::isDynamic(h) ||
      ShapedType::isDynamic(w))
    return b.fail("DepthToSpace needs static channel and spatial dims");
  if (c % (bs * bs))
    return b.fail("DepthToSpace channels are not divisible by blocksize^2");
  int64_t oc = c / (bs * bs);
  bool crd = b.attrString("mode", "DCR") == "CRD";
  Value x = b.input(0);
  Value split = b.create<ReshapeOp>(
      x, crd ? b.constI64({0, oc, bs, bs, h, w}) : b.constI64({0, bs, bs, oc, h, w}),
      false);
  SmallVector<int64_t> perm = crd ? SmallVector<int64_t>{0, 1, 4, 2, 5, 3}
                                  : SmallVector<int64_t>{0, 3, 4, 1, 5, 2};
  Value moved = b.create<TransposeOp>(split, ArrayRef<int64_t>(perm));
  return b.output(
      b.create<ReshapeOp>(moved, b.constI64({0, oc, h * bs, w * bs}), false));
}

LogicalResult spaceToDepthHandler(Binder &b) {
  auto type = b.rankedType(0);
  int64_t bs = b.attrInt("blocksize", 0);
  if (!type || type.getRank() != 4 || bs <= 0)
    return b.fail("SpaceToDepth needs a 4-D input and a positive blocksize");
  int64_t c = type.getDimSize(1), h = type.getDimSize(2), w = type.getDimSize(3);
  if (ShapedType::isDynamic(c) || ShapedType::isDynamic(h) ||
      ShapedType::isDynamic(w))
    return b.fail("SpaceToDepth needs static channel and spatial dims");
  if (h % bs || w % bs)
    return b.fail("SpaceToDepth spatial dims are not divisible by blocksize");
  Value split = b.create<ReshapeOp>(
      b.input(0), b.constI64({0, c, h / bs, bs, w / bs, bs}), false);
  Value moved =
      b.create<TransposeOp>(split, ArrayRef<int64_t>{0, 3, 5, 1, 2, 4});
  return b.output(b.create<ReshapeOp>(
      moved, b.constI64({0, c * bs * bs, h / bs, w / bs}), false));
}

LogicalResult reverseSequenceHandler(Binder &b) {
  return b.output(b.create<ReverseSequenceOp>(
      b.input(0), asI64(b, b.input(1)), b.attrInt("batch_axis", 1),
      b.attrInt("time_axis", 0)));
}

} // namespace

void registerShapeHandlers(OpRegistry &r) {
  r.on("Shape", 1, shapeHandler);
  r.on("Reshape", 1, reshapeHandler);
  r.on("Transpose", 1, transposeHandler);
  r.on("Slice", 1, sliceHandler);
  r.on("Concat", 1, concatHandler);
  r.on("Split", 1, splitHandler);
  r.on("Squeeze", 1, squeezeHandler);
  r.on("Unsqueeze", 1, unsqueezeHandler);
  r.on("Flatten", 1, flattenHandler);
  r.on("ConstantOfShape", 9, constantOfShapeHandler);
  r.on("Size", 1, sizeHandler);
  r.on("Range", 11, rangeHandler);
  r.on("Pad", 1, padHandler);
  r.on("Expand", 8, expandHandler);
  r.on("Tile", 1, tileHandler);
  r.on("Trilu", 14, triluHandler);
  r.on("EyeLike", 9, eyeLikeHandler);
  r.on("DepthToSpace", 1, depthToSpaceHandler);
  r.on("SpaceToDepth", 1, spaceToDepthHandler);
  r.on("ReverseSequence", 10, reverseSequenceHandler);
}

} // namespace sluice::onnx_import
