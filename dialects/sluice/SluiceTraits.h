//===- SluiceTraits.h - op categories for the kernel model ---*- C++ -*-===//
//
// The C++ side of SluiceTraits.td: marker traits without verification. Query
// them through the kernel model (KernelForms.h), which adds the conditions
// that depend on operands, rather than with hasTrait directly.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_DIALECTS_SLUICE_SLUICETRAITS_H
#define SLUICE_DIALECTS_SLUICE_SLUICETRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace sluice::OpCategory {

#define SLUICE_CATEGORY_TRAIT(Name)                                                                \
  template <typename ConcreteType>                                                                 \
  class Name : public mlir::OpTrait::TraitBase<ConcreteType, Name> {};

SLUICE_CATEGORY_TRAIT(Elementwise)
SLUICE_CATEGORY_TRAIT(Transcendental)
SLUICE_CATEGORY_TRAIT(View)
SLUICE_CATEGORY_TRAIT(LayoutPreservingView)
SLUICE_CATEGORY_TRAIT(RowOp)
SLUICE_CATEGORY_TRAIT(RunsInHalf)
SLUICE_CATEGORY_TRAIT(Collective)

#undef SLUICE_CATEGORY_TRAIT

} // namespace sluice::OpCategory

#endif // SLUICE_DIALECTS_SLUICE_SLUICETRAITS_H
