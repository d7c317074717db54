//===- SluiceSequenceOps.cpp - ONNX sequences and optionals ---------------===//
//
// Result-type inference and verifiers of the sequence family. Element types
// of sequences are joins of what goes in (see joinTypes), so a sequence's
// type holds for every element whatever the runtime positions are.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

static SequenceType sequenceOf(Type element) {
  return SequenceType::get(element.getContext(), cast<TensorType>(element));
}

LogicalResult
SequenceEmptyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  SequenceEmptyOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  Type dtype = adaptor.getDtype();
  if (!dtype || isa<ShapedType>(dtype))
    return emitOptionalError(loc, "dtype must be an element type, got ", dtype);
  inferred.push_back(sequenceOf(UnrankedTensorType::get(dtype)));
  return success();
}

LogicalResult SequenceConstructOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc,
    SequenceConstructOp::Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc,
                             "needs at least one tensor (use sequence_empty)");
  Type joined = inputs.front().getType();
  for (Value v : inputs.drop_front()) {
    auto next = joinTypes(joined, v.getType());
    if (failed(next))
      return emitOptionalError(loc, "elements have different element types: ",
                               joined, " and ", v.getType());
    joined = *next;
  }
  inferred.push_back(sequenceOf(joined));
  return success();
}

LogicalResult
SequenceInsertOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   SequenceInsertOp::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  auto sequence = cast<SequenceType>(adaptor.getInputSequence().getType());
  auto joined =
      joinTypes(sequence.getElementType(), adaptor.getTensor().getType());
  if (failed(joined))
    return emitOptionalError(loc, "cannot insert a ",
                             adaptor.getTensor().getType(), " into a ",
                             sequence);
  inferred.push_back(sequenceOf(*joined));
  return success();
}

/// A position operand must be a scalar (a single element).
static LogicalResult checkPosition(std::optional<Location> loc,
                                   Value position) {
  if (!position)
    return success();
  auto type = cast<TensorType>(position.getType());
  if (type.hasRank() && type.hasStaticShape() && type.getNumElements() != 1)
    return emitOptionalError(loc, "position must be a scalar, got ", type);
  return success();
}

LogicalResult SequenceAtOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             SequenceAtOp::Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  if (failed(checkPosition(loc, adaptor.getPosition())))
    return failure();
  inferred.push_back(cast<SequenceType>(adaptor.getInputSequence().getType())
                         .getElementType());
  return success();
}

LogicalResult
SequenceEraseOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  SequenceEraseOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  if (failed(checkPosition(loc, adaptor.getPosition())))
    return failure();
  inferred.push_back(adaptor.getInputSequence().getType());
  return success();
}

LogicalResult
SequenceLengthOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                   SequenceLengthOp::Adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  inferred.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult ConcatFromSequenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc,
    ConcatFromSequenceOp::Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  TensorType element =
      cast<SequenceType>(adaptor.getInputSequence().getType()).getElementType();
  if (!element.hasRank()) {
    inferred.push_back(element);
    return success();
  }
  int64_t rank = element.getRank() + (adaptor.getNewAxis() ? 1 : 0);
  auto axis = normalizeAxis(adaptor.getAxis(), rank);
  if (failed(axis))
    return emitOptionalError(loc, "axis ", (int64_t)adaptor.getAxis(),
                             " is out of range for rank ", rank);
  // The number of elements is a runtime property: the axis dim is dynamic.
  SmallVector<int64_t> shape(element.getShape());
  if (adaptor.getNewAxis())
    shape.insert(shape.begin() + *axis, ShapedType::kDynamic);
  else
    shape[*axis] = ShapedType::kDynamic;
  inferred.push_back(RankedTensorType::get(shape, element.getElementType()));
  return success();
}

LogicalResult
SplitToSequenceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    SplitToSequenceOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (!type.hasRank()) {
    inferred.push_back(sequenceOf(type));
    return success();
  }
  auto axis = normalizeAxis(adaptor.getAxis(), type.getRank());
  if (failed(axis))
    return emitOptionalError(loc, "axis ", (int64_t)adaptor.getAxis(),
                             " is out of range for rank ", type.getRank());
  if (Value split = adaptor.getSplit()) {
    auto splitType = cast<TensorType>(split.getType());
    if (splitType.hasRank() && splitType.getRank() > 1)
      return emitOptionalError(loc, "split must be a scalar or 1-D, got ",
                               splitType);
  }
  SmallVector<int64_t> shape(type.getShape());
  if (adaptor.getSplit())
    shape[*axis] = ShapedType::kDynamic; // pieces may differ in size
  else if (adaptor.getKeepdims())
    shape[*axis] = 1;
  else
    shape.erase(shape.begin() + *axis);
  inferred.push_back(
      sequenceOf(RankedTensorType::get(shape, type.getElementType())));
  return success();
}

LogicalResult OptionalOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           OptionalOp::Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  Type element;
  if (Value input = adaptor.getInput())
    element = input.getType();
  else if (auto given = adaptor.getElementType())
    element = *given;
  else
    return emitOptionalError(loc, "an empty optional needs element_type");
  if (!isa<TensorType, SequenceType>(element))
    return emitOptionalError(loc, "optional holds a tensor or a sequence, not ",
                             element);
  inferred.push_back(OptionalType::get(ctx, element));
  return success();
}

LogicalResult OptionalOp::verify() {
  if (getInput() && getElementType() &&
      !areCompatibleResultTypes(TypeRange{getInput().getType()},
                                TypeRange{*getElementType()}))
    return emitOpError("input type ")
           << getInput().getType() << " does not match element_type "
           << *getElementType();
  return success();
}

LogicalResult OptionalHasElementOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location>, OptionalHasElementOp::Adaptor,
    SmallVectorImpl<Type> &inferred) {
  inferred.push_back(RankedTensorType::get({}, IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult
OptionalGetElementOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       OptionalGetElementOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  Type type = adaptor.getInput().getType();
  if (auto optional = dyn_cast<OptionalType>(type))
    type = optional.getElementType();
  inferred.push_back(type);
  return success();
}

LogicalResult SequenceMapOp::verify() {
  Block &body = getBody().front();
  if (getInputs().empty() || !isa<SequenceType>(getInputs()[0].getType()))
    return emitOpError("first input must be a sequence");
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body takes ")
           << body.getNumArguments() << " arguments, expected "
           << getInputs().size() << " (one per input)";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(getInputs(), body.getArguments()))) {
    auto [input, arg] = pair;
    Type perIteration = input.getType();
    if (auto sequence = dyn_cast<SequenceType>(perIteration))
      perIteration = sequence.getElementType();
    if (!areCompatibleResultTypes(TypeRange{perIteration},
                                  TypeRange{arg.getType()}))
      return emitOpError("body argument ")
             << index << " has type " << arg.getType() << ", incompatible with "
             << perIteration;
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != getNumResults())
    return emitOpError("body yields ")
           << yield.getValues().size() << " values, expected "
           << getNumResults();
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(yield.getValues(), getOutputs()))) {
    auto [value, output] = pair;
    TensorType element = cast<SequenceType>(output.getType()).getElementType();
    if (!isa<TensorType>(value.getType()) ||
        !areCompatibleResultTypes(TypeRange{value.getType()},
                                  TypeRange{element}))
      return emitOpError("body value ")
             << index << " has type " << value.getType()
             << ", incompatible with result element type " << element;
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceSequenceOps.cpp.inc"
