//===- Quantize.cpp - calibrated int8 with a measured accuracy guard ------===//
//
// The compress phase's `--quantize=int8`: every float GEMM (`sluice.matmul`
// with a constant 2-D weight) and convolution (`sluice.conv` with a constant
// weight) of the main function becomes Form I8 (docs/quantization.md,
// "The forms"): its activation quantized per tensor to u8 with the range the
// calibration sets give, its weight int8 symmetric per output channel, an
// integer matmul_integer / conv_integer accumulating in int32, and the scales
// (and the bias) applied after it, where the fuse phase makes them the
// GEMM's epilogue.
//
// The accuracy guard: the calibration sets run through the reference
// evaluator on the float model (ranges, reference outputs), then on the
// quantized one; when an output's error (`metric`: relative L2, or the share
// of changed top-1 predictions, CompressGuard.h) exceeds the budget, each
// layer's own effect on the outputs is measured (that layer alone
// quantized) and the most sensitive layers are kept in float, one at a
// time, until every output is within the budget. A budget no quantized
// layer can meet fails the compile with the per-layer table. The outcome
// (ranges, errors, kept layers) is cached in a JSON file so that
// recompiling does not recalibrate.
//
// SmoothQuant (`smooth-quant=ALPHA`): before calibration, each layer-norm
// output that only feeds quantized GEMMs is divided per channel by s_j =
// max|X_j|^alpha / max|W_j|^(1-alpha) (folded into the norm's scale and
// bias) and the GEMMs' weight rows multiplied by it: outlier channels of
// the activation move into the weights, which quantize per channel.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/compress/Calibration.h"
#include "passes/compress/CompressGuard.h"
#include "passes/compress/QuantizeWeights.h"

#include "lib/reference/Evaluator.h"
#include "lib/support/Json.h"
#include "lib/support/Locations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace sluice {
#define GEN_PASS_DEF_QUANTIZEPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::quant;

namespace {

/// Bumped when the cache's meaning changes.
constexpr int kCacheVersion = 2;

/// What a layer becomes: Form I8 (bits 0), Form F8 (`fp8`), or Form W with
/// int8 / int4 weights (bits 8 / 4, blocks of `group` along K).
struct Scheme {
  int weightBits = 0;
  int64_t group = 128;
  bool fp8 = false;
  bool weightOnly() const { return weightBits != 0; }
  const char *precision() const {
    return fp8 ? "fp8" : weightBits == 8 ? "int8w" : weightBits == 4 ? "int4w" : "int8";
  }
};

/// E4M3FN's largest finite value: per-tensor fp8 scales map amax onto it.
constexpr float kFp8Max = 448.0f;

/// One quantizable op of the main function and what the pass learnt of it.
struct Layer {
  std::string node;   ///< its ONNX node (the first, for fused ops)
  std::string opName; ///< "sluice.matmul" / "sluice.conv"
  RangeStats stats;
  double lo = 0, hi = 0;
  AffineU8 act;
  float weightScaleMin = 0, weightScaleMax = 0;
  ErrorSum localError;       ///< its output in the quantized model vs float
  double sensitivity = -1;   ///< max output error with only it quantized
  double sensitivityL2 = -1; ///< its relative L2 (ties of `sensitivity`)
  bool kept = false;         ///< left in float by the guard
};

/// The constant tensor behind `v`, if it is one.
using compress::constantTensor;

bool isFloat32Tensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isF32() && t.hasStaticShape();
}

/// The quantizable ops of `func` in block order: f32 matmuls with a
/// constant 2-D weight and a non-constant activation, f32 convs with a
/// constant weight (and a constant bias or none).
std::vector<Operation *> candidates(func::FuncOp func, const Scheme &scheme) {
  std::vector<Operation *> ops;
  for (Operation &op : func.getBody().front()) {
    if (scheme.weightOnly()) {
      // Form W: a matmul with a 2-D float constant weight, any float type
      // (after --precision), as sluice-quantize-weights takes them.
      if (auto mm = dyn_cast<MatMulOp>(op)) {
        auto a = dyn_cast<RankedTensorType>(mm.getLhs().getType());
        auto w = dyn_cast<RankedTensorType>(mm.getRhs().getType());
        if (a && w && a.getRank() >= 2 && w.getRank() == 2 && isa<FloatType>(w.getElementType()) &&
            matchPattern(mm.getRhs(), m_Constant()) && !matchPattern(mm.getLhs(), m_Constant()))
          ops.push_back(&op);
      }
      continue;
    }
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      auto wType = dyn_cast<RankedTensorType>(mm.getRhs().getType());
      // Form F8 covers GEMMs only: convolutions stay f32 in fp8 mode
      // (TensorRT's fp8 convolutions are not cuBLASLt's, and the cuda
      // target has no fp8 convolution).
      if (isFloat32Tensor(mm.getLhs()) && isFloat32Tensor(mm.getRhs()) && wType.getRank() == 2 &&
          cast<RankedTensorType>(mm.getLhs().getType()).getRank() >= 2 &&
          !matchPattern(mm.getLhs(), m_Constant()) && matchPattern(mm.getRhs(), m_Constant()))
        ops.push_back(&op);
    } else if (auto conv = dyn_cast<ConvOp>(op); conv && !scheme.fp8) {
      if (isFloat32Tensor(conv.getInput()) && isFloat32Tensor(conv.getWeight()) &&
          !matchPattern(conv.getInput(), m_Constant()) &&
          matchPattern(conv.getWeight(), m_Constant()) &&
          (!conv.getBias() || matchPattern(conv.getBias(), m_Constant())))
        ops.push_back(&op);
    }
  }
  return ops;
}

