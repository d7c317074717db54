//===- AttentionDescriptor.cpp - an attention plan as descriptor fields ---===//

#include "codegen/common/AttentionDescriptor.h"

#include "codegen/common/Format.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

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

void writeAttentionDescriptorFields(CodeWriter &w, const kernel::AttentionPlan &plan) {
  const size_t rank = plan.batch.size() + 2;
  // One access: its row and column strides, then one stride per batch dim.
  auto field = [&](const char *name, const kernel::Access &a) {
    std::string line = llvm::formatv("d.{0}.row = {1}; d.{0}.col = {2};", name,
                                     cInt64(a.strides[rank - 2]), cInt64(a.strides[rank - 1]));
    for (size_t x = 0; x < plan.batch.size(); ++x)
      line += llvm::formatv(" d.{0}.batch[{1}] = {2};", name, x, cInt64(a.strides[x])).str();
    w.line("{0}", line);
  };
  std::string batch = llvm::formatv("d.nbatch = {0};", plan.batch.size());
  for (size_t x = 0; x < plan.batch.size(); ++x)
    batch += llvm::formatv(" d.batch[{0}] = {1};", x, cInt64(plan.batch[x])).str();
  w.line("{0}", batch);
  w.line("d.sq = {0}; d.sk = {1}; d.d = {2}; d.dv = {3};", cInt64(plan.sq), cInt64(plan.sk),
         cInt64(plan.d), cInt64(plan.dv));
  w.line("d.scale = {0}; d.causal = {1}; d.window = {2}; d.mask = {3}; d.rotary = {4};",
         exactFloatLiteral(plan.scale), plan.causal ? "true" : "false", cInt64(plan.window),
         plan.maskKind, plan.rotary ? "true" : "false");
  field("q", plan.q);
  field("k", plan.k);
  field("v", plan.v);
  field("m", plan.mask);
  field("out", plan.out);
  field("cos_q", plan.cosQ);
  field("sin_q", plan.sinQ);
  field("cos_k", plan.cosK);
  field("sin_k", plan.sinK);
}

} // namespace sluice::codegen
