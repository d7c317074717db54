//===- sluice_gen/cpu_dynamic.h - ops with data-dependent sizes -*- C++ -*-===//
//
// Kernel templates of the cpu target for NonZero, Compress, Unique and
// NonMaxSuppression (codegen/cpu/ops/Misc.cpp). Their result extents depend
// on input values: each template writes its results densely for the actual
// extents into buffers sized for the upper bound, and returns (or stores)
// the extent so the emitted code can hand it to the runtime through the
// output's dims. Semantics follow lib/reference/Indexing.cpp, including its
// sort orders (stable sorts, so equal keys keep input order). These ops are
// rare and small, so everything here is sequential.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_DYNAMIC_H
#define SLUICE_GEN_CPU_DYNAMIC_H

#include "sluice_gen/cpu.h"

#include <algorithm>
#include <stdlib.h>

/// Whether an element counts as non-zero: floats compare as numbers (NaN is
/// non-zero, -0 is zero), half types through float.
template <typename T> inline bool sluice_dyn_nonzero(T v) { return sluice_load(v) != 0; }

/// Three-way comparison of two elements as Unique orders them: integers as
/// int64, floats as doubles with NaNs last and equal to each other.
template <typename T> inline int sluice_dyn_compare(T a, T b) {
  int64_t va = (int64_t)a, vb = (int64_t)b;
  return va == vb ? 0 : (va < vb ? -1 : 1);
}
inline int sluice_dyn_compare_double(double a, double b) {
  bool nanA = a != a, nanB = b != b;
  if (nanA || nanB)
    return nanA == nanB ? 0 : (nanA ? 1 : -1);
  return a == b ? 0 : (a < b ? -1 : 1);
}
inline int sluice_dyn_compare(float a, float b) { return sluice_dyn_compare_double(a, b); }
inline int sluice_dyn_compare(double a, double b) { return sluice_dyn_compare_double(a, b); }
inline int sluice_dyn_compare(sluice_f16 a, sluice_f16 b) {
  return sluice_dyn_compare_double(sluice_load(a), sluice_load(b));
}
inline int sluice_dyn_compare(sluice_bf16 a, sluice_bf16 b) {
  return sluice_dyn_compare_double(sluice_load(a), sluice_load(b));
}

/// NonZero: `out` is [rank, count] (row d holds the d-th coordinate of every
/// non-zero element, in row-major order). Returns count.
template <typename T>
int64_t sluice_nonzero(int64_t rank, const int64_t *shape, int64_t total, const T *x,
                       int64_t *out) {
  int64_t count = 0;
  for (int64_t e = 0; e < total; ++e)
    count += sluice_dyn_nonzero(x[e]) ? 1 : 0;
  int64_t j = 0;
  for (int64_t e = 0; e < total; ++e) {
    if (!sluice_dyn_nonzero(x[e]))
      continue;
    int64_t rest = e;
    for (int64_t d = rank - 1; d >= 0; --d) {
      out[d * count + j] = rest % shape[d];
      rest /= shape[d];
    }
    ++j;
  }
  return count;
}

/// Compress of the input viewed as [outer, extent, inner]: keeps the slices
/// i < conditions with condition[i] true, output [outer, kept, inner].
/// Returns the number kept.
template <typename T>
int64_t sluice_compress(int64_t outer, int64_t extent, int64_t inner, int64_t conditions,
                        const bool *condition, const T *src, T *dst) {
  int64_t kept = 0;
  for (int64_t i = 0; i < conditions; ++i)
    kept += condition[i] ? 1 : 0;
  T *out = dst;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < conditions; ++i)
      if (condition[i]) {
        memcpy(out, src + (o * extent + i) * inner, (size_t)inner * sizeof(T));
        out += inner;
      }
  return kept;
}

/// Unique of the slices of the input viewed as [outer, n, inner] (slice i is
/// every (o, i, e)): `y` is [outer, u, inner], `indices` and `counts` have u
/// entries, `inverse` n. Slices are stably sorted so each run of equal slices
/// starts with its first occurrence; unsorted output lists runs by first
/// occurrence. Stores u in *unique; fails only when scratch cannot be had.
template <typename T>
int32_t sluice_unique(const SluiceRunArgs *args, const char *kernel, int64_t outer, int64_t n,
                      int64_t inner, bool sorted, const T *x, T *y, int64_t *indices,
                      int64_t *inverse, int64_t *counts, int64_t *unique) {
  *unique = 0;
  if (n == 0)
    return 0;
  int64_t *scratch = (int64_t *)malloc((size_t)n * 6 * sizeof(int64_t));
  if (!scratch)
    return sluice_fail(args, kernel, "out of memory for unique's scratch");
  int64_t *positions = scratch, *firsts = scratch + n, *runCounts = scratch + 2 * n,
          *runOf = scratch + 3 * n, *order = scratch + 4 * n, *rank = scratch + 5 * n;
  auto compare = [&](int64_t i, int64_t j) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e)
        if (int c = sluice_dyn_compare(x[(o * n + i) * inner + e], x[(o * n + j) * inner + e]))
          return c;
    return 0;
  };
  for (int64_t i = 0; i < n; ++i)
    positions[i] = i;
  std::stable_sort(positions, positions + n,
                   [&](int64_t p, int64_t q) { return compare(p, q) < 0; });
  int64_t u = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = positions[k];
    if (k == 0 || compare(positions[k - 1], p) != 0) {
      firsts[u] = p;
      runCounts[u++] = 0;
    }
    runOf[p] = u - 1;
    ++runCounts[u - 1];
  }
  for (int64_t k = 0; k < u; ++k)
    order[k] = k;
  if (!sorted)
    std::sort(order, order + u, [&](int64_t p, int64_t q) { return firsts[p] < firsts[q]; });
  for (int64_t k = 0; k < u; ++k)
    rank[order[k]] = k;
  for (int64_t k = 0; k < u; ++k) {
    int64_t slice = firsts[order[k]];
    indices[k] = slice;
    counts[k] = runCounts[order[k]];
    for (int64_t o = 0; o < outer; ++o)
      memcpy(y + (o * u + k) * inner, x + (o * n + slice) * inner, (size_t)inner * sizeof(T));
  }
  for (int64_t i = 0; i < n; ++i)
    inverse[i] = rank[runOf[i]];
  free(scratch);
  *unique = u;
  return 0;
}

