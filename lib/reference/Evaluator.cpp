//===- Evaluator.cpp - the reference evaluator of sluice ops --------------===//

#include "lib/reference/Evaluator.h"
#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinDialect.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
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
    registerSequenceEvaluators(r);
    registerCompositeEvaluators(r);
    registerParallelEvaluators(r);
    return r;
  }();
  return registry;
}

void EvalRegistry::add(StringRef opName, EvalFn fn) {
  functions[opName] = std::move(fn);
}

void EvalRegistry::addValueFn(StringRef opName, ValueEvalFn fn) {
  valueFunctions[opName] = std::move(fn);
}

const EvalFn *EvalRegistry::lookup(StringRef opName) const {
  auto it = functions.find(opName);
  return it == functions.end() ? nullptr : &it->second;
}

const ValueEvalFn *EvalRegistry::lookupValueFn(StringRef opName) const {
  auto it = valueFunctions.find(opName);
  return it == valueFunctions.end() ? nullptr : &it->second;
}

FailureOr<DType> dtypeFromType(Type type) {
  if (type.isF32()) return DType::F32;
  if (type.isF16()) return DType::F16;
  if (type.isBF16()) return DType::BF16;
  if (type.isF64()) return DType::F64;
  if (isa<Float8E4M3FNType>(type)) return DType::F8E4M3;
  if (isa<StringType>(type)) return DType::String;
  if (auto integer = dyn_cast<IntegerType>(type)) {
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1: return DType::Bool;
    case 4: return isUnsigned ? DType::U4 : DType::I4;
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
  case DType::String: return StringType::get(ctx);
  case DType::I4: return b.getIntegerType(4);
  case DType::U4: return b.getIntegerType(4, false);
  case DType::F8E4M3: return b.getType<Float8E4M3FNType>();
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

/// The kind of runtime value a type stands for.
RuntimeValue::Kind kindOf(Type type) {
  if (isa<SequenceType>(type))
    return RuntimeValue::Kind::Sequence;
  if (isa<OptionalType>(type))
    return RuntimeValue::Kind::Optional;
  return RuntimeValue::Kind::Tensor;
}

StringRef kindName(RuntimeValue::Kind kind) {
  switch (kind) {
  case RuntimeValue::Kind::Tensor: return "a tensor";
  case RuntimeValue::Kind::Sequence: return "a sequence";
  case RuntimeValue::Kind::Optional: return "an optional";
  }
  return "";
}

/// Slice `index` of `tensor` along `axis`, that axis dropped.
Tensor takeSlice(const Tensor &tensor, int64_t axis, int64_t index) {
  std::vector<int64_t> shape = tensor.shape();
  int64_t outer = 1, inner = dtypeSize(tensor.dtype()), length = shape[axis];
  for (int64_t i = 0; i < axis; ++i)
    outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i)
    inner *= shape[i];
  shape.erase(shape.begin() + axis);
  Tensor slice(tensor.dtype(), shape);
  if (tensor.dtype() == DType::String) { // elements are objects, not bytes
    int64_t width = inner / (int64_t)dtypeSize(DType::String);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < width; ++j)
        slice.setString(o * width + j,
                        tensor.getString((o * length + index) * width + j));
    return slice;
  }
  const char *src = static_cast<const char *>(tensor.rawData());
  char *dst = static_cast<char *>(slice.mutableData());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * inner, src + (o * length + index) * inner, inner);
  return slice;
}

/// Stacks equally shaped `slices` along a new `axis` (`elementShape` gives
/// the slice shape when there are none).
Tensor stackSlices(ArrayRef<Tensor> slices, int64_t axis, DType dtype,
                   std::vector<int64_t> elementShape) {
  if (!slices.empty())
    elementShape = slices[0].shape();
  std::vector<int64_t> shape = elementShape;
  shape.insert(shape.begin() + axis, (int64_t)slices.size());
  Tensor stacked(dtype, shape);
  int64_t outer = 1, inner = dtypeSize(dtype), length = slices.size();
  for (int64_t i = 0; i < axis; ++i)
    outer *= elementShape[i];
  for (size_t i = axis; i < elementShape.size(); ++i)
    inner *= elementShape[i];
  if (dtype == DType::String) { // elements are objects, not bytes
    int64_t width = inner / (int64_t)dtypeSize(DType::String);
    for (int64_t k = 0; k < length; ++k)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < width; ++j)
          stacked.setString((o * length + k) * width + j,
                            slices[k].getString(o * width + j));
    return stacked;
  }
  char *dst = static_cast<char *>(stacked.mutableData());
  for (int64_t k = 0; k < length; ++k) {
    const char *src = static_cast<const char *>(slices[k].rawData());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * length + k) * inner, src + o * inner, inner);
  }
  return stacked;
}

