//===- Reduction.cpp - evaluators for reductions, softmax, top-k, scans ---===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
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

/// NaN-aware ordering used by the arg-reductions and TopK: NaN sorts above
/// every number (as NumPy's sort puts it last), so argmax and largest-k pick
/// it first and the order stays a strict weak ordering.
bool lessWithNaN(double a, double b) {
  if (std::isnan(a))
    return false;
  return std::isnan(b) || a < b;
}

/// Reads one element as a comparable key: exact for integers up to 2^53 and
/// for every float; int64 beyond that only matters for ties in the last bits.
struct ElementKeys {
  const Tensor &t;
  bool isFloat;
  explicit ElementKeys(const Tensor &t)
      : t(t), isFloat(isFloatDType(t.dtype())) {}
  bool less(int64_t i, int64_t j) const {
    if (isFloat)
      return lessWithNaN(t.getDouble(i), t.getDouble(j));
    return t.getInt(i) < t.getInt(j);
  }
};

template <bool isMax>
LogicalResult evalArgReduce(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  using OpTy = std::conditional_t<isMax, ArgMaxOp, ArgMinOp>;
  auto argOp = cast<OpTy>(op);
  const Tensor &x = *operands[0];
  auto axis = normalizeAxis(op, argOp.getAxis(), x.rank());
  if (failed(axis))
    return failure();
  AxisSplit s = splitAt(x.shape(), *axis);
  if (s.extent == 0)
    return op->emitOpError("cannot reduce an empty dim to an index");
  std::vector<int64_t> outShape;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != *axis || argOp.getKeepdims())
      outShape.push_back(i == *axis ? 1 : x.dim(i));
  Tensor out(DType::I64, outShape);
  ElementKeys keys(x);
  bool last = argOp.getSelectLastIndex();
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.extent * s.inner + in, best = 0;
      for (int64_t e = 1; e < s.extent; ++e) {
        int64_t cur = base + e * s.inner, bestAt = base + best * s.inner;
        // `better` is strict: ties move the answer only for select_last_index.
        bool better = isMax ? keys.less(bestAt, cur) : keys.less(cur, bestAt);
        bool tie = !keys.less(bestAt, cur) && !keys.less(cur, bestAt);
        if (better || (last && tie))
          best = e;
      }
      out.setInt(o * s.inner + in, best);
    }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalTopK(Operation *op, ArrayRef<const Tensor *> operands,
                       std::vector<Tensor> &results) {
  auto topk = cast<TopKOp>(op);
  const Tensor &x = *operands[0];
  auto axis = normalizeAxis(op, topk.getAxis(), x.rank());
  if (failed(axis))
    return failure();
  std::vector<int64_t> kValues = operands[1]->toInt64Vector();
  if (kValues.size() != 1)
    return op->emitOpError("k must hold one value, got ") << kValues.size();
  int64_t k = kValues[0];
  AxisSplit s = splitAt(x.shape(), *axis);
  if (k < 0 || k > s.extent)
    return op->emitOpError("k = ") << k << " out of range for a dim of size "
                                   << s.extent;
  std::vector<int64_t> outShape = x.shape();
  outShape[*axis] = k;
  Tensor values(x.dtype(), outShape), indices(DType::I64, outShape);
  ElementKeys keys(x);
  bool largest = topk.getLargest(), isFloat = isFloatDType(x.dtype());
  std::vector<int64_t> order(s.extent);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.extent * s.inner + in;
      for (int64_t e = 0; e < s.extent; ++e)
        order[e] = e;
      // A stable sort keeps equal values in index order (lower index first).
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        int64_t ia = base + a * s.inner, ib = base + b * s.inner;
        return largest ? keys.less(ib, ia) : keys.less(ia, ib);
      });
      for (int64_t e = 0; e < k; ++e) {
        int64_t from = base + order[e] * s.inner;
        int64_t to = (o * k + e) * s.inner + in;
        if (isFloat)
          values.setDouble(to, x.getDouble(from));
        else
          values.setInt(to, x.getInt(from));
        indices.setInt(to, order[e]);
      }
    }
  results.push_back(std::move(values));
  results.push_back(std::move(indices));
  return success();
}

LogicalResult evalCumSum(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  auto cumsum = cast<CumSumOp>(op);
  const Tensor &x = *operands[0];
  std::vector<int64_t> axisValues = operands[1]->toInt64Vector();
  if (axisValues.size() != 1)
    return op->emitOpError("axis must hold one value, got ")
           << axisValues.size();
  auto axis = normalizeAxis(op, axisValues[0], x.rank());
  if (failed(axis))
    return failure();
  AxisSplit s = splitAt(x.shape(), *axis);
  Tensor out(x.dtype(), x.shape());
  bool isFloat = isFloatDType(x.dtype());
  bool exclusive = cumsum.getExclusive(), reverse = cumsum.getReverse();
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t in = 0; in < s.inner; ++in) {
      int64_t base = o * s.extent * s.inner + in;
      double floatSum = 0;
      int64_t intSum = 0;
      for (int64_t step = 0; step < s.extent; ++step) {
        int64_t e = reverse ? s.extent - 1 - step : step;
        int64_t at = base + e * s.inner;
        // Exclusive sums store the running total before adding the element.
        if (isFloat) {
          double v = x.getDouble(at);
          if (!exclusive)
            floatSum += v;
          out.setDouble(at, floatSum);
          if (exclusive)
            floatSum += v;
        } else {
          int64_t v = x.getInt(at);
          if (!exclusive)
            intSum += v;
          out.setInt(at, intSum);
          if (exclusive)
            intSum += v;
        }
      }
    }
  results.push_back(std::move(out));
  return success();
}

} // namespace

void registerReductionEvaluators(EvalRegistry &r) {
  r.add(ReduceOp::getOperationName(), evalReduce);
  r.add(SoftmaxOp::getOperationName(), evalSoftmax);
  r.add(ArgMaxOp::getOperationName(), evalArgReduce<true>);
  r.add(ArgMinOp::getOperationName(), evalArgReduce<false>);
  r.add(TopKOp::getOperationName(), evalTopK);
  r.add(CumSumOp::getOperationName(), evalCumSum);
}

} // namespace sluice
