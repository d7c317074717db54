//===- ControlFlow.cpp - ONNX If, Loop and Scan to sluice region ops ------===//
//
// Subgraphs become regions that read enclosing values directly. The
// branches of an If may produce different shapes; the op's result types are
// their join (joinTypes, which also joins sequences and optionals). Loop-
// carried values may change shape from one iteration to the next, so the
// body sees them relaxed (relaxShapes: dynamic dims, unranked sequence
// elements).
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

const onnx::GraphProto *graphAttr(Binder &b, StringRef name) {
  const auto *attr = b.attr(name);
  return attr && attr->has_g() ? &attr->g() : nullptr;
}

LogicalResult ifHandler(Binder &b) {
  const onnx::GraphProto *thenGraph = graphAttr(b, "then_branch");
  const onnx::GraphProto *elseGraph = graphAttr(b, "else_branch");
  if (!thenGraph || !elseGraph)
    return b.fail("If needs then_branch and else_branch graphs");
  if (!b.input(0))
    return b.fail("If needs a condition input");
  unsigned numResults = b.numOutputs();
  // Result types are known only after the branches are imported: start with
  // placeholders and set the join afterwards.
  SmallVector<Type> placeholders(numResults,
                                 UnrankedTensorType::get(b.b.getF32Type()));
  auto op = IfOp::create(b.b, b.loc, placeholders, b.input(0));
  SmallVector<SmallVector<Value>> yielded(2);
  const onnx::GraphProto *graphs[] = {thenGraph, elseGraph};
  for (unsigned index = 0; index < 2; ++index) {
    const onnx::GraphProto *graph = graphs[index];
    Region &region = index == 0 ? op.getThenRegion() : op.getElseRegion();
    Block *block = new Block();
    region.push_back(block);
    if (failed(b.subgraphs->importSubgraph(*graph, block, yielded[index])))
      return failure();
    if (yielded[index].size() != numResults)
      return b.fail("If branch '" + graph->name() + "' produces " +
                    Twine(yielded[index].size()) + " outputs, the node has " +
                    Twine(numResults));
    OpBuilder::InsertionGuard guard(b.b);
    b.b.setInsertionPointToEnd(block);
    YieldOp::create(b.b, b.loc, yielded[index]);
  }
  for (unsigned i = 0; i < numResults; ++i) {
    auto joined = joinTypes(yielded[0][i].getType(), yielded[1][i].getType());
    if (failed(joined))
      return b.fail("If branches produce output " + Twine(i) +
                    " with different element types");
    op.getResult(i).setType(*joined);
    b.setOutput(i, op.getResult(i));
  }
  return success();
}

