//===- Sparsify.cpp - 2:4 semi-structured sparsity, calibrated and guarded ===//
//
// The compress phase's `--sparsity=2:4`: in every float GEMM of the main
// function (`sluice.matmul` with a constant 2-D weight [K, N]) two of every
// four consecutive weights along K (same output column n) become zero, the
// pattern NVIDIA's sparse tensor cores (and cuSPARSELt) execute at up to
// twice the dense rate. Which two: Wanda's importance (Sun et al., "A
// Simple and Effective Pruning Approach for Large Language Models")
//   importance(k, n) = |W[k, n]| * ||X_k||_2,
// ||X_k|| the L2 norm of the GEMM's input feature k over every row of every
// calibration set (the reference evaluator's ValueObserver sees the
// activation): a small weight on a loud feature can matter more than a
// large one on a quiet feature, which weight magnitude alone misses.
//
// GEMMs below K = 64 or N = 16, or with K not a multiple of 4, stay dense
// (a remark): too small for the sparse kernels to win, or no 2:4 groups.
//
// The guard (as sluice-quantize's, Quantize.cpp): each GEMM's sensitivity is
// the largest relative L2 error of the outputs, on the calibration sets,
// with only it sparse; every GEMM is made sparse, and while an output
// misses the budget the most sensitive sparse GEMM becomes dense again.
// Everything dense is the unpruned model, so the guard always ends within
// any budget >= 0. Sparse GEMMs carry the unit attribute
// `sluice.sparsity_2_4`; the outcome is the function's `sluice.sparsity`
// (docs: the pruning contract, what --report prints).
//
// The pruned weights are plain constants with zeros: constant folding and
// the later compress passes keep them as they are.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/compress/Calibration.h"
#include "passes/compress/CompressGuard.h"

#include "lib/reference/Evaluator.h"
#include "lib/support/Locations.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace sluice {
#define GEN_PASS_DEF_SPARSIFYPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using sluice::compress::fixed;
using namespace sluice;
using namespace sluice::quant;

namespace {

/// Smallest GEMM the pass makes sparse: below these the sparse kernels'
/// metadata and launch costs outweigh the halved multiply-adds.
constexpr int64_t kMinK = 64;
constexpr int64_t kMinN = 16;

/// One candidate GEMM of the main function and what the pass learnt of it.
struct Gemm {
  std::string node;
  int64_t k = 0, n = 0;
  std::string skipped;                ///< why it is not a 2:4 candidate ("" if it is)
  std::vector<double> featureSquares; ///< sum over the sets of X_k^2, per k
  ElementsAttr pruned;                ///< the 2:4 weight (candidates only)
  int64_t zeroed = 0;                 ///< weights made zero
  double sensitivity = -1;            ///< max output error with only it sparse
  double sensitivityL2 = -1;          ///< its relative L2 (ties of `sensitivity`)
  bool sparse = false;
  std::string reason;
};

bool isFloatStatic(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() &&
         (t.getElementType().isF32() || t.getElementType().isF16() || t.getElementType().isBF16());
}

/// The GEMMs of `func` in block order: float matmuls with a constant 2-D
/// weight and a non-constant activation of rank >= 2 (as sluice-quantize
/// takes them). The same list for a clone of `func`.
std::vector<MatMulOp> gemmsOf(func::FuncOp func) {
  std::vector<MatMulOp> gemms;
  for (Operation &op : func.getBody().front()) {
    auto mm = dyn_cast<MatMulOp>(op);
    if (!mm || !isFloatStatic(mm.getLhs()) || !isFloatStatic(mm.getRhs()))
      continue;
    auto a = cast<RankedTensorType>(mm.getLhs().getType());
    auto w = cast<RankedTensorType>(mm.getRhs().getType());
    if (a.getRank() >= 2 && w.getRank() == 2 && !matchPattern(mm.getLhs(), m_Constant()) &&
        matchPattern(mm.getRhs(), m_Constant()))
      gemms.push_back(mm);
  }
  return gemms;
}

/// Why a [K, N] weight gets no 2:4 pattern, or "".
std::string skipReason(int64_t k, int64_t n) {
  if (k % 4 != 0)
    return "too small or irregular: K = " + std::to_string(k) + " is not a multiple of 4";
  if (k < kMinK)
    return "too small: K = " + std::to_string(k) + " < " + std::to_string(kMinK);
  if (n < kMinN)
    return "too small: N = " + std::to_string(n) + " < " + std::to_string(kMinN);
  return "";
}

/// `w` [K, N] with, in every group of four consecutive k of each column,
/// the two weights of least importance |w| * norm[k] set to zero. Ties keep
/// the larger |w|, then the lower k (deterministic); a NaN weight counts as
/// most important (it stays, as does the evaluator's NaN). `zeroed` counts
/// the weights that were not zero before.
Tensor prune24(const Tensor &w, const std::vector<double> &featureNorm, int64_t &zeroed) {
  int64_t k = w.dim(0), n = w.dim(1);
  Tensor out = w;
  char *bytes = static_cast<char *>(out.mutableData());
  size_t elem = dtypeSize(w.dtype());
  zeroed = 0;
  for (int64_t g = 0; g < k; g += 4)
    for (int64_t j = 0; j < n; ++j) {
      std::array<int64_t, 4> order = {0, 1, 2, 3};
      std::array<double, 4> score, magnitude;
      for (int64_t r = 0; r < 4; ++r) {
        double v = std::fabs(w.getDouble((g + r) * n + j));
        magnitude[r] = std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
        double s = magnitude[r] * featureNorm[g + r];
        score[r] = std::isnan(s) ? std::numeric_limits<double>::infinity() : s;
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        if (score[a] != score[b])
          return score[a] > score[b];
        return magnitude[a] > magnitude[b];
      });
      for (int r = 2; r < 4; ++r) {
        int64_t index = (g + order[r]) * n + j;
        zeroed += w.getDouble(index) != 0;
        std::memset(bytes + index * elem, 0, elem); // +0.0 in every float type
      }
    }
  return out;
}

