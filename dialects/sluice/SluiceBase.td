//===- SluiceBase.td - sluice dialect and base op classes -----*- tablegen -*-===//
//
// The dialect definition and the class ladder every sluice op derives from.
// Every op is Pure (value semantics on tensors) and infers its result types;
// inferred types are compatible with declared ones when they agree on rank and
// element type and every static dim matches (a dynamic dim matches anything),
// so that shape specialization can refine types one op at a time.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_BASE_TD
#define SLUICE_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Sluice_Dialect : Dialect {
  let name = "sluice";
  let cppNamespace = "::sluice";
  let summary = "Graph-level ops of the Sluice neural-network compiler";
  let description = [{
    Value-semantics ops on ranked tensors, close enough to ONNX that the
    importer is a thin binder, small enough that every op has reference
    semantics in the evaluator (lib/reference). Weights are `dense_resource`
    blobs held by `sluice.constant`.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

include "dialects/sluice/SluiceTypeDefs.td"
include "dialects/sluice/SluiceTraits.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Sluice_Bool : I<1>;
// I4 / UI4: ONNX INT4 / UINT4, the storage of 4-bit weights (weight-only
// quantization); one element per byte in the evaluator, packed two per byte
// in bundles and ONNX files.
// F8E4M3FN: ONNX FLOAT8E4M3FN, the storage of fp8 quantization (Form F8):
// produced by quantize_linear and cast, read by dequantize_linear and cast
// (and moved by views); the importer and the passes give it to no other op.
def Sluice_ElementType : AnyTypeOf<[F16, BF16, F32, F64, I1, I<4>, I8, I16, I32, I64,
                                    UI<4>, UI8, UI16, UI32, UI64, F8E4M3FN]>;
def Sluice_Tensor : TensorOf<[Sluice_ElementType]>;
def Sluice_FloatTensor : TensorOf<[F16, BF16, F32, F64]>;
def Sluice_IntegerTensor : TensorOf<[I<4>, I8, I16, I32, I64, UI<4>, UI8, UI16, UI32, UI64]>;
/// What quantize_linear produces and dequantize_linear reads: integers, or
/// E4M3FN floats (fp8 quantization).
def Sluice_QuantizedTensor : TensorOf<[I<4>, I8, I16, I32, I64, UI<4>, UI8, UI16, UI32,
                                       UI64, F8E4M3FN]>;
def Sluice_IndexTensor : TensorOf<[I32, I64]>;
def Sluice_BoolTensor : TensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Base op classes
//===----------------------------------------------------------------------===//

/// Result types are inferred from operands and attributes; compatibility
/// allows a declared static dim where inference could only say "dynamic".
def Sluice_InferTypes : InferTypeOpAdaptorBase<[{
  static bool isCompatibleReturnTypes(::mlir::TypeRange l, ::mlir::TypeRange r) {
    return ::sluice::areCompatibleResultTypes(l, r);
  }
}]>;

class Sluice_Op<string mnemonic, list<Trait> traits = []>
    : Op<Sluice_Dialect, mnemonic, !listconcat(traits, [Pure])>;

/// An op whose result types are inferred and whose syntax is the generic
/// `sluice.op %a, %b {attrs} : (operand types) -> result types`.
class Sluice_InferredOp<string mnemonic, list<Trait> traits = []>
    : Sluice_Op<mnemonic, !listconcat(traits, [Sluice_InferTypes])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

#endif // SLUICE_BASE_TD
