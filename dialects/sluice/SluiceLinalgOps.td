//===- SluiceLinalgOps.td - contractions, convolution, normalization -*- tablegen -*-===//
//
// Ops that contract or window over data: matmul, conv, pooling, the
// normalizations, einsum and the quantization ops with their integer forms.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LINALG_OPS_TD
#define SLUICE_LINALG_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "dialects/sluice/SluiceAttrs.td"

def Sluice_MatMulOp : Sluice_InferredOp<"matmul", [Sluice_RunsInHalf, SameOperandsElementType]> {
  let summary = "NumPy matmul: batched, broadcasting batch dims, 1-D operands promoted";
  let description = [{
    Floating-point inputs accumulate in at least fp32 (fp64 stays fp64).
  }];
  let arguments = (ins Sluice_Tensor:$lhs, Sluice_Tensor:$rhs);
  let results = (outs Sluice_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// Attributes shared by the convolutions. `pads` holds every spatial dim's
/// begin then every end (ONNX order); the importer resolves auto_pad.
class Sluice_ConvBase<string mnemonic, list<Trait> traits = []>
    : Sluice_InferredOp<mnemonic, traits> {
  let hasVerifier = 1;
}

def Sluice_ConvOp : Sluice_ConvBase<"conv", [Sluice_RunsInHalf]> {
  let summary = "grouped N-D cross-correlation: input NCX..., weight (M, C/group, K...)";
  let description = [{
    Floating-point inputs accumulate in at least fp32. `pads` lists the begin
    pad of every spatial dim, then the end pads.
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_Tensor:$weight,
                   Optional<Sluice_Tensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Sluice_Tensor:$output);
}

def Sluice_ConvTransposeOp : Sluice_ConvBase<"conv_transpose", [Sluice_RunsInHalf]> {
  let summary = "grouped N-D transposed convolution: weight (C, M/group, K...)";
  let description = [{
    The full output is stride*(in-1) + output_padding + (k-1)*dilation + 1
    wide; `pads` crop it (a negative pad extends it with bias-only values).
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_Tensor:$weight,
                   Optional<Sluice_Tensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$output_padding,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Sluice_Tensor:$output);
}

def Sluice_ConvIntegerOp : Sluice_ConvBase<"conv_integer"> {
  let summary = "integer convolution of (x - x_zero_point) and (w - w_zero_point), i32 result";
  let description = [{
    Accumulates exactly in int64 and wraps to i32. The weight zero point is a
    scalar or one value per output channel.
  }];
  let arguments = (ins Sluice_IntegerTensor:$input, Sluice_IntegerTensor:$weight,
                   Sluice_IntegerTensor:$input_zero_point,
                   Sluice_IntegerTensor:$weight_zero_point,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs TensorOf<[I32]>:$output);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

def Sluice_PoolOp : Sluice_InferredOp<"pool", [Sluice_RunsInHalf]> {
  let summary = "max / average / Lp pooling over the spatial dims of NCX...";
  let description = [{
    Windows that start in the padding are allowed with `ceil_mode`, never
    windows that start past the end pad. Average pooling divides by the
    window's in-bounds count unless `count_include_pad` (then by the count
    including explicit pads). With `return_indices`, max pooling also returns
    the flat index of each maximum in the unpadded input (row-major, or
    column-major over the spatial dims when `storage_order` is 1).
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_PoolKindAttr:$kind,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                   DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
                   DefaultValuedAttr<I64Attr, "2">:$p,
                   DefaultValuedAttr<I64Attr, "0">:$storage_order,
                   UnitAttr:$return_indices);
  let results = (outs Sluice_Tensor:$output, Optional<TensorOf<[I64]>>:$indices);
  let hasVerifier = 1;
}

def Sluice_MaxUnpoolOp : Sluice_InferredOp<"max_unpool"> {
  let summary = "scatters max-pool values back to their indices, zeros elsewhere";
  let description = [{
    `indices` are flat row-major indices into the whole output, as max pooling
    returns them. The output shape is `output_shape` when given, otherwise
    (in - 1) * stride + kernel - pad_begin - pad_end per spatial dim.
  }];
  let arguments = (ins Sluice_Tensor:$input, TensorOf<[I64]>:$indices,
                   Optional<1DTensorOf<[I64]>>:$output_shape,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Sluice_BatchNormOp : Sluice_InferredOp<"batch_norm", [Sluice_RunsInHalf]> {
  let summary = "inference batch normalization over dim 1 with running statistics";
  let arguments = (ins Sluice_FloatTensor:$input, Sluice_FloatTensor:$scale,
                   Sluice_FloatTensor:$bias, Sluice_FloatTensor:$mean,
                   Sluice_FloatTensor:$variance,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Sluice_FloatTensor:$output);
}

def Sluice_LayerNormOp : Sluice_InferredOp<"layer_norm", [Sluice_RowOp, Sluice_RunsInHalf]> {
  let summary = "layer normalization over dims [axis, rank); also returns mean and 1/stddev";
  let description = [{
    A composite: statistics are computed in fp32 (or wider) whatever the input
    type. `mean` and `inv_std_dev` keep the normalized dims as size 1 and have
    element type f32.
  }];
  let arguments = (ins Sluice_FloatTensor:$input, Sluice_FloatTensor:$scale,
                   Optional<Sluice_FloatTensor>:$bias,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Sluice_FloatTensor:$output, TensorOf<[F32]>:$mean,
                  TensorOf<[F32]>:$inv_std_dev);
  let hasVerifier = 1;
}

def Sluice_InstanceNormOp : Sluice_InferredOp<"instance_norm"> {
  let summary = "normalizes each (n, c) plane of NCX..., then per-channel scale and bias";
  let arguments = (ins Sluice_FloatTensor:$input, Sluice_FloatTensor:$scale,
                   Sluice_FloatTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Sluice_FloatTensor:$output);
}

def Sluice_GroupNormOp : Sluice_InferredOp<"group_norm"> {
  let summary = "normalizes groups of channels of NCX..., then scale and bias";
  let description = [{
    `scale` and `bias` hold one value per group (opset 18) or per channel.
  }];
  let arguments = (ins Sluice_FloatTensor:$input, Sluice_FloatTensor:$scale,
                   Sluice_FloatTensor:$bias, I64Attr:$num_groups,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Sluice_FloatTensor:$output);
  let hasVerifier = 1;
}

def Sluice_LrnOp : Sluice_InferredOp<"lrn"> {
  let summary = "local response normalization across channels (dim 1)";
  let arguments = (ins Sluice_FloatTensor:$input, I64Attr:$size,
                   DefaultValuedAttr<F32Attr, "1e-4">:$alpha,
                   DefaultValuedAttr<F32Attr, "0.75">:$beta,
                   DefaultValuedAttr<F32Attr, "1.0">:$bias);
  let results = (outs Sluice_FloatTensor:$output);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Sluice_EinsumOp : Sluice_InferredOp<"einsum"> {
  let summary = "Einstein summation with ellipsis, implicit output and diagonals";
  let arguments = (ins Variadic<Sluice_Tensor>:$inputs, StrAttr:$equation);
  let results = (outs Sluice_Tensor:$output);
  let extraClassDeclaration = [{
    /// Parses `equation` for operands of `ranks` into one label per operand
    /// dim and the output's labels. Letters are labels 0..255, the dims an
    /// ellipsis stands for are 256 + i (right-aligned across operands).
    /// Returns an error message, empty on success.
    static std::string parseEquation(
        ::llvm::StringRef equation, ::llvm::ArrayRef<int64_t> ranks,
        ::llvm::SmallVectorImpl<::llvm::SmallVector<int64_t>> &operandLabels,
        ::llvm::SmallVectorImpl<int64_t> &outputLabels);
  }];
}

def Sluice_MatMulIntegerOp : Sluice_InferredOp<"matmul_integer"> {
  let summary = "matmul of (a - a_zero_point) and (b - b_zero_point), i32 result";
  let description = [{
    Accumulates exactly in int64 and wraps to i32. `lhs_zero_point` is a
    scalar or one value per row, `rhs_zero_point` a scalar or one per column.
  }];
  let arguments = (ins Sluice_IntegerTensor:$lhs, Sluice_IntegerTensor:$rhs,
                   Sluice_IntegerTensor:$lhs_zero_point,
                   Sluice_IntegerTensor:$rhs_zero_point);
  let results = (outs TensorOf<[I32]>:$output);
}

def Sluice_DetOp : Sluice_InferredOp<"det"> {
  let summary = "determinant of the trailing square matrices";
  let arguments = (ins Sluice_FloatTensor:$input);
  let results = (outs Sluice_FloatTensor:$output);
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def Sluice_QuantizeLinearOp : Sluice_InferredOp<"quantize_linear"> {
  let summary = "y = saturate(round_half_even(x / scale) + zero_point)";
  let description = [{
    Scale and zero point are scalars (per tensor), 1-D along `axis` (per
    channel), or, with `block_size` > 0, blocked (ONNX opset 21): of the
    input's rank, with dim `axis` of size ceil(dim / block_size) and every
    other dim the input's. The result type is the zero point's (ui8 when
    absent). With an f8E4M3FN zero point (0) the result is fp8: x / scale
    rounded to the nearest E4M3FN value, beyond +-448 saturated (or NaN
    when `saturate` is false).
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_FloatTensor:$scale,
                   Optional<Sluice_QuantizedTensor>:$zero_point,
                   DefaultValuedAttr<I64Attr, "1">:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$saturate,
                   DefaultValuedAttr<I64Attr, "0">:$block_size);
  let results = (outs Sluice_QuantizedTensor:$output);
  let hasVerifier = 1;
}

def Sluice_DequantizeLinearOp : Sluice_InferredOp<"dequantize_linear"> {
  let summary = "y = (x - zero_point) * scale, per tensor, per channel or per block";
  let description = [{
    Scale and zero point as for quantize_linear: scalars, 1-D along `axis`,
    or blocked along `axis` when `block_size` > 0 (element i of dim `axis`
    uses entry i / block_size). The result type is the scale's.
  }];
  let arguments = (ins Sluice_QuantizedTensor:$input, Sluice_FloatTensor:$scale,
                   Optional<Sluice_QuantizedTensor>:$zero_point,
                   DefaultValuedAttr<I64Attr, "1">:$axis,
                   DefaultValuedAttr<I64Attr, "0">:$block_size);
  let results = (outs Sluice_FloatTensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

def Sluice_RnnOp : Sluice_InferredOp<"rnn"> {
  let summary = "ONNX RNN / GRU / LSTM over a whole sequence (layout 0: seq-major)";
  let description = [{
    `cell` is "rnn", "gru" or "lstm". Every ONNX optional input is an operand
    here (the importer makes the zero defaults); `extras` holds LSTM's
    initial_c and peepholes. Results: Y (seq, dirs, batch, hidden), Y_h and,
    for LSTM, Y_c (dirs, batch, hidden).
  }];
  let arguments = (ins Sluice_FloatTensor:$input, Sluice_FloatTensor:$w,
                   Sluice_FloatTensor:$r, Sluice_FloatTensor:$b,
                   Sluice_IndexTensor:$sequence_lens,
                   Sluice_FloatTensor:$initial_h,
                   Variadic<Sluice_FloatTensor>:$extras,
                   StrAttr:$cell, StrAttr:$direction, I64Attr:$hidden_size,
                   StrArrayAttr:$activations,
                   DenseF32ArrayAttr:$activation_alpha,
                   DenseF32ArrayAttr:$activation_beta,
                   OptionalAttr<F32Attr>:$clip,
                   DefaultValuedAttr<BoolAttr, "false">:$linear_before_reset,
                   DefaultValuedAttr<BoolAttr, "false">:$input_forget);
  let results = (outs Sluice_FloatTensor:$y, Sluice_FloatTensor:$y_h,
                 Optional<Sluice_FloatTensor>:$y_c);
  let hasVerifier = 1;
}

#endif // SLUICE_LINALG_OPS_TD
