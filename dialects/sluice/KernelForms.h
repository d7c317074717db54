//===- KernelForms.h - op categories and the kernel form judge -*- C++ -*-===//
//
// The part of the kernel model that the IR itself needs: what each op is for
// fusion and code generation (categories, read from the traits of
// SluiceTraits.td plus the conditions that depend on operands), and the one
// judge that says which form (`KernelForm`, SluiceAttrs.td) a kernel group
// is. The fuse phase records the judge's form on each `sluice.kernel`, the
// op's verifier checks it with the same judge, and both targets' emitters
// switch on the recorded form. It sits in the dialect because the verifier
// calls it; strided views and group plans, which only passes and emitters
// need, are lib/kernel's.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_DIALECTS_SLUICE_KERNELFORMS_H
#define SLUICE_DIALECTS_SLUICE_KERNELFORMS_H

#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/Operation.h"

#include <optional>
#include <string>

namespace sluice::kernel {

//===-- Op categories ------------------------------------------------------===//

/// Whether every result and operand is a tensor of static shape.
bool hasStaticShapes(mlir::Operation *op);
/// Computed one element at a time from the elements at the same (broadcast)
/// position of its operands: one scalar expression (Elementwise trait, and
/// quantize_linear / dequantize_linear with a per-tensor scale and zero
/// point).
bool isElementwise(mlir::Operation *op);
/// Elementwise with a transcendental scalar expression (exp, erf, tanh ...).
bool isTranscendental(mlir::Operation *op);
/// A view op (View trait) that code generation can turn into strides: static
/// shapes, and the parameters the strides depend on known at compile time
/// (a reshape's shape is its result type; a slice needs constant starts,
/// axes and steps).
bool isViewOp(mlir::Operation *op);
/// A view op that keeps row-major order (reshape, squeeze, unsqueeze): an
/// alias of its operand's buffer.
bool isLayoutPreserving(mlir::Operation *op);
/// Softmax, layer_norm, rms_norm, reduce (RowOp trait), whatever the axes.
bool isRowOp(mlir::Operation *op);
/// A row op over trailing dims only, so that a row is contiguous (the form
/// F3 anchor fusion builds groups around).
bool isTrailingRowOp(mlir::Operation *op);
/// Correct on f16/bf16 storage (RunsInHalf trait; a reduce only for max,
/// min and mean, whose fp32 accumulation cannot leave f16's range).
bool runsInHalf(mlir::Operation *op);
/// Element types the GEMM and convolution library calls take: f32, f64, and
/// f16/bf16 (cuBLASLt/cuDNN accumulate them in fp32, the cpu target widens
/// them into f32 GEMMs).
bool isLibraryFloat(mlir::Type element);
/// Exchanges data between ranks (Collective trait: all_reduce, all_gather,
/// reduce_scatter, all_to_all).
bool isCollective(mlir::Operation *op);
/// A matmul_integer / conv_integer the int8 GEMM kernels compute
/// (docs/quantization.md, Form I8): lhs ui8 or i8 with a per-tensor zero
/// point, rhs i8 whose zero point is a constant of zeros (scalar or per
/// column / output channel), static shapes; a matmul of matrices
/// (rank >= 2), a 2-D convolution.
bool isInt8Contraction(mlir::Operation *op);
/// An f32 sluice.conv over 2 spatial dims with static shapes: a library
/// call that takes an elementwise epilogue (form F2) where the fuse phase
/// grows one (conv-epilogue=true, the cpu target: oneDNN post-ops).
bool isEpilogueConv(mlir::Operation *op);
/// The library routine that computes `op`, if one does: "gemm" for a float
/// matmul and for an int8 contraction (isInt8Contraction: a conv_integer
/// is im2col + the int8 GEMM, so its epilogue fuses like a GEMM's), "conv"
/// for a float conv / conv_transpose, "collective" for a collective (NCCL
/// or MPI through the runtime's communicator).
std::optional<llvm::StringRef> libraryFor(mlir::Operation *op);

//===-- Form W: weight-only quantized GEMM operands ------------------------===//

/// The B operand of a weight-only GEMM (docs/quantization.md, Form W): a
/// dequantize_linear of a 2-D 8- or 4-bit integer weight [K, N] with one
/// scale per column (8 bits, axis 1, scale [N]: group = K) or per block of
/// `group` rows along K (axis 0, block_size = group, scale
/// [ceil(K / group), N]); then at most one float cast. --quantize writes
/// signed symmetric weights; ONNX QDQ models may bring unsigned ones with
/// zero points shaped like the scales, which the kernels take too. The GEMM
/// dequantizes it inside, so the group holds these ops as its prologue.
struct WeightDequant {
  DequantizeLinearOp dequant;
  CastOp cast; ///< null when the matmul reads the dequantized value itself
  int bits = 8;
  int64_t group = 0;
};
/// The Form W dequantization `op` (a dequantize_linear) is, when its
/// layout is one of the above (types only: whether the weight is a constant
/// is the fusion's business).
std::optional<WeightDequant> matchWeightDequant(DequantizeLinearOp op);
/// The Form W dequantization `matmul` reads as B (B is its result, or a
/// float cast of it, used by nothing else).
std::optional<WeightDequant> weightDequantOf(MatMulOp matmul);
/// Whether `op` is the dequantize_linear of a Form W B of the matmul that
/// reads it (through its cast): a GEMM group's prologue, never an anchor.
bool isWeightPrologue(mlir::Operation *op);

//===-- Form F8: fp8 GEMM operands -----------------------------------------===//

/// The operands of an fp8 GEMM (docs/quantization.md, Form F8):
/// the matmul reads A = dequantize_linear(xq) and B = dequantize_linear(w8)
/// with xq and w8 f8E4M3FN, each scale one f32 value (per tensor), no zero
/// point or a zero one, each dequantization read by the matmul alone; w8 is
/// 2-D [K, N] with static shapes; A of rank >= 2; the result f32. Types
/// only: whether w8 is a constant is the fusion's business. Targets that
/// run fp8 GEMMs (cuda) make both dequantizations the GEMM group's
/// prologue (sluice-fuse-groups fp8-gemm=true).
struct Fp8Operands {
  DequantizeLinearOp a, b;
};
std::optional<Fp8Operands> fp8OperandsOf(MatMulOp matmul);
/// Whether `dq` dequantizes an E4M3FN tensor of static shape by one f32
/// scale with no (or a zero) zero point to f32 (an fp8 GEMM operand's
/// form, whoever reads it).
bool isFp8TensorDequant(DequantizeLinearOp dq);

//===-- Kernel forms --------------------------------------------------------===//

/// The form of the group made of `ops` (any order; constants are passed
/// over): the one place that decides it. Fails, with the reason in `why`,
/// for a set of ops no emitter takes (two anchors, a convolution with an
/// epilogue, an op other than a GEMM/row op/attention with compute ops
/// around it).
///   - only views: `view` when exactly one of them moves data, else
///     `elementwise` (a strided copy);
///   - no op that is neither elementwise nor a view: `elementwise`;
///   - one anchor: `attention`, `gemm` (float matmul; the Form W
///     dequantization of its B is a prologue, no second anchor), `library`
///     (convolution, alone), `collective` (alone), `row` (row op), else
///     `single` when it is alone with layout-preserving views.
mlir::FailureOr<KernelForm> judgeForm(llvm::ArrayRef<mlir::Operation *> ops, std::string &why);
/// judgeForm over a kernel body.
mlir::FailureOr<KernelForm> judgeForm(mlir::Block &body, std::string &why);

/// Whether the kernel computes one op alone (the op of forms `single` and
/// `library`, or a lone GEMM, row op or view), any other views in it being
/// layout-preserving aliases of that op's operands and results.
bool isLoneOp(KernelOp kernel);

/// The op a group of `form` is built around: its one op that is neither
/// elementwise nor a view, or for the `view` form its data-moving view;
/// null for `elementwise`.
mlir::Operation *anchorOf(KernelOp kernel);

} // namespace sluice::kernel

#endif // SLUICE_DIALECTS_SLUICE_KERNELFORMS_H
