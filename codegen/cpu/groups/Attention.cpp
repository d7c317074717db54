//===- Attention.cpp - cpu form F4: fused attention ------------------------===//
//
// One sluice.attention with view ops on its operands (the split, head
// reshape and transposes of a QKV GEMM output, a broadcast mask) and on its
// result (the transpose and reshape back to [B, S, H*D]). Every operand is
// read in place through its strided view and the result written through its
// output view: the group is one call of sluice_attention
// (sluice_gen/cpu_attention.h) with a descriptor of compile-time sizes and
// strides. A lone attention is the same code with contiguous strides.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

#include "codegen/common/ScalarEmitter.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace sluice::codegen {

namespace {

/// Most batch dims sluice_attn_desc holds (SLUICE_ATTN_MAX_BATCH).
constexpr size_t kMaxBatch = 8;

/// An exact C++ float literal.
std::string exactFloat(float f) {
  if (std::isnan(f))
    return "NAN";
  if (std::isinf(f))
    return f > 0 ? "INFINITY" : "-INFINITY";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%af", (double)f);
  return buffer;
}

/// One operand: its pointer expression and strides over a target space
/// [B..., rows, cols].
struct Access {
  std::string pointer;
  std::vector<int64_t> strides;
};

} // namespace

LogicalResult emitAttentionGroup(GroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  GroupOps parts = splitGroupOps(kernel, [](Operation *op) { return isa<AttentionOp>(op); });
  KernelYieldOp yield = parts.yield;
  if (!parts.before.empty() || !parts.after.empty())
    return (parts.before.empty() ? parts.after : parts.before)
        .front()
        ->emitOpError("cpu target: an attention group holds only view ops around one "
                      "sluice.attention (form F4)");
  auto attn = dyn_cast_or_null<AttentionOp>(parts.anchor);
  if (!attn)
    return kernel.emitOpError("cpu target: no sluice.attention in an attention group");
  if (yield.getValues().size() != 1 || stripOutputViews(yield.getValues()[0]) != attn.getResult())
    return kernel.emitOpError("cpu target: an attention group yields exactly the attention "
                              "result (through transposes/reshapes)");
  for (Value v : attn->getOperands())
    if (!cast<RankedTensorType>(v.getType()).hasStaticShape())
      return attn.emitOpError("cpu target: attention needs static shapes");

  ArrayRef<int64_t> qShape = shapeOf(attn.getQuery());
  int64_t rank = qShape.size();
  if (rank < 2)
    return attn.emitOpError("cpu target: attention operands need rank >= 2");
  std::vector<int64_t> batch(qShape.begin(), qShape.end() - 2);
  if (batch.size() > kMaxBatch)
    return attn.emitOpError("cpu target: attention with more than ")
           << kMaxBatch << " batch dims";
  int64_t sq = qShape[rank - 2], d = qShape[rank - 1];
  ArrayRef<int64_t> kShape = shapeOf(attn.getKey()), vShape = shapeOf(attn.getValue());
  if ((int64_t)kShape.size() != rank || (int64_t)vShape.size() != rank)
    return attn.emitOpError("cpu target: query, key and value need one rank");
  int64_t sk = kShape[rank - 2], dv = vShape[rank - 1];
  auto space = [&](int64_t rows, int64_t cols) {
    std::vector<int64_t> s = batch;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  };

  // Reads an operand through its view, broadcast to `target`.
  auto access = [&](Value operand, ArrayRef<int64_t> target,
                    const char *what) -> FailureOr<Access> {
    auto view = resolveView(operand);
    if (failed(view))
      return failure();
    auto ptr = ctx.leafPointer(*view);
    if (failed(ptr))
      return failure();
    auto strides = broadcastStridesTo(shapeOf(operand), view->strides, target);
    if (failed(strides))
      return attn.emitOpError("cpu target: attention ")
             << what << " does not broadcast to its index space";
    return Access{*ptr, *strides};
  };
  auto q = access(attn.getQuery(), space(sq, d), "query");
  auto k = access(attn.getKey(), space(sk, d), "key");
  auto v = access(attn.getValue(), space(sk, dv), "value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  Access mask{"nullptr", std::vector<int64_t>(rank, 0)};
  std::string maskType = storageType(elementOf(attn.getQuery()));
  int maskKind = 0;
  if (Value m = attn.getMask()) {
    auto a = access(m, space(sq, sk), "mask");
    if (failed(a))
      return failure();
    mask = *a;
    maskType = storageType(elementOf(m));
    maskKind = elementOf(m).isInteger(1) ? 2 : 1;
  }
  Access cosQ{"nullptr", std::vector<int64_t>(rank, 0)}, sinQ = cosQ, cosK = cosQ, sinK = cosQ;
  std::string rotaryType = storageType(elementOf(attn.getQuery()));
  if (attn.getRotaryCos()) {
    if (elementOf(attn.getRotaryCos()) != elementOf(attn.getRotarySin()))
      return attn.emitOpError("cpu target: rotary cos and sin of different element types");
    auto cq = access(attn.getRotaryCos(), space(sq, d), "rotary cos");
    auto sq_ = access(attn.getRotarySin(), space(sq, d), "rotary sin");
    auto ck = access(attn.getRotaryCos(), space(sk, d), "rotary cos");
    auto sk_ = access(attn.getRotarySin(), space(sk, d), "rotary sin");
    if (failed(cq) || failed(sq_) || failed(ck) || failed(sk_))
      return failure();
    cosQ = *cq;
    sinQ = *sq_;
    cosK = *ck;
    sinK = *sk_;
    rotaryType = storageType(elementOf(attn.getRotaryCos()));
  }
  auto outView = resolveOutputView(attn.getResult(), yield.getValues()[0]);
  if (failed(outView))
    return kernel.emitOpError("cpu target: the attention result is not a view of the output");
  Access out{ctx.output(0), outView->strides};

  // The descriptor: built once (a function-local static).
  std::string s;
  auto field = [&](const char *name, const Access &a) {
    s += "    d." + std::string(name) + ".row = " + cInt(a.strides[rank - 2]) + "; d." + name +
         ".col = " + cInt(a.strides[rank - 1]) + ";";
    for (size_t x = 0; x < batch.size(); ++x)
      s += " d." + std::string(name) + ".batch[" + std::to_string(x) + "] = " +
           cInt(a.strides[x]) + ";";
    s += "\n";
  };
  s += "  static const sluice_attn_desc desc = [] {\n";
  s += "    sluice_attn_desc d{};\n";
  s += "    d.nbatch = " + std::to_string(batch.size()) + ";";
  for (size_t x = 0; x < batch.size(); ++x)
    s += " d.batch[" + std::to_string(x) + "] = " + cInt(batch[x]) + ";";
  s += "\n";
  s += "    d.sq = " + cInt(sq) + "; d.sk = " + cInt(sk) + "; d.d = " + cInt(d) +
       "; d.dv = " + cInt(dv) + ";\n";
  s += "    d.scale = " + exactFloat(attn.getScale().convertToFloat()) +
       "; d.causal = " + (attn.getCausal() ? "true" : "false") +
       "; d.mask = " + std::to_string(maskKind) +
       "; d.rotary = " + (attn.getRotaryCos() ? "true" : "false") + ";\n";
  field("q", *q);
  field("k", *k);
  field("v", *v);
  field("m", mask);
  field("out", out);
  field("cos_q", cosQ);
  field("sin_q", sinQ);
  field("cos_k", cosK);
  field("sin_k", sinK);
  s += "    return d;\n  }();\n";
  std::string t = storageType(elementOf(attn.getQuery()));
  auto typed = [](const std::string &type, const std::string &ptr) {
    return ptr == "nullptr" ? "(const " + type + " *)nullptr" : ptr;
  };
  s += "  if (sluice_attention<" + t + ", " + maskType + ", " + rotaryType +
       ">(args->num_threads, desc, " + q->pointer + ", " + k->pointer + ", " + v->pointer +
       ", " + typed(maskType, mask.pointer) + ", " + typed(rotaryType, cosQ.pointer) + ", " +
       typed(rotaryType, sinQ.pointer) + ", " + out.pointer + "))\n";
  s += "    " + ctx.fail("\"out of memory for attention scratch\"") + "\n";
  ctx.include("sluice_gen/cpu_attention.h");
  *ctx.body += s;
  return success();
}

} // namespace sluice::codegen
