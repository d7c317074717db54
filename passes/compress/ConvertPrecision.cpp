//===- ConvertPrecision.cpp - f32 graphs to f16/bf16 -----------------------===//
//
// The compress phase's `--precision=fp16|bf16`: f32 weights and activations
// become half precision inside the graph, the model's inputs and outputs keep
// their ONNX dtypes (casts at the boundary), integer tensors are untouched.
//
// Each op is either converted (its f32 float operands become half, its result
// types are re-inferred) or kept in fp32 (half operands are widened back).
// Converted (the RunsInHalf trait, dialects/sluice/SluiceTraits.td): data
// movement, cheap elementwise arithmetic, matmul/conv (the
// targets accumulate GEMMs and convolutions in fp32), and the row composites
// whose kernels compute their statistics in fp32 whatever the storage type
// (softmax, layer_norm, rms_norm, attention). Kept in fp32, as mixed-precision
// training keeps them: exp and pow (overflow: f16's largest value is 65504,
// exp(11.1) already exceeds it), log, reciprocal/rsqrt of small values, sums
// and products over many elements (reduce sum/prod, cumsum), and every op not
// listed (the safe default). A Cast of the model keeps its meaning: a Cast to
// f32 still yields f32 (a downstream converted op narrows it), so integer ->
// f32 conversions round once, as in the model.
//
// Weights are converted here (no cast kernels remain on constants), finite
// values saturating to f16's range (a -1e9 mask fill stays a large negative
// number, not -inf, which would turn a fully masked row into NaN). Casts
// that cancel (f16 -> f32 -> f16) fold away.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/KernelForms.h"
#include "passes/Passes.h"

#include "lib/reference/Evaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

namespace sluice {
#define GEN_PASS_DEF_CONVERTPRECISIONPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

std::optional<std::string> sluice::parsePrecision(llvm::StringRef name) {
  std::string lower = name.lower();
  if (lower == "fp32" || lower == "f32" || lower == "float32" || lower == "float")
    return std::string("fp32");
  if (lower == "fp16" || lower == "f16" || lower == "float16" || lower == "half")
    return std::string("fp16");
  if (lower == "bf16" || lower == "bfloat16")
    return std::string("bf16");
  return std::nullopt;
}

namespace {

bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<TensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

Type withElement(Type type, Type element) {
  return cast<TensorType>(type).clone(element);
}

/// f32 -> half with f16 saturation of finite values (see the header).
FailureOr<ElementsAttr> convertConstant(ConstantOp constant, Type half) {
  auto tensor = tensorFromAttr(constant.getValue());
  if (failed(tensor) || tensor->dtype() != DType::F32)
    return failure();
  bool f16 = half.isF16();
  ::sluice::Tensor out(f16 ? DType::F16 : DType::BF16, tensor->shape());
  const float *src = tensor->data<float>();
  uint16_t *dst = out.mutableData<uint16_t>();
  for (int64_t i = 0, n = tensor->numElements(); i < n; ++i) {
    float v = src[i];
    if (f16) {
      if (std::isfinite(v))
        v = std::max(-65504.0f, std::min(65504.0f, v));
      dst[i] = floatToHalf(v);
    } else {
      dst[i] = floatToBfloat16(v);
    }
  }
  auto type = cast<RankedTensorType>(withElement(constant.getType(), half));
  return attrFromTensor(constant.getContext(), out, type);
}

class Converter {
public:
  Converter(func::FuncOp func, Type half) : half(half), body(func.getBody().front()) {}

  LogicalResult run() {
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      // Constants are converted on demand, for each converted user; a shape
      // reads only its operand's type.
      if (isa<ConstantOp, ShapeOp>(op))
        continue;
      if (isa<func::ReturnOp>(op)) {
        // Outputs keep the model's dtypes.
        for (OpOperand &use : op->getOpOperands())
          if (isHalfByConversion(use.get()))
            use.set(widen(use.get()));
        continue;
      }
      if (isa<KernelOp>(op))
        return op->emitOpError("sluice-convert-precision runs before the fuse phase, on "
                               "graphs without kernel groups");
      if (kernel::runsInHalf(op) && op->getNumRegions() == 0) {
        if (failed(convert(op)))
          return failure();
      } else {
        keepFp32(op);
      }
    }
    foldCancellingCasts();
    // Constants whose every user now reads the converted copy.
    for (Operation *op : ops)
      if (isa<ConstantOp>(op) && op->use_empty())
        op->erase();
    return success();
  }

private:
  /// A value this pass made half (its f32 type became `half`).
  bool isHalfByConversion(Value v) { return converted.contains(v); }

