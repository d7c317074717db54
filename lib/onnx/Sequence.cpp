//===- Sequence.cpp - ONNX sequence and optional ops ----------------------===//
//
// Each ONNX sequence/optional op maps to one sluice op. SequenceMap becomes
// a sluice.sequence_map region op whose body is the ONNX body graph, with
// one block argument per input (the element for sequence inputs, the value
// itself for tensor inputs).
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/TensorFiles.h"

#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

LogicalResult sequenceEmptyHandler(Binder &b) {
  DType dtype;
  int64_t onnxType = b.attrInt("dtype", onnx::TensorProto::FLOAT);
  if (!dtypeFromOnnx((int)onnxType, dtype))
    return b.fail("SequenceEmpty dtype " + Twine(onnxType) +
                  " is not supported");
  return b.output(
      b.create<SequenceEmptyOp>(typeFromDType(b.b.getContext(), dtype)));
}

LogicalResult sequenceConstructHandler(Binder &b) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < b.numInputs(); ++i) {
    if (!b.input(i))
      return b.fail("SequenceConstruct input " + Twine(i) + " is missing");
    inputs.push_back(b.input(i));
  }
  return b.output(b.create<SequenceConstructOp>(inputs));
}

LogicalResult sequenceInsertHandler(Binder &b) {
  return b.output(
      b.create<SequenceInsertOp>(b.input(0), b.input(1), b.input(2)));
}

LogicalResult sequenceAtHandler(Binder &b) {
  return b.output(b.create<SequenceAtOp>(b.input(0), b.input(1)));
}

LogicalResult sequenceEraseHandler(Binder &b) {
  return b.output(b.create<SequenceEraseOp>(b.input(0), b.input(1)));
}

LogicalResult sequenceLengthHandler(Binder &b) {
  return b.output(b.create<SequenceLengthOp>(b.input(0)));
}

LogicalResult concatFromSequenceHandler(Binder &b) {
  if (!b.hasAttr("axis"))
    return b.fail("ConcatFromSequence needs an axis");
  return b.output(b.create<ConcatFromSequenceOp>(
      b.input(0), b.attrInt("axis", 0), b.attrInt("new_axis", 0) != 0));
}

LogicalResult splitToSequenceHandler(Binder &b) {
  return b.output(b.create<SplitToSequenceOp>(b.input(0), b.input(1),
                                              b.attrInt("axis", 0),
                                              b.attrInt("keepdims", 1) != 0));
}

LogicalResult optionalHandler(Binder &b) {
  TypeAttr elementType;
  if (const auto *attr = b.attr("type")) {
    std::string why;
    Type type = typeFromOnnx(*b.b.getContext(), attr->tp(), why);
    if (!type)
      return b.fail("Optional type " + why);
    elementType = TypeAttr::get(type);
  }
  if (!b.input(0) && !elementType)
    return b.fail("Optional needs an input or a type attribute");
  // With an input, the input's type is the more precise one.
  return b.output(
      b.create<OptionalOp>(b.input(0), b.input(0) ? TypeAttr() : elementType));
}

LogicalResult optionalHasElementHandler(Binder &b) {
  if (!b.input(0))
    return b.output(b.constTensor(Tensor::scalar(DType::Bool, 0)));
  return b.output(b.create<OptionalHasElementOp>(b.input(0)));
}

LogicalResult optionalGetElementHandler(Binder &b) {
  return b.output(b.create<OptionalGetElementOp>(b.input(0)));
}

LogicalResult sequenceMapHandler(Binder &b) {
  const auto *attr = b.attr("body");
  if (!attr || !attr->has_g())
    return b.fail("SequenceMap needs a body graph");
  SmallVector<Value> inputs;
  SmallVector<Type> argTypes;
  for (unsigned i = 0; i < b.numInputs(); ++i) {
    Value v = b.input(i);
    if (!v)
      return b.fail("SequenceMap input " + Twine(i) + " is missing");
    if (isa<OptionalType>(v.getType()))
      return b.fail("SequenceMap input " + Twine(i) + " is an optional");
    inputs.push_back(v);
    auto sequence = dyn_cast<SequenceType>(v.getType());
    argTypes.push_back(sequence ? Type(sequence.getElementType())
                                : v.getType());
  }
  if (inputs.empty() || !isa<SequenceType>(inputs[0].getType()))
    return b.fail("SequenceMap's first input must be a sequence");
  SmallVector<Type> placeholders(
      b.numOutputs(),
      SequenceType::get(b.b.getContext(),
                        UnrankedTensorType::get(b.b.getF32Type())));
  auto op = SequenceMapOp::create(b.b, b.loc, placeholders, inputs);
  Block *block = new Block();
  op.getBody().push_back(block);
  for (Type t : argTypes)
    block->addArgument(t, b.loc);
  SmallVector<Value> yielded;
  if (failed(b.subgraphs->importSubgraph(attr->g(), block, yielded)))
    return failure();
  if (yielded.size() != b.numOutputs())
    return b.fail("SequenceMap body produces " + Twine(yielded.size()) +
                  " outputs, the node has " + Twine(b.numOutputs()));
  {
    OpBuilder::InsertionGuard guard(b.b);
    b.b.setInsertionPointToEnd(block);
    YieldOp::create(b.b, b.loc, yielded);
  }
  for (unsigned k = 0; k < yielded.size(); ++k) {
    auto tensor = dyn_cast<TensorType>(yielded[k].getType());
    if (!tensor)
      return b.fail("SequenceMap body output " + Twine(k) + " is not a tensor");
    // Iterations may yield different shapes: keep the rank, not the dims.
    op.getResult(k).setType(SequenceType::get(
        b.b.getContext(), cast<TensorType>(relaxShapes(tensor))));
    b.setOutput(k, op.getResult(k));
  }
  return success();
}

} // namespace

void registerSequenceHandlers(OpRegistry &r) {
  r.on("SequenceEmpty", 11, sequenceEmptyHandler);
  r.on("SequenceConstruct", 11, sequenceConstructHandler);
  r.on("SequenceInsert", 11, sequenceInsertHandler);
  r.on("SequenceAt", 11, sequenceAtHandler);
  r.on("SequenceErase", 11, sequenceEraseHandler);
  r.on("SequenceLength", 11, sequenceLengthHandler);
  r.on("ConcatFromSequence", 11, concatFromSequenceHandler);
  r.on("SplitToSequence", 11, splitToSequenceHandler);
  r.on("SequenceMap", 17, sequenceMapHandler);
  r.on("Optional", 15, optionalHandler);
  r.on("OptionalHasElement", 15, optionalHasElementHandler);
  r.on("OptionalGetElement", 15, optionalGetElementHandler);
}

} // namespace sluice::onnx_import
