//===- AttentionPlan.cpp - form F4's plan, shared by cpu and cuda ---------===//
//
// Resolves the views around one sluice.attention into pointers and strides
// (AttentionPlan.h). The checks here are the form's: anything a target
// cannot do beyond them (an element type, a head dim) is the target's call.
//
//===----------------------------------------------------------------------===//

#include "lib/kernel/AttentionPlan.h"

#include "lib/kernel/Groups.h"

using namespace mlir;

namespace sluice::kernel {

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

} // namespace


FailureOr<AttentionPlan>
planAttentionGroup(KernelOp kernel,
                   const std::function<FailureOr<std::string>(const StridedView &)> &leafPointer,
                   llvm::StringRef target) {
  const std::string pre = (target + " target: ").str();
  GroupOps parts = splitGroupOps(kernel, [](Operation *op) { return isa<AttentionOp>(op); });
  KernelYieldOp yield = parts.yield;
  if (!parts.before.empty() || !parts.after.empty())
    return (parts.before.empty() ? parts.after : parts.before)
        .front()
        ->emitOpError(pre + "an attention group holds only view ops around one "
                            "sluice.attention (form F4)");
  auto attn = dyn_cast_or_null<AttentionOp>(parts.anchor);
  if (!attn)
    return kernel.emitOpError(pre + "no sluice.attention in an attention group");
  if (yield.getValues().size() != 1 || stripOutputViews(yield.getValues()[0]) != attn.getResult())
    return kernel.emitOpError(pre + "an attention group yields exactly the attention "
                                    "result (through transposes/reshapes)");
  for (Value v : attn->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return attn.emitOpError(pre + "attention needs static shapes");

  AttentionPlan plan;
  plan.op = attn;
  ArrayRef<int64_t> qShape = shapeOf(attn.getQuery());
  int64_t rank = qShape.size();
  if (rank < 2)
    return attn.emitOpError(pre + "attention operands need rank >= 2");
  plan.batch.assign(qShape.begin(), qShape.end() - 2);
  if (plan.batch.size() > kAttentionMaxBatch)
    return attn.emitOpError(pre + "attention with more than ")
           << kAttentionMaxBatch << " batch dims";
  plan.sq = qShape[rank - 2];
  plan.d = qShape[rank - 1];
  ArrayRef<int64_t> kShape = shapeOf(attn.getKey()), vShape = shapeOf(attn.getValue());
  if ((int64_t)kShape.size() != rank || (int64_t)vShape.size() != rank)
    return attn.emitOpError(pre + "query, key and value need one rank");
  plan.sk = kShape[rank - 2];
  plan.dv = vShape[rank - 1];
  auto space = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> s = plan.batch;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  };

  // Reads an operand through its view, broadcast to `space`.
  auto access = [&](Value operand, ArrayRef<int64_t> space,
                    const char *what) -> FailureOr<Access> {
    auto view = resolveView(operand);
    if (failed(view))
      return failure();
    auto ptr = leafPointer(*view);
    if (failed(ptr))
      return failure();
    auto strides = broadcastStridesTo(shapeOf(operand), view->strides, space);
    if (failed(strides))
      return attn.emitOpError(pre + "attention ")
             << what << " does not broadcast to its index space";
    return Access{*ptr, 0, *strides};
  };
  auto q = access(attn.getQuery(), space(plan.sq, plan.d), "query");
  auto k = access(attn.getKey(), space(plan.sk, plan.d), "key");
  auto v = access(attn.getValue(), space(plan.sk, plan.dv), "value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  plan.q = *q;
  plan.k = *k;
  plan.v = *v;
  plan.elementType = elementOf(attn.getQuery());
  plan.mask = Access{"nullptr", 0, std::vector<int64_t>(rank, 0)};
  plan.maskType = plan.elementType;
  if (Value m = attn.getMask()) {
    auto a = access(m, space(plan.sq, plan.sk), "mask");
    if (failed(a))
      return failure();
    plan.mask = *a;
    plan.maskType = elementOf(m);
    plan.maskKind = elementOf(m).isInteger(1) ? 2 : 1;
  }
  plan.cosQ = Access{"nullptr", 0, std::vector<int64_t>(rank, 0)};
  plan.sinQ = plan.cosK = plan.sinK = plan.cosQ;
  plan.rotaryType = plan.elementType;
  if (attn.getRotaryCos()) {
    if (elementOf(attn.getRotaryCos()) != elementOf(attn.getRotarySin()))
      return attn.emitOpError(pre + "rotary cos and sin of different element types");
    auto cq = access(attn.getRotaryCos(), space(plan.sq, plan.d), "rotary cos");
    auto sq_ = access(attn.getRotarySin(), space(plan.sq, plan.d), "rotary sin");
    auto ck = access(attn.getRotaryCos(), space(plan.sk, plan.d), "rotary cos");
    auto sk_ = access(attn.getRotarySin(), space(plan.sk, plan.d), "rotary sin");
    if (failed(cq) || failed(sq_) || failed(ck) || failed(sk_))
      return failure();
    plan.cosQ = *cq;
    plan.sinQ = *sq_;
    plan.cosK = *ck;
    plan.sinK = *sk_;
    plan.rotary = true;
    plan.rotaryType = elementOf(attn.getRotaryCos());
  }
  auto outView = resolveOutputView(attn.getResult(), yield.getValues()[0]);
  if (failed(outView))
    return kernel.emitOpError(pre + "the attention result is not a view of the output");
  plan.out = Access{"out0", 0, outView->strides};
  plan.scale = attn.getScale().convertToFloat();
  plan.causal = attn.getCausal();
  plan.window = attn.getWindowAttr().getInt();
  return plan;
}

} // namespace sluice::kernel
