//===- sluice_gen/cpu_moe.h - the mixture-of-experts kernel (cpu) -*- C++ -*-===//
//
// `sluice.moe` (dialects/sluice/SluiceCompositeOps.td) as one kernel: the
// routing (softmax and top-k of the router logits, or the sample's expert
// index), the tokens grouped per expert by a counting sort, then for each
// expert this op holds one GEMM pair over only its tokens (rows gathered,
// x w1 -> bias + activation [-> times x w3 + bias, a gated expert] -> x w2
// -> bias) and a weighted scatter-add into the output. Work is top_k x
// tokens rows, not experts x tokens as in the dense decomposition.
//
// Expert parallelism (--ep): the op holds experts [offset, offset + local)
// of `experts`; tokens routed elsewhere add nothing (the all_reduce after
// the op sums the ranks' shares). The expert-load profile counts every
// token's choices over all `experts` experts (the router is replicated, so
// each rank sees the full routing) into the context's counters.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_MOE_H
#define SLUICE_GEN_CPU_MOE_H

#include "sluice_gen/cpu.h"
#include "sluice_gen/cpu_blas.h"
#include "sluice_gen/moe_shape.h"

#include <cmath>
#include <vector>

/// The routing of every token: `choice[t * top_k + j]` its j-th expert
/// (global index) and `weight[...]` its weight. top_k: softmax of the
/// logits (max subtracted), the top_k largest probabilities with ties to the
/// lower expert (as TopK), divided by their sum when `normalize`. hard: the
/// sample's index, weight 1; an index outside [0, experts) fails the run.
template <typename R>
static inline int32_t sluice_moe_route(const SluiceRunArgs *args, const char *kernel,
                                       const sluice_moe_shape &s, const R *router, int64_t *choice,
                                       float *weight) {
  if (s.hard) {
    for (int64_t t = 0; t < s.tokens; ++t) {
      int64_t e = (int64_t)router[t / s.per_sample];
      if (e < 0 || e >= s.experts) {
        char message[128];
        snprintf(message, sizeof message,
                 "expert index %lld of sample %lld is out of range [0, %lld)", (long long)e,
                 (long long)(t / s.per_sample), (long long)s.experts);
        return sluice_fail(args, kernel, message);
      }
      choice[t] = e;
      weight[t] = 1.0f;
    }
    return 0;
  }
#pragma omp parallel for num_threads(args->num_threads) if (s.tokens > 256)
  for (int64_t t = 0; t < s.tokens; ++t) {
    const R *logits = router + t * s.experts;
    float mx = -INFINITY;
    for (int64_t e = 0; e < s.experts; ++e)
      mx = logits[e] > mx ? (float)logits[e] : mx;
    // The unnormalized probabilities: softmax's denominator cancels in
    // the ordering, and in the weights it is applied once below.
    std::vector<float> p(s.experts);
    float sum = 0.0f;
    for (int64_t e = 0; e < s.experts; ++e)
      sum += p[e] = std::exp((float)logits[e] - mx);
    float picked = 0.0f;
    for (int64_t j = 0; j < s.top_k; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < s.experts; ++e) {
        bool taken = false;
        for (int64_t i = 0; i < j; ++i)
          taken |= choice[t * s.top_k + i] == e;
        // Strictly greater: an equal later expert does not replace an
        // earlier one (TopK's tie order).
        if (!taken && (best < 0 || p[e] > p[best]))
          best = e;
      }
      choice[t * s.top_k + j] = best;
      weight[t * s.top_k + j] = p[best] / sum;
      picked += p[best] / sum;
    }
    if (s.normalize)
      for (int64_t j = 0; j < s.top_k; ++j)
        weight[t * s.top_k + j] /= picked;
  }
  return 0;
}

