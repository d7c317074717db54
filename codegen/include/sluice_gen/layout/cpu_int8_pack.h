//===- sluice_gen/layout/cpu_int8_pack.h - cpu int8 weight layout -*- C++ -*-===//
//
// The packed weight layout of the cpu int8 GEMM (sluice_gen/cpu_int8.h,
// whose file header documents it) and the quantization arithmetic around
// it: requantization of one value, dequantization of an int32 sum, the
// symmetric per-column weight quantizer and the packing routine. The
// compiler runs sluice_int8_quantize_weights and sluice_int8_pack_b at
// compile time (codegen/cpu/groups/Int8Gemm.cpp) and the bundle's kernels
// read what they wrote, so the layout has one definition: this header.
//
// Dependency-free: portable C++ and the standard library only (no OpenMP,
// no ISA flag, no other sluice_gen header), as every header of
// sluice_gen/layout/, so that the compiler can include it.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_LAYOUT_CPU_INT8_PACK_H
#define SLUICE_GEN_LAYOUT_CPU_INT8_PACK_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

/// Columns per packed B panel.
constexpr int64_t SLUICE_INT8_PANEL = 64;

/// Requantization of a dequantized value y to an 8-bit output:
/// q = clamp(round_half_even(y / scale) + zero_point, qmin, qmax). qmin and
/// qmax are the type's limits or narrower (a fused ReLU: qmin = zero_point).
struct sluice_int8_requant {
  float scale;
  int32_t zero_point;
  int32_t qmin, qmax;
};

/// The full-range requantization for output type T (uint8_t or int8_t).
template <typename T>
static inline sluice_int8_requant sluice_int8_requant_for(float scale, int32_t zeroPoint) {
  static_assert(std::is_same<T, uint8_t>::value || std::is_same<T, int8_t>::value,
                "8-bit outputs only");
  return {scale, zeroPoint, std::is_same<T, uint8_t>::value ? 0 : -128,
          std::is_same<T, uint8_t>::value ? 255 : 127};
}

/// One value of sluice_int8_requant (and of sluice_int8_quantize). The order
/// of operations is the vector paths' (divide, round half to even, add the
/// zero point, clamp), so every path gives the same bytes; NaN goes to qmin.
static inline int32_t sluice_int8_requant_value(float y, const sluice_int8_requant &rq) {
  float r = std::nearbyint(y / rq.scale) + (float)rq.zero_point;
  const float lo = (float)rq.qmin, hi = (float)rq.qmax;
  r = r > lo ? r : lo; // as vmaxps(r, lo): NaN -> lo
  r = r < hi ? r : hi;
  return (int32_t)r;
}

/// The dequantized value of an int32 sum: one rounding, as the vector
/// paths' fused multiply-add. `bias` is 0 when the GEMM has none.
static inline float sluice_int8_dequant_value(int32_t acc, float scale, float bias) {
  return std::fma((float)acc, scale, bias);
}

/// Bytes of sluice_int8_pack_b's output for a K x N weight.
static inline int64_t sluice_int8_packed_b_bytes(int64_t k, int64_t n) {
  const int64_t panels = (n + SLUICE_INT8_PANEL - 1) / SLUICE_INT8_PANEL;
  return 4 * SLUICE_INT8_PANEL * panels * (1 + (k + 3) / 4);
}

/// Packs the s8 weight B (K x N; element (k, n) at b[k * strideK + n *
/// strideN]: a row-major [K, N] MatMul weight is (N, 1), a Gemm transB
/// weight stored [N, K] is (1, K)) into the layout in the header comment,
/// at `packed` (sluice_int8_packed_b_bytes bytes; 64-byte alignment is
/// best, not required). Run by the compiler: the result goes into
/// weights.bin.
static inline void sluice_int8_pack_b(int64_t k, int64_t n, const int8_t *b, int64_t strideK,
                                      int64_t strideN, void *packed) {
  const int64_t panels = (n + SLUICE_INT8_PANEL - 1) / SLUICE_INT8_PANEL;
  const int64_t groups = (k + 3) / 4;
  uint8_t *out = (uint8_t *)packed;
  memset(out, 0, (size_t)sluice_int8_packed_b_bytes(k, n));
  for (int64_t j = 0; j < n; ++j) {
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p)
      sum += b[p * strideK + j * strideN];
    memcpy(out + 4 * j, &sum, 4);
  }
  int8_t *data = (int8_t *)(out + 4 * SLUICE_INT8_PANEL * panels);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t panel = j / SLUICE_INT8_PANEL, c = j % SLUICE_INT8_PANEL;
      data[(panel * groups + p / 4) * 256 + 4 * c + p % 4] = b[p * strideK + j * strideN];
    }
}

/// Symmetric per-column quantization of an f32 weight (element (k, n) at
/// w[k * strideK + n * strideN]) into row-major q[K][N]:
/// scale[n] = max_k |w| / 127 (1 for an all-zero column) and q =
/// clamp(round_half_even(w / scale[n]), -127, 127). The range is symmetric
/// (no -128), as ONNX Runtime's symmetric int8 weights. Run by the compiler.
static inline void sluice_int8_quantize_weights(int64_t k, int64_t n, const float *w,
                                                int64_t strideK, int64_t strideN, int8_t *q,
                                                float *scale) {
  for (int64_t j = 0; j < n; ++j) {
    float peak = 0.0f;
    for (int64_t p = 0; p < k; ++p)
      peak = std::fmax(peak, std::fabs(w[p * strideK + j * strideN]));
    scale[j] = peak > 0.0f ? peak / 127.0f : 1.0f;
    const sluice_int8_requant rq = {scale[j], 0, -127, 127};
    for (int64_t p = 0; p < k; ++p)
      q[p * n + j] = (int8_t)sluice_int8_requant_value(w[p * strideK + j * strideN], rq);
  }
}

#endif // SLUICE_GEN_LAYOUT_CPU_INT8_PACK_H
