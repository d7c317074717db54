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

FailureOr<std::vector<Tensor>> evaluate(func::FuncOp func,
                                        const std::vector<Tensor> &inputs) {
  if (inputs.size() != func.getNumArguments())
    return func.emitError("expected ")
           << func.getNumArguments() << " inputs, got " << inputs.size();
  llvm::DenseMap<Value, Tensor> values;
  for (auto [arg, input] : llvm::zip(func.getArguments(), inputs))
    values[arg] = input;
  // Free each value after its last use so large models fit in memory.
  llvm::DenseMap<Operation *, SmallVector<Value>> lastUses;
  {
    llvm::DenseMap<Value, Operation *> last;
    for (Operation &op : func.getBody().front())
      for (Value v : op.getOperands())
        last[v] = &op;
    for (auto &[v, op] : last)
      lastUses[op].push_back(v);
  }
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> outputs;
      for (Value v : ret.getOperands())
        outputs.push_back(values.lookup(v));
      return outputs;
    }
    SmallVector<const Tensor *> operands;
    for (Value v : op.getOperands()) {
      auto it = values.find(v);
      if (it == values.end())
        return op.emitOpError("operand has no value");
      operands.push_back(&it->second);
    }
    std::vector<Tensor> results;
    if (failed(evaluateOp(&op, operands, results)))
      return failure();
    for (auto [value, tensor] : llvm::zip(op.getResults(), results))
      values[value] = std::move(tensor);
    for (Value v : lastUses.lookup(&op))
      if (!isa<BlockArgument>(v))
        values.erase(v);
  }
  return func.emitError("function has no return");
}

} // namespace sluice