LogicalResult loopHandler(Binder &b) {
  const onnx::GraphProto *body = graphAttr(b, "body");
  if (!body)
    return b.fail("Loop needs a body graph");
  if (b.numInputs() < 2)
    return b.fail("Loop needs the trip count and condition inputs (possibly empty)");
  Value maxTrips = b.input(0), condition = b.input(1);
  SmallVector<Value> initial;
  for (unsigned i = 2; i < b.numInputs(); ++i) {
    if (!b.input(i))
      return b.fail("Loop-carried input " + Twine(i) + " is missing");
    initial.push_back(b.input(i));
  }
  if (body->output_size() < (int)initial.size() + 1)
    return b.fail("Loop body has " + Twine(body->output_size()) +
                  " outputs, needs the condition and " + Twine(initial.size()) +
                  " carried values");
  auto scalarType = [&](Type element) { return RankedTensorType::get({}, element); };
  SmallVector<Type> argTypes{scalarType(b.b.getI64Type()), scalarType(b.b.getI1Type())};
  for (Value v : initial)
    argTypes.push_back(relaxShapes(v.getType()));
  unsigned numScans = body->output_size() - 1 - initial.size();
  SmallVector<Type> placeholders(initial.size() + numScans,
                                 UnrankedTensorType::get(b.b.getF32Type()));
  auto op = LoopOp::create(b.b, b.loc, placeholders, maxTrips, condition, initial);
  Block *block = new Block();
  op.getBody().push_back(block);
  for (Type t : argTypes)
    block->addArgument(t, b.loc);
  SmallVector<Value> yielded;
  if (failed(b.subgraphs->importSubgraph(*body, block, yielded)))
    return failure();
  // ONNX lets a body yield the plain value of an optional carried value
  // (test_loop16_seq_none): wrap it so the carried type stays the optional,
  // and unwrap the loop's result where the body's output is not optional.
  SmallVector<bool> unwrap(initial.size(), false);
  {
    OpBuilder::InsertionGuard guard(b.b);
    b.b.setInsertionPointToEnd(block);
    for (unsigned i = 0; i < initial.size(); ++i) {
      Value &value = yielded[1 + i];
      if (isa<OptionalType>(initial[i].getType()) &&
          !isa<OptionalType>(value.getType())) {
        value = b.create<OptionalOp>(value, TypeAttr());
        if (!value)
          return failure();
        unwrap[i] = true;
      }
    }
    YieldOp::create(b.b, b.loc, yielded);
  }
  for (unsigned i = 0; i < initial.size(); ++i) {
    if (failed(joinTypes(yielded[1 + i].getType(), initial[i].getType())))
      return b.fail("Loop body changes the type of carried value " + Twine(i) +
                    " from " + typeString(initial[i].getType()) + " to " +
                    typeString(yielded[1 + i].getType()));
    op.getResult(i).setType(argTypes[2 + i]);
  }
  for (unsigned k = 0; k < numScans; ++k) {
    auto type = dyn_cast<TensorType>(yielded[1 + initial.size() + k].getType());
    if (!type)
      return b.fail("Loop scan output " + Twine(k) + " is not a tensor");
    Type stacked = UnrankedTensorType::get(type.getElementType());
    if (type.hasRank()) {
      SmallVector<int64_t> shape{ShapedType::kDynamic};
      shape.append(type.getShape().begin(), type.getShape().end());
      stacked = RankedTensorType::get(shape, type.getElementType());
    }
    op.getResult(initial.size() + k).setType(stacked);
  }
  for (unsigned i = 0; i < op.getNumResults(); ++i) {
    Value result = op.getResult(i);
    if (i < unwrap.size() && unwrap[i])
      result = b.create<OptionalGetElementOp>(result);
    if (!result)
      return failure();
    b.setOutput(i, result);
  }
  return success();
}

