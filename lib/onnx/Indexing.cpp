//===- Indexing.cpp - ONNX gathers, scatters, index-driven ops ------------===//
//
// Gather/Scatter families, OneHot, NonZero, Compress, Unique,
// NonMaxSuppression, and the resamplers (Resize, the deprecated Upsample,
// RoiAlign, GridSample). Parameters that later opsets take as inputs and
// earlier ones as attributes (Upsample's scales) become constants, so one op
// serves every version.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

/// The reduction attribute of ScatterElements/ScatterND (opset 16+), null for
/// "none"; fails on an unknown name.
FailureOr<ReduceKindAttr> scatterReduction(Binder &b) {
  std::string name = b.attrString("reduction", "none");
  MLIRContext *ctx = b.b.getContext();
  if (name == "none")
    return ReduceKindAttr();
  if (name == "add")
    return ReduceKindAttr::get(ctx, ReduceKind::sum);
  if (name == "mul")
    return ReduceKindAttr::get(ctx, ReduceKind::prod);
  if (name == "max")
    return ReduceKindAttr::get(ctx, ReduceKind::max);
  if (name == "min")
    return ReduceKindAttr::get(ctx, ReduceKind::min);
  (void)b.fail("unknown reduction '" + name + "'");
  return failure();
}

/// Input `i` cast to i64 unless it already is an index type (ONNX lets
/// OneHot's indices and depth be any numeric type).
Value indexInput(Binder &b, unsigned i) {
  Value v = b.input(i);
  if (!v)
    return v;
  Type element = b.elementType(i);
  if (element.isInteger(32) || element.isInteger(64))
    return v;
  return b.castTo(v, b.b.getI64Type());
}

/// An optional input, or null when absent or statically empty (exporters
/// pass empty tensors for Resize's unused roi/scales).
Value optionalInput(Binder &b, unsigned i) {
  Value v = b.input(i);
  if (!v)
    return v;
  if (auto type = b.rankedType(i); type && type.getNumElements() == 0 &&
                                   type.hasStaticShape())
    return Value();
  return v;
}

LogicalResult gatherHandler(Binder &b) {
  return b.output(b.create<GatherOp>(b.input(0), b.input(1), b.attrInt("axis", 0)));
}

LogicalResult gatherElementsHandler(Binder &b) {
  return b.output(
      b.create<GatherElementsOp>(b.input(0), b.input(1), b.attrInt("axis", 0)));
}

LogicalResult gatherNDHandler(Binder &b) {
  return b.output(b.create<GatherNDOp>(b.input(0), b.input(1),
                                       b.attrInt("batch_dims", 0)));
}

/// ScatterElements and the legacy Scatter (opset 9-10, no reduction).
LogicalResult scatterElementsHandler(Binder &b) {
  auto reduction = scatterReduction(b);
  if (failed(reduction))
    return failure();
  return b.output(b.create<ScatterElementsOp>(b.input(0), b.input(1),
                                              b.input(2), b.attrInt("axis", 0),
                                              *reduction));
}

LogicalResult scatterNDHandler(Binder &b) {
  auto reduction = scatterReduction(b);
  if (failed(reduction))
    return failure();
  return b.output(
      b.create<ScatterNDOp>(b.input(0), b.input(1), b.input(2), *reduction));
}

LogicalResult oneHotHandler(Binder &b) {
  if (!b.input(0) || !b.input(1) || !b.input(2))
    return b.fail("expects indices, depth and values");
  return b.output(b.create<OneHotOp>(indexInput(b, 0), indexInput(b, 1),
                                     b.input(2), b.attrInt("axis", -1)));
}

LogicalResult nonZeroHandler(Binder &b) {
  return b.output(b.create<NonZeroOp>(b.input(0)));
}

LogicalResult compressHandler(Binder &b) {
  IntegerAttr axis;
  if (b.hasAttr("axis"))
    axis = b.b.getI64IntegerAttr(b.attrInt("axis", 0));
  return b.output(b.create<CompressOp>(b.input(0), b.input(1), axis));
}

/// Builds a resize with the given modes after checking the mode name.
LogicalResult emitResize(Binder &b, Value roi, Value scales, Value sizes,
                         StringRef mode, StringRef transform,
                         StringRef nearest) {
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return b.fail("unsupported mode '" + mode + "'");
  if (!scales == !sizes)
    return b.fail("expects exactly one non-empty input of scales and sizes");
  if (scales)
    scales = b.castTo(scales, b.b.getF32Type());
  return b.output(b.create<ResizeOp>(
      b.input(0), roi, scales, sizes, mode, transform, nearest,
      APFloat(b.attrFloat("cubic_coeff_a", -0.75f)),
      b.attrInt("exclude_outside", 0) != 0,
      APFloat(b.attrFloat("extrapolation_value", 0.0f))));
}

