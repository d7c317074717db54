//===- Sequence.cpp - evaluators for sequence and optional ops ------------===//
//
// These ops take or produce sequences and optionals, so they register
// ValueEvalFns (tensor ops keep the plain EvalFn). Positions follow ONNX:
// negative positions count from the end; an out-of-range position is a
// runtime error on the op, never a crash.
//
//===----------------------------------------------------------------------===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <cstring>
#include <numeric>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

using Operands = ArrayRef<const RuntimeValue *>;
using Results = std::vector<RuntimeValue>;

/// The operand's tensor, or an error.
FailureOr<Tensor> tensorOperand(Operation *op, const RuntimeValue *v,
                                StringRef what) {
  if (!v->isTensor())
    return op->emitOpError()
           << what << " must be a tensor, got " << v->describe();
  return v->tensor();
}

/// The operand's sequence elements, or an error.
FailureOr<std::vector<Tensor>> sequenceOperand(Operation *op,
                                               const RuntimeValue *v) {
  if (!v->isSequence())
    return op->emitOpError("expected a sequence, got ") << v->describe();
  return v->elements();
}

/// A position operand as an index in [0, size) (or [0, size] with
/// `allowEnd`, for insertion); negative positions count from the end.
FailureOr<int64_t> position(Operation *op, const RuntimeValue *v, int64_t size,
                            bool allowEnd) {
  auto tensor = tensorOperand(op, v, "position");
  if (failed(tensor))
    return failure();
  if (tensor->numElements() != 1)
    return op->emitOpError("position must hold one element, got ")
           << tensor->describe();
  int64_t p = tensor->getInt(0);
  int64_t upper = allowEnd ? size : size - 1;
  if (p < -size || p > upper)
    return op->emitOpError("position ")
           << p << " is out of range for a sequence of " << size << " elements";
  return p < 0 ? p + size : p;
}

LogicalResult evalSequenceEmpty(Operation *, Operands, Results &results) {
  results.push_back(RuntimeValue::sequence({}));
  return success();
}

LogicalResult evalSequenceConstruct(Operation *op, Operands operands,
                                    Results &results) {
  std::vector<Tensor> elements;
  for (const RuntimeValue *v : operands) {
    auto t = tensorOperand(op, v, "element");
    if (failed(t))
      return failure();
    if (!elements.empty() && t->dtype() != elements[0].dtype())
      return op->emitOpError("elements have different element types");
    elements.push_back(*t);
  }
  results.push_back(RuntimeValue::sequence(std::move(elements)));
  return success();
}

LogicalResult evalSequenceInsert(Operation *op, Operands operands,
                                 Results &results) {
  auto elements = sequenceOperand(op, operands[0]);
  auto tensor = tensorOperand(op, operands[1], "inserted value");
  if (failed(elements) || failed(tensor))
    return failure();
  if (!elements->empty() && (*elements)[0].dtype() != tensor->dtype())
    return op->emitOpError("cannot insert ")
           << tensor->describe() << " into a sequence of "
           << (*elements)[0].describe();
  int64_t at = elements->size();
  if (operands.size() > 2) {
    auto p = position(op, operands[2], elements->size(), /*allowEnd=*/true);
    if (failed(p))
      return failure();
    at = *p;
  }
  elements->insert(elements->begin() + at, *tensor);
  results.push_back(RuntimeValue::sequence(std::move(*elements)));
  return success();
}

LogicalResult evalSequenceAt(Operation *op, Operands operands,
                             Results &results) {
  auto elements = sequenceOperand(op, operands[0]);
  if (failed(elements))
    return failure();
  auto p = position(op, operands[1], elements->size(), /*allowEnd=*/false);
  if (failed(p))
    return failure();
  results.push_back((*elements)[*p]);
  return success();
}

LogicalResult evalSequenceErase(Operation *op, Operands operands,
                                Results &results) {
  auto elements = sequenceOperand(op, operands[0]);
  if (failed(elements))
    return failure();
  if (elements->empty())
    return op->emitOpError("cannot erase from an empty sequence");
  int64_t at = elements->size() - 1;
  if (operands.size() > 1) {
    auto p = position(op, operands[1], elements->size(), /*allowEnd=*/false);
    if (failed(p))
      return failure();
    at = *p;
  }
  elements->erase(elements->begin() + at);
  results.push_back(RuntimeValue::sequence(std::move(*elements)));
  return success();
}

LogicalResult evalSequenceLength(Operation *op, Operands operands,
                                 Results &results) {
  auto elements = sequenceOperand(op, operands[0]);
  if (failed(elements))
    return failure();
  results.push_back(
      Tensor::fromInt64({(int64_t)elements->size()}).reshaped({}));
  return success();
}