/// `type` with dim `axis` removed (a slice along it); unranked stays.
Type dropDim(Type type, int64_t axis) {
  auto tensor = cast<TensorType>(type);
  if (!tensor.hasRank())
    return type;
  auto normalized = normalizeAxis(axis, tensor.getRank());
  if (failed(normalized))
    return UnrankedTensorType::get(tensor.getElementType());
  SmallVector<int64_t> shape(tensor.getShape());
  shape.erase(shape.begin() + *normalized);
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// `type` with a dynamic dim inserted at `axis` (in the result's rank).
Type insertDim(Type type, int64_t axis) {
  auto tensor = cast<TensorType>(type);
  if (!tensor.hasRank())
    return type;
  auto normalized = normalizeAxis(axis, tensor.getRank() + 1);
  if (failed(normalized))
    return UnrankedTensorType::get(tensor.getElementType());
  SmallVector<int64_t> shape(tensor.getShape());
  shape.insert(shape.begin() + *normalized, ShapedType::kDynamic);
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// ONNX Scan. Opset 8 has a leading sequence_lens input and a batch dim 0
/// on every input and output (the scan axis is then dim 1): it becomes a
/// `batched` sluice.scan whose axes count without the batch dim. Opset 9
/// dropped both and added per-input/output axes and directions.
LogicalResult scanHandler(Binder &b) {
  const onnx::GraphProto *body = graphAttr(b, "body");
  if (!body)
    return b.fail("Scan needs a body graph");
  bool batched = b.opset() < 9;
  unsigned first = batched ? 1 : 0;
  if (batched && b.hasInput(0))
    return b.fail("Scan-8 with sequence_lens is not supported (only full-length "
                  "sequences: leave the input empty)");
  int64_t numScanInputs = b.attrInt("num_scan_inputs", -1);
  SmallVector<Value> inputs;
  for (unsigned i = first; i < b.numInputs(); ++i) {
    if (!b.input(i))
      return b.fail("Scan input " + Twine(i) + " is missing");
    if (!isa<TensorType>(b.input(i).getType()))
      return b.fail("Scan input " + Twine(i) + " is not a tensor");
    inputs.push_back(b.input(i));
  }
  if (numScanInputs < 1 || numScanInputs > (int64_t)inputs.size())
    return b.fail("Scan num_scan_inputs is " + Twine(numScanInputs) + ", the node has " +
                  Twine(inputs.size()) + " state and scan inputs");
  int64_t numStates = inputs.size() - numScanInputs;
  int64_t numScanOutputs = (int64_t)b.numOutputs() - numStates;
  if (numScanOutputs < 0)
    return b.fail("Scan has fewer outputs than states");
  auto listAttr = [&](StringRef name, int64_t size) -> FailureOr<SmallVector<int64_t>> {
    std::vector<int64_t> values = b.attrInts(name);
    if (values.empty())
      values.assign(size, 0);
    if ((int64_t)values.size() != size)
      return b.fail("Scan attribute " + name + " has " + Twine(values.size()) +
                    " values, expected " + Twine(size));
    return SmallVector<int64_t>(values.begin(), values.end());
  };
  auto inputAxes = listAttr("scan_input_axes", numScanInputs);
  auto inputDirections =
      listAttr(batched ? "directions" : "scan_input_directions", numScanInputs);
  auto outputAxes = listAttr("scan_output_axes", numScanOutputs);
  auto outputDirections = listAttr("scan_output_directions", numScanOutputs);
  if (failed(inputAxes) || failed(inputDirections) || failed(outputAxes) ||
      failed(outputDirections))
    return failure();
  // Types as the body sees them (batch dim dropped for Scan-8).
  auto perBatch = [&](Type type) { return batched ? dropDim(type, 0) : type; };
  SmallVector<Type> argTypes;
  for (int64_t i = 0; i < numStates; ++i)
    argTypes.push_back(relaxShapes(perBatch(inputs[i].getType())));
  for (int64_t j = 0; j < numScanInputs; ++j)
    argTypes.push_back(dropDim(perBatch(inputs[numStates + j].getType()),
                               (*inputAxes)[j]));
  SmallVector<Type> placeholders(b.numOutputs(),
                                 UnrankedTensorType::get(b.b.getF32Type()));
  auto op = ScanOp::create(
      b.b, b.loc, placeholders, inputs, b.b.getI64IntegerAttr(numScanInputs),
      b.b.getDenseI64ArrayAttr(*inputAxes), b.b.getDenseI64ArrayAttr(*inputDirections),
      b.b.getDenseI64ArrayAttr(*outputAxes), b.b.getDenseI64ArrayAttr(*outputDirections),
      batched ? b.b.getUnitAttr() : UnitAttr());
  Block *block = new Block();
  op.getBody().push_back(block);
  for (Type t : argTypes)
    block->addArgument(t, b.loc);
  SmallVector<Value> yielded;
  if (failed(b.subgraphs->importSubgraph(*body, block, yielded)))
    return failure();
  if (yielded.size() != b.numOutputs())
    return b.fail("Scan body produces " + Twine(yielded.size()) +
                  " outputs, the node has " + Twine(b.numOutputs()));
  {
    OpBuilder::InsertionGuard guard(b.b);
    b.b.setInsertionPointToEnd(block);
    YieldOp::create(b.b, b.loc, yielded);
  }
  auto withBatch = [&](Type type) { return batched ? insertDim(type, 0) : type; };
  for (unsigned i = 0; i < yielded.size(); ++i) {
    if (!isa<TensorType>(yielded[i].getType()))
      return b.fail("Scan body output " + Twine(i) + " is not a tensor");
    Type type;
    if ((int64_t)i < numStates) {
      if (getElementTypeOrSelf(yielded[i].getType()) !=
          getElementTypeOrSelf(inputs[i].getType()))
        return b.fail("Scan body changes the element type of state " + Twine(i));
      type = relaxShapes(inputs[i].getType());
    } else {
      type = withBatch(insertDim(yielded[i].getType(), (*outputAxes)[i - numStates]));
    }
    op.getResult(i).setType(type);
    b.setOutput(i, op.getResult(i));
  }
  return success();
}

} // namespace

void registerControlFlowHandlers(OpRegistry &r) {
  r.on("If", 1, ifHandler);
  r.on("Loop", 1, loopHandler);
  r.on("Scan", 8, scanHandler);
}

} // namespace sluice::onnx_import
