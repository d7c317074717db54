//===- Evaluator.cpp - the reference evaluator of sluice ops --------------===//

#include "lib/reference/Evaluator.h"

#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinDialect.h"
#include "llvm/ADT/DenseMap.h"

#include <cstring>

using namespace mlir;

namespace sluice {

const EvalRegistry &EvalRegistry::get() {
  static const EvalRegistry registry = [] {
    EvalRegistry r;
    registerElementwiseEvaluators(r);
    registerLinalgEvaluators(r);
    registerShapeEvaluators(r);
    registerIndexingEvaluators(r);
    registerReductionEvaluators(r);
    return r;
  }();
  return registry;
}

void EvalRegistry::add(StringRef opName, EvalFn fn) {
  functions[opName] = std::move(fn);
}

const EvalFn *EvalRegistry::lookup(StringRef opName) const {
  auto it = functions.find(opName);
  return it == functions.end() ? nullptr : &it->second;
}

FailureOr<DType> dtypeFromType(Type type) {
  if (type.isF32()) return DType::F32;
  if (type.isF16()) return DType::F16;
  if (type.isBF16()) return DType::BF16;
  if (type.isF64()) return DType::F64;
  if (auto integer = dyn_cast<IntegerType>(type)) {
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1: return DType::Bool;
    case 8: return isUnsigned ? DType::U8 : DType::I8;
    case 16: return isUnsigned ? DType::U16 : DType::I16;
    case 32: return isUnsigned ? DType::U32 : DType::I32;
    case 64: return isUnsigned ? DType::U64 : DType::I64;
    default: break;
    }
  }
  return failure();
}

Type typeFromDType(MLIRContext *ctx, DType type) {
  Builder b(ctx);
  switch (type) {
  case DType::F32: return b.getF32Type();
  case DType::F16: return b.getF16Type();
  case DType::BF16: return b.getBF16Type();
  case DType::F64: return b.getF64Type();
  case DType::I8: return b.getIntegerType(8);
  case DType::I16: return b.getIntegerType(16);
  case DType::I32: return b.getIntegerType(32);
  case DType::I64: return b.getIntegerType(64);
  case DType::U8: return b.getIntegerType(8, /*isSigned=*/false);
  case DType::U16: return b.getIntegerType(16, false);
  case DType::U32: return b.getIntegerType(32, false);
  case DType::U64: return b.getIntegerType(64, false);
  case DType::Bool: return b.getI1Type();
  }
  return {};
}

FailureOr<Tensor> tensorFromAttr(Attribute attr) {
  auto elements = dyn_cast<ElementsAttr>(attr);
  if (!elements)
    return failure();
  auto type = cast<ShapedType>(elements.getType());
  auto dtype = dtypeFromType(type.getElementType());
  if (failed(dtype))
    return failure();
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return failure();
    ArrayRef<char> data = blob->getData();
    Tensor t(*dtype, shape);
    if (data.size() < t.byteSize())
      return failure();
    // The blob lives as long as the context: alias it, no copy.
    return Tensor::alias(*dtype, shape, data.data(), nullptr);
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return failure();
  Tensor t(*dtype, shape);
  int64_t n = t.numElements();
  if (*dtype == DType::Bool) {
    auto values = dense.getValues<bool>();
    for (int64_t i = 0; i < n; ++i)
      t.setInt(i, values[dense.isSplat() ? 0 : i]);
    return t;
  }
  if (isFloatDType(*dtype) && !dense.isSplat() &&
      dense.getRawData().size() == t.byteSize()) {
    std::memcpy(t.mutableData(), dense.getRawData().data(), t.byteSize());
    return t;
  }
  if (isFloatDType(*dtype)) {
    auto values = dense.getValues<APFloat>();
    for (int64_t i = 0; i < n; ++i)
      t.setDouble(i, values[dense.isSplat() ? 0 : i].convertToDouble());
    return t;
  }
  if (!dense.isSplat() && dense.getRawData().size() == t.byteSize()) {
    std::memcpy(t.mutableData(), dense.getRawData().data(), t.byteSize());
    return t;
  }
  auto values = dense.getValues<APInt>();
  bool isUnsigned = isUnsignedDType(*dtype);
  for (int64_t i = 0; i < n; ++i) {
    const APInt &v = values[dense.isSplat() ? 0 : i];
    t.setInt(i, isUnsigned ? (int64_t)v.getZExtValue() : v.getSExtValue());
  }
  return t;
}

bool keepsDenseAttr(DType dtype, int64_t count) {
  return count <= 1 || dtype == DType::Bool ||
         (!isFloatDType(dtype) && count <= 64);
}

