//===- sluice_gen/cuda_moe_kernels.cuh - the MoE device kernels -*- CUDA -*-===//
//
// The four kernels of `sluice.moe` on the device (the steps and the
// workspace they share: cuda_moe.h, whose sluice_cuda_moe launches them):
// routing, grouping per expert with the expert-load count, the expert MLP
// as a grouped GEMM, the weighted combine. Device code only, no CUDA
// runtime header, so that the unit tests run it under the host emulation
// (test/unit/CudaMoeEmuTest.cpp); it needs sluice_device_fail
// (sluice_gen/cuda.h, or the emulation's) declared before it.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_MOE_KERNELS_CUH
#define SLUICE_GEN_CUDA_MOE_KERNELS_CUH

#include "sluice_gen/moe_shape.h"

// Dynamic shared memory (the size a launch passes); the host emulation
// defines its own.
#ifndef SLUICE_EXTERN_SHARED
#define SLUICE_EXTERN_SHARED(type, name) extern __shared__ type name[]
#endif

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
  SLUICE_EXTERN_SHARED(int, counts);
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

#endif // SLUICE_GEN_CUDA_MOE_KERNELS_CUH