LogicalResult resizeHandler(Binder &b) {
  std::string mode = b.attrString("mode", "nearest");
  if (b.opset() < 11) {
    // Resize-10 is Upsample-9 renamed: asymmetric coordinates, floor.
    return emitResize(b, Value(), optionalInput(b, 1), Value(), mode,
                      "asymmetric", "floor");
  }
  if (b.hasAttr("antialias") && b.attrInt("antialias", 0))
    return b.fail("antialias is not supported");
  if (b.hasAttr("axes"))
    return b.fail("the axes attribute is not supported");
  if (b.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return b.fail("keep_aspect_ratio_policy other than stretch is not supported");
  std::string transform =
      b.attrString("coordinate_transformation_mode", "half_pixel");
  Value roi = transform == "tf_crop_and_resize" ? optionalInput(b, 1) : Value();
  return emitResize(b, roi, optionalInput(b, 2), optionalInput(b, 3), mode,
                    transform, b.attrString("nearest_mode", "round_prefer_floor"));
}

LogicalResult upsampleHandler(Binder &b) {
  std::string mode = b.attrString("mode", "nearest");
  if (mode == "bilinear")
    mode = "linear";
  Value scales;
  if (b.opset() < 9) {
    std::vector<float> values = b.attrFloats("scales");
    if (values.empty())
      return b.fail("expects a scales attribute");
    auto type = RankedTensorType::get({(int64_t)values.size()}, b.b.getF32Type());
    scales = sluice::ConstantOp::create(
        b.b, b.loc, DenseElementsAttr::get(type, ArrayRef<float>(values)));
  } else {
    scales = b.input(1);
  }
  return emitResize(b, Value(), scales, Value(), mode, "asymmetric", "floor");
}

LogicalResult uniqueHandler(Binder &b) {
  IntegerAttr axis;
  if (b.hasAttr("axis"))
    axis = b.b.getI64IntegerAttr(b.attrInt("axis", 0));
  Operation *op =
      b.createOp<UniqueOp>(b.input(0), axis, b.attrInt("sorted", 1) != 0);
  if (!op)
    return failure();
  for (unsigned i = 0; i < b.numOutputs() && i < op->getNumResults(); ++i)
    b.setOutput(i, op->getResult(i));
  return success();
}

LogicalResult nonMaxSuppressionHandler(Binder &b) {
  Value maxBoxes = b.input(2);
  if (maxBoxes)
    maxBoxes = b.castTo(maxBoxes, b.b.getI64Type());
  return b.output(b.create<NonMaxSuppressionOp>(
      b.input(0), b.input(1), maxBoxes, b.input(3), b.input(4),
      b.attrInt("center_point_box", 0) != 0));
}

LogicalResult roiAlignHandler(Binder &b) {
  // Opset 10 had no coordinate_transformation_mode and behaved as
  // output_half_pixel; opset 16 made half_pixel the default.
  std::string transform = b.attrString(
      "coordinate_transformation_mode",
      b.opset() < 16 ? "output_half_pixel" : "half_pixel");
  Value batchIndices = b.input(2);
  if (batchIndices)
    batchIndices = b.castTo(batchIndices, b.b.getI64Type());
  return b.output(b.create<RoiAlignOp>(
      b.input(0), b.input(1), batchIndices, b.attrString("mode", "avg"),
      transform, (uint64_t)b.attrInt("output_height", 1),
      (uint64_t)b.attrInt("output_width", 1),
      (uint64_t)b.attrInt("sampling_ratio", 0),
      APFloat(b.attrFloat("spatial_scale", 1.0f))));
}

LogicalResult gridSampleHandler(Binder &b) {
  // Opset 20 renamed bilinear/bicubic to linear/cubic.
  std::string mode = b.attrString("mode", "bilinear");
  if (mode == "linear")
    mode = "bilinear";
  else if (mode == "cubic")
    mode = "bicubic";
  if (auto type = b.rankedType(0); type && type.getRank() != 4)
    return b.fail("only 4-D inputs are supported");
  return b.output(b.create<GridSampleOp>(
      b.input(0), b.input(1), mode, b.attrString("padding_mode", "zeros"),
      b.attrInt("align_corners", 0) != 0));
}

} // namespace

void registerIndexingHandlers(OpRegistry &r) {
  r.on("Gather", 1, gatherHandler);
  r.on("GatherElements", 11, gatherElementsHandler);
  r.on("GatherND", 11, gatherNDHandler);
  r.on("Scatter", 9, scatterElementsHandler);
  r.on("ScatterElements", 11, scatterElementsHandler);
  r.on("ScatterND", 11, scatterNDHandler);
  r.on("OneHot", 9, oneHotHandler);
  r.on("NonZero", 9, nonZeroHandler);
  r.on("Compress", 9, compressHandler);
  r.on("Resize", 10, resizeHandler);
  r.on("Upsample", 7, upsampleHandler);
  r.on("Unique", 11, uniqueHandler);
  r.on("NonMaxSuppression", 10, nonMaxSuppressionHandler);
  r.on("RoiAlign", 10, roiAlignHandler);
  r.on("GridSample", 16, gridSampleHandler);
}

} // namespace sluice::onnx_import