std::string nodeOf(Operation *op) {
  std::vector<std::string> names = onnxNodeNames(op->getLoc());
  return names.empty() ? describeOp(op) : names.front();
}

Value constantOf(OpBuilder &b, Location loc, const Tensor &t) {
  auto type = RankedTensorType::get(t.shape(), typeFromDType(b.getContext(), t.dtype()));
  return ConstantOp::create(b, loc, attrFromTensor(b.getContext(), t, type));
}

/// Symmetric int8 per output channel: `channelAxis` 1 of a [K, N] matmul
/// weight, 0 of a [M, C/g, k...] conv weight. Returns the int8 tensor and
/// fills `scales` (max|w| / 127 per channel; 1 for an all-zero channel).
Tensor quantizeWeight(const Tensor &w, int channelAxis, std::vector<float> &scales) {
  int64_t channels = w.dim(channelAxis), total = w.numElements();
  int64_t inner = 1;
  for (int64_t d = channelAxis + 1; d < w.rank(); ++d)
    inner *= w.dim(d);
  auto channelOf = [&](int64_t i) { return (i / inner) % channels; };
  Tensor wf = w.dtype() == DType::F32 ? w : w.castTo(DType::F32);
  const float *p = wf.data<float>();
  std::vector<float> amax(channels, 0.0f);
  for (int64_t i = 0; i < total; ++i)
    amax[channelOf(i)] = std::max(amax[channelOf(i)], std::fabs(p[i]));
  scales.assign(channels, 1.0f);
  for (int64_t c = 0; c < channels; ++c)
    if (amax[c] > 0 && std::isfinite(amax[c]))
      scales[c] = amax[c] / 127.0f;
  Tensor q(DType::I8, w.shape());
  int8_t *out = q.mutableData<int8_t>();
  for (int64_t i = 0; i < total; ++i) {
    float r = std::nearbyint(p[i] / scales[channelOf(i)]);
    out[i] = (int8_t)std::clamp(r, -127.0f, 127.0f);
  }
  return q;
}

Value rewriteToInt8(Operation *op, const AffineU8 &act, Layer *layer);
Value rewriteToFp8(Operation *op, float inputScale, Layer *layer);

/// The per-tensor fp8 scale of a range: amax / 448 (1 for an empty or
/// non-finite range, which then quantizes nothing away).
float fp8Scale(double lo, double hi) {
  double amax = std::max(std::fabs(lo), std::fabs(hi));
  return amax > 0 && std::isfinite(amax) ? (float)(amax / kFp8Max) : 1.0f;
}

/// The weight's per-tensor fp8 scale amax(|W|) / 448 and W / scale in
/// E4M3FN (round to nearest even; nothing saturates, |W / scale| <= 448).
Tensor quantizeWeightFp8(const Tensor &w, float &scale) {
  Tensor wf = w.dtype() == DType::F32 ? w : w.castTo(DType::F32);
  const float *p = wf.data<float>();
  float amax = 0.0f;
  for (int64_t i = 0; i < wf.numElements(); ++i)
    amax = std::max(amax, std::fabs(p[i]));
  scale = fp8Scale(0, amax);
  Tensor q(DType::F8E4M3, w.shape());
  uint8_t *out = q.mutableData<uint8_t>();
  for (int64_t i = 0; i < wf.numElements(); ++i)
    out[i] = floatToFloat8E4M3(p[i] / scale);
  return q;
}

/// Rewrites the candidate `op` of `func` by `scheme`; returns the value
/// that replaces its result (Form W keeps the matmul, with a dequantized
/// weight), or null with `error`.
Value rewriteLayer(func::FuncOp func, Operation *op, const Scheme &scheme, Layer &layer,
                   bool record, std::string &error) {
  if (scheme.fp8)
    return rewriteToFp8(op, layer.act.scale, record ? &layer : nullptr);
  if (!scheme.weightOnly())
    return rewriteToInt8(op, layer.act, record ? &layer : nullptr);
  Value result = op->getResult(0);
  if (failed(quantizeWeightsOnly(
          func, scheme.weightBits, scheme.group, [&](Operation *o) { return o == op; }, error)))
    return nullptr;
  return result;
}

/// Rewrites `op` (a candidate) into Form I8 with activation parameters
/// `act`; returns the value replacing its result.
Value rewriteToInt8(Operation *op, const AffineU8 &act, Layer *layer) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  MLIRContext *ctx = op->getContext();
  Value x = op->getOperand(0);
  Value sx = constantOf(b, loc, Tensor::scalar(DType::F32, act.scale));
  Value zx = constantOf(b, loc, Tensor::scalar(DType::U8, act.zeroPoint));
  Value zw = constantOf(b, loc, Tensor::scalar(DType::I8, 0));
  Value xq = QuantizeLinearOp::create(b, loc, x, sx, zx, 1, true);
  bool isConv = isa<ConvOp>(op);
  Tensor w = *constantTensor(op->getOperand(1));
  std::vector<float> sw;
  Tensor wq = quantizeWeight(w, isConv ? 0 : 1, sw);
  if (layer && !sw.empty()) {
    layer->weightScaleMin = *std::min_element(sw.begin(), sw.end());
    layer->weightScaleMax = *std::max_element(sw.begin(), sw.end());
  }
  Value wqV = constantOf(b, loc, wq);
  Value acc;
  std::vector<int64_t> perChannel;
  if (auto conv = dyn_cast<ConvOp>(op)) {
    acc = ConvIntegerOp::create(b, loc, xq, wqV, zx, zw, conv.getStridesAttr(),
                                conv.getDilationsAttr(), conv.getPadsAttr(), conv.getGroupAttr());
    perChannel.push_back((int64_t)sw.size());
    for (int64_t d = 2; d < cast<RankedTensorType>(x.getType()).getRank(); ++d)
      perChannel.push_back(1);
  } else {
    acc = MatMulIntegerOp::create(b, loc, xq, wqV, zx, zw);
    perChannel.push_back((int64_t)sw.size());
  }
  auto accType = cast<RankedTensorType>(acc.getType());
  Value f = CastOp::create(b, loc, accType.clone(Float32Type::get(ctx)), acc, false);
  Tensor combined(DType::F32, perChannel);
  float *c = combined.mutableData<float>();
  for (size_t i = 0; i < sw.size(); ++i)
    c[i] = act.scale * sw[i];
  Value y = MulOp::create(b, loc, f, constantOf(b, loc, combined));
  if (auto conv = dyn_cast<ConvOp>(op); conv && conv.getBias()) {
    Tensor bias = constantTensor(conv.getBias())->castTo(DType::F32).reshaped(perChannel);
    y = AddOp::create(b, loc, y, constantOf(b, loc, bias));
  }
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return y;
}