/// Runs blocks of ops, keeping one value map for all nested scopes (SSA
/// values are unique, and regions read their enclosing scope's values).
/// Tensor ops go through their EvalFn; ops on sequences and optionals
/// through their ValueEvalFn; region ops are run here.
class Interpreter {
public:
  explicit Interpreter(const ValueObserver *observer = nullptr) : observer(observer) {}
  /// Runs `block` with `arguments` bound to its arguments; the terminator's
  /// operands are returned in `yielded`.
  LogicalResult runBlock(Block &block, ArrayRef<RuntimeValue> arguments,
                         std::vector<RuntimeValue> &yielded);

private:
  LogicalResult runOp(Operation &op);
  LogicalResult runIf(IfOp op);
  LogicalResult runLoop(LoopOp op);
  LogicalResult runScan(ScanOp op);
  LogicalResult runScanOnce(ScanOp op, std::vector<Tensor> states,
                            ArrayRef<Tensor> scanInputs,
                            std::vector<Tensor> &results);
  LogicalResult runSequenceMap(SequenceMapOp op);
  LogicalResult runKernel(KernelOp op);
  const RuntimeValue *lookup(Value value) {
    auto it = values.find(value);
    return it == values.end() ? nullptr : &it->second;
  }
  /// The tensor bound to `value`; null (with an error on `op`) otherwise.
  const Tensor *lookupTensor(Operation *op, Value value) {
    const RuntimeValue *v = lookup(value);
    if (!v) {
      op->emitOpError("operand has no value");
      return nullptr;
    }
    if (!v->isTensor()) {
      op->emitOpError("expected a tensor operand, got ") << v->describe();
      return nullptr;
    }
    return &v->tensor();
  }

  llvm::DenseMap<Value, RuntimeValue> values;
  const ValueObserver *observer;
};

LogicalResult Interpreter::runBlock(Block &block, ArrayRef<RuntimeValue> arguments,
                                    std::vector<RuntimeValue> &yielded) {
  for (auto [arg, value] : llvm::zip(block.getArguments(), arguments)) {
    values[arg] = value;
    if (observer && *observer && value.isTensor())
      (*observer)(arg, value.tensor());
  }
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
        const RuntimeValue *value = lookup(v);
        if (!value)
          return op.emitOpError("operand has no value");
        yielded.push_back(*value);
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
  if (auto scan = dyn_cast<ScanOp>(op))
    return runScan(scan);
  if (auto map = dyn_cast<SequenceMapOp>(op))
    return runSequenceMap(map);
  if (auto kernel = dyn_cast<KernelOp>(op))
    return runKernel(kernel);
  if (const ValueEvalFn *fn =
          EvalRegistry::get().lookupValueFn(op.getName().getStringRef())) {
    SmallVector<const RuntimeValue *> operands;
    for (Value v : op.getOperands()) {
      const RuntimeValue *value = lookup(v);
      if (!value)
        return op.emitOpError("operand has no value");
      operands.push_back(value);
    }
    std::vector<RuntimeValue> results;
    if (failed((*fn)(&op, operands, results)))
      return failure();
    if (results.size() != op.getNumResults())
      return op.emitOpError("evaluator produced ")
             << results.size() << " results, expected " << op.getNumResults();
    for (auto [value, result] : llvm::zip(op.getResults(), results)) {
      if (result.kind() != kindOf(value.getType()))
        return op.emitOpError("evaluated ")
               << kindName(result.kind()) << " for a result of type "
               << value.getType();
      values[value] = std::move(result);
    }
    return success();
  }
  SmallVector<const Tensor *> operands;
  for (Value v : op.getOperands()) {
    const Tensor *t = lookupTensor(&op, v);
    if (!t)
      return failure();
    operands.push_back(t);
  }
  std::vector<Tensor> results;
  if (failed(evaluateOp(&op, operands, results)))
    return failure();
  for (auto [value, tensor] : llvm::zip(op.getResults(), results)) {
    if (observer && *observer)
      (*observer)(value, tensor);
    values[value] = std::move(tensor);
  }
  return success();
}