LogicalResult evalConcatFromSequence(Operation *op, Operands operands,
                                     Results &results) {
  auto concat = cast<ConcatFromSequenceOp>(op);
  auto elements = sequenceOperand(op, operands[0]);
  if (failed(elements))
    return failure();
  if (elements->empty())
    return op->emitOpError("cannot concatenate an empty sequence");
  const Tensor &first = (*elements)[0];
  bool newAxis = concat.getNewAxis();
  auto axis =
      normalizeAxis(op, concat.getAxis(), first.rank() + (newAxis ? 1 : 0));
  if (failed(axis))
    return failure();
  // With new_axis every element gains a dim of 1 at `axis` (a stack).
  std::vector<Tensor> pieces;
  for (const Tensor &t : *elements) {
    std::vector<int64_t> shape = t.shape();
    if (newAxis)
      shape.insert(shape.begin() + *axis, 1);
    pieces.push_back(t.reshaped(shape));
  }
  std::vector<int64_t> shape = pieces[0].shape();
  shape[*axis] = 0;
  for (const Tensor &t : pieces) {
    bool same = t.rank() == (int64_t)shape.size() && t.dtype() == first.dtype();
    for (int64_t d = 0; same && d < t.rank(); ++d)
      same = d == *axis || t.dim(d) == shape[d];
    if (!same)
      return op->emitOpError("cannot concatenate ")
             << t.describe() << " with " << pieces[0].describe()
             << " along axis " << *axis;
    shape[*axis] += t.dim(*axis);
  }
  Tensor out(first.dtype(), shape);
  int64_t outer = 1, inner = dtypeSize(first.dtype());
  for (int64_t d = 0; d < *axis; ++d)
    outer *= shape[d];
  for (size_t d = *axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  char *dst = static_cast<char *>(out.mutableData());
  int64_t rowBytes = shape[*axis] * inner;
  int64_t offset = 0;
  for (const Tensor &t : pieces) {
    int64_t chunk = t.dim(*axis) * inner;
    const char *src = static_cast<const char *>(t.rawData());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + o * rowBytes + offset, src + o * chunk, chunk);
    offset += chunk;
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalSplitToSequence(Operation *op, Operands operands,
                                  Results &results) {
  auto split = cast<SplitToSequenceOp>(op);
  auto input = tensorOperand(op, operands[0], "input");
  if (failed(input))
    return failure();
  auto axis = normalizeAxis(op, split.getAxis(), input->rank());
  if (failed(axis))
    return failure();
  int64_t length = input->dim(*axis);
  std::vector<int64_t> sizes;
  bool dropAxis = false;
  if (operands.size() > 1) {
    auto given = tensorOperand(op, operands[1], "split");
    if (failed(given))
      return failure();
    std::vector<int64_t> values = given->toInt64Vector();
    if (given->rank() == 0) {
      if (values[0] <= 0)
        return op->emitOpError("split must be positive, got ") << values[0];
      for (int64_t start = 0; start < length; start += values[0])
        sizes.push_back(std::min(values[0], length - start));
    } else {
      if (llvm::any_of(values, [](int64_t v) { return v < 0; }) ||
          std::accumulate(values.begin(), values.end(), int64_t(0)) != length)
        return op->emitOpError(
                   "split sizes must be non-negative and add up to ")
               << length;
      sizes = values;
    }
  } else {
    sizes.assign(length, 1);
    dropAxis = !split.getKeepdims();
  }
  int64_t outer = 1, inner = dtypeSize(input->dtype());
  for (int64_t d = 0; d < *axis; ++d)
    outer *= input->dim(d);
  for (int64_t d = *axis + 1; d < input->rank(); ++d)
    inner *= input->dim(d);
  const char *src = static_cast<const char *>(input->rawData());
  std::vector<Tensor> elements;
  int64_t start = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> shape = input->shape();
    shape[*axis] = size;
    Tensor piece(input->dtype(), shape);
    char *dst = static_cast<char *>(piece.mutableData());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + o * size * inner, src + (o * length + start) * inner,
                  size * inner);
    if (dropAxis)
      shape.erase(shape.begin() + *axis);
    elements.push_back(piece.reshaped(shape));
    start += size;
  }
  results.push_back(RuntimeValue::sequence(std::move(elements)));
  return success();
}

LogicalResult evalOptional(Operation *, Operands operands, Results &results) {
  results.push_back(operands.empty() ? RuntimeValue::none()
                                     : RuntimeValue::optional(*operands[0]));
  return success();
}

LogicalResult evalOptionalHasElement(Operation *, Operands operands,
                                     Results &results) {
  // A plain tensor or sequence is a present value (opset 18 semantics).
  bool present = !operands[0]->isOptional() || operands[0]->hasValue();
  results.push_back(Tensor::scalar(DType::Bool, present));
  return success();
}

LogicalResult evalOptionalGetElement(Operation *op, Operands operands,
                                     Results &results) {
  const RuntimeValue *v = operands[0];
  if (!v->isOptional()) {
    results.push_back(*v);
    return success();
  }
  if (!v->hasValue())
    return op->emitOpError("the optional holds no value");
  results.push_back(v->value());
  return success();
}

} // namespace

void registerSequenceEvaluators(EvalRegistry &r) {
  r.addValueFn(SequenceEmptyOp::getOperationName(), evalSequenceEmpty);
  r.addValueFn(SequenceConstructOp::getOperationName(), evalSequenceConstruct);
  r.addValueFn(SequenceInsertOp::getOperationName(), evalSequenceInsert);
  r.addValueFn(SequenceAtOp::getOperationName(), evalSequenceAt);
  r.addValueFn(SequenceEraseOp::getOperationName(), evalSequenceErase);
  r.addValueFn(SequenceLengthOp::getOperationName(), evalSequenceLength);
  r.addValueFn(ConcatFromSequenceOp::getOperationName(),
               evalConcatFromSequence);
  r.addValueFn(SplitToSequenceOp::getOperationName(), evalSplitToSequence);
  r.addValueFn(OptionalOp::getOperationName(), evalOptional);
  r.addValueFn(OptionalHasElementOp::getOperationName(),
               evalOptionalHasElement);
  r.addValueFn(OptionalGetElementOp::getOperationName(),
               evalOptionalGetElement);
}

} // namespace sluice