/// Rewrites the matmul `op` (a candidate) into Form F8, TensorRT's explicit
/// fp8: matmul(dequantize_linear(quantize_linear(x, sx) -> f8E4M3FN, sx),
/// dequantize_linear(W8 f8E4M3FN constant, sw)), both scales per tensor
/// (sx from calibration, sw = amax(W) / 448). Returns the new matmul.
Value rewriteToFp8(Operation *op, float inputScale, Layer *layer) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto mm = cast<MatMulOp>(op);
  Value x = mm.getLhs();
  Value sx = constantOf(b, loc, Tensor::scalar(DType::F32, inputScale));
  // The zero point (0) gives quantize_linear its f8 result type.
  Value zx = constantOf(b, loc, Tensor::scalar(DType::F8E4M3, 0));
  Value xq = QuantizeLinearOp::create(b, loc, x, sx, zx, 1, true);
  Value xd = DequantizeLinearOp::create(b, loc, xq, sx, Value(), 1, 0);
  float sw = 1.0f;
  Tensor wq = quantizeWeightFp8(*constantTensor(mm.getRhs()), sw);
  if (layer)
    layer->weightScaleMin = layer->weightScaleMax = sw;
  Value wd =
      DequantizeLinearOp::create(b, loc, constantOf(b, loc, wq),
                                 constantOf(b, loc, Tensor::scalar(DType::F32, sw)), Value(), 1, 0);
  Value y = MatMulOp::create(b, loc, xd, wd);
  op->getResult(0).replaceAllUsesWith(y);
  op->erase();
  return y;
}

/// The calibration sets' inputs, the float model's outputs on them, and
/// what evaluating a (partly) quantized copy costs.
struct Guard {
  func::FuncOp func;
  /// The calibration sets, the float outputs on them, the output names.
  compress::ReferenceRun ref;
  Scheme scheme;
  bool progress = false;

  /// Evaluates a copy of the function with the layers `quantize` says
  /// quantized; per-output errors against the float outputs in `errors`.
  /// `observe(index, value, tensor)` sees each quantized layer's output.
  LogicalResult
  evaluateQuantized(const std::vector<Layer> &layers, llvm::function_ref<bool(size_t)> quantize,
                    compress::OutputErrors &errors,
                    llvm::function_ref<void(size_t, size_t, const Tensor &)> observe = nullptr) {
    OwningOpRef<func::FuncOp> copy(func.clone());
    std::vector<Operation *> ops = candidates(*copy, scheme);
    llvm::DenseMap<Value, size_t> layerOf;
    for (size_t i = 0; i < ops.size() && i < layers.size(); ++i)
      if (quantize(i)) {
        Layer scratch = layers[i];
        std::string error;
        Value v = rewriteLayer(*copy, ops[i], scheme, scratch, false, error);
        if (!v)
          return func.emitError(error);
        layerOf[v] = i;
      }
    std::vector<ErrorSum> sums(ref.outputNames.size());
    for (size_t s = 0; s < ref.sets.size(); ++s) {
      ValueObserver observer;
      if (observe)
        observer = [&](Value v, const Tensor &t) {
          auto it = layerOf.find(v);
          if (it != layerOf.end())
            observe(it->second, s, t);
        };
      auto outputs = evaluate(*copy, ref.sets[s].inputs, observer);
      if (failed(outputs))
        return failure();
      for (size_t o = 0; o < outputs->size() && o < sums.size(); ++o)
        if ((*outputs)[o].isTensor())
          sums[o].add((*outputs)[o].tensor(), ref.outputs[s][o]);
    }
    errors = compress::errorsOf(ref, sums);
    return success();
  }
};

using compress::fixed;

/// A stable digest of the function (its IR with weights elided, and every
/// constant's bytes) and of the calibration files' bytes: the cache key.
std::string digest(func::FuncOp func, const std::vector<CalibrationSet> &sets,
                   llvm::StringRef settings) {
  llvm::SHA256 sha;
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.elideLargeElementsAttrs(16);
  flags.elideLargeResourceString(16);
  func->print(os, flags);
  sha.update(text);
  func.walk([&](ConstantOp c) {
    if (auto t = tensorFromAttr(c.getValue()); succeeded(t) && t->dtype() != DType::String)
      sha.update(llvm::ArrayRef<uint8_t>((const uint8_t *)t->rawData(), t->byteSize()));
  });
  for (const CalibrationSet &set : sets)
    for (const RuntimeValue &v : set.inputs)
      if (v.isTensor())
        sha.update(
            llvm::ArrayRef<uint8_t>((const uint8_t *)v.tensor().rawData(), v.tensor().byteSize()));
  sha.update(settings);
  return llvm::toHex(sha.final(), true);
}

