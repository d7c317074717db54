//===- ControlFlow.cpp - ONNX If and Loop to sluice region ops ------------===//
//
// Subgraphs become regions that read enclosing values directly. The
// branches of an If may produce different shapes; the op's result types are
// their join. Loop-carried values may change shape from one iteration to the
// next, so the body sees them with dynamic dims.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

/// The most specific type both `a` and `b` are instances of (same element
/// type required): equal dims stay, differing dims become dynamic, differing
/// ranks become unranked.
FailureOr<Type> joinTypes(Type a, Type b) {
  auto ta = cast<TensorType>(a), tb = cast<TensorType>(b);
  if (ta.getElementType() != tb.getElementType())
    return failure();
  if (!ta.hasRank() || !tb.hasRank() || ta.getRank() != tb.getRank())
    return Type(UnrankedTensorType::get(ta.getElementType()));
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
    shape.push_back(x == y ? x : ShapedType::kDynamic);
  return Type(RankedTensorType::get(shape, ta.getElementType()));
}

/// The same tensor type with every dim dynamic.
Type dynamicDims(Type type) {
  auto tensor = cast<TensorType>(type);
  if (!tensor.hasRank())
    return type;
  return RankedTensorType::get(
      SmallVector<int64_t>(tensor.getRank(), ShapedType::kDynamic),
      tensor.getElementType());
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
    argTypes.push_back(dynamicDims(v.getType()));
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
  {
    OpBuilder::InsertionGuard guard(b.b);
    b.b.setInsertionPointToEnd(block);
    YieldOp::create(b.b, b.loc, yielded);
  }
  for (unsigned i = 0; i < initial.size(); ++i) {
    if (getElementTypeOrSelf(yielded[1 + i].getType()) !=
        getElementTypeOrSelf(initial[i].getType()))
      return b.fail("Loop body changes the element type of carried value " + Twine(i));
    op.getResult(i).setType(argTypes[2 + i]);
  }
  for (unsigned k = 0; k < numScans; ++k) {
    auto type = cast<TensorType>(yielded[1 + initial.size() + k].getType());
    Type stacked = UnrankedTensorType::get(type.getElementType());
    if (type.hasRank()) {
      SmallVector<int64_t> shape{ShapedType::kDynamic};
      shape.append(type.getShape().begin(), type.getShape().end());
      stacked = RankedTensorType::get(shape, type.getElementType());
    }
    op.getResult(initial.size() + k).setType(stacked);
  }
  for (unsigned i = 0; i < op.getNumResults(); ++i)
    b.setOutput(i, op.getResult(i));
  return success();
}

} // namespace

void registerControlFlowHandlers(OpRegistry &r) {
  r.on("If", 1, ifHandler);
  r.on("Loop", 1, loopHandler);
}

} // namespace sluice::onnx_import
