//===- SluiceIndexingOps.td - gathers, scatters, index-driven ops -*- tablegen -*-===//
//
// Ops whose data movement is driven by index tensors: gather and scatter
// families, one-hot, non-zero, compress, unique, non-max suppression, and
// resampling (resize, roi_align, grid_sample). Parameters that ONNX passes as
// tensor inputs (OneHot's depth, Resize's scales and sizes, ...) are operands
// here too; result shapes are static only once those operands are constants.
// Ops whose output size depends on data values (non_zero, compress, unique,
// non_max_suppression) have a dynamic result dim.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_INDEXING_OPS_TD
#define SLUICE_INDEXING_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "dialects/sluice/SluiceAttrs.td"

def Sluice_GatherOp : Sluice_InferredOp<"gather", [Sluice_RunsInHalf]> {
  let summary = "ONNX Gather: take slices along `axis` at `indices` (negative indices count from the end)";
  let arguments = (ins Sluice_Tensor:$input, Sluice_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_GatherElementsOp : Sluice_InferredOp<"gather_elements", [Sluice_RunsInHalf]> {
  let summary = "ONNX GatherElements: output[i][j] = input[indices[i][j]][j] along `axis`";
  let description = [{
    The result has the shape of `indices` and the element type of `input`;
    `indices` has the input's rank. Negative indices count from the end.
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_GatherNDOp : Sluice_InferredOp<"gather_nd", [Sluice_RunsInHalf]> {
  let summary = "ONNX GatherND: gather slices addressed by the last dim of `indices`";
  let description = [{
    With b = batch_dims and k = indices.shape[-1], the result shape is
    input.shape[:b] + indices.shape[b:-1] + input.shape[b+k:].
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_ScatterElementsOp : Sluice_InferredOp<"scatter_elements"> {
  let summary = "ONNX ScatterElements: input with updates written at `indices` along `axis`";
  let description = [{
    Without `reduction` an update replaces the element (duplicate indices
    leave an unspecified winner; the evaluator takes the last); with it,
    updates combine with the existing value (sum, prod, max or min).
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_IndexTensor:$indices,
                   Sluice_Tensor:$updates,
                   DefaultValuedAttr<I64Attr, "0">:$axis,
                   OptionalAttr<Sluice_ReduceKindAttr>:$reduction);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_ScatterNDOp : Sluice_InferredOp<"scatter_nd"> {
  let summary = "ONNX ScatterND: input with update slices written at index tuples";
  let arguments = (ins Sluice_Tensor:$input, Sluice_IndexTensor:$indices,
                   Sluice_Tensor:$updates,
                   OptionalAttr<Sluice_ReduceKindAttr>:$reduction);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_OneHotOp : Sluice_InferredOp<"one_hot"> {
  let summary = "ONNX OneHot: values[1] where index == position along `axis`, values[0] elsewhere";
  let description = [{
    `depth` holds one i64 (rank 0 or 1); `values` is [off, on] and gives the
    result element type. Indices in [-depth, depth) select a position
    (negative ones count from the end); others give an all-off row.
  }];
  let arguments = (ins Sluice_IndexTensor:$indices, TensorOf<[I64]>:$depth,
                   Sluice_Tensor:$values,
                   DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_NonZeroOp : Sluice_InferredOp<"non_zero"> {
  let summary = "ONNX NonZero: the indices of non-zero elements, one row per input dim";
  let arguments = (ins Sluice_Tensor:$input);
  let results = (outs 2DTensorOf<[I64]>:$output);
}

def Sluice_CompressOp : Sluice_InferredOp<"compress"> {
  let summary = "ONNX Compress: the slices along `axis` (of the flattened input when absent) where condition is true";
  let description = [{
    A condition shorter than the selected dim leaves the remaining slices
    out. The result dim is dynamic unless the condition is a constant.
  }];
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I1]>:$condition,
                   OptionalAttr<I64Attr>:$axis);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_ResizeOp : Sluice_InferredOp<"resize", [AttrSizedOperandSegments]> {
  let summary = "ONNX Resize: resamples every dim by `scales`, or to `sizes`";
  let description = [{
    Exactly one of `scales` (f32 per dim) and `sizes` (i64 per dim) is given;
    `roi` (start values then end values) is read only by tf_crop_and_resize.
    `mode` is nearest, linear or cubic (linear and cubic interpolate each dim
    separably); `coordinate_transformation_mode` is half_pixel,
    pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn or
    tf_crop_and_resize; `nearest_mode` is round_prefer_floor,
    round_prefer_ceil, floor or ceil. Output dims from scales are
    floor(dim * scale).
  }];
  let arguments = (ins Sluice_Tensor:$input,
                   Optional<1DTensorOf<[F16, BF16, F32, F64]>>:$roi,
                   Optional<1DTensorOf<[F32]>>:$scales,
                   Optional<1DTensorOf<[I64]>>:$sizes,
                   DefaultValuedAttr<StrAttr, "\"nearest\"">:$mode,
                   DefaultValuedAttr<StrAttr, "\"half_pixel\"">:$coordinate_transformation_mode,
                   DefaultValuedAttr<StrAttr, "\"round_prefer_floor\"">:$nearest_mode,
                   DefaultValuedAttr<F32Attr, "-0.75">:$cubic_coeff_a,
                   DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                   DefaultValuedAttr<F32Attr, "0.0">:$extrapolation_value);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_UniqueOp : Sluice_InferredOp<"unique"> {
  let summary = "ONNX Unique: distinct elements (or slices along `axis`), first indices, inverse indices, counts";
  let description = [{
    With `sorted` the distinct values come in ascending order (slices compare
    lexicographically), otherwise in order of first occurrence.
  }];
  let arguments = (ins Sluice_Tensor:$input, OptionalAttr<I64Attr>:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs Sluice_Tensor:$output, 1DTensorOf<[I64]>:$indices,
                  1DTensorOf<[I64]>:$inverse_indices, 1DTensorOf<[I64]>:$counts);
  let hasVerifier = 1;
}

def Sluice_NonMaxSuppressionOp : Sluice_InferredOp<"non_max_suppression",
                                                   [AttrSizedOperandSegments]> {
  let summary = "ONNX NonMaxSuppression: [batch, class, box] rows of the boxes kept per class";
  let description = [{
    boxes is [batches, boxes, 4] (corners, or center and size when
    center_point_box); scores is [batches, classes, boxes]. Absent
    max_output_boxes_per_class keeps nothing; absent thresholds keep all.
  }];
  let arguments = (ins Sluice_FloatTensor:$boxes, Sluice_FloatTensor:$scores,
                   Optional<TensorOf<[I64]>>:$max_output_boxes_per_class,
                   Optional<Sluice_FloatTensor>:$iou_threshold,
                   Optional<Sluice_FloatTensor>:$score_threshold,
                   DefaultValuedAttr<BoolAttr, "false">:$center_point_box);
  let results = (outs 2DTensorOf<[I64]>:$selected_indices);
  let hasVerifier = 1;
}

def Sluice_RoiAlignOp : Sluice_InferredOp<"roi_align"> {
  let summary = "ONNX RoiAlign: bilinear-sampled average or max pooling of each region of interest";
  let arguments = (ins Sluice_FloatTensor:$input, Sluice_FloatTensor:$rois,
                   1DTensorOf<[I64]>:$batch_indices,
                   DefaultValuedAttr<StrAttr, "\"avg\"">:$mode,
                   DefaultValuedAttr<StrAttr, "\"half_pixel\"">:$coordinate_transformation_mode,
                   DefaultValuedAttr<I64Attr, "1">:$output_height,
                   DefaultValuedAttr<I64Attr, "1">:$output_width,
                   DefaultValuedAttr<I64Attr, "0">:$sampling_ratio,
                   DefaultValuedAttr<F32Attr, "1.0">:$spatial_scale);
  let results = (outs Sluice_FloatTensor:$output);
  let hasVerifier = 1;
}

def Sluice_GridSampleOp : Sluice_InferredOp<"grid_sample"> {
  let summary = "ONNX GridSample: samples a 4-D input at normalized grid locations";
  let arguments = (ins Sluice_Tensor:$input, Sluice_FloatTensor:$grid,
                   DefaultValuedAttr<StrAttr, "\"bilinear\"">:$mode,
                   DefaultValuedAttr<StrAttr, "\"zeros\"">:$padding_mode,
                   DefaultValuedAttr<BoolAttr, "false">:$align_corners);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_INDEXING_OPS_TD
