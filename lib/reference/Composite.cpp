//===- Composite.cpp - evaluators for the recognized composites -----------===//
//
// Each composite is evaluated from its definition here, independently of its
// decomposition (passes/recognize), so that recognizing a chain and
// evaluating the composite can be checked against evaluating the chain.
//
//===----------------------------------------------------------------------===//

#include "lib/reference/EvalUtils.h"
#include "lib/reference/Evaluator.h"

#include "dialects/sluice/SluiceOps.h"

#include <cmath>
#include <algorithm>
#include <limits>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

LogicalResult evalGelu(Operation *op, ArrayRef<const Tensor *> operands,
                       std::vector<Tensor> &results) {
  bool tanhForm = cast<GeluOp>(op).getApproximate() == "tanh";
  const Tensor &x = *operands[0];
  Tensor out(resultDType(op), x.shape());
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double v = x.getDouble(i);
    double phi = tanhForm ? 0.5 * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) *
                                                   (v + 0.044715 * v * v * v)))
                          : 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
    out.setDouble(i, v * phi);
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalSilu(Operation *op, ArrayRef<const Tensor *> operands,
                       std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  Tensor out(resultDType(op), x.shape());
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double v = x.getDouble(i);
    out.setDouble(i, v / (1.0 + std::exp(-v)));
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalRmsNorm(Operation *op, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) {
  auto rms = cast<RmsNormOp>(op);
  const Tensor &x = *operands[0], &scale = *operands[1];
  auto axis = normalizeAxis(op, rms.getAxis(), x.rank());
  if (failed(axis))
    return failure();
  std::vector<int64_t> inner(x.shape().begin() + *axis, x.shape().end());
  auto b = broadcastShapes(op, {scale.shape(), inner});
  if (failed(b) || *b != inner)
    return op->emitOpError("scale ") << scale.describe()
                                     << " does not broadcast to the normalized dims";
  int64_t count = 1;
  for (int64_t d : inner)
    count *= d;
  std::vector<double> s(count);
  forEachBroadcast(inner, {scale.shape()},
                   [&](int64_t i, const std::vector<int64_t> &idx) { s[i] = scale.getDouble(idx[0]); });
  double eps = rms.getEpsilon().convertToFloat();
  int64_t rows = count ? x.numElements() / count : 0;
  Tensor out(resultDType(op), x.shape());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < count; ++i) {
      double v = x.getDouble(r * count + i);
      sum += v * v;
    }
    double inv = 1.0 / std::sqrt(sum / double(count) + eps);
    for (int64_t i = 0; i < count; ++i)
      out.setDouble(r * count + i, x.getDouble(r * count + i) * inv * s[i]);
  }
  results.push_back(std::move(out));
  return success();
}

/// x * cos + rotate_half(x) * sin, cos and sin broadcast against x.
FailureOr<std::vector<double>> rotary(Operation *op, const Tensor &x, const Tensor &cos,
                                      const Tensor &sin) {
  if (failed(broadcastShapes(op, {x.shape(), cos.shape()})) ||
      *broadcastShapes(op, {x.shape(), cos.shape()}) != x.shape() ||
      failed(broadcastShapes(op, {x.shape(), sin.shape()})) ||
      *broadcastShapes(op, {x.shape(), sin.shape()}) != x.shape())
    return op->emitOpError("rotary tables ")
           << cos.describe() << " / " << sin.describe() << " do not broadcast to "
           << x.describe();
  int64_t d = x.shape().back(), half = d / 2;
  std::vector<double> out(x.numElements());
  forEachBroadcast(x.shape(), {cos.shape(), sin.shape()},
                   [&](int64_t i, const std::vector<int64_t> &idx) {
                     int64_t c = i % d;
                     double partner = c < half ? -x.getDouble(i + half) : x.getDouble(i - half);
                     out[i] = x.getDouble(i) * cos.getDouble(idx[0]) +
                              partner * sin.getDouble(idx[1]);
                   });
  return out;
}

