//===- Prune.cpp - structured pruning guarded by calibration data ---------===//
//
// The compress phase's `--prune=heads=F,ffn=F,channels=F` (issue 16): whole
// attention heads, MLP hidden units and convolution output channels leave
// `main`, so that weights, GEMM shapes and FLOPs shrink (nothing runs on
// zeros). Which dimensions must shrink together is PruneGroups.h's
// business; this file decides how much of each group goes, from data:
//
// 1. Importance: the calibration sets run through the reference evaluator
//    on the unpruned function; a unit's score is, summed over the group's
//    sinks (the GEMMs / convolutions that consume the unit), the mean |x|
//    of the activation the sink reads at the unit's positions times the L2
//    norm of the sink's weights for it. For heads that is the head's output
//    norm weighted by the output projection; for an MLP the hidden
//    activation's magnitude times the outgoing weight norm.
// 2. Sensitivity: each group alone pruned at its kind's fraction (its
//    lowest-scored units removed), the largest relative L2 error of the
//    outputs against the unpruned function over the sets.
// 3. The guard: every group at its fraction; while an output misses the
//    budget, the most sensitive group left is spared and the units it would
//    have lost are taken from the least sensitive groups of its kind
//    (each up to twice the fraction, never above 0.9), re-measured. Nothing
//    pruned is error 0, so this ends.
// 4. The rewrite (PruneGroups' applyPruning), and `sluice.pruning` on
//    `main`: requested fractions, per group its node, kind, counts, kept
//    units, sensitivity and why it deviates from the request, the final
//    errors, parameters and FLOPs before and after; and, beyond the
//    contract's keys, `unprunable`: the groups of the kinds asked for that
//    cannot shrink, with the reason (a residual stream, a norm, ...).
//
// Kept counts are rounded up so that a group's kept positions are a
// multiple of 8 elements (the GEMM kernels like it) where that still removes
// at least half of what was asked (PruneGroups.h, keptAfter). Every decision
// is deterministic: ties in scores and sensitivities break by position.
// When the groups raised for a spared one miss the budget, they go back to
// their request before another group is spared.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/compress/CompressGuard.h"
#include "passes/compress/PruneGroups.h"

#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <numeric>

namespace sluice {
#define GEN_PASS_DEF_PRUNEPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::prune;
using compress::fixed;
using compress::maxOf;

namespace {

/// A prunable group of a requested kind and what the guard decides for it.
struct Candidate {
  const PruneGroup *group = nullptr;
  double fraction = 0;       ///< requested for its kind
  int64_t requestedKept = 0; ///< kept units at the requested fraction
  int64_t kept = 0;          ///< kept units decided
  std::vector<double> scores;
  std::vector<int64_t> order; ///< units by ascending score (ties: position)
  double sensitivity = 0;
  bool spared = false;
  std::string reason = "as requested";

