//===- SluiceElementwiseOps.td - constants, casts, elementwise -*- tablegen -*-===//
//
// Constants, casts, and the elementwise ops: unary math, NumPy-broadcasting
// binary arithmetic and comparisons, and select. ONNX ops that are functions of
// these (Clip, LeakyRelu, HardSigmoid, Elu, ...) are decomposed by the importer.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_ELEMENTWISE_OPS_TD
#define SLUICE_ELEMENTWISE_OPS_TD

include "dialects/sluice/SluiceBase.td"

//===----------------------------------------------------------------------===//
// Constants and casts
//===----------------------------------------------------------------------===//

def Sluice_ConstantOp : Sluice_Op<"constant", [ConstantLike,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a tensor constant: small dense values or a dense_resource weight blob";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Sluice_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

/// Cast's operand and result: any numeric tensor, or a tensor of strings.
def Sluice_CastTensor : TensorOf<[Sluice_ElementType, Sluice_StringElement]>;

def Sluice_CastOp : Sluice_Op<"cast", [Sluice_Elementwise, SameOperandsAndResultShape]> {
  let summary = "element type conversion (ONNX Cast semantics: saturating float to int truncates toward zero)";
  let description = [{
    Floats narrow with round-to-nearest-even. With `truncate_bf16`, a float
    to bfloat16 conversion instead drops the low 16 bits, as ONNX's reference
    did before opset 19 (its backend test data for Cast expects that).
    `saturate` (ONNX opset 19) applies to conversions to f8E4M3FN only:
    values beyond +-448 (and infinities) become +-448, or NaN when false.
    Operand and result may also be tensors of `!sluice.string`: numbers
    become shortest round-trip text, text parses as a number (`NaN`, `INF`,
    `-INF` accepted).
  }];
  // The only op that takes string tensors: ONNX Cast converts numbers to
  // their shortest round-trip text and parses text back into numbers.
  let arguments = (ins Sluice_CastTensor:$input,
                   DefaultValuedAttr<BoolAttr, "false">:$truncate_bf16,
                   DefaultValuedAttr<BoolAttr, "true">:$saturate);
  let results = (outs Sluice_CastTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Unary elementwise: result type equals the operand type
//===----------------------------------------------------------------------===//

class Sluice_UnaryOp<string mnemonic, Type operandType = Sluice_Tensor,
                     list<Trait> traits = []>
    : Sluice_InferredOp<mnemonic, !listconcat(traits, [Sluice_Elementwise])> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$output);
}

def Sluice_AbsOp : Sluice_UnaryOp<"abs", Sluice_Tensor, [Sluice_RunsInHalf]>;
def Sluice_NegOp : Sluice_UnaryOp<"neg", Sluice_Tensor, [Sluice_RunsInHalf]>;
def Sluice_SignOp : Sluice_UnaryOp<"sign", Sluice_Tensor, [Sluice_RunsInHalf]>;
def Sluice_ExpOp : Sluice_UnaryOp<"exp", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_LogOp : Sluice_UnaryOp<"log", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_SqrtOp : Sluice_UnaryOp<"sqrt", Sluice_FloatTensor, [Sluice_RunsInHalf]>;
def Sluice_RsqrtOp : Sluice_UnaryOp<"rsqrt", Sluice_FloatTensor>;
def Sluice_ReciprocalOp : Sluice_UnaryOp<"reciprocal", Sluice_FloatTensor>;
def Sluice_TanhOp : Sluice_UnaryOp<"tanh", Sluice_FloatTensor, [Sluice_Transcendental, Sluice_RunsInHalf]>;
def Sluice_SigmoidOp : Sluice_UnaryOp<"sigmoid", Sluice_FloatTensor, [Sluice_Transcendental, Sluice_RunsInHalf]>;
def Sluice_ReluOp : Sluice_UnaryOp<"relu", Sluice_Tensor, [Sluice_RunsInHalf]>;
def Sluice_ErfOp : Sluice_UnaryOp<"erf", Sluice_FloatTensor, [Sluice_Transcendental, Sluice_RunsInHalf]>;
def Sluice_SinOp : Sluice_UnaryOp<"sin", Sluice_FloatTensor, [Sluice_Transcendental, Sluice_RunsInHalf]>;
def Sluice_CosOp : Sluice_UnaryOp<"cos", Sluice_FloatTensor, [Sluice_Transcendental, Sluice_RunsInHalf]>;
def Sluice_TanOp : Sluice_UnaryOp<"tan", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_AsinOp : Sluice_UnaryOp<"asin", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_AcosOp : Sluice_UnaryOp<"acos", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_AtanOp : Sluice_UnaryOp<"atan", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_SinhOp : Sluice_UnaryOp<"sinh", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_CoshOp : Sluice_UnaryOp<"cosh", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_AsinhOp : Sluice_UnaryOp<"asinh", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_AcoshOp : Sluice_UnaryOp<"acosh", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_AtanhOp : Sluice_UnaryOp<"atanh", Sluice_FloatTensor, [Sluice_Transcendental]>;
def Sluice_CeilOp : Sluice_UnaryOp<"ceil", Sluice_FloatTensor, [Sluice_RunsInHalf]>;
def Sluice_FloorOp : Sluice_UnaryOp<"floor", Sluice_FloatTensor, [Sluice_RunsInHalf]>;
def Sluice_RoundOp : Sluice_UnaryOp<"round", Sluice_FloatTensor, [Sluice_RunsInHalf]> {
  let summary = "round half to even";
}
def Sluice_NotOp : Sluice_UnaryOp<"not", Sluice_BoolTensor>;
def Sluice_BitwiseNotOp : Sluice_UnaryOp<"bitwise_not", Sluice_IntegerTensor>;

/// Float classification: results are i1 tensors of the operand's shape.
class Sluice_ClassifyOp<string mnemonic, list<Trait> traits = []>
    : Sluice_InferredOp<mnemonic, !listconcat(traits, [Sluice_Elementwise])> {
  let results = (outs Sluice_BoolTensor:$output);
}
def Sluice_IsNaNOp : Sluice_ClassifyOp<"is_nan", [Sluice_RunsInHalf]> {
  let arguments = (ins Sluice_FloatTensor:$input);
}
def Sluice_IsInfOp : Sluice_ClassifyOp<"is_inf", [Sluice_RunsInHalf]> {
  let arguments = (ins Sluice_FloatTensor:$input,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_positive,
                   DefaultValuedAttr<BoolAttr, "true">:$detect_negative);
}

//===----------------------------------------------------------------------===//
// Binary elementwise with NumPy broadcasting
//===----------------------------------------------------------------------===//

class Sluice_BinaryOp<string mnemonic, Type operandType = Sluice_Tensor,
                      list<Trait> traits = []>
    : Sluice_InferredOp<mnemonic, !listconcat(traits, [SameOperandsElementType, Sluice_Elementwise])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$output);
}