LogicalResult evalAttention(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  auto attn = cast<AttentionOp>(op);
  const Tensor &q = *operands[0], &k = *operands[1], &v = *operands[2];
  size_t next = 3;
  const Tensor *mask = attn.getMask() ? operands[next++] : nullptr;
  const Tensor *cosT = attn.getRotaryCos() ? operands[next++] : nullptr;
  const Tensor *sinT = attn.getRotarySin() ? operands[next++] : nullptr;
  int64_t r = q.rank();
  if (r < 2 || k.rank() != r || v.rank() != r)
    return op->emitOpError("query, key and value need one rank >= 2");
  int64_t sq = q.dim(r - 2), d = q.dim(r - 1), sk = k.dim(r - 2), dv = v.dim(r - 1);
  if (k.dim(r - 1) != d || v.dim(r - 2) != sk)
    return op->emitOpError("key ") << k.describe() << " / value " << v.describe()
                                   << " do not match query " << q.describe();
  std::vector<int64_t> batch(q.shape().begin(), q.shape().end() - 2);
  auto batchOf = [](const Tensor &t) {
    return std::vector<int64_t>(t.shape().begin(), t.shape().end() - 2);
  };
  for (const Tensor *t : {&k, &v}) {
    auto b = broadcastShapes(op, {batchOf(*t), batch});
    if (failed(b) || *b != batch)
      return op->emitOpError("batch dims of ") << t->describe()
                                               << " do not broadcast to the query's";
  }
  std::vector<double> qv, kv;
  if (cosT) {
    auto rq = rotary(op, q, *cosT, *sinT);
    auto rk = rotary(op, k, *cosT, *sinT);
    if (failed(rq) || failed(rk))
      return failure();
    qv = std::move(*rq);
    kv = std::move(*rk);
  } else {
    qv = q.toDoubleVector();
    kv = k.toDoubleVector();
  }
  std::vector<double> vv = v.toDoubleVector();
  std::vector<int64_t> scoreShape = batch;
  scoreShape.push_back(sq);
  scoreShape.push_back(sk);
  std::vector<int64_t> maskStrides;
  bool boolMask = mask && mask->dtype() == DType::Bool;
  if (mask) {
    auto b = broadcastShapes(op, {mask->shape(), scoreShape});
    if (failed(b) || *b != scoreShape)
      return op->emitOpError("mask ") << mask->describe() << " does not broadcast to the scores";
    maskStrides = broadcastStrides(mask->shape(), scoreShape);
  }
  std::vector<int64_t> kStrides = broadcastStrides(batchOf(k), batch),
                       vStrides = broadcastStrides(batchOf(v), batch);
  double scale = attn.getScale().convertToFloat();
  bool causal = attn.getCausal();
  int64_t window = attn.getWindowAttr().getInt();
  int64_t batches = 1;
  for (int64_t x : batch)
    batches *= x;
  std::vector<int64_t> index;
  std::vector<double> scores(sk);
  Tensor out(resultDType(op), [&] {
    std::vector<int64_t> s = batch;
    s.push_back(sq);
    s.push_back(dv);
    return s;
  }());
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t bi = 0; bi < batches; ++bi) {
    unravelIndex(bi, batch, index);
    int64_t kb = 0, vb = 0, mb = 0;
    for (size_t x = 0; x < batch.size(); ++x) {
      kb += index[x] * kStrides[x];
      vb += index[x] * vStrides[x];
      if (mask)
        mb += index[x] * maskStrides[x];
    }
    for (int64_t i = 0; i < sq; ++i) {
      double mx = -inf;
      for (int64_t j = 0; j < sk; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c)
          s += qv[(bi * sq + i) * d + c] * kv[(kb * sk + j) * d + c];
        s *= scale;
        if (mask) {
          int64_t m = mb + i * maskStrides[batch.size()] + j * maskStrides[batch.size() + 1];
          if (boolMask)
            s = mask->getInt(m) ? s : -inf;
          else
            s += mask->getDouble(m);
        }
        if (causal && (j > i + (sk - sq) || (window > 0 && j <= i + (sk - sq) - window)))
          s = -inf;
        scores[j] = s;
        mx = std::max(mx, s);
      }
      double sum = 0;
      for (int64_t j = 0; j < sk; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
      }
      for (int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < sk; ++j)
          acc += scores[j] * vv[(vb * sk + j) * dv + c];
        out.setDouble((bi * sq + i) * dv + c, acc / sum);
      }
    }
  }
  results.push_back(std::move(out));
  return success();
}

/// The activation of a sluice.moe expert by name (MoeOp's verifier admits
/// exactly these).
double moeActivation(StringRef name, double v) {
  if (name == "relu")
    return v > 0 ? v : 0;
  if (name == "gelu")
    return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  if (name == "gelu_tanh")
    return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
  if (name == "silu")
    return v / (1.0 + std::exp(-v));
  return v;
}

