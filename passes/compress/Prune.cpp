//===- Prune.cpp - structured pruning guarded by calibration data ---------===//
//
// The compress phase's `--prune=heads=F,ffn=F,channels=F` (docs/pruning.md): whole
// attention heads, MLP hidden units and convolution output channels leave
// `main`, so that weights, GEMM shapes and FLOPs shrink (nothing runs on
// zeros). Which dimensions must shrink together is PruneGroups.h's
// business; this file decides how much of each group goes, from data:
//
// 1. Importance: the calibration sets run through the reference evaluator
//    on the unpruned function; a unit's score is, summed over the group's
//    sinks (the GEMMs / convolutions that consume the unit) and the unit's
//    positions p, ||x_p|| * ||W_p||: the root mean square of the activation
//    the sink reads there times the L2 norm of the sink's weights for it.
//    For heads that is the head's output norm weighted by the output
//    projection; for an MLP the hidden activation's magnitude times the
//    outgoing weight norm. The same run records each position's mean: a
//    removed unit's average contribution moves into the sink's bias
//    (FLAP's compensation, compensate()), so that what is lost is only how
//    the unit varied.
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

namespace {

/// A prunable group of a requested kind and what the guard decides for it.
struct Candidate {
  const PruneGroup *group = nullptr;
  double fraction = 0;       ///< requested for its kind
  int64_t requestedKept = 0; ///< kept units at the requested fraction
  int64_t kept = 0;          ///< kept units decided
  std::vector<double> scores;
  std::vector<int64_t> order; ///< units by ascending score (ties: position)
  /// Per sink (the group's order), the mean over the calibration sets of
  /// the activation it reads at every position of its input axis: what a
  /// removed unit contributes on average, which compensate() moves into
  /// the sink's bias.
  std::vector<std::vector<double>> sinkMeans;
  double sensitivity = 0;   ///< the worst output error with it alone pruned
  double sensitivityL2 = 0; ///< its relative L2 (ties of `sensitivity`)
  bool spared = false;
  std::string reason = "as requested";