/// A kernel group (fuse phase) runs its body on its inputs, so that fused
/// modules evaluate like the graphs they came from.
LogicalResult Interpreter::runKernel(KernelOp op) {
  std::vector<RuntimeValue> arguments;
  for (Value v : op.getInputs()) {
    const RuntimeValue *value = lookup(v);
    if (!value)
      return op.emitOpError("operand has no value");
    arguments.push_back(*value);
  }
  std::vector<RuntimeValue> yielded;
  if (failed(runBlock(op.getBody().front(), arguments, yielded)))
    return failure();
  for (auto [value, result] : llvm::zip(op.getResults(), yielded))
    values[value] = std::move(result);
  return success();
}

LogicalResult Interpreter::runIf(IfOp op) {
  const Tensor *condition = lookupTensor(op, op.getCondition());
  if (!condition)
    return failure();
  if (condition->numElements() != 1)
    return op.emitOpError("condition must hold exactly one element");
  Region &region = condition->getInt(0) ? op.getThenRegion() : op.getElseRegion();
  std::vector<RuntimeValue> yielded;
  if (failed(runBlock(region.front(), {}, yielded)))
    return failure();
  for (auto [value, result] : llvm::zip(op.getResults(), yielded))
    values[value] = std::move(result);
  return success();
}

LogicalResult Interpreter::runLoop(LoopOp op) {
  std::optional<int64_t> maxTrips;
  if (Value m = op.getMaxTripCount()) {
    const Tensor *t = lookupTensor(op, m);
    if (!t)
      return failure();
    if (t->numElements() != 1)
      return op.emitOpError("trip count must hold exactly one element");
    maxTrips = t->getInt(0);
  }
  bool condition = true;
  if (Value c = op.getInitialCondition()) {
    const Tensor *t = lookupTensor(op, c);
    if (!t)
      return failure();
    if (t->numElements() != 1)
      return op.emitOpError("condition must hold exactly one element");
    condition = t->getInt(0) != 0;
  }
  if (!maxTrips && !op.getInitialCondition())
    return op.emitOpError("has neither a trip count nor a condition: it would never end");
  std::vector<RuntimeValue> carried;
  for (Value v : op.getInitialValues()) {
    const RuntimeValue *value = lookup(v);
    if (!value)
      return op.emitOpError("operand has no value");
    carried.push_back(*value);
  }
  size_t numScans = op.getNumResults() - carried.size();
  std::vector<std::vector<Tensor>> scans(numScans);
  Block &body = op.getBody().front();
  for (int64_t i = 0; (!maxTrips || i < *maxTrips) && condition; ++i) {
    std::vector<RuntimeValue> arguments{Tensor::fromInt64({i}).reshaped({}),
                                        Tensor::scalar(DType::Bool, 1)};
    arguments.insert(arguments.end(), carried.begin(), carried.end());
    std::vector<RuntimeValue> yielded;
    if (failed(runBlock(body, arguments, yielded)))
      return failure();
    if (!yielded[0].isTensor() || yielded[0].tensor().numElements() != 1)
      return op.emitOpError("body condition must hold exactly one element");
    condition = yielded[0].tensor().getInt(0) != 0;
    for (size_t k = 0; k < carried.size(); ++k)
      carried[k] = yielded[1 + k];
    for (size_t k = 0; k < numScans; ++k) {
      const RuntimeValue &scan = yielded[1 + carried.size() + k];
      if (!scan.isTensor())
        return op.emitOpError("scan output ") << k << " is not a tensor";
      scans[k].push_back(scan.tensor());
    }
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
      if (t.dtype() == DType::String) { // elements are objects, not bytes
        int64_t first = offset / dtypeSize(DType::String);
        for (int64_t i = 0; i < t.numElements(); ++i)
          stacked.setString(first + i, t.getString(i));
      } else {
        std::memcpy(static_cast<char *>(stacked.mutableData()) + offset,
                    t.rawData(), t.byteSize());
      }
      offset += t.byteSize();
    }
    values[result] = std::move(stacked);
  }
  // The block's own values were freed per iteration; drop its arguments.
  for (BlockArgument arg : body.getArguments())
    values.erase(arg);
  return success();
}