struct QuantizePass : public sluice::impl::QuantizePassBase<QuantizePass> {
  using QuantizePassBase::QuantizePassBase;

  void note(const std::string &line) {
    if (progress)
      llvm::errs() << "sluice-compile: quantize: " << line << "\n";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func && calibration.empty() && (mode == "w8a16" || mode == "w4a16")) {
      // Weight-only without data (no guard, no inputs to match): every
      // function, as sluice-quantize-weights does (IR written by hand).
      std::string error;
      for (auto f : llvm::to_vector(module.getOps<func::FuncOp>()))
        if (failed(quantizeWeightsOnly(
                f, mode == "w8a16" ? 8 : 4, 128, [](Operation *) { return true; }, error))) {
          f.emitError(error);
          return signalPassFailure();
        }
      return;
    }
    if (!func) {
      module.emitError("sluice-quantize: the module has no main function");
      return signalPassFailure();
    }
    Scheme scheme;
    if (mode == "w8a16" || mode == "w4a16")
      scheme.weightBits = mode == "w8a16" ? 8 : 4;
    else if (mode == "fp8")
      scheme.fp8 = true;
    else if (mode != "int8") {
      func.emitError("sluice-quantize: unknown mode '") << mode << "' (int8, fp8, w8a16, w4a16)";
      return signalPassFailure();
    }
    auto calMethod = parseMethod(method);
    if (!calMethod) {
      func.emitError("unknown --calibration-method '")
          << method << "' (minmax, percentile, entropy)";
      return signalPassFailure();
    }
    if (calibration.empty() && scheme.weightOnly()) {
      // No data, no guard: every GEMM with a constant weight (what
      // sluice-quantize-weights does), listed in the report unmeasured.
      Guard unmeasured;
      unmeasured.func = func;
      unmeasured.scheme = scheme;
      std::vector<Layer> layers;
      for (Operation *op : candidates(func, scheme)) {
        Layer layer;
        layer.node = nodeOf(op);
        layer.opName = op->getName().getStringRef().str();
        layers.push_back(std::move(layer));
      }
      std::string error;
      if (failed(quantizeWeightsOnly(
              func, scheme.weightBits, scheme.group, [](Operation *) { return true; }, error))) {
        func.emitError(error);
        return signalPassFailure();
      }
      writeReport(func, layers, unmeasured, compress::OutputErrors(), false, *calMethod);
      return;
    }
    if (calibration.empty()) {
      func.emitError("--quantize=")
          << mode
          << " needs --calibration=DIR: activation scales come from "
             "running sample inputs (NAME.npy per model input) through the model";
      return signalPassFailure();
    }
    if (func->hasAttr("sluice.quantization") || !func.getBody().getOps<KernelOp>().empty()) {
      func.emitError("sluice-quantize: the function is already quantized or fused");
      return signalPassFailure();
    }

    Guard guard;
    guard.func = func;
    guard.scheme = scheme;
    guard.progress = progress;
    std::string error;
    if (!compress::loadReference(func, calibration, guard.ref, error) ||
        !compress::resolveAccuracy(func, metric, budget, guard.ref, error)) {
      func.emitError(error);
      return signalPassFailure();
    }

    if (smoothQuant >= 0 && !scheme.weightOnly() && failed(smooth(func, guard)))
      return signalPassFailure();

    std::vector<Operation *> ops = candidates(func, scheme);
    if (ops.empty()) {
      func.emitError("--quantize=") << mode << ": the model has no float GEMM"
                                    << (scheme.weightOnly() || scheme.fp8 ? "" : " or convolution")
                                    << " with constant weights to quantize";
      return signalPassFailure();
    }
    std::vector<Layer> layers(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      // An op without an ONNX node (IR written by hand, or read back from a
      // file printed without locations) is named by its place.
      layers[i].node = nodeOf(ops[i]);
      if (onnxNodeNames(ops[i]->getLoc()).empty())
        layers[i].node = ops[i]->getName().getStringRef().str() + " #" + std::to_string(i);
      layers[i].opName = ops[i]->getName().getStringRef().str();
    }

    std::string settings = mode + " " + std::string(methodName(*calMethod)) + " " +
                           std::to_string(percentile) + " smooth " +
                           std::to_string((double)smoothQuant);
    std::string key = digest(func, guard.ref.sets, settings);
    bool cached = !cache.empty() && readCache(key, layers);
    bool decided = cached && cachedBudget == guard.ref.budget &&
                   cachedMetric == quant::accuracyMetricName(guard.ref.metric) &&
                   cachedErrors.values.size() == cachedErrors.relL2.size();
    compress::OutputErrors finalErrors;
    if (!cached) {
      if (failed(calibrate(func, ops, layers, guard, *calMethod)))
        return signalPassFailure();
    } else {
      note("calibration from " + cache + " (recompiling does not recalibrate)");
      if (!decided && failed(compress::runReference(guard.func, guard.ref)))
        return signalPassFailure();
    }
    if (decided) {
      finalErrors = cachedErrors;
    } else if (failed(runGuard(layers, guard, finalErrors))) {
      return signalPassFailure();
    }