/// Runs the op: `b1`/`b2` may be null, `w3` (gated experts: the up
/// projection, multiplied into the activated one) and `b3` may be null,
/// `offset` (the first expert held) may be null (0); `load` (null: no
/// profile) gets `experts` counters added: tokens routed to each expert, a
/// token counted once per chosen expert.
template <typename R>
static inline int32_t
sluice_moe(const SluiceRunArgs *args, const char *kernel, const sluice_moe_shape &s, const float *x,
           const R *router, const float *w1, const float *b1, const float *w2, const float *b2,
           const float *w3, const float *b3, const int64_t *offset, float *out, int64_t *load) {
  const int64_t slots = s.tokens * s.top_k, first = offset ? offset[0] : 0;
  std::vector<int64_t> choice(slots);
  std::vector<float> weight(slots);
  if (int32_t status = sluice_moe_route(args, kernel, s, router, choice.data(), weight.data()))
    return status;
  if (load)
    for (int64_t i = 0; i < slots; ++i)
      ++load[choice[i]];

  // Counting sort of the (token, slot) pairs by local expert: start[e] ..
  // start[e + 1] in `order` are expert e's, in token order.
  std::vector<int64_t> start(s.local + 1, 0), order(slots), fill;
  for (int64_t i = 0; i < slots; ++i) {
    int64_t e = choice[i] - first;
    if (e >= 0 && e < s.local)
      ++start[e + 1];
  }
  for (int64_t e = 0; e < s.local; ++e)
    start[e + 1] += start[e];
  fill.assign(start.begin(), start.end() - 1);
  int64_t largest = 0;
  for (int64_t i = 0; i < slots; ++i) {
    int64_t e = choice[i] - first;
    if (e >= 0 && e < s.local)
      order[fill[e]++] = i;
  }
  for (int64_t e = 0; e < s.local; ++e)
    largest = start[e + 1] - start[e] > largest ? start[e + 1] - start[e] : largest;

  memset(out, 0, sizeof(float) * s.tokens * s.d_out);
  std::vector<float> rows(largest * s.d), hidden(largest * s.f), y(largest * s.d_out);
  std::vector<float> up(w3 ? largest * s.f : 0);
  sluice_blas_threads(args->num_threads);
  for (int64_t e = 0; e < s.local; ++e) {
    const int64_t n = start[e + 1] - start[e];
    if (n == 0)
      continue;
    const int64_t *slot = order.data() + start[e];
#pragma omp parallel for num_threads(args->num_threads) if (n * s.d > 65536)
    for (int64_t i = 0; i < n; ++i)
      memcpy(rows.data() + i * s.d, x + (slot[i] / s.top_k) * s.d, sizeof(float) * s.d);
    sluice_gemm<float>::run(n, s.f, s.d, rows.data(), s.d, w1 + e * s.d * s.f, s.f, hidden.data(),
                            s.f);
    if (w3)
      sluice_gemm<float>::run(n, s.f, s.d, rows.data(), s.d, w3 + e * s.d * s.f, s.f, up.data(),
                              s.f);
#pragma omp parallel for num_threads(args->num_threads) if (n * s.f > 65536)
    for (int64_t i = 0; i < n; ++i) {
      float *h = hidden.data() + i * s.f;
      for (int64_t j = 0; j < s.f; ++j)
        h[j] = sluice_moe_activate(s.activation, h[j] + (b1 ? b1[e * s.f + j] : 0.0f));
      if (w3) {
        const float *u = up.data() + i * s.f;
        for (int64_t j = 0; j < s.f; ++j)
          h[j] *= u[j] + (b3 ? b3[e * s.f + j] : 0.0f);
      }
    }
    sluice_gemm<float>::run(n, s.d_out, s.f, hidden.data(), s.f, w2 + e * s.f * s.d_out, s.d_out,
                            y.data(), s.d_out);
    // A token appears at most once per expert, so rows of one expert never
    // collide: the scatter-add is race-free within an expert, and experts
    // add in a fixed order (deterministic sums).
#pragma omp parallel for num_threads(args->num_threads) if (n * s.d_out > 65536)
    for (int64_t i = 0; i < n; ++i) {
      float *o = out + (slot[i] / s.top_k) * s.d_out;
      const float *yi = y.data() + i * s.d_out, w = weight[slot[i]];
      for (int64_t c = 0; c < s.d_out; ++c)
        o[c] += w * (yi[c] + (b2 ? b2[e * s.d_out + c] : 0.0f));
    }
  }
  return 0;
}

#endif // SLUICE_GEN_CPU_MOE_H
