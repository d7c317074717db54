//===- RuntimeValue.cpp - tensors, sequences and optionals at run time ----===//

#include "lib/support/RuntimeValue.h"

namespace sluice {

RuntimeValue RuntimeValue::sequence(std::vector<Tensor> elements) {
  RuntimeValue v;
  v.valueKind = Kind::Sequence;
  v.sequenceElements = std::move(elements);
  return v;
}

RuntimeValue RuntimeValue::none() {
  RuntimeValue v;
  v.valueKind = Kind::Optional;
  return v;
}

RuntimeValue RuntimeValue::optional(RuntimeValue value) {
  RuntimeValue v;
  v.valueKind = Kind::Optional;
  v.optionalValue = std::make_shared<const RuntimeValue>(std::move(value));
  return v;
}

std::string RuntimeValue::describe() const {
  switch (valueKind) {
  case Kind::Tensor:
    return tensorValue.describe();
  case Kind::Sequence: {
    std::string text =
        "sequence of " + std::to_string(sequenceElements.size()) + " [";
    for (size_t i = 0; i < sequenceElements.size() && i < 3; ++i)
      text += (i ? ", " : "") + sequenceElements[i].describe();
    return text + (sequenceElements.size() > 3 ? ", ...]" : "]");
  }
  case Kind::Optional:
    return hasValue() ? "optional(" + value().describe() + ")"
                      : "optional(none)";
  }
  return "";
}

} // namespace sluice
