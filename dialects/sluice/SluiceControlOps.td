//===- SluiceControlOps.td - structured control flow ---------*- tablegen -*-===//
//
// ONNX If and Loop as region ops. Regions are not isolated: like ONNX
// subgraphs, they read values of the enclosing graph directly. Result types
// are given by the importer (branches may disagree on shapes; the op's type
// is their join), not inferred.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CONTROL_OPS_TD
#define SLUICE_CONTROL_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Sluice_YieldOp : Op<Sluice_Dialect, "yield", [Pure, Terminator,
    ParentOneOf<["IfOp", "LoopOp"]>]> {
  let summary = "returns values from an if branch or a loop body";
  let arguments = (ins Variadic<AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Sluice_IfOp : Op<Sluice_Dialect, "if", [
    SingleBlock, RecursiveMemoryEffects,
    NoRegionArguments]> {
  let summary = "ONNX If: runs one of two regions on a scalar condition";
  let arguments = (ins TensorOf<[I1]>:$condition);
  let results = (outs Variadic<AnyTensor>:$outputs);
  let regions = (region SizedRegion<1>:$then_region, SizedRegion<1>:$else_region);
  let assemblyFormat = [{
    $condition `:` type($condition) (`->` type($outputs)^)? $then_region `else` $else_region attr-dict
  }];
  let hasVerifier = 1;
}

def Sluice_LoopOp : Op<Sluice_Dialect, "loop", [AttrSizedOperandSegments,
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "ONNX Loop: a counted and/or conditional loop with carried values and scan outputs";
  let description = [{
    The body's block arguments are (iteration number: tensor<i64>, condition:
    tensor<i1>, carried values...); it yields (condition, carried values...,
    scan values...). Results are the final carried values followed by one
    tensor per scan value, the per-iteration values stacked along a new first
    dim. An absent trip count or condition means "unbounded" / "true".
  }];
  let arguments = (ins Optional<TensorOf<[I64]>>:$max_trip_count,
                       Optional<TensorOf<[I1]>>:$initial_condition,
                       Variadic<AnyTensor>:$initial_values);
  let results = (outs Variadic<AnyTensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` ($max_trip_count^ `:` type($max_trip_count))? `)` `(` ($initial_condition^ `:` type($initial_condition))? `)`
    (`carried` `(` $initial_values^ `:` type($initial_values) `)`)? (`->` type($outputs)^)? $body attr-dict
  }];
  let hasVerifier = 1;
}

#endif // SLUICE_CONTROL_OPS_TD
