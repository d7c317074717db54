//===- SluiceOps.h - the sluice dialect, its attributes and ops -----------===//
//
// Include this one header to use the dialect: it pulls in every op family.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_DIALECTS_SLUICE_SLUICEOPS_H
#define SLUICE_DIALECTS_SLUICE_SLUICEOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/sluice/SluiceDialect.h.inc"
#include "dialects/sluice/SluiceEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/sluice/SluiceAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/sluice/SluiceTypeDefs.h.inc"

#include "dialects/sluice/SluiceTraits.h"
#include "dialects/sluice/SluiceTypes.h"

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceElementwiseOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceLinalgOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceShapeOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceIndexingOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceReductionOps.h.inc"
// sluice.yield may sit in a sequence_map body, declared by a later family.
namespace sluice {
class SequenceMapOp;
} // namespace sluice
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceControlOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceSequenceOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceKernelOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceCompositeOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/sluice/SluiceParallelOps.h.inc"

namespace sluice {

/// Creates `OpTy` (built from `args`) with its result types inferred, at b's
/// insertion point. Null, and nothing created, when an operand is null (an
/// earlier build failed: propagated rather than crashing) or inference fails.
/// For the importer's handlers (lib/onnx/Binder.h) and the rewrite passes.
template <typename OpTy, typename... Args>
mlir::Operation *buildInferred(mlir::OpBuilder &b, mlir::Location loc, Args &&...args) {
  mlir::OperationState state(loc, OpTy::getOperationName());
  OpTy::build(b, state, mlir::TypeRange{}, std::forward<Args>(args)...);
  if (llvm::any_of(state.operands, [](mlir::Value v) { return !v; }))
    return nullptr;
  llvm::SmallVector<mlir::Type> types;
  if (mlir::failed(OpTy::inferReturnTypes(b.getContext(), loc, state.operands,
                                          state.attributes.getDictionary(b.getContext()),
                                          state.getRawProperties(), state.regions, types)))
    return nullptr;
  state.addTypes(types);
  return b.create(state);
}

} // namespace sluice

#endif // SLUICE_DIALECTS_SLUICE_SLUICEOPS_H