  int64_t units() const { return group->units; }
  /// Positions per unit that reach the GEMM kernels (the sinks' inner).
  int64_t inner() const { return group->sinks.empty() ? 1 : group->sinks.front().inner; }
  /// The kept units, ascending, when `count` are kept.
  std::vector<int64_t> keptUnits(int64_t count) const {
    std::vector<int64_t> keep(order.end() - count, order.end());
    std::sort(keep.begin(), keep.end());
    return keep;
  }
};

/// `value` as a person writes it (1, 0.25, -1), for messages.
std::string plain(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

struct PrunePass : public sluice::impl::PrunePassBase<PrunePass> {
  using PrunePassBase::PrunePassBase;

  void note(const std::string &line) {
    if (progress)
      llvm::errs() << "sluice-compile: prune: " << line << "\n";
  }

  double fractionOf(GroupKind kind) const {
    switch (kind) {
    case GroupKind::Heads:
      return heads;
    case GroupKind::Ffn:
      return ffn;
    case GroupKind::Channels:
      return channels;
    }
    return 0;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    Operation *anchor = func ? func.getOperation() : module.getOperation();
    for (auto [name, value] :
         {std::pair<const char *, double>{"heads", heads}, {"ffn", ffn}, {"channels", channels}})
      if (!(value >= 0 && value < 1)) {
        anchor->emitError("--prune: ")
            << name << "=" << plain(value) << " is not a fraction in [0, 1) of the units to remove";
        return signalPassFailure();
      }
    if (heads == 0 && ffn == 0 && channels == 0)
      return; // nothing asked
    if (!func) {
      module.emitError("sluice-prune: the module has no main function");
      return signalPassFailure();
    }
    if (!(budget >= 0) || !std::isfinite((double)budget)) {
      func.emitError("--accuracy-budget must be a relative error >= 0, got ") << plain(budget);
      return signalPassFailure();
    }
    if (calibration.empty()) {
      func.emitError("--prune needs --calibration=DIR: which units matter, and how much "
                     "pruning moves the outputs, come from running sample inputs "
                     "(NAME.npy per model input) through the model");
      return signalPassFailure();
    }
    if (func->hasAttr("sluice.pruning") || func->hasAttr("sluice.quantization") ||
        !func.getBody().getOps<KernelOp>().empty()) {
      func.emitError("sluice-prune: the function is already pruned, quantized or fused "
                     "(pruning comes first in the compress phase)");
      return signalPassFailure();
    }
    compress::ReferenceRun ref;
    std::string error;
    if (!compress::loadReference(func, calibration, ref, error)) {
      func.emitError(error);
      return signalPassFailure();
    }

    std::vector<PruneGroup> groups = discoverGroups(func);
    std::vector<Candidate> cands;
    for (const PruneGroup &g : groups) {
      double f = fractionOf(g.kind);
      if (f <= 0 || !g.prunable())
        continue;
      Candidate c;
      c.group = &g;
      c.fraction = f;
      cands.push_back(std::move(c));
    }
    for (GroupKind kind : {GroupKind::Heads, GroupKind::Ffn, GroupKind::Channels}) {
      if (fractionOf(kind) <= 0 ||
          llvm::any_of(cands, [&](const Candidate &c) { return c.group->kind == kind; }))
        continue;
      func.emitError(missingKindMessage(kind, groups));
      return signalPassFailure();
    }
    note(std::to_string(groups.size()) + " groups, " + std::to_string(cands.size()) +
         " to prune; scoring units on " + std::to_string(ref.sets.size()) + " calibration sets");
    if (failed(score(func, ref, cands)))
      return signalPassFailure();

    for (Candidate &c : cands) {
      c.requestedKept = keptAfter(c.units(), removedAt(c.units(), c.fraction), c.inner());
      c.kept = c.requestedKept;
    }
    std::vector<double> errors;
    if (failed(guard(func, ref, cands, errors)))
      return signalPassFailure();

    int64_t paramsBefore = compress::countParams(func), flopsBefore = compress::countFlops(func);
    std::vector<const PruneGroup *> pruned;
    std::vector<std::vector<int64_t>> kept;
    for (const Candidate &c : cands)
      if (c.kept < c.units()) {
        pruned.push_back(c.group);
        kept.push_back(c.keptUnits(c.kept));
      }
    if (maskOnly) {
      maskPruned(func, pruned, kept);
    } else if (failed(applyPruning(func, pruned, kept, nullptr, error))) {
      func.emitError(error);
      return signalPassFailure();
    }
    // Identical reshape targets and sliced parameters of the Q, K and V
    // projections become one constant each.
    OpPassManager cleanup(ModuleOp::getOperationName());
    cleanup.addPass(createCSEPass());
    if (failed(runPipeline(cleanup, module)))
      return signalPassFailure();
    writeReport(func, groups, cands, ref, errors, paramsBefore, flopsBefore);
  }

  std::string missingKindMessage(GroupKind kind, const std::vector<PruneGroup> &groups) {
    std::string why;
    for (const PruneGroup &g : groups)
      if (g.kind == kind && !g.prunable()) {
        why = " (" + compress::nodeNameOf(g.seeds.front()) + ": " + g.unprunable + ")";
        break;
      }
    switch (kind) {
    case GroupKind::Heads:
      return "--prune=heads: the model has no attention heads that can be pruned (no "
             "attention whose Q/K/V and output projections are GEMMs with constant "
             "weights)" +
             why;
    case GroupKind::Ffn:
      return "--prune=ffn: the model has no MLP hidden units that can be pruned (no GEMM "
             "with a constant weight whose outputs only reach the next such GEMM through "
             "elementwise ops)" +
             why;
    case GroupKind::Channels:
      return "--prune=channels: the model has no convolution channels that can be pruned "
             "(no convolution with constant weights whose outputs reach the next "
             "convolution or GEMM through per-channel ops only)" +
             why;
    }
    return "";
  }

  /// Unit scores from one run of the calibration sets (see the file
  /// comment); it also keeps the reference outputs.
  LogicalResult score(func::FuncOp func, compress::ReferenceRun &ref,
                      std::vector<Candidate> &cands) {
    struct Acc {
      size_t cand;
      const Sink *sink;
      std::vector<double> absSum, count;
    };
    std::vector<Acc> accs;
    llvm::DenseMap<Value, SmallVector<size_t>> observed;
    for (size_t i = 0; i < cands.size(); ++i)
      for (const Sink &s : cands[i].group->sinks) {
        observed[s.op->getOperand(0)].push_back(accs.size());
        accs.push_back({i, &s, std::vector<double>(cands[i].units(), 0.0),
                        std::vector<double>(cands[i].units(), 0.0)});
      }
    auto observe = [&](size_t, Value v, const Tensor &t) {
      auto it = observed.find(v);
      if (it == observed.end())
        return;
      for (size_t a : it->second) {
        Acc &acc = accs[a];
        int64_t axis = acc.sink->inputAxis, dim = t.dim(axis), stride = 1;
        for (int64_t d = axis + 1; d < t.rank(); ++d)
          stride *= t.dim(d);
        int64_t n = t.numElements(), inner = acc.sink->inner, units = cands[acc.cand].units();
        bool f32 = t.dtype() == DType::F32;
        for (int64_t i = 0; i < n; ++i) {
          double x = f32 ? (double)t.data<float>()[i] : t.getDouble(i);
          int64_t unit = unitAt((i / stride) % dim, units, inner);
          acc.absSum[unit] += std::fabs(x);
          acc.count[unit] += 1;
        }
      }
    };
    if (failed(compress::runReference(func, ref, observe)))
      return failure();
    for (Candidate &c : cands)
      c.scores.assign(c.units(), 0.0);
    for (Acc &acc : accs) {
      Candidate &c = cands[acc.cand];
      std::optional<Tensor> w = compress::constantTensor(acc.sink->op->getOperand(1));
      if (!w)
        return func.emitError("sluice-prune: internal error: a sink's weight is not a constant");
      std::vector<double> norm2(c.units(), 0.0);
      int64_t axis = acc.sink->weightAxis, dim = w->dim(axis), stride = 1;
      for (int64_t d = axis + 1; d < w->rank(); ++d)
        stride *= w->dim(d);
      for (int64_t i = 0; i < w->numElements(); ++i) {
        double x = w->getDouble(i);
        norm2[unitAt((i / stride) % dim, c.units(), acc.sink->inner)] += x * x;
      }
      for (int64_t u = 0; u < c.units(); ++u)
        if (acc.count[u] > 0)
          c.scores[u] += acc.absSum[u] / acc.count[u] * std::sqrt(norm2[u]);
    }
    for (Candidate &c : cands) {
      c.order.resize(c.units());
      std::iota(c.order.begin(), c.order.end(), 0);
      std::stable_sort(c.order.begin(), c.order.end(),
                       [&](int64_t a, int64_t b) { return c.scores[a] < c.scores[b]; });
    }
    return success();
  }

  /// The outputs' errors with every candidate at `keptOf(i)` kept units.
  LogicalResult measure(func::FuncOp func, const compress::ReferenceRun &ref,
                        const std::vector<Candidate> &cands,
                        llvm::function_ref<int64_t(size_t)> keptOf, std::vector<double> &errors) {
    compress::ScratchBlobs scratch; // outlives the copy, released after it
    IRMapping mapping;
    OwningOpRef<func::FuncOp> copy(cast<func::FuncOp>(func->clone(mapping)));
    std::vector<PruneGroup> mapped;
    mapped.reserve(cands.size());
    std::vector<const PruneGroup *> groups;
    std::vector<std::vector<int64_t>> kept;
    for (size_t i = 0; i < cands.size(); ++i) {
      int64_t k = keptOf(i);
      if (k >= cands[i].units())
        continue;
      mapped.push_back(mapGroup(*cands[i].group, mapping));
      groups.push_back(&mapped.back());
      kept.push_back(cands[i].keptUnits(k));
    }
    if (groups.empty()) {
      errors.assign(ref.outputNames.size(), 0.0);
      return success();
    }
    std::string error;
    if (failed(applyPruning(*copy, groups, kept, &scratch, error)))
      return func.emitError(error);
    return compress::measureErrors(*copy, ref, errors);
  }

  /// Hands the units the spared groups of each kind would have lost to the
  /// least sensitive unspared groups of that kind; whether any took some.
  bool redistribute(std::vector<Candidate> &cands) {
    bool raised = false;
    for (GroupKind kind : {GroupKind::Heads, GroupKind::Ffn, GroupKind::Channels}) {
      int64_t left = 0;
      std::vector<size_t> open;
      for (size_t i = 0; i < cands.size(); ++i) {
        Candidate &c = cands[i];
        if (c.group->kind != kind)
          continue;
        if (c.spared) {
          left += c.units() - c.requestedKept;
          continue;
        }
        c.kept = c.requestedKept;
        c.reason = "as requested";
        open.push_back(i);
      }
      std::stable_sort(open.begin(), open.end(), [&](size_t a, size_t b) {
        return cands[a].sensitivity < cands[b].sensitivity;
      });
      for (size_t i : open) {
        if (left <= 0)
          break;
        Candidate &c = cands[i];
        int64_t cap = std::min({removedAt(c.units(), 2 * c.fraction),
                                (int64_t)std::floor(0.9 * (double)c.units()), c.units() - 1});
        int64_t removed = c.units() - c.requestedKept;
        int64_t extra = std::min(left, cap - removed);
        if (extra <= 0)
          continue;
        int64_t kept = keptAfter(c.units(), removed + extra, c.inner());
        if (kept >= c.requestedKept)
          continue;
        left -= c.requestedKept - kept;
        c.kept = kept;
        raised = true;
        c.reason = "raised to keep the total: " + std::to_string(c.units() - kept) + " of " +
                   std::to_string(c.units()) + " removed instead of " + std::to_string(removed) +
                   " for the spared groups";
      }
    }
    return raised;
  }

  LogicalResult guard(func::FuncOp func, const compress::ReferenceRun &ref,
                      std::vector<Candidate> &cands, std::vector<double> &errors) {
    // Each group alone: independent trials, run in parallel where the
    // context allows threads (each clones the function).
    std::mutex notes;
    if (failed(failableParallelForEachN(
            func.getContext(), 0, cands.size(), [&](size_t i) -> LogicalResult {
              Candidate &c = cands[i];
              std::vector<double> alone;
              if (failed(measure(
                      func, ref, cands,
                      [&](size_t j) { return j == i ? c.requestedKept : cands[j].units(); },
                      alone)))
                return failure();
              c.sensitivity = maxOf(alone);
              std::lock_guard<std::mutex> lock(notes);
              note("sensitivity " + std::to_string(i + 1) + "/" + std::to_string(cands.size()) +
                   " " + kindName(c.group->kind) + " " +
                   compress::nodeNameOf(c.group->seeds.front()) + " (" +
                   std::to_string(c.units() - c.requestedKept) + " of " +
                   std::to_string(c.units()) + " removed): " + fixed(c.sensitivity));
              return success();
            })))
      return failure();
    auto measureAll = [&]() {
      if (failed(measure(
              func, ref, cands, [&](size_t j) { return cands[j].kept; }, errors)))
        return false;
      note("output error " + fixed(maxOf(errors)) + " (budget " + fixed(budget) + ")");
      return true;
    };
    if (!measureAll())
      return failure();
    while (maxOf(errors) > budget) {
      Candidate *worst = nullptr;
      for (Candidate &c : cands)
        if (!c.spared && c.kept < c.units() && (!worst || c.sensitivity > worst->sensitivity))
          worst = &c;
      if (!worst)
        return success(); // nothing pruned: the error is the evaluator's noise
      worst->spared = true;
      worst->kept = worst->units();
      worst->reason = "spared: most sensitive (error " + fixed(worst->sensitivity) + " alone)";
      note("spared " + compress::nodeNameOf(worst->group->seeds.front()) + ": " + worst->reason);
      bool raised = redistribute(cands);
      if (!measureAll())
        return failure();
      if (maxOf(errors) <= budget || !raised)
        continue;
      // The raised groups miss the budget: the others at their request,
      // before sparing more (the total is kept where the budget allows it).
      for (Candidate &c : cands)
        if (!c.spared && c.kept != c.requestedKept) {
          c.kept = c.requestedKept;
          c.reason = "as requested";
        }
      note("without raising the others");
      if (!measureAll())
        return failure();
    }
    return success();
  }

  void writeReport(func::FuncOp func, const std::vector<PruneGroup> &groups,
                   const std::vector<Candidate> &cands, const compress::ReferenceRun &ref,
                   const std::vector<double> &errors, int64_t paramsBefore, int64_t flopsBefore) {
    Builder b(func.getContext());
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
    SmallVector<NamedAttribute> top;
    top.push_back(b.getNamedAttr(
        "requested",
        b.getDictionaryAttr({b.getNamedAttr("heads", f64(heads)), b.getNamedAttr("ffn", f64(ffn)),
                             b.getNamedAttr("channels", f64(channels))})));
    top.push_back(b.getNamedAttr("budget", f64(budget)));
    top.push_back(b.getNamedAttr("calibration_sets", i64(ref.sets.size())));
    SmallVector<Attribute> outs;
    for (size_t o = 0; o < errors.size() && o < ref.outputNames.size(); ++o)
      outs.push_back(
          b.getDictionaryAttr({b.getNamedAttr("name", b.getStringAttr(ref.outputNames[o])),
                               b.getNamedAttr("error", f64(errors[o]))}));
    top.push_back(b.getNamedAttr("outputs", b.getArrayAttr(outs)));
    // The groups of the kinds asked for: what the guard decided for each
    // candidate, and why the others cannot shrink.
    SmallVector<Attribute> layers, unprunable;
    for (const PruneGroup &g : groups) {
      double requested = fractionOf(g.kind);
      if (requested <= 0)
        continue;
      std::string node = compress::nodeNameOf(g.seeds.front());
      const Candidate *c = nullptr;
      for (const Candidate &cand : cands)
        if (cand.group == &g)
          c = &cand;
      if (!c) {
        unprunable.push_back(
            b.getDictionaryAttr({b.getNamedAttr("node", b.getStringAttr(node)),
                                 b.getNamedAttr("kind", b.getStringAttr(kindName(g.kind))),
                                 b.getNamedAttr("reason", b.getStringAttr(g.unprunable))}));
        continue;
      }
      SmallVector<NamedAttribute> e;
      e.push_back(b.getNamedAttr("node", b.getStringAttr(node)));
      e.push_back(b.getNamedAttr("kind", b.getStringAttr(kindName(g.kind))));
      e.push_back(b.getNamedAttr("original", i64(g.units)));
      e.push_back(b.getNamedAttr("kept", i64(c->kept)));
      e.push_back(b.getNamedAttr("requested_fraction", f64(requested)));
      e.push_back(b.getNamedAttr("fraction", f64(1.0 - (double)c->kept / (double)g.units)));
      e.push_back(b.getNamedAttr("sensitivity", f64(c->sensitivity)));
      SmallVector<Attribute> units;
      for (int64_t u : c->keptUnits(c->kept))
        units.push_back(i64(u));
      e.push_back(b.getNamedAttr("kept_units", b.getArrayAttr(units)));
      e.push_back(b.getNamedAttr("reason", b.getStringAttr(c->reason)));
      layers.push_back(b.getDictionaryAttr(e));
    }
    top.push_back(b.getNamedAttr("layers", b.getArrayAttr(layers)));
    top.push_back(b.getNamedAttr("unprunable", b.getArrayAttr(unprunable)));
    top.push_back(b.getNamedAttr("params_before", i64(paramsBefore)));
    top.push_back(b.getNamedAttr("params_after", i64(compress::countParams(func))));
    top.push_back(b.getNamedAttr("flops_before", i64(flopsBefore)));
    top.push_back(b.getNamedAttr("flops_after", i64(compress::countFlops(func))));
    func->setAttr("sluice.pruning", b.getDictionaryAttr(top));
  }
};

} // namespace
