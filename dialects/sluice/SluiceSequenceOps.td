//===- SluiceSequenceOps.td - ONNX sequences and optionals ---*- tablegen -*-===//
//
// Ops on `!sluice.sequence` and `!sluice.optional` values, one per ONNX op.
// Sequence element types are joins: inserting a tensor<3xf32> into a
// sequence of tensor<4xf32> gives a sequence of tensor<?xf32>, so that
// types stay instances of every element's runtime shape. Positions are
// operands (ONNX feeds them as runtime tensors), negative positions count
// from the end as in ONNX.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_SEQUENCE_OPS_TD
#define SLUICE_SEQUENCE_OPS_TD

include "dialects/sluice/SluiceBase.td"

def Sluice_SequenceEmptyOp : Sluice_InferredOp<"sequence_empty"> {
  let summary = "ONNX SequenceEmpty: an empty sequence of `dtype` tensors";
  let arguments = (ins TypeAttr:$dtype);
  let results = (outs Sluice_Sequence:$result);
}

def Sluice_SequenceConstructOp : Sluice_InferredOp<"sequence_construct"> {
  let summary = "ONNX SequenceConstruct: a sequence of the given tensors";
  let arguments = (ins Variadic<Sluice_Tensor>:$inputs);
  let results = (outs Sluice_Sequence:$result);
}

def Sluice_SequenceInsertOp : Sluice_InferredOp<"sequence_insert"> {
  let summary = "ONNX SequenceInsert: inserts a tensor at `position` (default: at the end)";
  let arguments = (ins Sluice_Sequence:$input_sequence, Sluice_Tensor:$tensor,
                       Optional<Sluice_IndexTensor>:$position);
  let results = (outs Sluice_Sequence:$result);
}

def Sluice_SequenceAtOp : Sluice_InferredOp<"sequence_at"> {
  let summary = "ONNX SequenceAt: the element at `position`";
  let arguments = (ins Sluice_Sequence:$input_sequence,
                       Sluice_IndexTensor:$position);
  let results = (outs Sluice_Tensor:$result);
}

def Sluice_SequenceEraseOp : Sluice_InferredOp<"sequence_erase"> {
  let summary = "ONNX SequenceErase: removes the element at `position` (default: the last)";
  let arguments = (ins Sluice_Sequence:$input_sequence,
                       Optional<Sluice_IndexTensor>:$position);
  let results = (outs Sluice_Sequence:$result);
}

def Sluice_SequenceLengthOp : Sluice_InferredOp<"sequence_length"> {
  let summary = "ONNX SequenceLength: the number of elements, as a tensor<i64>";
  let arguments = (ins Sluice_Sequence:$input_sequence);
  let results = (outs TensorOf<[I64]>:$result);
}

def Sluice_ConcatFromSequenceOp : Sluice_InferredOp<"concat_from_sequence"> {
  let summary = "ONNX ConcatFromSequence: concatenates (or stacks, with new_axis) the elements";
  let arguments = (ins Sluice_Sequence:$input_sequence, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$new_axis);
  let results = (outs Sluice_Tensor:$result);
}

def Sluice_SplitToSequenceOp : Sluice_InferredOp<"split_to_sequence"> {
  let summary = "ONNX SplitToSequence: splits a tensor along `axis` into a sequence";
  let description = [{
    Without `split`: pieces of size 1 (the axis dropped unless `keepdims`).
    A scalar `split`: pieces of that size, the last one possibly shorter. A
    1-D `split`: the piece sizes, which must add up to the axis size.
  }];
  let arguments = (ins Sluice_Tensor:$input, Optional<Sluice_IndexTensor>:$split,
                       I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Sluice_Sequence:$result);
}

def Sluice_OptionalOp : Sluice_InferredOp<"optional"> {
  let summary = "ONNX Optional: wraps a value, or makes an empty optional of `element_type`";
  let arguments = (ins Optional<AnyTypeOf<[Sluice_Tensor, Sluice_Sequence]>>:$input,
                       OptionalAttr<TypeAttr>:$element_type);
  let results = (outs Sluice_Optional:$result);
  let hasVerifier = 1;
}

def Sluice_OptionalHasElementOp : Sluice_InferredOp<"optional_has_element"> {
  let summary = "ONNX OptionalHasElement: whether the optional holds a value (true for a plain tensor or sequence)";
  let arguments = (ins Sluice_AnyValue:$input);
  let results = (outs TensorOf<[I1]>:$result);
}

def Sluice_OptionalGetElementOp : Sluice_InferredOp<"optional_get_element"> {
  let summary = "ONNX OptionalGetElement: the value an optional holds (identity on a tensor or sequence)";
  let arguments = (ins Sluice_AnyValue:$input);
  let results = (outs AnyTypeOf<[Sluice_Tensor, Sluice_Sequence]>:$result);
}

def Sluice_SequenceMapOp : Op<Sluice_Dialect, "sequence_map", [SingleBlock,
    RecursiveMemoryEffects]> {
  let summary = "ONNX SequenceMap: runs the body on each element, collecting sequences";
  let description = [{
    Iteration i gives the body, for each input, its i-th element if it is a
    sequence or the input itself if it is a tensor; the body yields one
    tensor per result, and result k is the sequence of the k-th yielded
    values. The number of iterations is the length of the first input (every
    sequence input must have that length).

    A region op rather than a sluice.loop that inserts into carried
    sequences: the map is what the model says, and a later pass that wants
    to parallelize or fuse it should not have to recover it from a loop.
  }];
  let arguments = (ins Variadic<AnyTypeOf<[Sluice_Tensor, Sluice_Sequence]>>:$inputs);
  let results = (outs Variadic<Sluice_Sequence>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `:` type($inputs) `)` `->` type($outputs) $body attr-dict
  }];
  let hasVerifier = 1;
}

#endif // SLUICE_SEQUENCE_OPS_TD