LogicalResult Interpreter::runScanOnce(ScanOp op, std::vector<Tensor> states,
                                       ArrayRef<Tensor> scanInputs,
                                       std::vector<Tensor> &results) {
  ArrayRef<int64_t> inputAxes = op.getScanInputAxes();
  ArrayRef<int64_t> inputDirections = op.getScanInputDirections();
  ArrayRef<int64_t> outputAxes = op.getScanOutputAxes();
  ArrayRef<int64_t> outputDirections = op.getScanOutputDirections();
  SmallVector<int64_t> axes;
  int64_t length = -1;
  for (auto [j, input] : llvm::enumerate(scanInputs)) {
    auto axis = normalizeAxis(op, inputAxes[j], input.rank());
    if (failed(axis))
      return failure();
    axes.push_back(*axis);
    if (length >= 0 && input.dim(*axis) != length)
      return op.emitOpError("scan inputs have different lengths: ")
             << length << " and " << input.dim(*axis);
    length = input.dim(*axis);
  }
  size_t numStates = states.size();
  size_t numOutputs = op.getNumResults() - numStates;
  std::vector<std::vector<Tensor>> outputs(numOutputs);
  Block &body = op.getBody().front();
  for (int64_t t = 0; t < length; ++t) {
    std::vector<RuntimeValue> arguments(states.begin(), states.end());
    for (auto [j, input] : llvm::enumerate(scanInputs))
      arguments.push_back(
          takeSlice(input, axes[j], inputDirections[j] ? length - 1 - t : t));
    std::vector<RuntimeValue> yielded;
    if (failed(runBlock(body, arguments, yielded)))
      return failure();
    for (const RuntimeValue &v : yielded)
      if (!v.isTensor())
        return op.emitOpError("body yields ") << v.describe() << ", not a tensor";
    for (size_t k = 0; k < numStates; ++k)
      states[k] = yielded[k].tensor();
    for (size_t k = 0; k < numOutputs; ++k) {
      const Tensor &slice = yielded[numStates + k].tensor();
      if (!outputs[k].empty() && (slice.shape() != outputs[k][0].shape() ||
                                  slice.dtype() != outputs[k][0].dtype()))
        return op.emitOpError("scan output ")
               << k << " changes shape or type across iterations";
      outputs[k].push_back(slice);
    }
  }
  for (BlockArgument arg : body.getArguments())
    values.erase(arg);
  results = std::move(states);
  for (size_t k = 0; k < numOutputs; ++k) {
    auto type = cast<TensorType>(op.getResult(numStates + k).getType());
    auto dtype = dtypeFromType(type.getElementType());
    if (failed(dtype))
      return op.emitOpError("unsupported scan output element type");
    int64_t sliceRank = outputs[k].empty()
                            ? (type.hasRank() ? type.getRank() - 1 : 0)
                            : outputs[k][0].rank();
    auto axis = normalizeAxis(op, outputAxes[k], sliceRank + 1);
    if (failed(axis))
      return failure();
    if (outputDirections[k])
      std::reverse(outputs[k].begin(), outputs[k].end());
    std::vector<int64_t> emptyShape(std::max<int64_t>(sliceRank, 0), 0);
    results.push_back(stackSlices(outputs[k], *axis, *dtype, emptyShape));
  }
  return success();
}