/// NonMaxSuppression: boxes [batches, count, 4], scores [batches, classes,
/// count]. Per (batch, class), candidates above the score threshold (when
/// given) in descending score order are kept unless their IoU with a kept
/// box exceeds iouThreshold, up to maxPerClass. Rows [b, c, i] go to
/// `selected`; stores the row count in *rows.
template <typename B, typename S>
int32_t sluice_non_max_suppression(const SluiceRunArgs *args, const char *kernel,
                                   int64_t batches, int64_t count, int64_t classes,
                                   bool centered, const B *boxes, const S *scores,
                                   int64_t maxPerClass, double iouThreshold,
                                   bool hasScoreThreshold, double scoreThreshold,
                                   int64_t *selected, int64_t *rows) {
  *rows = 0;
  if (count == 0 || maxPerClass <= 0)
    return 0;
  // Per box: its candidate slot, and the corners (y1, x1, y2, x2) of kept ones.
  void *scratch = malloc((size_t)count * (sizeof(int64_t) + 4 * sizeof(double)));
  if (!scratch)
    return sluice_fail(args, kernel, "out of memory for non_max_suppression's scratch");
  double *kept = (double *)scratch;
  int64_t *candidates = (int64_t *)(kept + 4 * count);
  int64_t written = 0;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const S *classScores = scores + (b * classes + c) * count;
      int64_t n = 0;
      for (int64_t i = 0; i < count; ++i)
        if (!hasScoreThreshold || (double)sluice_load(classScores[i]) > scoreThreshold)
          candidates[n++] = i;
      std::stable_sort(candidates, candidates + n, [&](int64_t p, int64_t q) {
        return (double)sluice_load(classScores[p]) > (double)sluice_load(classScores[q]);
      });
      int64_t keptCount = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (keptCount >= maxPerClass)
          break;
        int64_t i = candidates[k];
        double v[4], box[4];
        for (int j = 0; j < 4; ++j)
          v[j] = (double)sluice_load(boxes[(b * count + i) * 4 + j]);
        if (centered) {
          box[0] = v[1] - v[3] / 2;
          box[1] = v[0] - v[2] / 2;
          box[2] = v[1] + v[3] / 2;
          box[3] = v[0] + v[2] / 2;
        } else {
          box[0] = v[0] < v[2] ? v[0] : v[2];
          box[1] = v[1] < v[3] ? v[1] : v[3];
          box[2] = v[0] < v[2] ? v[2] : v[0];
          box[3] = v[1] < v[3] ? v[3] : v[1];
        }
        bool suppressed = false;
        for (int64_t q = 0; q < keptCount && !suppressed; ++q) {
          const double *p = kept + 4 * q;
          // Disjoint or degenerate boxes have IoU 0 (which a negative
          // threshold still exceeds).
          double iou = 0;
          double h = std::min(p[2], box[2]) - std::max(p[0], box[0]);
          double w = std::min(p[3], box[3]) - std::max(p[1], box[1]);
          if (h > 0 && w > 0) {
            double inter = h * w;
            double areaP = (p[2] - p[0]) * (p[3] - p[1]);
            double areaQ = (box[2] - box[0]) * (box[3] - box[1]);
            double uni = areaP + areaQ - inter;
            if (areaP > 0 && areaQ > 0 && uni > 0)
              iou = inter / uni;
          }
          suppressed = iou > iouThreshold;
        }
        if (suppressed)
          continue;
        for (int j = 0; j < 4; ++j)
          kept[4 * keptCount + j] = box[j];
        ++keptCount;
        selected[3 * written] = b;
        selected[3 * written + 1] = c;
        selected[3 * written + 2] = i;
        ++written;
      }
    }
  }
  free(scratch);
  *rows = written;
  return 0;
}

#endif // SLUICE_GEN_CPU_DYNAMIC_H