/// sluice.moe from its definition: per token, its experts (the top_k of the
/// router's softmax, or the sample's index) and their weights, then each
/// chosen expert's MLP (gated by x w3 + b3 when the op has w3), weighted
/// and summed. Experts outside this op's
/// [offset, offset + E_local) contribute nothing (expert parallelism).
LogicalResult evalMoe(Operation *op, ArrayRef<const Tensor *> operands,
                      std::vector<Tensor> &results) {
  auto moe = cast<MoeOp>(op);
  unsigned next = 0;
  const Tensor &x = *operands[next++], &router = *operands[next++];
  const Tensor &w1 = *operands[next++];
  const Tensor *b1 = moe.getB1() ? operands[next++] : nullptr;
  const Tensor &w2 = *operands[next++];
  const Tensor *b2 = moe.getB2() ? operands[next++] : nullptr;
  const Tensor *w3 = moe.getW3() ? operands[next++] : nullptr;
  const Tensor *b3 = moe.getB3() ? operands[next++] : nullptr;
  int64_t offset = moe.getExpertOffset() ? operands[next++]->getInt(0) : 0;
  int64_t experts = moe.getExperts(), topK = moe.getTopK();
  int64_t local = w1.dim(0), d = w1.dim(1), f = w1.dim(2), dOut = w2.dim(2);
  int64_t tokens = d ? x.numElements() / d : 0;
  bool hard = moe.getGating() == "hard";
  int64_t perSample = hard ? tokens / std::max<int64_t>(router.numElements(), 1) : 1;
  std::vector<int64_t> shape(x.shape());
  shape.back() = dOut;
  Tensor out(resultDType(op), shape);
  std::vector<double> hidden(f), acc(dOut);
  for (int64_t t = 0; t < tokens; ++t) {
    // The token's (expert, weight) choices.
    std::vector<std::pair<int64_t, double>> chosen;
    if (hard) {
      chosen.push_back({router.getInt(t / perSample), 1.0});
    } else {
      std::vector<double> p(experts);
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t e = 0; e < experts; ++e)
        mx = std::max(mx, p[e] = router.getDouble(t * experts + e));
      for (double &v : p)
        sum += v = std::exp(v - mx);
      for (double &v : p)
        v /= sum;
      std::vector<int64_t> order(experts);
      for (int64_t e = 0; e < experts; ++e)
        order[e] = e;
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return p[a] > p[b]; });
      double picked = 0;
      for (int64_t j = 0; j < topK; ++j) {
        chosen.push_back({order[j], p[order[j]]});
        picked += p[order[j]];
      }
      if (moe.getNormalize())
        for (auto &c : chosen)
          c.second /= picked;
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    for (auto [expert, weight] : chosen) {
      if (expert < 0 || expert >= experts)
        return op->emitOpError("expert index ") << expert << " out of range [0, " << experts
                                                << ")";
      int64_t e = expert - offset;
      if (e < 0 || e >= local)
        continue;
      for (int64_t j = 0; j < f; ++j) {
        double h = b1 ? b1->getDouble(e * f + j) : 0.0;
        for (int64_t i = 0; i < d; ++i)
          h += x.getDouble(t * d + i) * w1.getDouble((e * d + i) * f + j);
        hidden[j] = moeActivation(moe.getActivation(), h);
        if (w3) {
          // The gated expert: act(x w1 + b1) * (x w3 + b3).
          double up = b3 ? b3->getDouble(e * f + j) : 0.0;
          for (int64_t i = 0; i < d; ++i)
            up += x.getDouble(t * d + i) * w3->getDouble((e * d + i) * f + j);
          hidden[j] *= up;
        }
      }
      for (int64_t c = 0; c < dOut; ++c) {
        double y = b2 ? b2->getDouble(e * dOut + c) : 0.0;
        for (int64_t j = 0; j < f; ++j)
          y += hidden[j] * w2.getDouble((e * f + j) * dOut + c);
        acc[c] += weight * y;
      }
    }
    for (int64_t c = 0; c < dOut; ++c)
      out.setDouble(t * dOut + c, acc[c]);
  }
  results.push_back(std::move(out));
  return success();
}

} // namespace

void registerCompositeEvaluators(EvalRegistry &r) {
  r.add(GeluOp::getOperationName(), evalGelu);
  r.add(SiluOp::getOperationName(), evalSilu);
  r.add(RmsNormOp::getOperationName(), evalRmsNorm);
  r.add(AttentionOp::getOperationName(), evalAttention);
  r.add(MoeOp::getOperationName(), evalMoe);
}

} // namespace sluice