LogicalResult Interpreter::runScan(ScanOp op) {
  std::vector<Tensor> inputs;
  for (Value v : op.getInputs()) {
    const Tensor *t = lookupTensor(op, v);
    if (!t)
      return failure();
    inputs.push_back(*t);
  }
  size_t numStates = inputs.size() - op.getNumScanInputs();
  std::vector<Tensor> results;
  if (!op.getBatched()) {
    if (failed(runScanOnce(op, {inputs.begin(), inputs.begin() + numStates},
                           ArrayRef<Tensor>(inputs).drop_front(numStates), results)))
      return failure();
  } else {
    // Scan-8: dim 0 of every input is a batch dim; scan each batch element
    // and stack the results back along dim 0.
    int64_t batch = -1;
    for (const Tensor &t : inputs) {
      if (t.rank() < 1 || (batch >= 0 && t.dim(0) != batch))
        return op.emitOpError("batched scan inputs must share their dim 0");
      batch = t.dim(0);
    }
    std::vector<std::vector<Tensor>> perResult(op.getNumResults());
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> sliced;
      for (const Tensor &t : inputs)
        sliced.push_back(takeSlice(t, 0, b));
      std::vector<Tensor> batchResults;
      if (failed(runScanOnce(op, {sliced.begin(), sliced.begin() + numStates},
                             ArrayRef<Tensor>(sliced).drop_front(numStates),
                             batchResults)))
        return failure();
      for (size_t k = 0; k < batchResults.size(); ++k)
        perResult[k].push_back(batchResults[k]);
    }
    for (auto [k, slices] : llvm::enumerate(perResult)) {
      auto type = cast<TensorType>(op.getResult(k).getType());
      results.push_back(stackSlices(slices, 0,
                                    *dtypeFromType(type.getElementType()), {}));
    }
  }
  for (auto [value, tensor] : llvm::zip(op.getResults(), results))
    values[value] = std::move(tensor);
  return success();
}

LogicalResult Interpreter::runSequenceMap(SequenceMapOp op) {
  SmallVector<const RuntimeValue *> inputs;
  for (Value v : op.getInputs()) {
    const RuntimeValue *value = lookup(v);
    if (!value)
      return op.emitOpError("operand has no value");
    inputs.push_back(value);
  }
  if (!inputs[0]->isSequence())
    return op.emitOpError("first input must be a sequence");
  size_t length = inputs[0]->elements().size();
  for (auto [i, input] : llvm::enumerate(inputs))
    if (input->isSequence() && input->elements().size() != length)
      return op.emitOpError("input ")
             << i << " has " << input->elements().size()
             << " elements, the first input has " << length;
  std::vector<std::vector<Tensor>> outputs(op.getNumResults());
  Block &body = op.getBody().front();
  for (size_t n = 0; n < length; ++n) {
    std::vector<RuntimeValue> arguments;
    for (const RuntimeValue *input : inputs)
      arguments.push_back(input->isSequence() ? RuntimeValue(input->elements()[n])
                                              : *input);
    std::vector<RuntimeValue> yielded;
    if (failed(runBlock(body, arguments, yielded)))
      return failure();
    for (auto [k, v] : llvm::enumerate(yielded)) {
      if (!v.isTensor())
        return op.emitOpError("body yields ") << v.describe() << ", not a tensor";
      outputs[k].push_back(v.tensor());
    }
  }
  for (BlockArgument arg : body.getArguments())
    values.erase(arg);
  for (auto [value, elements] : llvm::zip(op.getResults(), outputs))
    values[value] = RuntimeValue::sequence(std::move(elements));
  return success();
}

} // namespace

namespace {
FailureOr<std::vector<RuntimeValue>> evaluateOneRank(func::FuncOp func,
                                                     const std::vector<RuntimeValue> &inputs,
                                                     const ValueObserver *observer) {
  Interpreter interpreter(observer);
  std::vector<RuntimeValue> outputs;
  if (failed(interpreter.runBlock(func.getBody().front(), inputs, outputs)))
    return failure();
  return outputs;
}
} // namespace

FailureOr<std::vector<RuntimeValue>>
evaluate(func::FuncOp func, const std::vector<RuntimeValue> &inputs,
         const ValueObserver &observer) {
  if (inputs.size() != func.getNumArguments())
    return func.emitError("expected ")
           << func.getNumArguments() << " inputs, got " << inputs.size();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(inputs, func.getArgumentTypes()))) {
    auto [input, type] = pair;
    if (input.kind() != kindOf(type))
      return func.emitError("input ")
             << i << " is " << kindName(input.kind()) << ", the model expects "
             << kindName(kindOf(type)) << " (" << type << ")";
  }
  // A partitioned program: its ranks in lockstep (lib/reference/Parallel.cpp).
  if (auto tp = func->getAttrOfType<IntegerAttr>("sluice.tp"); tp && tp.getInt() > 1)
    return evaluateRanks(func, inputs, tp.getInt(),
                         [](func::FuncOp f, const std::vector<RuntimeValue> &in) {
                           return evaluateOneRank(f, in, nullptr);
                         });
  return evaluateOneRank(func, inputs, &observer);
}

} // namespace sluice
