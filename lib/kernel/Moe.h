//===- Moe.h - when sluice.moe runs as its own kernel -----------*- C++ -*-===//
//
// Part of the kernel model: the one rule that decides whether a `sluice.moe`
// stays a composite for the cpu and cuda targets' MoE kernel (router, top-k,
// per-expert GEMMs over only the tokens routed to each expert) or is
// decomposed to the dense form (every expert over every token). The fuse
// phase's decomposition and both emitters read it, so the decision is made
// once.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_KERNEL_MOE_H
#define SLUICE_LIB_KERNEL_MOE_H

#include "dialects/sluice/SluiceOps.h"

namespace sluice::kernel {

/// Why the MoE kernel cannot run `op` (a sentence for messages), or null
/// when it can: every operand and the result static, tokens, weights (w3
/// too, for gated experts), biases and result f32, the router f32 logits
/// (`top_k`) or an i32/i64 index per sample (`hard`, the tokens' count a
/// multiple of the samples).
const char *moeKernelRefusal(MoeOp op);

/// The activation code the kernels take (cpu_moe.h, cuda_moe.h): 0 none,
/// 1 relu, 2 gelu (erf), 3 gelu_tanh, 4 silu.
int moeActivationCode(MoeOp op);

/// Where `op`'s tokens-per-expert counters start in a context's expert-load
/// buffer (SluiceRunArgs.expert_load): the sum of `experts` over the moe ops
/// before it in `main`, in walk order, the order of the manifest's "moe"
/// list.
int64_t moeLoadOffset(MoeOp op);

} // namespace sluice::kernel

#endif // SLUICE_LIB_KERNEL_MOE_H