/// The calibration sets with the dense model's outputs on them
/// (CompressGuard's ReferenceRun), and the evaluation of a copy with some
/// GEMMs sparse.
struct Guard {
  func::FuncOp func;
  compress::ReferenceRun ref;

  /// Per-output errors (against the dense outputs) of a copy of the
  /// function whose GEMMs `sparse` says hold their 2:4 weights.
  LogicalResult evaluateSparse(const std::vector<Gemm> &gemms,
                               llvm::function_ref<bool(size_t)> sparse,
                               compress::OutputErrors &errors) {
    OwningOpRef<func::FuncOp> copy(func.clone());
    std::vector<MatMulOp> ops = gemmsOf(*copy);
    if (ops.size() != gemms.size())
      return func.emitError("sluice-sparsify: internal error: the GEMMs of a copy differ");
    for (size_t i = 0; i < ops.size(); ++i)
      if (gemms[i].pruned && sparse(i)) {
        OpBuilder b(ops[i]);
        auto weight = ConstantOp::create(b, ops[i].getLoc(), gemms[i].pruned);
        ops[i]->setOperand(1, weight);
      }
    return compress::measureErrors(*copy, ref, errors);
  }
};

struct SparsifyPass : public sluice::impl::SparsifyPassBase<SparsifyPass> {
  using SparsifyPassBase::SparsifyPassBase;

  void note(const std::string &line) {
    if (progress)
      llvm::errs() << "sluice-compile: sparsify: " << line << "\n";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("sluice-sparsify: the module has no main function");
      return signalPassFailure();
    }
    if (pattern != "2:4") {
      func.emitError("--sparsity=") << pattern << ": unknown sparsity pattern (only 2:4)";
      return signalPassFailure();
    }
    if (calibration.empty()) {
      func.emitError("--sparsity=2:4 needs --calibration=DIR: which two weights of every four "
                     "stay comes from running sample inputs (NAME.npy per model input) through "
                     "the model");
      return signalPassFailure();
    }
    if (func->hasAttr("sluice.sparsity") || !func.getBody().getOps<KernelOp>().empty()) {
      func.emitError("sluice-sparsify: the function is already sparsified or fused");
      return signalPassFailure();
    }

    Guard guard;
    guard.func = func;
    std::string error;
    if (!compress::loadReference(func, calibration, guard.ref, error) ||
        !compress::resolveAccuracy(func, metric, budget, guard.ref, error)) {
      func.emitError(error);
      return signalPassFailure();
    }

