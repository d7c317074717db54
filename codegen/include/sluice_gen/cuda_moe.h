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
// Workspace (the state's, sized by the emitter): choice (int32) and weight
// (float) per slot, start (int32, local + 1), order (int32 per slot), H
// [slots, f], Y [slots, d_out].
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_MOE_H
#define SLUICE_GEN_CUDA_MOE_H

#include "sluice_gen/cuda.h"
#include "sluice_gen/moe_shape.h"

template <typename R>
__global__ void sluice_moe_route_kernel(sluice_moe_shape s, const R *router, int *choice,
                                        float *weight, int *error, int step) {
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < s.tokens;
       t += (int64_t)gridDim.x * blockDim.x) {
    if (s.hard) {
      int64_t e = (int64_t)router[t / s.per_sample];
      if (e < 0 || e >= s.experts) {
        sluice_device_fail(error, step);
        e = -1;
      }
      choice[t] = (int)e;
      weight[t] = 1.0f;
      continue;
    }
    const R *logits = router + t * s.experts;
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t e = 0; e < s.experts; ++e)
      mx = fmaxf(mx, (float)logits[e]);
    for (int64_t e = 0; e < s.experts; ++e)
      sum += expf((float)logits[e] - mx);
    float picked = 0.0f;
    for (int64_t j = 0; j < s.top_k; ++j) {
      int best = -1;
      float bestP = 0.0f;
      for (int64_t e = 0; e < s.experts; ++e) {
        bool taken = false;
        for (int64_t i = 0; i < j; ++i)
          taken |= choice[t * s.top_k + i] == (int)e;
        float p = expf((float)logits[e] - mx);
        if (!taken && (best < 0 || p > bestP)) {
          best = (int)e;
          bestP = p;
        }
      }
      choice[t * s.top_k + j] = best;
      weight[t * s.top_k + j] = bestP / sum;
      picked += bestP / sum;
    }
    if (s.normalize)
      for (int64_t j = 0; j < s.top_k; ++j)
        weight[t * s.top_k + j] /= picked;
  }
}

/// One block of 256 threads; `counts` is shared memory of max(experts,
/// local + 1) ints (the launch passes its size).
__global__ void sluice_moe_group_kernel(sluice_moe_shape s, const int *choice,
                                        const int64_t *offset, int *start, int *order,
                                        int64_t *load) {
  extern __shared__ int counts[];
  const int64_t slots = s.tokens * s.top_k, first = offset ? offset[0] : 0;
  for (int64_t e = threadIdx.x; e < s.experts; e += blockDim.x)
    counts[e] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < slots; i += blockDim.x)
    if (choice[i] >= 0)
      atomicAdd(&counts[choice[i]], 1);
  __syncthreads();
  // The profile: every expert's tokens, added by one thread in stream order.
  if (load && threadIdx.x == 0)
    for (int64_t e = 0; e < s.experts; ++e)
      load[e] += counts[e];
  __syncthreads();
  // This op's experts: start[e] .. start[e + 1] of `order`.
  if (threadIdx.x == 0) {
    int at = 0;
    for (int64_t e = 0; e < s.local; ++e) {
      start[e] = at;
      at += counts[first + e];
    }
    start[s.local] = at;
    for (int64_t e = 0; e < s.local; ++e)
      counts[e] = start[e];
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < slots; i += blockDim.x) {
    int64_t e = (int64_t)choice[i] - first;
    if (choice[i] >= 0 && e >= 0 && e < s.local)
      order[atomicAdd(&counts[e], 1)] = (int)i;
  }
}

/// C[slot] = epilogue(A[row(slot)] x B[e]) for the slots of expert e =
/// blockIdx.z: A's row of a slot is x's token row (`gather`: the first
/// GEMM) or the slot's own row (the second). With `gate` (a gated expert's
/// w3, the first GEMM) the epilogue multiplies in A[row(slot)] x gate[e] +
/// gate_bias[e]. 16 x 16 tiles.
template <bool Gather>
__global__ void sluice_moe_gemm_kernel(sluice_moe_shape s, const int *start, const int *order,
                                       const float *a, int64_t k, const float *b, const float *bias,
                                       const float *gate, const float *gate_bias, int64_t n,
                                       float *c, int activation) {
  __shared__ float as[16][17], bs[16][17], gs[16][17];
  const int64_t e = blockIdx.z, begin = start[e], rows = start[e + 1] - begin;
  const int64_t row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  if (blockIdx.y * 16 >= rows)
    return;
  const int64_t slot = row < rows ? order[begin + row] : -1;
  const float *arow = slot < 0 ? nullptr : a + (Gather ? slot / s.top_k : slot) * k;
  const float *be = b + e * k * n, *ge = gate ? gate + e * k * n : nullptr;
  float acc = 0.0f, gated = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += 16) {
    const bool inB = k0 + threadIdx.y < k && col < n;
    as[threadIdx.y][threadIdx.x] = arow && k0 + threadIdx.x < k ? arow[k0 + threadIdx.x] : 0.0f;
    bs[threadIdx.y][threadIdx.x] = inB ? be[(k0 + threadIdx.y) * n + col] : 0.0f;
    if (ge)
      gs[threadIdx.y][threadIdx.x] = inB ? ge[(k0 + threadIdx.y) * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < 16; ++i)
      acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    if (ge)
      for (int i = 0; i < 16; ++i)
        gated += as[threadIdx.y][i] * gs[i][threadIdx.x];
    __syncthreads();
  }
  if (slot >= 0 && col < n) {
    float v = sluice_moe_activate(activation, acc + (bias ? bias[e * n + col] : 0.0f));
    if (ge)
      v *= gated + (gate_bias ? gate_bias[e * n + col] : 0.0f);
    c[slot * n + col] = v;
  }
}

__global__ void sluice_moe_combine_kernel(sluice_moe_shape s, const int *choice,
                                          const float *weight, const int64_t *offset,
                                          const float *y, float *out) {
  const int64_t first = offset ? offset[0] : 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < s.tokens * s.d_out;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t t = i / s.d_out, col = i % s.d_out;
    float acc = 0.0f;
    for (int64_t j = 0; j < s.top_k; ++j) {
      int64_t slot = t * s.top_k + j, e = (int64_t)choice[slot] - first;
      if (choice[slot] >= 0 && e >= 0 && e < s.local)
        acc += weight[slot] * y[slot * s.d_out + col];
    }
    out[i] = acc;
  }
}

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