def Sluice_AddOp : Sluice_BinaryOp<"add", Sluice_Tensor, [Commutative, Sluice_RunsInHalf]>;
def Sluice_SubOp : Sluice_BinaryOp<"sub", Sluice_Tensor, [Sluice_RunsInHalf]>;
def Sluice_MulOp : Sluice_BinaryOp<"mul", Sluice_Tensor, [Commutative, Sluice_RunsInHalf]>;
def Sluice_DivOp : Sluice_BinaryOp<"div", Sluice_Tensor, [Sluice_RunsInHalf]> {
  let summary = "division; integer division truncates toward zero";
}
def Sluice_PowOp : Sluice_BinaryOp<"pow", Sluice_Tensor, [Sluice_Transcendental]>;
def Sluice_MaxOp : Sluice_BinaryOp<"max", Sluice_Tensor, [Commutative, Sluice_RunsInHalf]>;
def Sluice_MinOp : Sluice_BinaryOp<"min", Sluice_Tensor, [Commutative, Sluice_RunsInHalf]>;
def Sluice_ModOp : Sluice_BinaryOp<"mod"> {
  let summary = "remainder: sign of the divisor (Python) unless fmod is set (C)";
  let arguments = (ins Sluice_Tensor:$lhs, Sluice_Tensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$fmod);
}
def Sluice_AndOp : Sluice_BinaryOp<"and", Sluice_BoolTensor, [Commutative]>;
def Sluice_OrOp : Sluice_BinaryOp<"or", Sluice_BoolTensor, [Commutative]>;
def Sluice_XorOp : Sluice_BinaryOp<"xor", Sluice_BoolTensor, [Commutative]>;
def Sluice_BitwiseAndOp : Sluice_BinaryOp<"bitwise_and", Sluice_IntegerTensor, [Commutative]>;
def Sluice_BitwiseOrOp : Sluice_BinaryOp<"bitwise_or", Sluice_IntegerTensor, [Commutative]>;
def Sluice_BitwiseXorOp : Sluice_BinaryOp<"bitwise_xor", Sluice_IntegerTensor, [Commutative]>;
def Sluice_ShiftLeftOp : Sluice_BinaryOp<"shift_left", Sluice_IntegerTensor>;
def Sluice_ShiftRightOp : Sluice_BinaryOp<"shift_right", Sluice_IntegerTensor>;

/// Comparisons broadcast like binary ops and produce i1.
class Sluice_CompareOp<string mnemonic, list<Trait> traits = []>
    : Sluice_InferredOp<mnemonic, !listconcat(traits, [SameOperandsElementType, Sluice_Elementwise])> {
  let arguments = (ins Sluice_Tensor:$lhs, Sluice_Tensor:$rhs);
  let results = (outs Sluice_BoolTensor:$output);
}

def Sluice_EqualOp : Sluice_CompareOp<"equal", [Commutative, Sluice_RunsInHalf]>;
def Sluice_LessOp : Sluice_CompareOp<"less", [Sluice_RunsInHalf]>;
def Sluice_LessEqualOp : Sluice_CompareOp<"less_equal", [Sluice_RunsInHalf]>;
def Sluice_GreaterOp : Sluice_CompareOp<"greater", [Sluice_RunsInHalf]>;
def Sluice_GreaterEqualOp : Sluice_CompareOp<"greater_equal", [Sluice_RunsInHalf]>;

def Sluice_SelectOp : Sluice_InferredOp<"select", [Sluice_Elementwise, Sluice_RunsInHalf]> {
  let summary = "elementwise condition ? on_true : on_false, all three broadcast";
  let arguments = (ins Sluice_BoolTensor:$condition, Sluice_Tensor:$on_true,
                   Sluice_Tensor:$on_false);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_ELEMENTWISE_OPS_TD