    std::vector<MatMulOp> ops = gemmsOf(func);
    if (ops.empty()) {
      func.emitError("--sparsity=2:4: the model has no float GEMM with a constant 2-D weight to "
                     "sparsify");
      return signalPassFailure();
    }
    std::vector<Gemm> gemms(ops.size());
    llvm::DenseMap<Value, SmallVector<size_t>> readers; // activation -> candidates
    for (size_t i = 0; i < ops.size(); ++i) {
      Gemm &g = gemms[i];
      std::vector<std::string> names = onnxNodeNames(ops[i]->getLoc());
      // An op without an ONNX node (IR written by hand) is named by its place.
      g.node = names.empty() ? "sluice.matmul #" + std::to_string(i) : names.front();
      auto w = cast<RankedTensorType>(ops[i].getRhs().getType());
      g.k = w.getDimSize(0);
      g.n = w.getDimSize(1);
      g.skipped = skipReason(g.k, g.n);
      if (!g.skipped.empty()) {
        ops[i]->emitRemark() << "not sparsified 2:4: " << g.skipped;
        continue;
      }
      g.featureSquares.assign(g.k, 0.0);
      readers[ops[i].getLhs()].push_back(i);
    }

    // The dense model on every set: the outputs, each candidate's input
    // feature norms.
    note("calibrating on " + std::to_string(guard.ref.sets.size()) + " sets");
    auto observe = [&](size_t, Value v, const Tensor &t) {
      auto it = readers.find(v);
      if (it == readers.end())
        return;
      for (size_t i : it->second) {
        std::vector<double> &sq = gemms[i].featureSquares;
        int64_t k = sq.size(), total = t.numElements();
        for (int64_t e = 0; e < total; ++e) {
          double x = t.getDouble(e);
          sq[e % k] += x * x;
        }
      }
    };
    if (failed(compress::runReference(func, guard.ref, observe)))
      return signalPassFailure();