ElementsAttr attrFromTensor(MLIRContext *context, const Tensor &tensor,
                            RankedTensorType type) {
  if (!keepsDenseAttr(tensor.dtype(), tensor.numElements())) {
    // Folded weights stay blobs, as imported weights are.
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(static_cast<const char *>(tensor.rawData()),
                       tensor.byteSize()),
        64);
    return DenseResourceElementsAttr::get(type, "folded", std::move(blob));
  }
  if (tensor.dtype() == DType::Bool) {
    SmallVector<bool> values;
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      values.push_back(tensor.getInt(i));
    return DenseElementsAttr::get(type, values);
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(static_cast<const char *>(tensor.rawData()),
                           tensor.byteSize()));
}

LogicalResult evaluateOp(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  const EvalFn *fn = EvalRegistry::get().lookup(op->getName().getStringRef());
  if (!fn)
    return op->emitOpError("has no reference evaluator");
  if (failed((*fn)(op, operands, results)))
    return failure();
  if (results.size() != op->getNumResults())
    return op->emitOpError("evaluator produced ")
           << results.size() << " results, expected " << op->getNumResults();
  // Results must agree with the static parts of the declared types.
  for (auto [tensor, value] : llvm::zip(results, op->getResults())) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      continue;
    bool ok = type.getRank() == tensor.rank();
    for (int64_t i = 0; ok && i < type.getRank(); ++i)
      ok = type.isDynamicDim(i) || type.getDimSize(i) == tensor.dim(i);
    auto dtype = dtypeFromType(type.getElementType());
    if (!ok || failed(dtype) || *dtype != tensor.dtype())
      return op->emitOpError("evaluated result ")
             << tensor.describe() << " does not match declared type " << type;
  }
  return success();
}

namespace {

/// Runs blocks of ops, keeping one value map for all nested scopes (SSA
/// values are unique, and regions read their enclosing scope's values).
class Interpreter {
public:
  /// Runs `block` with `arguments` bound to its arguments; the terminator's
  /// operands are returned in `yielded`.
  LogicalResult runBlock(Block &block, ArrayRef<Tensor> arguments,
                         std::vector<Tensor> &yielded);

private:
  LogicalResult runOp(Operation &op);
  LogicalResult runIf(IfOp op);
  LogicalResult runLoop(LoopOp op);
  const Tensor *lookup(Operation &op, Value value) {
    auto it = values.find(value);
    return it == values.end() ? nullptr : &it->second;
  }

  llvm::DenseMap<Value, Tensor> values;
};

LogicalResult Interpreter::runBlock(Block &block, ArrayRef<Tensor> arguments,
                                    std::vector<Tensor> &yielded) {
  for (auto [arg, tensor] : llvm::zip(block.getArguments(), arguments))
    values[arg] = tensor;
  // Free each value of this block after its last use (a use inside a nested
  // region counts as a use by the op holding the region), so that large
  // models fit in memory.
  llvm::DenseMap<Value, Operation *> last;
  for (Operation &op : block)
    op.walk([&](Operation *nested) {
      for (Value v : nested->getOperands())
        last[v] = &op;
    });
  llvm::DenseMap<Operation *, SmallVector<Value>> lastUses;
  for (auto &[v, op] : last) {
    Block *owner = isa<BlockArgument>(v) ? cast<BlockArgument>(v).getOwner()
                                         : v.getDefiningOp()->getBlock();
    if (owner == &block)
      lastUses[op].push_back(v);
  }
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      yielded.clear();
      for (Value v : op.getOperands()) {
        const Tensor *t = lookup(op, v);
        if (!t)
          return op.emitOpError("operand has no value");
        yielded.push_back(*t);
      }
      return success();
    }
    if (failed(runOp(op)))
      return failure();
    for (Value v : lastUses.lookup(&op))
      values.erase(v);
  }
  return block.getParentOp()->emitOpError("block has no terminator");
}

LogicalResult Interpreter::runOp(Operation &op) {
  if (auto ifOp = dyn_cast<IfOp>(op))
    return runIf(ifOp);
  if (auto loop = dyn_cast<LoopOp>(op))
    return runLoop(loop);
  SmallVector<const Tensor *> operands;
  for (Value v : op.getOperands()) {
    const Tensor *t = lookup(op, v);
    if (!t)
      return op.emitOpError("operand has no value");
    operands.push_back(t);
  }
  std::vector<Tensor> results;
  if (failed(evaluateOp(&op, operands, results)))
    return failure();
  for (auto [value, tensor] : llvm::zip(op.getResults(), results))
    values[value] = std::move(tensor);
  return success();
}

