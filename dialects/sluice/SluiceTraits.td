//===- SluiceTraits.td - op categories for the kernel model -*- tablegen -*-===//
//
// What fusion, precision conversion and code generation need to know about an
// op, declared once on the op instead of in type lists in each pass and
// emitter. The kernel model (dialects/sluice/KernelForms.h) reads these traits
// and adds the conditions that depend on operands (constant shape operands of
// views, the axes of a row op).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TRAITS_TD
#define SLUICE_TRAITS_TD

include "mlir/IR/OpBase.td"

class Sluice_Category<string name> : NativeOpTrait<name> {
  let cppNamespace = "::sluice::OpCategory";
}

/// Computed one element at a time from the elements at the same (NumPy
/// broadcast) position of the operands: one scalar expression per element.
def Sluice_Elementwise : Sluice_Category<"Elementwise">;
/// Elementwise ops whose scalar expression is a transcendental function
/// (exp, log, erf, tanh, ...): fusion never recomputes them in a second group.
def Sluice_Transcendental : Sluice_Category<"Transcendental">;
/// Re-indexes its first operand and computes nothing: with static shapes and
/// constant parameters it is an offset and strides (lib/kernel/Views.h).
def Sluice_View : Sluice_Category<"View">;
/// A view that keeps the row-major order of elements (reshape, squeeze,
/// unsqueeze): an alias of its operand's buffer.
def Sluice_LayoutView : Sluice_Category<"LayoutPreservingView">;
/// Normalizes or reduces rows (softmax, layer_norm, rms_norm, reduce): the
/// anchor of a row group when the row is its trailing dims.
def Sluice_RowOp : Sluice_Category<"RowOp">;
/// Correct in f16/bf16 storage (the kernels compute in fp32 where it
/// matters): --precision=fp16|bf16 converts these ops.
def Sluice_RunsInHalf : Sluice_Category<"RunsInHalf">;
/// Exchanges data between the ranks of a device grid (all_reduce,
/// all_gather, ...): a library call of its own (the `collective` form).
def Sluice_Collective : Sluice_Category<"Collective">;

#endif // SLUICE_TRAITS_TD