    // The 2:4 weights.
    int64_t candidates = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      Gemm &g = gemms[i];
      if (!g.skipped.empty())
        continue;
      std::vector<double> norm(g.k);
      for (int64_t k = 0; k < g.k; ++k)
        norm[k] = std::sqrt(g.featureSquares[k]);
      auto weight = tensorFromAttr(cast<ConstantOp>(ops[i].getRhs().getDefiningOp()).getValue());
      if (failed(weight)) {
        ops[i]->emitError("sluice-sparsify: cannot read the GEMM's weight");
        return signalPassFailure();
      }
      Tensor pruned = prune24(*weight, norm, g.zeroed);
      g.pruned = attrFromTensor(func.getContext(), pruned,
                                cast<RankedTensorType>(ops[i].getRhs().getType()));
      ++candidates;
    }

    compress::OutputErrors errors = compress::noErrors(guard.ref);
    if (candidates && failed(runGuard(gemms, guard, errors)))
      return signalPassFailure();

    // The rewrite of the real function.
    MLIRContext *ctx = func.getContext();
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!gemms[i].sparse)
        continue;
      OpBuilder b(ops[i]);
      auto weight = ConstantOp::create(b, ops[i].getLoc(), gemms[i].pruned);
      ops[i]->setOperand(1, weight);
      ops[i]->setAttr("sluice.sparsity_2_4", UnitAttr::get(ctx));
    }
    writeReport(func, gemms, guard, errors);
  }

  /// Sensitivities; every candidate sparse; while an output misses the
  /// budget, the most sensitive sparse GEMM dense again. All dense is the
  /// dense model (error 0), so this always ends within the budget.
  LogicalResult runGuard(std::vector<Gemm> &gemms, Guard &guard, compress::OutputErrors &errors) {
    std::vector<size_t> order;
    for (size_t i = 0; i < gemms.size(); ++i) {
      if (!gemms[i].pruned)
        continue;
      compress::OutputErrors alone;
      if (failed(guard.evaluateSparse(
              gemms, [&](size_t j) { return j == i; }, alone)))
        return failure();
      gemms[i].sensitivity = alone.worst();
      gemms[i].sensitivityL2 = alone.worstRelL2();
      gemms[i].sparse = true;
      gemms[i].reason = "2:4 by calibrated importance";
      order.push_back(i);
      note("sensitivity " + gemms[i].node + " (K " + std::to_string(gemms[i].k) + ", N " +
           std::to_string(gemms[i].n) + "): " + fixed(gemms[i].sensitivity));
    }
    // Most sensitive first (ties of the metric by relative L2); equal ones
    // in block order (deterministic).
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Gemm &x = gemms[a], &y = gemms[b];
      return x.sensitivity != y.sensitivity ? x.sensitivity > y.sensitivity
                                            : x.sensitivityL2 > y.sensitivityL2;
    });
    auto isSparse = [&](size_t j) { return gemms[j].sparse; };
    if (failed(guard.evaluateSparse(gemms, isSparse, errors)))
      return failure();
    note("all " + std::to_string(order.size()) + " candidate GEMMs 2:4: output error " +
         compress::describeBudget(guard.ref, errors.worst()) + " (budget " +
         compress::describeBudget(guard.ref, guard.ref.budget) + ")");
    for (size_t next = 0; errors.worst() > guard.ref.budget && next < order.size(); ++next) {
      Gemm &g = gemms[order[next]];
      g.sparse = false;
      g.reason = "kept dense: most sensitive (error " + fixed(g.sensitivity) + " alone)";
      if (failed(guard.evaluateSparse(gemms, isSparse, errors)))
        return failure();
      note("kept " + g.node + " dense: output error " + fixed(errors.worst()));
    }
    return success();
  }

  /// The function's `sluice.sparsity` attribute (the pruning contract).
  void writeReport(func::FuncOp func, const std::vector<Gemm> &gemms, const Guard &guard,
                   const compress::OutputErrors &errors) {
    Builder b(func.getContext());
    SmallVector<Attribute> layers;
    int64_t sparse = 0;
    for (const Gemm &g : gemms) {
      sparse += g.sparse;
      SmallVector<NamedAttribute> e;
      e.push_back(b.getNamedAttr("node", b.getStringAttr(g.node)));
      e.push_back(b.getNamedAttr("k", b.getI64IntegerAttr(g.k)));
      e.push_back(b.getNamedAttr("n", b.getI64IntegerAttr(g.n)));
      // -1: not measured (a GEMM too small to be a candidate).
      e.push_back(b.getNamedAttr("sensitivity", b.getF64FloatAttr(g.sensitivity)));
      e.push_back(b.getNamedAttr("sparse", b.getBoolAttr(g.sparse)));
      e.push_back(b.getNamedAttr("zeroed", b.getI64IntegerAttr(g.sparse ? g.zeroed : 0)));
      e.push_back(
          b.getNamedAttr("reason", b.getStringAttr(g.skipped.empty() ? g.reason : g.skipped)));
      layers.push_back(b.getDictionaryAttr(e));
    }
    SmallVector<Attribute> outputs;
    for (size_t o = 0; o < errors.values.size() && o < guard.ref.outputNames.size(); ++o)
      outputs.push_back(
          b.getDictionaryAttr({b.getNamedAttr("name", b.getStringAttr(guard.ref.outputNames[o])),
                               b.getNamedAttr("error", b.getF64FloatAttr(errors.values[o])),
                               b.getNamedAttr("rel_l2", b.getF64FloatAttr(errors.relL2[o]))}));
    SmallVector<NamedAttribute> top;
    top.push_back(b.getNamedAttr("pattern", b.getStringAttr("2:4")));
    top.push_back(
        b.getNamedAttr("metric", b.getStringAttr(quant::accuracyMetricName(guard.ref.metric))));
    top.push_back(b.getNamedAttr("budget", b.getF64FloatAttr(guard.ref.budget)));
    top.push_back(b.getNamedAttr("calibration_sets", b.getI64IntegerAttr(guard.ref.sets.size())));
    top.push_back(b.getNamedAttr("gemms_2_4", b.getI64IntegerAttr(sparse)));
    top.push_back(
        b.getNamedAttr("gemms_dense", b.getI64IntegerAttr((int64_t)gemms.size() - sparse)));
    top.push_back(b.getNamedAttr("layers", b.getArrayAttr(layers)));
    top.push_back(b.getNamedAttr("outputs", b.getArrayAttr(outputs)));
    func->setAttr("sluice.sparsity", b.getDictionaryAttr(top));
  }
};

} // namespace
