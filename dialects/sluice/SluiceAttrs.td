//===- SluiceAttrs.td - sluice enums and attributes ---------*- tablegen -*-===//
//
// Enums shared by op families. Printed as `#sluice<reduce_kind sum>`.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_ATTRS_TD
#define SLUICE_ATTRS_TD

include "dialects/sluice/SluiceBase.td"

def Sluice_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"prod", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
    I32EnumAttrCase<"mean", 4>]> {
  let cppNamespace = "::sluice";
  let genSpecializedAttr = 0;
}
def Sluice_ReduceKindAttr : EnumAttr<Sluice_Dialect, Sluice_ReduceKind, "reduce_kind">;

def Sluice_PoolKind : I32EnumAttr<"PoolKind", "pooling window combiner", [
    I32EnumAttrCase<"max", 0>, I32EnumAttrCase<"avg", 1>,
    I32EnumAttrCase<"lp", 2>]> {
  let cppNamespace = "::sluice";
  let genSpecializedAttr = 0;
}
def Sluice_PoolKindAttr : EnumAttr<Sluice_Dialect, Sluice_PoolKind, "pool_kind">;

def Sluice_PadMode : I32EnumAttr<"PadMode", "padding mode", [
    I32EnumAttrCase<"constant", 0>, I32EnumAttrCase<"reflect", 1>,
    I32EnumAttrCase<"edge", 2>, I32EnumAttrCase<"wrap", 3>]> {
  let cppNamespace = "::sluice";
  let genSpecializedAttr = 0;
}
def Sluice_PadModeAttr : EnumAttr<Sluice_Dialect, Sluice_PadMode, "pad_mode">;

/// The form of a kernel group (`sluice.kernel`): which emitter computes it.
/// Decided once by the kernel model's judge (KernelForms.h) when the fuse
/// phase forms the group, recorded on the op, checked by its verifier, and
/// read by every target's emitter.
def Sluice_KernelForm : I32EnumAttr<"KernelForm", "kernel group form", [
    I32EnumAttrCase<"elementwise", 0>, I32EnumAttrCase<"gemm", 1>,
    I32EnumAttrCase<"row", 2>, I32EnumAttrCase<"attention", 3>,
    I32EnumAttrCase<"library", 4>, I32EnumAttrCase<"single", 5>,
    I32EnumAttrCase<"view", 6>, I32EnumAttrCase<"collective", 7>]> {
  let cppNamespace = "::sluice";
  let genSpecializedAttr = 0;
}
def Sluice_KernelFormAttr : EnumAttr<Sluice_Dialect, Sluice_KernelForm, "kernel_form">;

#endif // SLUICE_ATTRS_TD
