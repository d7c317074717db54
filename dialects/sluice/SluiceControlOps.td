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
    ParentOneOf<["IfOp", "LoopOp", "ScanOp", "SequenceMapOp"]>]> {
  let summary = "returns values from an if branch, a loop, scan or sequence_map body";
  let arguments = (ins Variadic<Sluice_AnyValue>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Sluice_IfOp : Op<Sluice_Dialect, "if", [
    SingleBlock, RecursiveMemoryEffects,
    NoRegionArguments]> {
  let summary = "ONNX If: runs one of two regions on a scalar condition";
  let arguments = (ins TensorOf<[I1]>:$condition);
  let results = (outs Variadic<Sluice_AnyValue>:$outputs);
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
                       Variadic<Sluice_AnyValue>:$initial_values);
  let results = (outs Variadic<Sluice_AnyValue>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` ($max_trip_count^ `:` type($max_trip_count))? `)` `(` ($initial_condition^ `:` type($initial_condition))? `)`
    (`carried` `(` $initial_values^ `:` type($initial_values) `)`)? (`->` type($outputs)^)? $body attr-dict
  }];
  let hasVerifier = 1;
}

def Sluice_ScanOp : Op<Sluice_Dialect, "scan", [SingleBlock,
    RecursiveMemoryEffects]> {
  let summary = "ONNX Scan: runs a body over slices of scan inputs, carrying state";
  let description = [{
    `inputs` are the initial states followed by `num_scan_inputs` scan
    inputs. Iteration i slices every scan input along its scan axis (the
    i-th slice, or the i-th from the end where its direction is 1); the body
    takes (states..., slices...) and yields (states..., scan output slices...).
    Results are the final states followed by the scan outputs, the yielded
    slices stacked along each output's axis (in reverse where its direction
    is 1). With `batched` (ONNX Scan-8), dim 0 of every input and result is a
    batch dim the body does not see: the scan runs once per batch element.

    A region op rather than a lowering to sluice.loop plus gather and concat:
    reverse directions and per-output axes would need a reverse op and a
    transpose per value, and the batched form one more loop level, while the
    evaluator implements all of it directly in a few lines.
  }];
  let arguments = (ins Variadic<Sluice_AnyValue>:$inputs,
                       I64Attr:$num_scan_inputs,
                       DenseI64ArrayAttr:$scan_input_axes,
                       DenseI64ArrayAttr:$scan_input_directions,
                       DenseI64ArrayAttr:$scan_output_axes,
                       DenseI64ArrayAttr:$scan_output_directions,
                       UnitAttr:$batched);
  let results = (outs Variadic<AnyTensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` ($inputs^ `:` type($inputs))? `)` (`->` type($outputs)^)? $body attr-dict
  }];
  let hasVerifier = 1;
}

#endif // SLUICE_CONTROL_OPS_TD
