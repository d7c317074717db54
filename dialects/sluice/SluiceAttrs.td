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

#endif // SLUICE_ATTRS_TD
