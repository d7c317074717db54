//===- ExpertParallel.cpp - experts spread over the ranks (--ep) ----------===//
//
// Expert parallelism for inference, after the MoE systems (GShard, Megatron
// Core's MoE layer, DeepSpeed-MoE): with `--ep=N` every `sluice.moe` keeps
// E/N of its E experts on each rank, and the ranks combine what each
// computed. The rest of the program is replicated (pure ep: the world is
// the N expert ranks).
//
// The exchange. The tokens and the router's logits are computed by the
// replicated part of the program, so every rank already holds every token
// and its routing: dispatching them is a local selection (the kernel takes
// the tokens routed to this rank's experts), and the combine is one
// all_reduce of the op's partial output (each token's weighted expert
// outputs live on the ranks that own its experts; every other rank adds
// zero). This is Megatron Core's "allgather" token dispatcher with the
// all-gather already done. Against an all-to-all dispatch and combine it
// moves 2 (N-1)/N x tokens x D_out bytes per rank (a ring all_reduce)
// instead of 2 (N-1)/N x top_k x tokens x D, so with top-2 routing it moves
// less, and it needs no capacity factor: no token is dropped and the result
// equals the single device's. docs/parallel.md, "Expert parallelism".
//
// The rewrite per op: the stacked expert weights w1 [E, D, F], b1 [E, F],
// w2 [E, F, Do], b2 [E, Do] (and a gated expert's w3 [E, D, F], b3 [E, F])
// become `sluice.shard_constant`s split along the expert axis, the op gets
// `expert_offset` (a shard constant: rank r holds experts
// [r E/N, (r+1) E/N)), and its result goes through `all_reduce`.
// `main` records `sluice.ep` and the list of MoE layers (`sluice.moe`)
// that the compile report prints as "moe".
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Locations.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace sluice {
#define GEN_PASS_DEF_EXPERTPARALLELPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace {

struct ExpertParallelPass : public ::sluice::impl::ExpertParallelPassBase<ExpertParallelPass> {
  using ExpertParallelPassBase::ExpertParallelPassBase;

  /// Rank r's block of the stacked weight `v` along the expert axis, or a
  /// null value (after an error on `op`) when `v` is not a constant.
  Value shardExperts(OpBuilder &b, MoeOp op, Value v, const char *what) {
    auto constant = v.getDefiningOp<ConstantOp>();
    if (!constant) {
      op.emitOpError() << "--ep=" << (int64_t)ep << ": the experts' " << what
                       << " is computed, not a weight; expert parallelism splits stacked "
                          "constant weights";
      return {};
    }
    auto type = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] /= ep;
    return ShardConstantOp::create(b, v.getLoc(), type.clone(shape), constant.getValue(),
                                   b.getI64IntegerAttr(0), b.getI64IntegerAttr(ep),
                                   b.getI64IntegerAttr(1));
  }

  LogicalResult distribute(MoeOp op, SmallVectorImpl<Attribute> &layers) {
    int64_t experts = op.getExperts();
    if (op.getExpertOffset())
      return op.emitOpError() << "--ep=" << (int64_t)ep
                              << ": this moe already holds only some experts";
    if (experts % ep != 0)
      return op.emitOpError() << "--ep=" << (int64_t)ep << " does not divide the " << experts
                              << " experts of this moe (give a divisor of " << experts << ")";
    int64_t stacked = cast<RankedTensorType>(op.getW1().getType()).getDimSize(0);
    if (stacked != experts)
      return op.emitOpError() << "--ep=" << (int64_t)ep << ": w1 stacks " << stacked
                              << " experts, the op "
                              << "says " << experts;
    OpBuilder b(op);
    Value w1 = shardExperts(b, op, op.getW1(), "first weight (w1)");
    Value w2 = shardExperts(b, op, op.getW2(), "second weight (w2)");
    if (!w1 || !w2)
      return failure();
    Value b1, b2, w3, b3;
    if (op.getB1() && !(b1 = shardExperts(b, op, op.getB1(), "first bias (b1)")))
      return failure();
    if (op.getB2() && !(b2 = shardExperts(b, op, op.getB2(), "second bias (b2)")))
      return failure();
    if (op.getW3() && !(w3 = shardExperts(b, op, op.getW3(), "up projection (w3)")))
      return failure();
    if (op.getB3() && !(b3 = shardExperts(b, op, op.getB3(), "up projection's bias (b3)")))
      return failure();
    int64_t local = experts / ep;
    SmallVector<int64_t> offsets;
    for (int64_t r = 0; r < ep; ++r)
      offsets.push_back(r * local);
    auto i64 = b.getI64Type();
    Value offset = ShardConstantOp::create(
        b, op.getLoc(), RankedTensorType::get({1}, i64),
        DenseElementsAttr::get(RankedTensorType::get({ep}, i64), ArrayRef<int64_t>(offsets)),
        b.getI64IntegerAttr(0), b.getI64IntegerAttr(ep), b.getI64IntegerAttr(1));
    op.getW1Mutable().assign(w1);
    op.getW2Mutable().assign(w2);
    if (b1)
      op.getB1Mutable().assign(b1);
    if (b2)
      op.getB2Mutable().assign(b2);
    if (w3)
      op.getW3Mutable().assign(w3);
    if (b3)
      op.getB3Mutable().assign(b3);
    op.getExpertOffsetMutable().assign(offset);

    // The combine: every rank's partial output summed over the ranks.
    b.setInsertionPointAfter(op);
    Value partial = op.getResult();
    auto sum =
        AllReduceOp::create(b, op.getLoc(), partial.getType(), partial, b.getI64IntegerAttr(ep));
    partial.replaceAllUsesExcept(sum.getResult(), sum);

    layers.push_back(describe(op, local));
    return success();
  }

  /// The report's entry for one MoE layer.
  static DictionaryAttr describe(MoeOp op, int64_t expertsPerRank) {
    Builder b(op.getContext());
    return b.getDictionaryAttr({
        b.getNamedAttr("node", b.getStringAttr(firstNodeName(op))),
        b.getNamedAttr("experts", b.getI64IntegerAttr(op.getExperts())),
        b.getNamedAttr("top_k", b.getI64IntegerAttr(op.getTopK())),
        b.getNamedAttr("gating", op.getGatingAttr()),
        b.getNamedAttr("experts_per_rank", b.getI64IntegerAttr(expertsPerRank)),
    });
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (ep < 1) {
      func.emitError() << "--ep must be at least 1, got " << (int64_t)ep;
      return signalPassFailure();
    }
    SmallVector<MoeOp> ops;
    func.walk([&](MoeOp op) { ops.push_back(op); });
    Builder b(func.getContext());
    if (ep == 1) {
      // One device: only the list of MoE layers, for the report.
      SmallVector<Attribute> layers;
      for (MoeOp op : ops)
        layers.push_back(describe(op, op.getExperts()));
      if (!layers.empty())
        func->setAttr("sluice.moe", b.getArrayAttr(layers));
      return;
    }
    if (func->hasAttr("sluice.tp") || func->hasAttr("sluice.pp")) {
      func.emitError() << "--ep combines with neither --tp nor --pp yet";
      return signalPassFailure();
    }
    if (ops.empty()) {
      func.emitError() << "--ep=" << (int64_t)ep
                       << ": the model has no mixture-of-experts layer (no sluice.moe after the "
                          "recognize phase: a learned top-k router over experts with constant "
                          "weights, or experts gathered by an index); expert parallelism has "
                          "nothing to split";
      return signalPassFailure();
    }
    SmallVector<Attribute> layers;
    for (MoeOp op : ops)
      if (failed(distribute(op, layers)))
        return signalPassFailure();
    func->setAttr("sluice.ep", b.getI64IntegerAttr(ep));
    func->setAttr("sluice.moe", b.getArrayAttr(layers));
  }
};

} // namespace