LogicalResult Interpreter::runIf(IfOp op) {
  const Tensor *condition = lookup(*op, op.getCondition());
  if (!condition || condition->numElements() != 1)
    return op.emitOpError("condition must hold exactly one element");
  Region &region = condition->getInt(0) ? op.getThenRegion() : op.getElseRegion();
  std::vector<Tensor> yielded;
  if (failed(runBlock(region.front(), {}, yielded)))
    return failure();
  for (auto [value, tensor] : llvm::zip(op.getResults(), yielded))
    values[value] = std::move(tensor);
  return success();
}

LogicalResult Interpreter::runLoop(LoopOp op) {
  std::optional<int64_t> maxTrips;
  if (Value m = op.getMaxTripCount()) {
    const Tensor *t = lookup(*op, m);
    if (!t || t->numElements() != 1)
      return op.emitOpError("trip count must hold exactly one element");
    maxTrips = t->getInt(0);
  }
  bool condition = true;
  if (Value c = op.getInitialCondition()) {
    const Tensor *t = lookup(*op, c);
    if (!t || t->numElements() != 1)
      return op.emitOpError("condition must hold exactly one element");
    condition = t->getInt(0) != 0;
  }
  if (!maxTrips && !op.getInitialCondition())
    return op.emitOpError("has neither a trip count nor a condition: it would never end");
  std::vector<Tensor> carried;
  for (Value v : op.getInitialValues()) {
    const Tensor *t = lookup(*op, v);
    if (!t)
      return op.emitOpError("operand has no value");
    carried.push_back(*t);
  }
  size_t numScans = op.getNumResults() - carried.size();
  std::vector<std::vector<Tensor>> scans(numScans);
  Block &body = op.getBody().front();
  for (int64_t i = 0; (!maxTrips || i < *maxTrips) && condition; ++i) {
    std::vector<Tensor> arguments{Tensor::fromInt64({i}).reshaped({}),
                                  Tensor::scalar(DType::Bool, 1)};
    arguments.insert(arguments.end(), carried.begin(), carried.end());
    std::vector<Tensor> yielded;
    if (failed(runBlock(body, arguments, yielded)))
      return failure();
    if (yielded[0].numElements() != 1)
      return op.emitOpError("body condition must hold exactly one element");
    condition = yielded[0].getInt(0) != 0;
    for (size_t k = 0; k < carried.size(); ++k)
      carried[k] = yielded[1 + k];
    for (size_t k = 0; k < numScans; ++k)
      scans[k].push_back(yielded[1 + carried.size() + k]);
  }
  for (size_t k = 0; k < carried.size(); ++k)
    values[op.getResult(k)] = carried[k];
  for (size_t k = 0; k < numScans; ++k) {
    Value result = op.getResult(carried.size() + k);
    auto type = cast<TensorType>(result.getType());
    std::vector<int64_t> shape{(int64_t)scans[k].size()};
    if (!scans[k].empty()) {
      shape.insert(shape.end(), scans[k][0].shape().begin(), scans[k][0].shape().end());
    } else if (type.hasRank()) {
      for (int64_t d : type.getShape().drop_front())
        shape.push_back(ShapedType::isDynamic(d) ? 0 : d);
    }
    Tensor stacked(*dtypeFromType(type.getElementType()), shape);
    size_t offset = 0;
    for (const Tensor &t : scans[k]) {
      if (t.shape() != scans[k][0].shape() || t.dtype() != stacked.dtype())
        return op.emitOpError("scan output ")
               << k << " changes shape or type across iterations";
      std::memcpy(static_cast<char *>(stacked.mutableData()) + offset,
                  t.rawData(), t.byteSize());
      offset += t.byteSize();
    }
    values[result] = std::move(stacked);
  }
  // The block's own values were freed per iteration; drop its arguments.
  for (BlockArgument arg : body.getArguments())
    values.erase(arg);
  return success();
}

} // namespace

FailureOr<std::vector<Tensor>> evaluate(func::FuncOp func,
                                        const std::vector<Tensor> &inputs) {
  if (inputs.size() != func.getNumArguments())
    return func.emitError("expected ")
           << func.getNumArguments() << " inputs, got " << inputs.size();
  Interpreter interpreter;
  std::vector<Tensor> outputs;
  if (failed(interpreter.runBlock(func.getBody().front(), inputs, outputs)))
    return failure();
  return outputs;
}

} // namespace sluice
