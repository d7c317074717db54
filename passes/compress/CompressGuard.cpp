//===- CompressGuard.cpp - what the calibrated compressions share ---------===//
//
// See CompressGuard.h.
//
//===----------------------------------------------------------------------===//

#include "passes/compress/CompressGuard.h"

#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Locations.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mlir;

namespace sluice::compress {

bool loadReference(func::FuncOp func, const std::string &dir, ReferenceRun &run,
                   std::string &error) {
  if (!quant::loadCalibration(func, dir, run.sets, error))
    return false;
  run.outputNames.clear();
  if (auto names = func->getAttrOfType<ArrayAttr>("sluice.output_names"))
    for (Attribute a : names)
      if (auto s = dyn_cast<StringAttr>(a))
        run.outputNames.push_back(s.str());
  size_t results = func.getFunctionType().getNumResults();
  while (run.outputNames.size() < results)
    run.outputNames.push_back("output" + std::to_string(run.outputNames.size()));
  return true;
}

LogicalResult runReference(func::FuncOp func, ReferenceRun &run,
                           llvm::function_ref<void(size_t, Value, const Tensor &)> observe) {
  run.outputs.clear();
  for (size_t s = 0; s < run.sets.size(); ++s) {
    ValueObserver observer;
    if (observe)
      observer = [&](Value v, const Tensor &t) { observe(s, v, t); };
    auto outputs = evaluate(func, run.sets[s].inputs, observer);
    if (failed(outputs))
      return failure();
    std::vector<Tensor> refs;
    for (RuntimeValue &v : *outputs)
      refs.push_back(v.isTensor() ? v.tensor() : Tensor());
    run.outputs.push_back(std::move(refs));
  }
  return success();
}

LogicalResult measureErrors(func::FuncOp candidate, const ReferenceRun &run, OutputErrors &errors) {
  // The sets run in parallel (the evaluator is reentrant); each set's sums
  // are kept apart and added in set order, so that the errors do not depend
  // on the threads.
  size_t outputs = run.outputNames.size();
  std::vector<std::vector<quant::ErrorSum>> perSet(run.sets.size(),
                                                   std::vector<quant::ErrorSum>(outputs));
  if (failed(failableParallelForEachN(candidate.getContext(), 0, run.sets.size(),
                                      [&](size_t s) -> LogicalResult {
                                        auto got = evaluate(candidate, run.sets[s].inputs);
                                        if (failed(got))
                                          return failure();
                                        for (size_t o = 0; o < got->size() && o < outputs; ++o)
                                          if ((*got)[o].isTensor() && o < run.outputs[s].size())
                                            perSet[s][o].add((*got)[o].tensor(), run.outputs[s][o]);
                                        return success();
                                      })))
    return failure();
  std::vector<quant::ErrorSum> sums(outputs);
  for (const std::vector<quant::ErrorSum> &set : perSet)
    for (size_t o = 0; o < outputs; ++o)
      sums[o].merge(set[o]);
  errors = errorsOf(run, sums);
  return success();
}

OutputErrors errorsOf(const ReferenceRun &run, const std::vector<quant::ErrorSum> &sums) {
  OutputErrors errors;
  for (const quant::ErrorSum &sum : sums) {
    errors.values.push_back(sum.value(run.metric));
    errors.relL2.push_back(sum.value());
  }
  return errors;
}

OutputErrors noErrors(const ReferenceRun &run) {
  OutputErrors errors;
  errors.values.assign(run.outputNames.size(), 0.0);
  errors.relL2.assign(run.outputNames.size(), 0.0);
  return errors;
}

double OutputErrors::worst() const { return maxOf(values); }

double OutputErrors::worstRelL2() const { return maxOf(relL2); }

bool OutputErrors::exceeds(const OutputErrors &other) const {
  if (worst() != other.worst())
    return worst() > other.worst();
  return worstRelL2() > other.worstRelL2();
}

bool resolveAccuracy(func::FuncOp func, StringRef metric, double budget, ReferenceRun &run,
                     std::string &error) {
  auto results = func.getFunctionType().getResults();
  llvm::StringSet<> classOutputs;
  if (auto names = func->getAttrOfType<ArrayAttr>("sluice.class_outputs"))
    for (Attribute a : names)
      if (auto s = dyn_cast<StringAttr>(a))
        classOutputs.insert(s.getValue());
  auto rankOf = [&](size_t i) {
    auto type = dyn_cast<RankedTensorType>(results[i]);
    return type ? type.getRank() : (int64_t)-1;
  };
  if (metric == "auto") {
    bool classes = !results.empty();
    for (size_t i = 0; i < results.size(); ++i)
      classes &= rankOf(i) == 2 || (i < run.outputNames.size() &&
                                    classOutputs.contains(run.outputNames[i]) && rankOf(i) >= 1);
    run.metric = classes ? quant::AccuracyMetric::Top1Agreement : quant::AccuracyMetric::RelL2;
  } else if (auto parsed = quant::parseAccuracyMetric(metric)) {
    run.metric = *parsed;
  } else {
    error = "unknown --accuracy-metric '" + metric.str() +
            "' (rel-l2, top1-agreement, or auto: top1-agreement for classifiers)";
    return false;
  }
  if (run.metric == quant::AccuracyMetric::Top1Agreement)
    for (size_t i = 0; i < results.size(); ++i)
      if (rankOf(i) < 1) {
        error = "--accuracy-metric=top1-agreement: output '" +
                (i < run.outputNames.size() ? run.outputNames[i] : std::to_string(i)) +
                "' has no class axis (a scalar); use --accuracy-metric=rel-l2";
        return false;
      }
  // A share above 1 allows every change, as a huge relative error does.
  run.budget = budget < 0 ? quant::defaultAccuracyBudget(run.metric) : budget;
  if (std::isnan(run.budget)) {
    error = "--accuracy-budget must be a number >= 0 (a relative L2 error, or the share of "
            "rows whose top-1 may change), got nan";
    return false;
  }
  return true;
}

std::string describeBudget(const ReferenceRun &run, double value) {
  std::string text = fixed(value);
  if (run.metric != quant::AccuracyMetric::Top1Agreement || run.outputs.empty())
    return text;
  // The rows of the first output over every set: what the share is of.
  int64_t rows = 0;
  for (const std::vector<Tensor> &set : run.outputs)
    if (!set.empty() && set.front().rank() >= 1 && set.front().dim(set.front().rank() - 1) > 0)
      rows += set.front().numElements() / set.front().dim(set.front().rank() - 1);
  if (rows > 0)
    text += " (" + std::to_string((int64_t)std::floor(value * (double)rows + 1e-9)) + " of " +
            std::to_string(rows) + " rows)";
  return text;
}

double maxOf(const std::vector<double> &values) {
  double m = 0;
  for (double v : values)
    m = std::max(m, v);
  return m;
}

std::string fixed(double value, int digits) {
  if (!std::isfinite(value))
    return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string nodeNameOf(Operation *op) {
  std::vector<std::string> names = onnxNodeNames(op->getLoc());
  if (!names.empty())
    return names.front();
  int64_t rank = 0;
  for (Operation &other : *op->getBlock()) {
    if (&other == op)
      break;
    rank += other.getName() == op->getName();
  }
  return op->getName().getStringRef().str() + " #" + std::to_string(rank);
}

std::optional<Tensor> constantTensor(Value v) {
  Attribute attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  auto t = tensorFromAttr(attr);
  if (failed(t))
    return std::nullopt;
  return *t;
}

int64_t countParams(func::FuncOp func) {
  int64_t params = 0;
  func.walk([&](ConstantOp c) {
    auto type = dyn_cast<RankedTensorType>(c.getType());
    if (type && isa<FloatType>(type.getElementType()) && type.hasStaticShape())
      params += type.getNumElements();
  });
  return params;
}

int64_t countFlops(func::FuncOp func) {
  int64_t flops = 0;
  func.walk([&](Operation *op) {
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      auto a = dyn_cast<RankedTensorType>(mm.getLhs().getType());
      auto r = dyn_cast<RankedTensorType>(mm.getOutput().getType());
      if (!a || !r || !a.hasStaticShape() || !r.hasStaticShape())
        return;
      // The result holds batch x M x N elements, each a K-long dot product.
      flops += 2 * r.getNumElements() * a.getShape().back();
    } else if (auto conv = dyn_cast<ConvOp>(op)) {
      auto w = dyn_cast<RankedTensorType>(conv.getWeight().getType());
      auto r = dyn_cast<RankedTensorType>(conv.getOutput().getType());
      if (!w || !r || !w.hasStaticShape() || !r.hasStaticShape() || w.getRank() < 2)
        return;
      // Every output element is C/group x kernel multiply-accumulates: the
      // weight's elements per output channel.
      flops += 2 * r.getNumElements() * (w.getNumElements() / w.getShape()[0]);
    }
  });
  return flops;
}

ScratchBlobs::~ScratchBlobs() {
  for (DenseResourceElementsAttr attr : attrs)
    if (attr.getRawHandle().getResource())
      attr.getRawHandle().getResource()->setBlob(AsmResourceBlob());
}

Value makeConstant(OpBuilder &b, Location loc, const Tensor &tensor, ScratchBlobs *scratch) {
  auto type = RankedTensorType::get(tensor.shape(), typeFromDType(b.getContext(), tensor.dtype()));
  ElementsAttr attr = attrFromTensor(b.getContext(), tensor, type);
  if (scratch)
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
      scratch->add(resource);
  return ConstantOp::create(b, loc, attr);
}

} // namespace sluice::compress
