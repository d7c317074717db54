//===- SluiceDialect.cpp - sluice dialect registration --------------------===//

#include "dialects/sluice/SluicePipelineOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace sluice;

#include "dialects/sluice/SluiceDialect.cpp.inc"
#include "dialects/sluice/SluiceEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/sluice/SluiceAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/sluice/SluiceTypeDefs.cpp.inc"

void SluiceDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/sluice/SluiceAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/sluice/SluiceTypeDefs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceElementwiseOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceLinalgOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceShapeOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceIndexingOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceReductionOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceControlOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceSequenceOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceKernelOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceCompositeOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluiceParallelOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sluice/SluicePipelineOps.cpp.inc"
      >();
}

LogicalResult
OptionalType::verify(function_ref<InFlightDiagnostic()> emitError,
                     Type elementType) {
  if (!isa<TensorType, SequenceType>(elementType))
    return emitError() << "optional holds a tensor or a sequence, not "
                       << elementType;
  return success();
}

Operation *SluiceDialect::materializeConstant(OpBuilder &builder,
                                              Attribute value, Type type,
                                              Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