    // The rewrite of the real function.
    std::vector<Operation *> live = candidates(func, scheme);
    if (live.size() != layers.size()) {
      func.emitError("sluice-quantize: internal error: the layers changed during calibration");
      return signalPassFailure();
    }
    for (size_t i = 0; i < live.size(); ++i) {
      if (layers[i].kept) {
        if (!scheme.weightOnly())
          quantizeWeightScalesFor(live[i], layers[i], scheme);
        continue;
      }
      std::string error;
      if (!rewriteLayer(func, live[i], scheme, layers[i], true, error)) {
        func.emitError(error);
        return signalPassFailure();
      }
    }
    writeReport(func, layers, guard, finalErrors, cached, *calMethod);
    if (!cache.empty() && !writeCache(key, layers, finalErrors, guard.ref))
      func.emitWarning("sluice-quantize: cannot write the calibration cache ") << cache;
  }

  /// For a layer the guard kept in float, the scales it would have had
  /// (the report lists them).
  void quantizeWeightScalesFor(Operation *op, Layer &layer, const Scheme &scheme) {
    if (scheme.fp8) {
      float sw = 1.0f;
      quantizeWeightFp8(*constantTensor(op->getOperand(1)), sw);
      layer.weightScaleMin = layer.weightScaleMax = sw;
      return;
    }
    std::vector<float> sw;
    quantizeWeight(*constantTensor(op->getOperand(1)), isa<ConvOp>(op) ? 0 : 1, sw);
    if (!sw.empty()) {
      layer.weightScaleMin = *std::min_element(sw.begin(), sw.end());
      layer.weightScaleMax = *std::max_element(sw.begin(), sw.end());
    }
  }

  /// The float model on every set: each layer's activation extremes (and
  /// histogram, for percentile/entropy), the reference outputs.
  LogicalResult calibrate(func::FuncOp func, const std::vector<Operation *> &ops,
                          std::vector<Layer> &layers, Guard &guard, Method calMethod) {
    llvm::DenseMap<Value, SmallVector<size_t>> consumers;
    llvm::DenseMap<Value, size_t> producedBy;
    for (size_t i = 0; i < ops.size(); ++i) {
      consumers[ops[i]->getOperand(0)].push_back(i);
      producedBy[ops[i]->getResult(0)] = i;
    }
    layerOutputs.assign(layers.size(), std::vector<Tensor>(guard.ref.sets.size()));
    auto start = std::chrono::steady_clock::now();
    guard.ref.outputs.clear();
    for (size_t s = 0; s < guard.ref.sets.size(); ++s) {
      note("calibrating (" + std::string(methodName(calMethod)) + "): set " +
           std::to_string(s + 1) + "/" + std::to_string(guard.ref.sets.size()));
      ValueObserver observer = [&](Value v, const Tensor &t) {
        auto it = consumers.find(v);
        if (it != consumers.end())
          for (size_t i : it->second)
            layers[i].stats.addExtremes(t);
        auto produced = producedBy.find(v);
        if (produced != producedBy.end())
          layerOutputs[produced->second][s] = t;
      };
      auto outputs = evaluate(func, guard.ref.sets[s].inputs, observer);
      if (failed(outputs))
        return failure();
      std::vector<Tensor> refs;
      for (RuntimeValue &v : *outputs)
        refs.push_back(v.isTensor() ? v.tensor() : Tensor());
      guard.ref.outputs.push_back(std::move(refs));
    }
    if (calMethod != Method::MinMax && !guard.scheme.weightOnly()) {
      for (size_t s = 0; s < guard.ref.sets.size(); ++s) {
        note("histograms: set " + std::to_string(s + 1) + "/" +
             std::to_string(guard.ref.sets.size()));
        ValueObserver observer = [&](Value v, const Tensor &t) {
          auto it = consumers.find(v);
          if (it != consumers.end())
            for (size_t i : it->second)
              layers[i].stats.addHistogram(t);
        };
        if (failed(evaluate(func, guard.ref.sets[s].inputs, observer)))
          return failure();
      }
    }
    for (Layer &layer : layers) {
      std::tie(layer.lo, layer.hi) = chooseRange(layer.stats, calMethod, percentile);
      layer.act = affineU8(layer.lo, layer.hi);
      // fp8: symmetric, per tensor, amax onto E4M3's 448 (TensorRT's).
      if (guard.scheme.fp8)
        layer.act = AffineU8{fp8Scale(layer.lo, layer.hi), 0};
    }
    note("calibrated " + std::to_string(layers.size()) + " layers on " +
         std::to_string(guard.ref.sets.size()) + " sets in " +
         fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1) +
         " s");
    return success();
  }

  /// Every layer quantized; while an output misses the budget, the most
  /// sensitive remaining layer back in float. Fails with the table when no
  /// quantized layer meets the budget.
  LogicalResult runGuard(std::vector<Layer> &layers, Guard &guard, compress::OutputErrors &errors) {
    for (Layer &l : layers) {
      l.kept = false;
      l.localError = ErrorSum();
      l.sensitivity = -1;
      l.sensitivityL2 = -1;
    }
    // Each layer's float output per set, for its local error (calibration
    // kept them; a cached calibration did not run the float model).
    std::vector<std::vector<Tensor>> &floatOutputs = layerOutputs;
    if (floatOutputs.size() != layers.size()) {
      floatOutputs.assign(layers.size(), std::vector<Tensor>(guard.ref.sets.size()));
      std::vector<Operation *> ops = candidates(guard.func, guard.scheme);
      llvm::DenseMap<Value, size_t> layerOf;
      for (size_t i = 0; i < ops.size(); ++i)
        layerOf[ops[i]->getResult(0)] = i;
      for (size_t s = 0; s < guard.ref.sets.size(); ++s) {
        ValueObserver observer = [&](Value v, const Tensor &t) {
          auto it = layerOf.find(v);
          if (it != layerOf.end())
            floatOutputs[it->second][s] = t;
        };
        if (failed(evaluate(guard.func, guard.ref.sets[s].inputs, observer)))
          return failure();
      }
    }
    note("measuring the " + std::string(guard.scheme.precision()) + " model on " +
         std::to_string(guard.ref.sets.size()) + " sets");
    if (failed(guard.evaluateQuantized(
            layers, [](size_t) { return true; }, errors,
            [&](size_t i, size_t s, const Tensor &t) {
              layers[i].localError.addL2(t, floatOutputs[i][s]);
            })))
      return failure();
    double budget = guard.ref.budget;
    note("output error " + compress::describeBudget(guard.ref, errors.worst()) + " (budget " +
         compress::describeBudget(guard.ref, budget) + ")");
    if (errors.worst() <= budget)
      return success();

    // Sensitivity: each layer alone quantized.
    for (size_t i = 0; i < layers.size(); ++i) {
      compress::OutputErrors alone;
      if (failed(guard.evaluateQuantized(
              layers, [&](size_t j) { return j == i; }, alone)))
        return failure();
      layers[i].sensitivity = alone.worst();
      layers[i].sensitivityL2 = alone.worstRelL2();
      note("sensitivity " + std::to_string(i + 1) + "/" + std::to_string(layers.size()) + " " +
           layers[i].node + ": " + fixed(layers[i].sensitivity));
    }
    std::vector<size_t> order(layers.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    // Most sensitive first; ties of the metric (layers that change no
    // prediction alone) by relative L2.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Layer &x = layers[a], &y = layers[b];
      return x.sensitivity != y.sensitivity ? x.sensitivity > y.sensitivity
                                            : x.sensitivityL2 > y.sensitivityL2;
    });
    for (size_t k = 0; k + 1 < order.size(); ++k) {
      layers[order[k]].kept = true;
      if (failed(guard.evaluateQuantized(
              layers, [&](size_t j) { return !layers[j].kept; }, errors)))
        return failure();
      note("kept " + layers[order[k]].node + " in float: output error " + fixed(errors.worst()));
      if (errors.worst() <= budget)
        return success();
    }
    // Even one layer alone misses the budget: the table, and failure.
    std::string table;
    llvm::raw_string_ostream os(table);
    os << "--accuracy-budget=" << fixed(budget) << " cannot hold with any layer in "
       << guard.scheme.precision() << " (" << quant::accuracyMetricName(guard.ref.metric)
       << " error of the outputs on " << guard.ref.sets.size()
       << " calibration sets); per layer, the output error with it "
          "alone quantized:\n";
    for (size_t i : order)
      os << "  " << layers[i].opName << " node '" << layers[i].node
         << "': " << fixed(layers[i].sensitivity) << "\n";
    os << "raise --accuracy-budget (the most tolerant layer needs "
       << fixed(layers[order.back()].sensitivity) << ") or leave out --quantize";
    guard.func.emitError(table);
    return failure();
  }

  /// The function's `sluice.quantization` attribute: what --report prints.
  void writeReport(func::FuncOp func, const std::vector<Layer> &layers, const Guard &guard,
                   const compress::OutputErrors &errors, bool cached, Method calMethod) {
    const Scheme &scheme = guard.scheme;
    Builder b(func.getContext());
    SmallVector<NamedAttribute> top;
    top.push_back(b.getNamedAttr("mode", b.getStringAttr(mode)));
    top.push_back(b.getNamedAttr("method", b.getStringAttr(methodName(calMethod))));
    if (!guard.ref.sets.empty()) {
      top.push_back(
          b.getNamedAttr("metric", b.getStringAttr(quant::accuracyMetricName(guard.ref.metric))));
      top.push_back(b.getNamedAttr("budget", b.getF64FloatAttr(guard.ref.budget)));
    }
    top.push_back(b.getNamedAttr("calibration_sets", b.getI64IntegerAttr(guard.ref.sets.size())));
    top.push_back(b.getNamedAttr("calibration", b.getStringAttr(guard.ref.sets.empty() ? "none"
                                                                : cached               ? "cache"
                                                                         : "measured")));
    if (smoothQuant >= 0)
      top.push_back(b.getNamedAttr("smooth_quant", b.getF64FloatAttr(smoothQuant)));
    SmallVector<Attribute> outs;
    for (size_t o = 0; o < errors.values.size(); ++o)
      outs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(o < guard.ref.outputNames.size()
                                                      ? guard.ref.outputNames[o]
                                                      : "output" + std::to_string(o))),
           b.getNamedAttr("error", b.getF64FloatAttr(errors.values[o])),
           b.getNamedAttr("rel_l2",
                          b.getF64FloatAttr(o < errors.relL2.size() ? errors.relL2[o] : 0.0))}));
    top.push_back(b.getNamedAttr("outputs", b.getArrayAttr(outs)));
    SmallVector<Attribute> entries;
    int64_t quantized = 0;
    for (const Layer &l : layers) {
      quantized += !l.kept;
      SmallVector<NamedAttribute> e;
      e.push_back(b.getNamedAttr("node", b.getStringAttr(l.node)));
      e.push_back(b.getNamedAttr("op", b.getStringAttr(l.opName)));
      e.push_back(
          b.getNamedAttr("precision", b.getStringAttr(l.kept ? "f32" : scheme.precision())));
      if (!scheme.weightOnly()) {
        e.push_back(b.getNamedAttr("input_scale", b.getF64FloatAttr(l.act.scale)));
        e.push_back(b.getNamedAttr("input_zero_point", b.getI64IntegerAttr(l.act.zeroPoint)));
        e.push_back(b.getNamedAttr(
            "input_range", b.getArrayAttr({b.getF64FloatAttr(l.lo), b.getF64FloatAttr(l.hi)})));
        e.push_back(
            b.getNamedAttr("weight_scales", b.getArrayAttr({b.getF64FloatAttr(l.weightScaleMin),
                                                            b.getF64FloatAttr(l.weightScaleMax)})));
      } else {
        e.push_back(b.getNamedAttr("weight_bits", b.getI64IntegerAttr(scheme.weightBits)));
        e.push_back(b.getNamedAttr("group",
                                   b.getI64IntegerAttr(scheme.weightBits == 4 ? scheme.group : 0)));
      }
      if (!guard.ref.sets.empty())
        e.push_back(b.getNamedAttr("error", b.getF64FloatAttr(l.localError.value())));
      if (l.sensitivity >= 0)
        e.push_back(b.getNamedAttr("sensitivity", b.getF64FloatAttr(l.sensitivity)));
      if (l.kept)
        e.push_back(b.getNamedAttr(
            "reason", b.getStringAttr("kept in f32 by the accuracy guard: alone it moves the "
                                      "outputs by " +
                                      fixed(l.sensitivity))));
      entries.push_back(b.getDictionaryAttr(e));
    }
    top.push_back(b.getNamedAttr("quantized_layers", b.getI64IntegerAttr(quantized)));
    top.push_back(b.getNamedAttr("layers", b.getArrayAttr(entries)));
    func->setAttr("sluice.quantization", b.getDictionaryAttr(top));
  }

  /// Each layer's float output on each set ([layer][set]), kept by
  /// calibrate for the guard's local errors.
  std::vector<std::vector<Tensor>> layerOutputs;

  /// SmoothQuant (see the file comment).
  LogicalResult smooth(func::FuncOp func, Guard &guard);

  // The cache (JSON): {version, key, metric, budget, layers: [{node, lo, hi,
  // scale, zero_point, error, sensitivity, sensitivity_rel_l2, kept}],
  // errors, errors_rel_l2}.
  double cachedBudget = -1;
  std::string cachedMetric;
  compress::OutputErrors cachedErrors;

  bool readCache(const std::string &key, std::vector<Layer> &layers) {
    auto buffer = llvm::MemoryBuffer::getFile(cache);
    if (!buffer)
      return false;
    auto parsed = llvm::json::parse((*buffer)->getBuffer());
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      return false;
    }
    auto *root = parsed->getAsObject();
    if (!root || root->getInteger("version") != kCacheVersion || root->getString("key") != key)
      return false;
    auto *entries = root->getArray("layers");
    if (!entries || entries->size() != layers.size())
      return false;
    for (size_t i = 0; i < layers.size(); ++i) {
      auto *e = (*entries)[i].getAsObject();
      if (!e || e->getString("node") != layers[i].node)
        return false;
      layers[i].lo = e->getNumber("lo").value_or(0);
      layers[i].hi = e->getNumber("hi").value_or(0);
      layers[i].act.scale = (float)e->getNumber("scale").value_or(1);
      layers[i].act.zeroPoint = (int32_t)e->getInteger("zero_point").value_or(0);
      layers[i].sensitivity = e->getNumber("sensitivity").value_or(-1);
      layers[i].sensitivityL2 = e->getNumber("sensitivity_rel_l2").value_or(-1);
      layers[i].kept = e->getBoolean("kept").value_or(false);
      double local = e->getNumber("error").value_or(0);
      layers[i].localError.diff2 = local * local;
      layers[i].localError.ref2 = 1;
    }
    cachedBudget = root->getNumber("budget").value_or(-1);
    cachedMetric = root->getString("metric").value_or("").str();
    cachedErrors = compress::OutputErrors();
    for (auto [key, into] : {std::pair{"errors", &cachedErrors.values},
                             std::pair{"errors_rel_l2", &cachedErrors.relL2}})
      if (auto *errs = root->getArray(key))
        for (const llvm::json::Value &v : *errs)
          into->push_back(v.getAsNumber().value_or(0));
    return true;
  }

  bool writeCache(const std::string &key, const std::vector<Layer> &layers,
                  const compress::OutputErrors &errors, const compress::ReferenceRun &ref) {
    std::error_code ec;
    llvm::raw_fd_ostream file(cache, ec);
    if (ec)
      return false;
    llvm::json::OStream json(file, 2);
    json.object([&] {
      json.attribute("version", kCacheVersion);
      json.attribute("what", "sluice-compile --quantize=" + mode +
                                 " calibration table (delete to recalibrate)");
      json.attribute("key", key);
      json.attribute("method", method);
      json.attribute("metric", quant::accuracyMetricName(ref.metric));
      json.attribute("budget", ref.budget);
      json.attributeArray("errors", [&] {
        for (double e : errors.values)
          json.value(e);
      });
      json.attributeArray("errors_rel_l2", [&] {
        for (double e : errors.relL2)
          json.value(e);
      });
      json.attributeArray("layers", [&] {
        for (const Layer &l : layers)
          json.object([&] {
            json.attribute("node", l.node);
            json.attribute("op", l.opName);
            json.attribute("lo", l.lo);
            json.attribute("hi", l.hi);
            json.attribute("scale", (double)l.act.scale);
            json.attribute("zero_point", (int64_t)l.act.zeroPoint);
            json.attribute("error", l.localError.value());
            json.attribute("sensitivity", l.sensitivity);
            json.attribute("sensitivity_rel_l2", l.sensitivityL2);
            json.attribute("kept", l.kept);
          });
      });
    });
    file << "\n";
    return true;
  }
};

