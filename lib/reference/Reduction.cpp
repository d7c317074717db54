//===- Reduction.cpp - evaluators for reductions, softmax, top-k, scans ---===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

/// Splits a shape around `axis` into outer x axis x inner extents.
struct AxisSplit {
  int64_t outer = 1, extent = 1, inner = 1;
};
AxisSplit splitAt(const std::vector<int64_t> &shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < (int64_t)shape.size(); ++i)
    (i < axis ? s.outer : i == axis ? s.extent : s.inner) *= shape[i];
  return s;
}

LogicalResult evalReduce(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  auto reduce = cast<ReduceOp>(op);
  const Tensor &x = *operands[0];
  int64_t rank = x.rank();
  std::vector<int64_t> axes;
  if (operands.size() > 1 && operands[1])
    axes = operands[1]->toInt64Vector();
  std::vector<bool> reduced(rank, axes.empty() && !reduce.getNoopWithEmptyAxes());
  for (int64_t axis : axes) {
    auto a = normalizeAxis(op, axis, rank);
    if (failed(a))
      return failure();
    reduced[*a] = true;
  }
  std::vector<int64_t> keptShape, outShape;
  for (int64_t i = 0; i < rank; ++i) {
    keptShape.push_back(reduced[i] ? 1 : x.dim(i));
    if (!reduced[i] || reduce.getKeepdims())
      outShape.push_back(reduced[i] ? 1 : x.dim(i));
  }
  ReduceKind kind = reduce.getKind();
  bool isFloat = isFloatDType(x.dtype());
  Tensor out(resultDType(op), outShape);
  int64_t outCount = out.numElements();
  double identity = 0;
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::mean: identity = 0; break;
  case ReduceKind::prod: identity = 1; break;
  case ReduceKind::max:
    identity = isFloat ? -INFINITY : (double)std::numeric_limits<int64_t>::min();
    break;
  case ReduceKind::min:
    identity = isFloat ? INFINITY : (double)std::numeric_limits<int64_t>::max();
    break;
  }
  std::vector<double> acc(outCount, identity);
  std::vector<int64_t> counts(outCount, 0);
  // Map each input element to its output slot via broadcast strides of the
  // kept shape (reduced dims have stride 0).
  forEachBroadcast(x.shape(), {keptShape},
                   [&](int64_t i, const std::vector<int64_t> &idx) {
                     double v = x.getDouble(i);
                     double &a = acc[idx[0]];
                     ++counts[idx[0]];
                     switch (kind) {
                     case ReduceKind::sum:
                     case ReduceKind::mean: a += v; break;
                     case ReduceKind::prod: a *= v; break;
                     case ReduceKind::max: a = std::isnan(v) || v > a ? v : a; break;
                     case ReduceKind::min: a = std::isnan(v) || v < a ? v : a; break;
                     }
                   });
  for (int64_t i = 0; i < outCount; ++i) {
    double v = acc[i];
    if (kind == ReduceKind::mean)
      v = counts[i] ? v / counts[i] : NAN;
    if (isFloat)
      out.setDouble(i, v);
    else
      out.setInt(i, (int64_t)v);
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalSoftmax(Operation *op, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) {
  auto softmax = cast<SoftmaxOp>(op);
  const Tensor &x = *operands[0];
  auto axis = normalizeAxis(op, softmax.getAxis(), x.rank());
  if (failed(axis))
    return failure();
  AxisSplit s = splitAt(x.shape(), *axis);
  Tensor out(x.dtype(), x.shape());
  std::vector<double> row(s.extent);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.extent * s.inner + in;
      double maxValue = -INFINITY;
      for (int64_t e = 0; e < s.extent; ++e) {
        row[e] = x.getDouble(base + e * s.inner);
        maxValue = std::max(maxValue, row[e]);
      }
      double sum = 0;
      for (int64_t e = 0; e < s.extent; ++e)
        sum += std::exp(row[e] - maxValue);
      for (int64_t e = 0; e < s.extent; ++e) {
        double shifted = row[e] - maxValue;
        out.setDouble(base + e * s.inner, softmax.getLog()
                                              ? shifted - std::log(sum)
                                              : std::exp(shifted) / sum);
      }
    }
  results.push_back(std::move(out));
  return success();
}

} // namespace

void registerReductionEvaluators(EvalRegistry &r) {
  r.add(ReduceOp::getOperationName(), evalReduce);
  r.add(SoftmaxOp::getOperationName(), evalSoftmax);
}

} // namespace sluice
