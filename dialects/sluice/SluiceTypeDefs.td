//===- SluiceTypeDefs.td - sluice types beyond tensors -------*- tablegen -*-===//
//
// ONNX values are tensors, sequences of tensors, or optionals. Sequences and
// optionals get their own types rather than one encoding the other: an
// optional may hold a sequence, and an empty sequence is a present value,
// distinct from an absent optional (Loop bodies test exactly that), so
// "optional = sequence of length 0 or 1" would lose information.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TYPEDEFS_TD
#define SLUICE_TYPEDEFS_TD

include "mlir/IR/AttrTypeBase.td"

class Sluice_Type<string name, string typeMnemonic>
    : TypeDef<Sluice_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Sluice_SequenceType : Sluice_Type<"Sequence", "sequence"> {
  let summary = "an ordered list of tensors of one element type (ONNX seq)";
  let description = [{
    `!sluice.sequence<tensor<?x4xf32>>`: every element is an instance of the
    element tensor type (same element type; shapes may differ where the
    element type leaves dims dynamic or is unranked). The length is a runtime
    property.
  }];
  let parameters = (ins "::mlir::TensorType":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def Sluice_OptionalType : Sluice_Type<"Optional", "optional"> {
  let summary = "a tensor or sequence that may be absent (ONNX optional)";
  let description = [{
    `!sluice.optional<tensor<4xf32>>`, `!sluice.optional<!sluice.sequence<...>>`.
  }];
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
  let genVerifyDecl = 1;
}

def Sluice_StringType : Sluice_Type<"String", "string"> {
  let summary = "a variable-length text element (ONNX STRING)";
  let description = [{
    `tensor<3x!sluice.string>`: the element type of ONNX string tensors. It is
    deliberately not part of `Sluice_ElementType`: no arithmetic, indexing or
    shape op may see strings (their evaluators copy fixed-size elements).
    Only `sluice.cast` accepts string tensors, to convert text to and from
    numbers, plus the generic plumbing (function boundaries, control flow).
  }];
}

/// Strings as an element type constraint, for the few ops that take them.
def Sluice_StringElement
    : Type<CPred<"::llvm::isa<::sluice::StringType>($_self)">, "string",
           "::sluice::StringType">;

def Sluice_Sequence : Type<CPred<"::llvm::isa<::sluice::SequenceType>($_self)">,
                           "sequence", "::sluice::SequenceType">;
def Sluice_Optional : Type<CPred<"::llvm::isa<::sluice::OptionalType>($_self)">,
                           "optional", "::sluice::OptionalType">;

/// Anything an ONNX graph edge can carry: control-flow ops pass these through.
def Sluice_AnyValue : AnyTypeOf<[AnyTensor, Sluice_Sequence, Sluice_Optional]>;

#endif // SLUICE_TYPEDEFS_TD