/// Per-channel max |x| of the last dim of every value in `values` over the
/// calibration sets.
LogicalResult channelAbsMax(Guard &guard, const llvm::DenseMap<Value, size_t> &values,
                            std::vector<std::vector<float>> &amax) {
  for (const CalibrationSet &set : guard.ref.sets) {
    ValueObserver observer = [&](Value v, const Tensor &t) {
      auto it = values.find(v);
      if (it == values.end() || t.rank() == 0)
        return;
      int64_t c = t.dim(t.rank() - 1), n = t.numElements();
      std::vector<float> &m = amax[it->second];
      if ((int64_t)m.size() != c)
        m.assign(c, 0.0f);
      for (int64_t i = 0; i < n; ++i)
        m[i % c] = std::max(m[i % c], (float)std::fabs(t.getDouble(i)));
    };
    if (failed(evaluate(guard.func, set.inputs, observer)))
      return failure();
  }
  return success();
}

LogicalResult QuantizePass::smooth(func::FuncOp func, Guard &guard) {
  // The norms whose every user is a quantizable matmul.
  std::vector<Operation *> ops = candidates(func, guard.scheme);
  llvm::DenseSet<Operation *> isCandidate(ops.begin(), ops.end());
  std::vector<LayerNormOp> norms;
  llvm::DenseMap<Value, size_t> index;
  for (Operation &op : func.getBody().front()) {
    auto norm = dyn_cast<LayerNormOp>(op);
    if (!norm || norm.getOutput().use_empty() || !matchPattern(norm.getScale(), m_Constant()) ||
        (norm.getBias() && !matchPattern(norm.getBias(), m_Constant())))
      continue;
    auto type = cast<RankedTensorType>(norm.getOutput().getType());
    if (int64_t axis = (int64_t)norm.getAxis(); axis != -1 && axis != type.getRank() - 1)
      continue;
    bool allGemms = llvm::all_of(norm.getOutput().getUsers(), [&](Operation *user) {
      return isa<MatMulOp>(user) && isCandidate.contains(user) &&
             user->getOperand(0) == norm.getOutput();
    });
    if (!allGemms)
      continue;
    index[norm.getOutput()] = norms.size();
    norms.push_back(norm);
  }
  if (norms.empty()) {
    note("smooth-quant: no layer norm feeds only GEMMs; nothing to smooth");
    return success();
  }
  std::vector<std::vector<float>> amax(norms.size());
  if (failed(channelAbsMax(guard, index, amax)))
    return failure();
  double alpha = smoothQuant;
  int smoothed = 0;
  for (size_t i = 0; i < norms.size(); ++i) {
    LayerNormOp norm = norms[i];
    int64_t c = cast<RankedTensorType>(norm.getOutput().getType()).getShape().back();
    if ((int64_t)amax[i].size() != c)
      continue;
    std::vector<float> wmax(c, 0.0f);
    for (Operation *user : norm.getOutput().getUsers()) {
      Tensor w = constantTensor(user->getOperand(1))->castTo(DType::F32);
      int64_t n = w.dim(1);
      for (int64_t k = 0; k < c; ++k)
        for (int64_t j = 0; j < n; ++j)
          wmax[k] = std::max(wmax[k], std::fabs(w.data<float>()[k * n + j]));
    }
    std::vector<float> s(c, 1.0f);
    for (int64_t k = 0; k < c; ++k)
      if (amax[i][k] > 0 && wmax[k] > 0)
        s[k] = (float)std::clamp(std::pow((double)amax[i][k], alpha) /
                                     std::pow((double)wmax[k], 1.0 - alpha),
                                 1e-5, 1e5);
    OpBuilder b(norm);
    auto divide = [&](Value v) -> Value {
      Tensor t = constantTensor(v)->castTo(DType::F32);
      if (t.numElements() != c)
        return nullptr;
      Tensor out(DType::F32, t.shape());
      for (int64_t k = 0; k < c; ++k)
        out.mutableData<float>()[k] = t.data<float>()[k] / s[k];
      return constantOf(b, norm.getLoc(), out);
    };
    Value scale = divide(norm.getScale());
    Value bias = norm.getBias() ? divide(norm.getBias()) : Value();
    if (!scale || (norm.getBias() && !bias))
      continue;
    norm.getScaleMutable().assign(scale);
    if (bias)
      norm.getBiasMutable().assign(bias);
    for (Operation *user : llvm::to_vector(norm.getOutput().getUsers())) {
      OpBuilder ub(user);
      Tensor w = constantTensor(user->getOperand(1))->castTo(DType::F32);
      int64_t n = w.dim(1);
      Tensor out(DType::F32, w.shape());
      for (int64_t k = 0; k < c; ++k)
        for (int64_t j = 0; j < n; ++j)
          out.mutableData<float>()[k * n + j] = w.data<float>()[k * n + j] * s[k];
      user->setOperand(1, constantOf(ub, user->getLoc(), out));
    }
    ++smoothed;
  }
  note("smooth-quant alpha " + fixed(alpha, 2) + ": " + std::to_string(smoothed) +
       " layer norms folded into " + std::to_string(ops.size()) + " candidate GEMMs");
  return success();
}

} // namespace