  /// Runs `op` in half precision: f32 operands narrowed, results re-inferred.
  LogicalResult convert(Operation *op) {
    bool any = false;
    for (OpOperand &use : op->getOpOperands()) {
      any |= isHalfByConversion(use.get());
      if (isF32Tensor(use.get().getType())) {
        auto narrowed = narrow(use.get());
        if (failed(narrowed))
          return failure();
        use.set(*narrowed);
        any = true;
      }
    }
    if (!any)
      return success();
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return op->emitOpError("cannot convert precision: no result-type inference");
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                      op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                      op->getRegions(), types)))
      return op->emitOpError("cannot convert precision: result types do not infer on ")
             << half << " operands";
    for (auto [result, type] : llvm::zip(op->getResults(), types)) {
      Type old = result.getType();
      auto oldTensor = dyn_cast<TensorType>(old);
      auto newTensor = dyn_cast<TensorType>(type);
      if (!oldTensor || !newTensor)
        continue;
      // Keep the declared shape (inference may be less precise); take the
      // inferred element type.
      Type element = newTensor.getElementType();
      if (element == oldTensor.getElementType())
        continue;
      result.setType(withElement(old, element));
      if (element == half && oldTensor.getElementType().isF32())
        converted.insert(result);
    }
    return success();
  }

  /// Keeps `op` in fp32: operands (also those read inside its regions) that
  /// this pass made half are widened back.
  void keepFp32(Operation *op) {
    op->walk([&](Operation *nested) {
      for (OpOperand &use : nested->getOpOperands())
        if (isHalfByConversion(use.get()))
          use.set(widen(use.get()));
    });
  }

  /// The half version of f32 value `v`: a converted constant, the source of
  /// a widening cast, or a cast placed after `v`'s definition (one per value).
  FailureOr<Value> narrow(Value v) {
    if (auto it = narrowed.find(v); it != narrowed.end())
      return it->second;
    Value result;
    if (auto constant = v.getDefiningOp<ConstantOp>()) {
      auto attr = convertConstant(constant, half);
      if (failed(attr))
        return constant.emitOpError("cannot convert this constant to ") << half;
      OpBuilder builder(constant);
      builder.setInsertionPointAfter(constant);
      result = ConstantOp::create(builder, constant.getLoc(), *attr);
    } else if (auto cast = v.getDefiningOp<CastOp>();
               cast && cast.getInput().getType() == withElement(v.getType(), half) &&
               !cast.getTruncateBf16()) {
      // half -> f32 -> half is the identity.
      result = cast.getInput();
    } else {
      OpBuilder builder = builderAfter(v);
      result = CastOp::create(builder, v.getLoc(), withElement(v.getType(), half), v, false);
    }
    narrowed[v] = result;
    return result;
  }

  /// The f32 version of converted value `v` (one cast per value).
  Value widen(Value v) {
    if (auto it = widened.find(v); it != widened.end())
      return it->second;
    OpBuilder builder = builderAfter(v);
    Type f32 = withElement(v.getType(), Float32Type::get(v.getContext()));
    Value result = CastOp::create(builder, v.getLoc(), f32, v, false);
    widened[v] = result;
    return result;
  }

  OpBuilder builderAfter(Value v) {
    OpBuilder builder(v.getContext());
    if (Operation *def = v.getDefiningOp())
      builder.setInsertionPointAfter(def);
    else
      builder.setInsertionPointToStart(&body);
    return builder;
  }

  /// Folds cast(cast(x : H -> f32) : f32 -> H) to x for the model's own
  /// casts (the converter never creates such pairs itself), and drops casts
  /// left without users.
  void foldCancellingCasts() {
    SmallVector<CastOp> casts;
    for (Operation &op : body)
      if (auto c = dyn_cast<CastOp>(op))
        casts.push_back(c);
    for (CastOp outer : casts) {
      auto inner = outer.getInput().getDefiningOp<CastOp>();
      if (!inner || inner.getTruncateBf16() || outer.getTruncateBf16())
        continue;
      Type source = getElementTypeOrSelf(inner.getInput().getType());
      Type middle = getElementTypeOrSelf(inner.getType());
      if (inner.getInput().getType() == outer.getType() && middle.isF32() &&
          (source.isF16() || source.isBF16()))
        outer.replaceAllUsesWith(inner.getInput());
    }
    for (auto it = casts.rbegin(); it != casts.rend(); ++it)
      if ((*it)->use_empty())
        (*it)->erase();
  }

  Type half;
  Block &body;
  llvm::DenseSet<Value> converted;
  llvm::DenseMap<Value, Value> narrowed, widened;
};

struct ConvertPrecisionPass
    : public sluice::impl::ConvertPrecisionPassBase<ConvertPrecisionPass> {
  using ConvertPrecisionPassBase::ConvertPrecisionPassBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto canonical = parsePrecision(precision);
    if (!canonical) {
      func.emitError() << "unknown precision '" << precision
                       << "' (fp32, fp16, bf16; aliases float32, float16, half, bfloat16)";
      return signalPassFailure();
    }
    if (*canonical == "fp32" || func.getBody().empty())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError() << "sluice-convert-precision needs a function with one block";
      return signalPassFailure();
    }
    MLIRContext *context = &getContext();
    Type half = *canonical == "fp16" ? Type(Float16Type::get(context))
                                     : Type(BFloat16Type::get(context));
    if (failed(Converter(func, half).run()))
      return signalPassFailure();
    // What the bundle's manifest records (tools/driver: modulePrecision).
    func->setAttr("sluice.precision", StringAttr::get(context, *canonical));
  }
};

} // namespace
