//===- RuntimeValue.h - tensors, sequences and optionals at run time -*- C++ -*-===//
//
// What an ONNX graph edge carries at run time. Kept beside Tensor (no MLIR
// dependency) so that tensor files (.pb SequenceProto / OptionalProto) and the
// runtime can use it as the evaluator does.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_REFERENCE_RUNTIMEVALUE_H
#define SLUICE_LIB_REFERENCE_RUNTIMEVALUE_H

#include "lib/reference/Tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace sluice {

/// A value at run time, mirroring what an ONNX graph edge carries: a tensor,
/// a sequence of tensors, or an optional (absent, or holding a tensor or a
/// sequence). Tensor ops never see the other kinds (EvalFn takes tensors);
/// ops that build or read sequences and optionals register a ValueEvalFn.
/// Copies are cheap: tensors share their buffers.
class RuntimeValue {
public:
  enum class Kind { Tensor, Sequence, Optional };
  RuntimeValue() = default;
  /// Implicit: a tensor is a runtime value.
  RuntimeValue(Tensor tensor) : tensorValue(std::move(tensor)) {}
  static RuntimeValue sequence(std::vector<Tensor> elements);
  /// An optional holding nothing.
  static RuntimeValue none();
  /// An optional holding `value` (a tensor or a sequence).
  static RuntimeValue optional(RuntimeValue value);

  Kind kind() const { return valueKind; }
  bool isTensor() const { return valueKind == Kind::Tensor; }
  bool isSequence() const { return valueKind == Kind::Sequence; }
  bool isOptional() const { return valueKind == Kind::Optional; }
  const Tensor &tensor() const { return tensorValue; }
  Tensor &tensor() { return tensorValue; }
  /// A sequence's elements.
  const std::vector<Tensor> &elements() const { return sequenceElements; }
  std::vector<Tensor> &elements() { return sequenceElements; }
  /// Whether an optional holds a value, and the value it holds.
  bool hasValue() const { return optionalValue != nullptr; }
  const RuntimeValue &value() const { return *optionalValue; }
  /// "f32[2x3]", "sequence of 3 [f32[2], ...]", "optional(none)".
  std::string describe() const;

private:
  Kind valueKind = Kind::Tensor;
  Tensor tensorValue;
  std::vector<Tensor> sequenceElements;
  std::shared_ptr<const RuntimeValue> optionalValue;
};

} // namespace sluice

#endif // SLUICE_LIB_REFERENCE_RUNTIMEVALUE_H
