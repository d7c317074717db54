//===- sluice_gen/cuda_moe.h - the mixture-of-experts kernels (cuda) -*- C++ -*-===//
//
// `sluice.moe` on the device, the same algorithm as cpu_moe.h in four
// launches, none of which needs the host to know how many tokens each
// expert got (the run may be captured into a CUDA graph):
//
//   1. route: a thread per token: softmax of the logits (max subtracted)
//      and the top_k probabilities (ties to the lower expert, as TopK),
//      renormalized when `normalize`; hard gating reads the sample's index
//      (out of range: the step's device error word, the slot skipped);
//   2. group: one block: the tokens per expert over the whole routing
//      (added to the context's expert-load counters, mapped host memory,
//      by one thread, stream-ordered so no atomics cross the bus), then the
//      slots of this op's local experts grouped per expert (a counting sort
//      with shared-memory atomics: the order inside an expert is free, as
//      every slot's result lands in its own row);
//   3. the expert MLP as a grouped GEMM over the gathered rows: tiles of
//      16 x 16, grid.z the local expert, grid.y covering the most rows an
//      expert can get (the tiles past its count return at once); first
//      act(x w1[e] + b1[e]) into H[slot] (a gated expert multiplies in
//      x w3[e] + b3[e], computed by the same tiles from the same loads of
//      x), then H[slot] w2[e] + b2[e] into Y[slot];
//   4. combine: out[t] = sum over j of weight[t, j] Y[t * top_k + j], in j
//      order, local experts only (a deterministic sum, no atomics).
//
// The kernels are in cuda_moe_kernels.cuh (device code only, which the unit
// tests run under the host emulation: test/unit/CudaMoeEmuTest.cpp).
//
// Workspace (the state's, sized by the emitter): choice (int32) and weight
// (float) per slot, start (int32, local + 1), order (int32 per slot), H
// [slots, f], Y [slots, d_out].
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_MOE_H
#define SLUICE_GEN_CUDA_MOE_H

#include "sluice_gen/cuda.h"
#include "sluice_gen/cuda_moe_kernels.cuh"

/// Workspace bytes of one moe op (the emitter reserves them).
static inline size_t sluice_moe_workspace(const sluice_moe_shape &s) {
  size_t slots = (size_t)(s.tokens * s.top_k);
  auto round = [](size_t b) { return (b + 255) / 256 * 256; };
  return round(slots * 4) * 3 + round((size_t)(s.local + 1) * 4) + round(slots * (size_t)s.f * 4) +
         round(slots * (size_t)s.d_out * 4);
}

/// Enqueues the four steps on `stream`. `load`: the context's counters for
/// this op (mapped host memory) or null.
template <typename R>
static inline int32_t sluice_cuda_moe(const SluiceRunArgs *args, const char *kernel,
                                      SluiceCudaState *state, cudaStream_t stream, int step,
                                      const sluice_moe_shape &s, const float *x, const R *router,
                                      const float *w1, const float *b1, const float *w2,
                                      const float *b2, const float *w3, const float *b3,
                                      const int64_t *offset, float *out, int64_t *load) {
  if (s.tokens == 0)
    return 0;
  if (state->workspaceBytes < sluice_moe_workspace(s))
    return sluice_fail(args, kernel, "the device workspace is smaller than the bundle declared");
  const size_t slots = (size_t)(s.tokens * s.top_k);
  auto round = [](size_t b) { return (b + 255) / 256 * 256; };
  unsigned char *w = (unsigned char *)state->workspace;
  int *choice = (int *)w;
  float *weight = (float *)(w + round(slots * 4));
  int *order = (int *)(w + 2 * round(slots * 4));
  int *start = (int *)(w + 3 * round(slots * 4));
  float *hidden = (float *)(w + 3 * round(slots * 4) + round((size_t)(s.local + 1) * 4));
  float *y = hidden + round(slots * (size_t)s.f * 4) / 4;
  sluice_moe_route_kernel<R><<<sluice_grid(s.tokens, 128), 128, 0, stream>>>(
      s, router, choice, weight, state->deviceError, step);
  SLUICE_LAUNCHED(kernel);
  int64_t shared = (s.experts > s.local + 1 ? s.experts : s.local + 1) * 4;
  sluice_moe_group_kernel<<<1, 256, shared, stream>>>(s, choice, offset, start, order, load);
  SLUICE_LAUNCHED(kernel);
  dim3 tile(16, 16);
  unsigned tileRows = (unsigned)((slots + 15) / 16);
  sluice_moe_gemm_kernel<true>
      <<<dim3((unsigned)((s.f + 15) / 16), tileRows, (unsigned)s.local), tile, 0, stream>>>(
          s, start, order, x, s.d, w1, b1, w3, b3, s.f, hidden, s.activation);
  SLUICE_LAUNCHED(kernel);
  sluice_moe_gemm_kernel<false>
      <<<dim3((unsigned)((s.d_out + 15) / 16), tileRows, (unsigned)s.local), tile, 0, stream>>>(
          s, start, order, hidden, s.f, w2, b2, nullptr, nullptr, s.d_out, y, 0);
  SLUICE_LAUNCHED(kernel);
  sluice_moe_combine_kernel<<<sluice_grid(s.tokens * s.d_out, 256), 256, 0, stream>>>(
      s, choice, weight, offset, y, out);
  SLUICE_LAUNCHED(kernel);
  return 0;
}

#endif // SLUICE_GEN_CUDA_MOE_H
