//===- AttentionDescriptor.cpp - an attention plan as descriptor fields ---===//

#include "codegen/common/AttentionDescriptor.h"

#include "codegen/cpu/CpuEmitter.h"

#include <cmath>
#include <cstdio>
#include <tuple>

namespace sluice::codegen {

std::string exactFloatLiteral(float f) {
  if (std::isnan(f))
    return "NAN";
  if (std::isinf(f))
    return f > 0 ? "INFINITY" : "-INFINITY";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%af", (double)f);
  return buffer;
}

std::string attentionDescriptorFields(const kernel::AttentionPlan &plan) {
  const auto &[batch, sq, sk, d, dv] = std::tie(plan.batch, plan.sq, plan.sk, plan.d, plan.dv);
  const size_t rank = batch.size() + 2;
  std::string s;
  auto field = [&](const char *name, const kernel::Access &a) {
    s += "    d." + std::string(name) + ".row = " + cInt(a.strides[rank - 2]) + "; d." + name +
         ".col = " + cInt(a.strides[rank - 1]) + ";";
    for (size_t x = 0; x < batch.size(); ++x)
      s += " d." + std::string(name) + ".batch[" + std::to_string(x) + "] = " + cInt(a.strides[x]) +
           ";";
    s += "\n";
  };
  s += "    d.nbatch = " + std::to_string(batch.size()) + ";";
  for (size_t x = 0; x < batch.size(); ++x)
    s += " d.batch[" + std::to_string(x) + "] = " + cInt(batch[x]) + ";";
  s += "\n";
  s += "    d.sq = " + cInt(sq) + "; d.sk = " + cInt(sk) + "; d.d = " + cInt(d) +
       "; d.dv = " + cInt(dv) + ";\n";
  s += "    d.scale = " + exactFloatLiteral(plan.scale) + "; d.causal = " + (plan.causal ? "true" : "false") +
       "; d.mask = " + std::to_string(plan.maskKind) + "; d.rotary = " + (plan.rotary ? "true" : "false") +
       ";\n";
  field("q", plan.q);
  field("k", plan.k);
  field("v", plan.v);
  field("m", plan.mask);
  field("out", plan.out);
  field("cos_q", plan.cosQ);
  field("sin_q", plan.sinQ);
  field("cos_k", plan.cosK);
  field("sin_k", plan.sinK);
  return s;
}

} // namespace sluice::codegen
