//===- CostModel.cpp - predicted time of ops, devices and links -----------===//

#include "passes/parallel/CostModel.h"

#include "dialects/sluice/KernelForms.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace sluice::kernel;

namespace sluice::parallel {

double tensorBytes(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return 0;
  Type element = ranked.getElementType();
  // i1 is stored as a byte; sub-byte ints (packed int4) by their bits.
  double bits =
      element.isIntOrFloat() ? std::max<unsigned>(element.getIntOrFloatBitWidth(), 1) : 32;
  if (bits < 8 && !element.isInteger(4))
    bits = 8;
  return (double)ranked.getNumElements() * bits / 8.0;
}

namespace {

double elements(Value v) {
  auto ranked = dyn_cast<RankedTensorType>(v.getType());
  return ranked && ranked.hasStaticShape() ? (double)ranked.getNumElements() : 0;
}

double flopsOf(Operation *op) {
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    auto a = dyn_cast<RankedTensorType>(mm.getLhs().getType());
    if (!a || !a.hasStaticShape() || a.getRank() == 0)
      return 0;
    // The result holds batch x M x N elements, each a K-long dot product.
    return 2 * elements(mm.getOutput()) * (double)a.getShape().back();
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    auto w = dyn_cast<RankedTensorType>(conv.getWeight().getType());
    if (!w || !w.hasStaticShape() || w.getRank() < 2 || w.getShape()[0] == 0)
      return 0;
    return 2 * elements(conv.getOutput()) * (double)(w.getNumElements() / w.getShape()[0]);
  }
  if (auto attn = dyn_cast<AttentionOp>(op)) {
    auto q = dyn_cast<RankedTensorType>(attn.getQuery().getType());
    auto k = dyn_cast<RankedTensorType>(attn.getKey().getType());
    if (!q || !k || !q.hasStaticShape() || !k.hasStaticShape() || q.getRank() < 2 ||
        k.getRank() < 2)
      return 0;
    double sk = (double)k.getShape()[k.getRank() - 2];
    // Q K^T and P V: 2 x (batch x Sq x D) x Sk each; causal skips half.
    double flops = 4 * elements(attn.getQuery()) * sk;
    // A sliding window sees `window` keys a row.
    if (int64_t window = attn.getWindowAttr().getInt(); window > 0 && (double)window < sk)
      return 4 * elements(attn.getQuery()) * (double)window;
    return attn.getCausal() ? flops / 2 : flops;
  }
  if (auto moe = dyn_cast<MoeOp>(op)) {
    auto w1 = dyn_cast<RankedTensorType>(moe.getW1().getType());
    auto w2 = dyn_cast<RankedTensorType>(moe.getW2().getType());
    auto x = dyn_cast<RankedTensorType>(moe.getTokens().getType());
    if (!w1 || !w2 || !x || !w1.hasStaticShape() || !w2.hasStaticShape() ||
        !x.hasStaticShape() || w1.getRank() != 3 || w2.getRank() != 3 || x.getRank() < 1 ||
        moe.getExperts() <= 0)
      return 0;
    // Each token through top_k experts (2 D F + 2 F Do flops each); an
    // expert-parallel op holds E_local of the E experts and, with routing
    // balanced, gets that share of the token-expert pairs.
    double tokens = elements(moe.getTokens()) / (double)std::max<int64_t>(1, x.getShape().back());
    // A gated expert's up projection (w3) doubles the first GEMM.
    double perExpert = (moe.getW3() ? 4.0 : 2.0) * w1.getShape()[1] * w1.getShape()[2] +
                       2.0 * w2.getShape()[1] * w2.getShape()[2];
    double share = (double)w1.getShape()[0] / (double)moe.getExperts();
    return tokens * (double)moe.getTopK() * perExpert * share;
  }
  if (isViewOp(op) || isCollective(op) || isa<ConstantOp>(op) || op->getNumResults() == 0)
    return 0;
  double out = 0;
  for (Value r : op->getResults())
    out += elements(r);
  // Transcendentals (exp, tanh, gelu ...) are ~10 flops an element, row
  // ops (norms, softmax) ~5, everything else ~1.
  if (isTranscendental(op))
    return 10 * out;
  if (isRowOp(op))
    return 5 * out;
  return out;
}

} // namespace

OpCost costOf(Operation *op) {
  OpCost cost;
  if (isViewOp(op) || isCollective(op) || isa<ConstantOp, ShardConstantOp>(op))
    return cost;
  cost.flops = flopsOf(op);
  for (Value v : op->getOperands())
    cost.bytes += tensorBytes(v.getType());
  for (Value v : op->getResults())
    cost.bytes += tensorBytes(v.getType());
  return cost;
}

OpCost costOf(func::FuncOp func) {
  OpCost total;
  func.walk([&](Operation *op) {
    if (op != func.getOperation())
      total += costOf(op);
  });
  return total;
}

double predictedSeconds(const OpCost &cost, const DeviceModel &device, bool fp32Gemm) {
  if (cost.flops == 0 && cost.bytes == 0)
    return 0;
  double peak = fp32Gemm ? device.flopsPerSecond / 2 : device.flopsPerSecond;
  return std::max(cost.flops / peak, cost.bytes / device.bytesPerSecond) + device.launchSeconds;
}

double collectiveSeconds(llvm::StringRef op, double bytes, int64_t groupSize,
                         const LinkModel &link) {
  if (op == "send")
    return link.seconds(bytes);
  if (groupSize <= 1)
    return 0;
  double w = (double)groupSize, block = bytes / w;
  double steps = op == "all_reduce" ? 2 * (w - 1) : w - 1;
  return steps * link.seconds(block);
}

std::vector<size_t> balancedCut(llvm::ArrayRef<double> costs, int64_t parts,
                                llvm::ArrayRef<bool> canCutBefore) {
  size_t n = costs.size();
  if (parts < 1 || (size_t)parts > n)
    return {};
  // Candidate boundaries: 0, the allowed cut points, n.
  std::vector<size_t> points{0};
  for (size_t i = 1; i < n; ++i)
    if (canCutBefore.empty() || (i < canCutBefore.size() && canCutBefore[i]))
      points.push_back(i);
  points.push_back(n);
  size_t m = points.size();
  if ((int64_t)m - 1 < parts)
    return {};
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + costs[i];
  auto span = [&](size_t a, size_t b) { return prefix[points[b]] - prefix[points[a]]; };
  // best[k][j]: the smallest largest stage over points[0..j) in k stages.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(parts + 1, std::vector<double>(m, inf));
  std::vector<std::vector<size_t>> from(parts + 1, std::vector<size_t>(m, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= parts; ++k)
    for (size_t j = k; j < m; ++j)
      for (size_t i = k - 1; i < j; ++i) {
        if (best[k - 1][i] == inf)
          continue;
        double worst = std::max(best[k - 1][i], span(i, j));
        if (worst < best[k][j]) {
          best[k][j] = worst;
          from[k][j] = i;
        }
      }
  if (best[parts][m - 1] == inf)
    return {};
  std::vector<size_t> starts(parts);
  size_t j = m - 1;
  for (int64_t k = parts; k >= 1; --k) {
    j = from[k][j];
    starts[k - 1] = points[j];
  }
  return starts;
}

} // namespace sluice::parallel
