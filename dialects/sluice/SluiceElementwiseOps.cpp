//===- SluiceElementwiseOps.cpp - constants, casts, elementwise ops -------===//

#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace sluice;

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  ConstantOp::Adaptor adaptor(ValueRange{}, attributes, properties);
  auto value = adaptor.getValue();
  if (!value)
    return emitOptionalError(loc, "requires a 'value' attribute");
  inferred.push_back(value.getType());
  return success();
}

LogicalResult ConstantOp::verify() {
  if (!isa<RankedTensorType>(getValue().getType()))
    return emitOpError("value must be a ranked tensor");
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() && !getTruncateBf16())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Result-type inference for the elementwise ladders
//===----------------------------------------------------------------------===//

/// Unary ops keep the operand type.
template <typename Op>
static LogicalResult inferUnary(typename Op::Adaptor adaptor,
                                SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

/// Binary ops broadcast; `element` overrides the result element type.
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    TypeRange operands, Type element,
                                    SmallVectorImpl<Type> &inferred) {
  auto shape = broadcastTypes(loc, operands);
  if (failed(shape))
    return failure();
  inferred.push_back(makeTensorType(
      *shape ? std::optional<ArrayRef<int64_t>>(**shape) : std::nullopt,
      element));
  return success();
}

#define SLUICE_UNARY_INFER(OP)                                                 \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location>,   \
                                     OP::Adaptor adaptor,                      \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferUnary<OP>(adaptor, inferred);                                  \
  }
SLUICE_UNARY_INFER(AbsOp)
SLUICE_UNARY_INFER(NegOp)
SLUICE_UNARY_INFER(SignOp)
SLUICE_UNARY_INFER(ExpOp)
SLUICE_UNARY_INFER(LogOp)
SLUICE_UNARY_INFER(SqrtOp)
SLUICE_UNARY_INFER(RsqrtOp)
SLUICE_UNARY_INFER(ReciprocalOp)
SLUICE_UNARY_INFER(TanhOp)
SLUICE_UNARY_INFER(SigmoidOp)
SLUICE_UNARY_INFER(ReluOp)
SLUICE_UNARY_INFER(ErfOp)
SLUICE_UNARY_INFER(SinOp)
SLUICE_UNARY_INFER(CosOp)
SLUICE_UNARY_INFER(TanOp)
SLUICE_UNARY_INFER(AsinOp)
SLUICE_UNARY_INFER(AcosOp)
SLUICE_UNARY_INFER(AtanOp)
SLUICE_UNARY_INFER(SinhOp)
SLUICE_UNARY_INFER(CoshOp)
SLUICE_UNARY_INFER(AsinhOp)
SLUICE_UNARY_INFER(AcoshOp)
SLUICE_UNARY_INFER(AtanhOp)
SLUICE_UNARY_INFER(CeilOp)
SLUICE_UNARY_INFER(FloorOp)
SLUICE_UNARY_INFER(RoundOp)
SLUICE_UNARY_INFER(NotOp)
SLUICE_UNARY_INFER(BitwiseNotOp)
#undef SLUICE_UNARY_INFER

#define SLUICE_CLASSIFY_INFER(OP)                                              \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc,              \
                                     OP::Adaptor adaptor,                      \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferBroadcast(loc, adaptor.getInput().getType(),                   \
                          IntegerType::get(ctx, 1), inferred);                 \
  }
SLUICE_CLASSIFY_INFER(IsNaNOp)
SLUICE_CLASSIFY_INFER(IsInfOp)
#undef SLUICE_CLASSIFY_INFER

#define SLUICE_BINARY_INFER(OP)                                                \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     OP::Adaptor adaptor,                      \
                                     SmallVectorImpl<Type> &inferred) {        \
    Type lhs = adaptor.getLhs().getType(), rhs = adaptor.getRhs().getType();   \
    return inferBroadcast(loc, {lhs, rhs}, getElementTypeOrSelf(lhs),          \
                          inferred);                                           \
  }
SLUICE_BINARY_INFER(AddOp)
SLUICE_BINARY_INFER(SubOp)
SLUICE_BINARY_INFER(MulOp)
SLUICE_BINARY_INFER(DivOp)
SLUICE_BINARY_INFER(PowOp)
SLUICE_BINARY_INFER(MaxOp)
SLUICE_BINARY_INFER(MinOp)
SLUICE_BINARY_INFER(ModOp)
SLUICE_BINARY_INFER(AndOp)
SLUICE_BINARY_INFER(OrOp)
SLUICE_BINARY_INFER(XorOp)
SLUICE_BINARY_INFER(BitwiseAndOp)
SLUICE_BINARY_INFER(BitwiseOrOp)
SLUICE_BINARY_INFER(BitwiseXorOp)
SLUICE_BINARY_INFER(ShiftLeftOp)
SLUICE_BINARY_INFER(ShiftRightOp)
#undef SLUICE_BINARY_INFER

#define SLUICE_COMPARE_INFER(OP)                                               \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc,              \
                                     OP::Adaptor adaptor,                      \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferBroadcast(                                                     \
        loc, {adaptor.getLhs().getType(), adaptor.getRhs().getType()},         \
        IntegerType::get(ctx, 1), inferred);                                   \
  }
SLUICE_COMPARE_INFER(EqualOp)
SLUICE_COMPARE_INFER(LessOp)
SLUICE_COMPARE_INFER(LessEqualOp)
SLUICE_COMPARE_INFER(GreaterOp)
SLUICE_COMPARE_INFER(GreaterEqualOp)
#undef SLUICE_COMPARE_INFER

//===----------------------------------------------------------------------===//
// SelectOp
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         SelectOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferBroadcast(loc,
                        {adaptor.getCondition().getType(),
                         adaptor.getOnTrue().getType(),
                         adaptor.getOnFalse().getType()},
                        getElementTypeOrSelf(adaptor.getOnTrue().getType()),
                        inferred);
}

LogicalResult SelectOp::verify() {
  if (getElementTypeOrSelf(getOnTrue().getType()) !=
      getElementTypeOrSelf(getOnFalse().getType()))
    return emitOpError("on_true and on_false must have the same element type");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceElementwiseOps.cpp.inc"