  int64_t units() const { return group->units; }
  /// Whether pruning this group alone hurts more than `other` alone.
  bool moreSensitiveThan(const Candidate &other) const {
    if (sensitivity != other.sensitivity)
      return sensitivity > other.sensitivity;
    return sensitivityL2 > other.sensitivityL2;
  }
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

/// FLAP's bias compensation: a removed unit's average contribution to each
/// sink's output, sum over its positions p of mean(x_p) * W_p, moves into
/// the sink's bias (a GEMM's: the constant of the `add` that alone uses its
/// result; a convolution's: its bias operand; padding borders, where a
/// convolution reads zeros, are not corrected). Sinks without a constant
/// bias keep the plain removal. Runs before applyPruning (or maskPruned),
/// on the weights as they are: every delta is computed before any is
/// applied, since a sink's weight may also be sliced by another group.
void compensate(ArrayRef<const PruneGroup *> groups, ArrayRef<std::vector<int64_t>> kept,
                ArrayRef<const std::vector<std::vector<double>> *> means,
                compress::ScratchBlobs *scratch) {
  // (user, operand) of each bias to correct, and its delta per output.
  std::vector<std::pair<std::pair<Operation *, unsigned>, std::vector<double>>> fixes;
  for (size_t g = 0; g < groups.size(); ++g) {
    const PruneGroup &group = *groups[g];
    std::vector<bool> keep(group.units, false);
    for (int64_t u : kept[g])
      keep[u] = true;
    for (size_t k = 0; k < group.sinks.size() && k < means[g]->size(); ++k) {
      const Sink &s = group.sinks[k];
      const std::vector<double> &mean = (*means[g])[k];
      std::optional<Tensor> w = compress::constantTensor(s.op->getOperand(1));
      if (!w || mean.empty() || w->dim(s.weightAxis) != (int64_t)mean.size())
        continue;
      // Where the bias is: the convolution's operand 2, or the constant
      // operand of the add that alone consumes the GEMM's result.
      bool conv = isa<ConvOp>(s.op);
      int64_t outAxis = conv ? 0 : w->rank() - 1, outs = w->dim(outAxis);
      std::pair<Operation *, unsigned> bias{nullptr, 0};
      if (conv) {
        if (s.op->getNumOperands() > 2 && compress::constantTensor(s.op->getOperand(2)))
          bias = {s.op, 2};
      } else if (s.op->getResult(0).hasOneUse()) {
        Operation *user = *s.op->getResult(0).getUsers().begin();
        if (isa<AddOp>(user))
          for (unsigned i = 0; i < 2; ++i) {
            std::optional<Tensor> t = compress::constantTensor(user->getOperand(i));
            if (user->getOperand(i) != s.op->getResult(0) && t && t->rank() >= 1 &&
                t->dim(t->rank() - 1) == outs && t->numElements() == outs)
              bias = {user, i};
          }
      }
      if (!bias.first)
        continue;
      int64_t dim = w->dim(s.weightAxis), stride = 1, outStride = 1;
      for (int64_t d = s.weightAxis + 1; d < w->rank(); ++d)
        stride *= w->dim(d);
      for (int64_t d = outAxis + 1; d < w->rank(); ++d)
        outStride *= w->dim(d);
      std::vector<double> delta(outs, 0.0);
      for (int64_t i = 0; i < w->numElements(); ++i) {
        int64_t p = (i / stride) % dim;
        if (!keep[unitAt(p, group.units, s.inner)])
          delta[(i / outStride) % outs] += mean[p] * w->getDouble(i);
      }
      fixes.push_back({bias, std::move(delta)});
    }
  }
  for (auto &[where, delta] : fixes) {
    auto [user, operand] = where;
    Value old = user->getOperand(operand);
    std::optional<Tensor> t = compress::constantTensor(old);
    Tensor fixed = Tensor::copyOf(t->dtype(), t->shape(), t->rawData());
    for (int64_t i = 0; i < fixed.numElements(); ++i)
      fixed.setDouble(i, fixed.getDouble(i) + delta[i]);
    OpBuilder b(user);
    user->setOperand(operand, compress::makeConstant(b, old.getLoc(), fixed, scratch));
  }
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
    if (!compress::loadReference(func, calibration, ref, error) ||
        !compress::resolveAccuracy(func, metric, budget, ref, error)) {
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
    compress::OutputErrors errors;
    if (failed(guard(func, ref, cands, errors)))
      return signalPassFailure();
    warnIfShort(func, cands, ref);

    int64_t paramsBefore = compress::countParams(func), flopsBefore = compress::countFlops(func);
    std::vector<const PruneGroup *> pruned;
    std::vector<std::vector<int64_t>> kept;
    std::vector<const std::vector<std::vector<double>> *> means;
    for (const Candidate &c : cands)
      if (c.kept < c.units()) {
        pruned.push_back(c.group);
        kept.push_back(c.keptUnits(c.kept));
        means.push_back(&c.sinkMeans);
      }
    compensate(pruned, kept, means, nullptr);
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
    // Per sink input, per position p of its axis: the sum and the sum of
    // squares of the activation over every other position and every set.
    struct Acc {
      size_t cand, sinkIndex;
      const Sink *sink;
      std::vector<double> sum, sumSq;
      double perPosition = 0; ///< elements summed into each position
    };
    std::vector<Acc> accs;
    llvm::DenseMap<Value, SmallVector<size_t>> observed;
    for (size_t i = 0; i < cands.size(); ++i)
      for (size_t k = 0; k < cands[i].group->sinks.size(); ++k) {
        const Sink &s = cands[i].group->sinks[k];
        observed[s.op->getOperand(0)].push_back(accs.size());
        accs.push_back({i, k, &s, {}, {}, 0});
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
        int64_t n = t.numElements();
        acc.sum.resize(dim, 0.0);
        acc.sumSq.resize(dim, 0.0);
        acc.perPosition += (double)n / (double)dim;
        bool f32 = t.dtype() == DType::F32;
        for (int64_t i = 0; i < n; ++i) {
          double x = f32 ? (double)t.data<float>()[i] : t.getDouble(i);
          int64_t p = (i / stride) % dim;
          acc.sum[p] += x;
          acc.sumSq[p] += x * x;
        }
      }
    };
    if (failed(compress::runReference(func, ref, observe)))
      return failure();
    for (Candidate &c : cands) {
      c.scores.assign(c.units(), 0.0);
      c.sinkMeans.assign(c.group->sinks.size(), {});
    }
    // A unit's score: sum over its positions p of ||x_p|| * ||W_p|| (the
    // root mean square of the activation the sink reads there times the L2
    // norm of the sink's weights for it; Wanda's activation-aware measure
    // at unit granularity). Its mean contribution is kept as a bias
    // (compensate). Measured on the digits task (docs/pruning.md), this
    // picked better units than FLAP's fluctuation (the variance instead of
    // the mean square) for heads, as well for conv channels, and the mean
    // |x| the first version used lost more on both.
    for (Acc &acc : accs) {
      Candidate &c = cands[acc.cand];
      std::optional<Tensor> w = compress::constantTensor(acc.sink->op->getOperand(1));
      if (!w)
        return func.emitError("sluice-prune: internal error: a sink's weight is not a constant");
      int64_t axis = acc.sink->weightAxis, dim = w->dim(axis), stride = 1;
      if (acc.perPosition <= 0 || (int64_t)acc.sum.size() != dim)
        continue; // never computed (dead code), or shapes that disagree
      std::vector<double> norm2(dim, 0.0);
      for (int64_t d = axis + 1; d < w->rank(); ++d)
        stride *= w->dim(d);
      for (int64_t i = 0; i < w->numElements(); ++i) {
        double x = w->getDouble(i);
        norm2[(i / stride) % dim] += x * x;
      }
      std::vector<double> &mean = c.sinkMeans[acc.sinkIndex];
      mean.assign(dim, 0.0);
      for (int64_t p = 0; p < dim; ++p) {
        mean[p] = acc.sum[p] / acc.perPosition;
        c.scores[unitAt(p, c.units(), acc.sink->inner)] +=
            std::sqrt(acc.sumSq[p] / acc.perPosition * norm2[p]);
      }
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
                        llvm::function_ref<int64_t(size_t)> keptOf,
                        compress::OutputErrors &errors) {
    compress::ScratchBlobs scratch; // outlives the copy, released after it
    IRMapping mapping;
    OwningOpRef<func::FuncOp> copy(cast<func::FuncOp>(func->clone(mapping)));
    std::vector<PruneGroup> mapped;
    mapped.reserve(cands.size());
    std::vector<const PruneGroup *> groups;
    std::vector<std::vector<int64_t>> kept;
    std::vector<const std::vector<std::vector<double>> *> means;
    for (size_t i = 0; i < cands.size(); ++i) {
      int64_t k = keptOf(i);
      if (k >= cands[i].units())
        continue;
      mapped.push_back(mapGroup(*cands[i].group, mapping));
      groups.push_back(&mapped.back());
      kept.push_back(cands[i].keptUnits(k));
      means.push_back(&cands[i].sinkMeans);
    }
    if (groups.empty()) {
      errors = compress::noErrors(ref);
      return success();
    }
    compensate(groups, kept, means, &scratch);
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
      std::stable_sort(open.begin(), open.end(),
                       [&](size_t a, size_t b) { return cands[b].moreSensitiveThan(cands[a]); });
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
                      std::vector<Candidate> &cands, compress::OutputErrors &errors) {
    // Each group alone: independent trials, run in parallel where the
    // context allows threads (each clones the function).
    std::mutex notes;
    if (failed(failableParallelForEachN(
            func.getContext(), 0, cands.size(), [&](size_t i) -> LogicalResult {
              Candidate &c = cands[i];
              compress::OutputErrors alone;
              if (failed(measure(
                      func, ref, cands,
                      [&](size_t j) { return j == i ? c.requestedKept : cands[j].units(); },
                      alone)))
                return failure();
              c.sensitivity = alone.worst();
              c.sensitivityL2 = alone.worstRelL2();
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
      note("output error " + compress::describeBudget(ref, errors.worst()) + " (budget " +
           compress::describeBudget(ref, ref.budget) + ")");
      return true;
    };
    if (!measureAll())
      return failure();
    requestError = errors.worst();
    while (errors.worst() > ref.budget) {
      Candidate *worst = nullptr;
      for (Candidate &c : cands)
        if (!c.spared && c.kept < c.units() && (!worst || c.moreSensitiveThan(*worst)))
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
      if (errors.worst() <= ref.budget || !raised)
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

  /// The worst output error with every group at its request (the budget
  /// that would allow the request), measured by guard().
  double requestError = 0;

  /// Per kind asked for, the fraction of its prunable units removed.
  std::vector<std::pair<GroupKind, double>> achieved(const std::vector<Candidate> &cands) const {
    std::vector<std::pair<GroupKind, double>> out;
    for (GroupKind kind : {GroupKind::Heads, GroupKind::Ffn, GroupKind::Channels}) {
      int64_t units = 0, removed = 0;
      for (const Candidate &c : cands)
        if (c.group->kind == kind) {
          units += c.units();
          removed += c.units() - c.kept;
        }
      if (fractionOf(kind) > 0 && units > 0)
        out.push_back({kind, (double)removed / (double)units});
    }
    return out;
  }

  /// One warning line when the guard removed less than half of what was
  /// asked of a kind: the request, what was done, the largest error of one
  /// group alone and the budget that would allow the request.
  void warnIfShort(func::FuncOp func, const std::vector<Candidate> &cands,
                   const compress::ReferenceRun &ref) {
    std::string asked, done;
    bool shortOfHalf = false;
    for (auto [kind, fraction] : achieved(cands)) {
      shortOfHalf |= fraction < fractionOf(kind) / 2;
      asked +=
          std::string(asked.empty() ? "" : ",") + kindName(kind) + "=" + plain(fractionOf(kind));
      done += std::string(done.empty() ? "" : ",") + kindName(kind) + "=" + fixed(fraction, 3);
    }
    if (!shortOfHalf)
      return;
    const Candidate *worst = nullptr;
    for (const Candidate &c : cands)
      if (!worst || c.moreSensitiveThan(*worst))
        worst = &c;
    func.emitWarning() << "--prune=" << asked << " removed only " << done
                       << " within --accuracy-budget=" << fixed(ref.budget)
                       << " (--accuracy-metric=" << quant::accuracyMetricName(ref.metric)
                       << "): the largest error of one group alone is "
                       << fixed(worst ? worst->sensitivity : 0) << " ("
                       << (worst ? compress::nodeNameOf(worst->group->seeds.front()) : "")
                       << "); --accuracy-budget=" << fixed(requestError)
                       << " would allow the request";
  }

  void writeReport(func::FuncOp func, const std::vector<PruneGroup> &groups,
                   const std::vector<Candidate> &cands, const compress::ReferenceRun &ref,
                   const compress::OutputErrors &errors, int64_t paramsBefore,
                   int64_t flopsBefore) {
    Builder b(func.getContext());
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
    SmallVector<NamedAttribute> top;
    top.push_back(b.getNamedAttr(
        "requested",
        b.getDictionaryAttr({b.getNamedAttr("heads", f64(heads)), b.getNamedAttr("ffn", f64(ffn)),
                             b.getNamedAttr("channels", f64(channels))})));
    // The share of each kind's units asked for and removed (the prunable
    // groups': the unprunable ones are listed apart).
    SmallVector<NamedAttribute> asked, done;
    for (auto [kind, fraction] : achieved(cands)) {
      asked.push_back(b.getNamedAttr(kindName(kind), f64(fractionOf(kind))));
      done.push_back(b.getNamedAttr(kindName(kind), f64(fraction)));
    }
    top.push_back(b.getNamedAttr("asked_fraction", b.getDictionaryAttr(asked)));
    top.push_back(b.getNamedAttr("achieved_fraction", b.getDictionaryAttr(done)));
    top.push_back(b.getNamedAttr("metric", b.getStringAttr(quant::accuracyMetricName(ref.metric))));
    top.push_back(b.getNamedAttr("budget", f64(ref.budget)));
    top.push_back(b.getNamedAttr("request_error", f64(requestError)));
    top.push_back(b.getNamedAttr("calibration_sets", i64(ref.sets.size())));
    SmallVector<Attribute> outs;
    for (size_t o = 0; o < errors.values.size() && o < ref.outputNames.size(); ++o)
      outs.push_back(
          b.getDictionaryAttr({b.getNamedAttr("name", b.getStringAttr(ref.outputNames[o])),
                               b.getNamedAttr("error", f64(errors.values[o])),
                               b.getNamedAttr("rel_l2", f64(errors.relL2[o]))}));
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
      e.push_back(b.getNamedAttr("sensitivity_rel_l2", f64(c->sensitivityL2)));
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
