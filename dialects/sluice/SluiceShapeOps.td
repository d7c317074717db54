//===- SluiceShapeOps.td - shape and data-movement ops -------*- tablegen -*-===//
//
// Ops that move data without arithmetic: reshape, transpose, slicing,
// concatenation, padding, gathers and scatters, and the ops that compute or
// create shapes. Where ONNX takes a parameter as a tensor input (Reshape's
// shape, Slice's starts, ...), so does the op: the simplify phase folds those
// operands to constants, and result types become static once they are.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_SHAPE_OPS_TD
#define SLUICE_SHAPE_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "dialects/sluice/SluiceAttrs.td"

def Sluice_ShapeOp : Sluice_InferredOp<"shape"> {
  let summary = "the shape of a tensor as a 1-D i64 tensor, dims [start, end)";
  let arguments = (ins AnyTensor:$input,
                   DefaultValuedAttr<I64Attr, "0">:$start,
                   OptionalAttr<I64Attr>:$end);
  let results = (outs 1DTensorOf<[I64]>:$output);
  let hasFolder = 1;
}

def Sluice_ReshapeOp : Sluice_InferredOp<"reshape", [Sluice_View, Sluice_LayoutView, Sluice_RunsInHalf]> {
  let summary = "ONNX Reshape: 0 copies the input dim unless allowzero, -1 is inferred";
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$shape,
                   DefaultValuedAttr<BoolAttr, "false">:$allowzero);
  let results = (outs Sluice_Tensor:$output);
  let hasFolder = 1;
}

def Sluice_TransposeOp : Sluice_InferredOp<"transpose", [Sluice_View, Sluice_RunsInHalf]> {
  let summary = "permutes dims: output dim i is input dim perm[i]";
  let arguments = (ins Sluice_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Slicing, joining, splitting
//===----------------------------------------------------------------------===//

def Sluice_SliceOp : Sluice_InferredOp<"slice", [Sluice_View, Sluice_RunsInHalf]> {
  let summary = "ONNX Slice: strided slices of `input` along `axes`";
  let description = [{
    All four parameter operands have the same length; the importer fills
    ONNX's defaults (all axes, unit steps) as constants. Starts and ends are
    clamped as ONNX does: to [0, dim] for a positive step and to [-1, dim - 1]
    for a negative one, after adding dim to negative values.
  }];
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$starts,
                   1DTensorOf<[I64]>:$ends, 1DTensorOf<[I64]>:$axes,
                   1DTensorOf<[I64]>:$steps);
  let results = (outs Sluice_Tensor:$output);
}

def Sluice_ConcatOp : Sluice_InferredOp<"concat", [Sluice_RunsInHalf, SameOperandsElementType,
                                                    SameOperandsAndResultElementType]> {
  let summary = "concatenates tensors of one rank along `axis`";
  let arguments = (ins Variadic<Sluice_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Sluice_SplitOp : Sluice_InferredOp<"split", [Sluice_View, Sluice_RunsInHalf]> {
  let summary = "splits `input` along `axis` into `num_outputs` pieces";
  let description = [{
    With `sizes`, piece i has sizes[i] elements along the axis (the sizes sum
    to the dim). Without, the pieces are ceil(dim / num_outputs) long and the
    last takes what is left (ONNX opset 18; earlier opsets require an even
    split, which is the same thing). The result count is an attribute because
    inference must know it when `sizes` is a runtime value.
  }];
  let arguments = (ins Sluice_Tensor:$input, Optional<1DTensorOf<[I64]>>:$sizes,
                   I64Attr:$axis, I64Attr:$num_outputs);
  let results = (outs Variadic<Sluice_Tensor>:$outputs);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Rank changes that keep every element
//===----------------------------------------------------------------------===//

// Squeeze and unsqueeze with constant axes on a static shape import as
// reshape. These ops carry the cases reshape cannot: axes that are runtime
// values (ONNX >= 13 takes them as an input) and inputs with dynamic dims,
// where the target shape of a reshape is not a constant. Their canonicalizers
// (run by the simplify phase) rewrite them to reshape once both the input and
// the result shape are static.
def Sluice_SqueezeOp : Sluice_InferredOp<"squeeze", [Sluice_View, Sluice_LayoutView, Sluice_RunsInHalf]> {
  let summary = "removes the size-1 dims at `axes` (every size-1 dim when absent)";
  let arguments = (ins Sluice_Tensor:$input, Optional<1DTensorOf<[I64]>>:$axes);
  let results = (outs Sluice_Tensor:$output);
  let hasCanonicalizer = 1;
}

def Sluice_UnsqueezeOp : Sluice_InferredOp<"unsqueeze", [Sluice_View, Sluice_LayoutView, Sluice_RunsInHalf]> {
  let summary = "inserts size-1 dims at `axes` (positions in the result)";
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$axes);
  let results = (outs Sluice_Tensor:$output);
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Repetition and padding
//===----------------------------------------------------------------------===//

def Sluice_ExpandOp : Sluice_InferredOp<"expand", [Sluice_View, Sluice_RunsInHalf]> {
  let summary = "ONNX Expand: broadcasts `input` with the shape in `shape`";
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$shape);
  let results = (outs Sluice_Tensor:$output);
}

def Sluice_TileOp : Sluice_InferredOp<"tile", [Sluice_RunsInHalf]> {
  let summary = "repeats `input` repeats[i] times along dim i";
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$repeats);
  let results = (outs Sluice_Tensor:$output);
}

def Sluice_PadOp : Sluice_InferredOp<"pad", [Sluice_RunsInHalf]> {
  let summary = "ONNX Pad: pads = [begin_0 .. begin_n-1, end_0 .. end_n-1]";
  let description = [{
    Negative pads crop. `constant_value` (a one-element tensor of the input's
    element type, zero when absent) fills in constant mode; reflect mirrors
    without repeating the edge, edge repeats it, wrap pads periodically.
  }];
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$pads,
                   Optional<Sluice_Tensor>:$constant_value,
                   DefaultValuedAttr<Sluice_PadModeAttr, "::sluice::PadMode::constant">:$mode);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Creation and masking
//===----------------------------------------------------------------------===//

def Sluice_ConstantOfShapeOp : Sluice_InferredOp<"constant_of_shape"> {
  let summary = "a tensor of the shape in `shape` filled with the one element of `value`";
  let arguments = (ins 1DTensorOf<[I64]>:$shape, ElementsAttr:$value);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_RangeOp : Sluice_InferredOp<"range", [SameOperandsAndResultElementType]> {
  let summary = "ONNX Range: start, start + delta, ... up to (excluding) limit";
  let arguments = (ins Sluice_Tensor:$start, Sluice_Tensor:$limit,
                   Sluice_Tensor:$delta);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_TriluOp : Sluice_InferredOp<"trilu", [Sluice_RunsInHalf]> {
  let summary = "keeps the upper (or lower) triangle of the last two dims, from diagonal k";
  let arguments = (ins Sluice_Tensor:$input, Optional<TensorOf<[I64]>>:$k,
                   DefaultValuedAttr<BoolAttr, "true">:$upper);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_ReverseSequenceOp : Sluice_InferredOp<"reverse_sequence"> {
  let summary = "reverses the first sequence_lens[b] steps along `time_axis` of each batch b";
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$sequence_lens,
                   DefaultValuedAttr<I64Attr, "1">:$batch_axis,
                   DefaultValuedAttr<I64Attr, "0">:$time_axis);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_SHAPE_OPS_TD
