//===- sluice_gen/scalar.h - scalar helpers for generated kernels -*- C++ -*-===//
//
// Included by every generated kernel source, host (cpu target) and device
// (cuda target) alike: the scalar-expression emitter (codegen/common) spells
// elementwise ops as calls of these helpers, so one emitted expression
// compiles with c++ and nvcc. Semantics follow the reference evaluator
// (lib/reference/Elementwise.cpp): NaN-propagating min/max, Python-style
// integer mod, integer division by zero yields 0, round half to even.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_SCALAR_H
#define SLUICE_GEN_SCALAR_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SLUICE_HD __host__ __device__ __forceinline__
// Device code converts half types with the hardware's cvt instructions (one
// instruction an element; the host spellings below take about 15 integer
// operations each, which made f16 row kernels ALU-bound on the GPU).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#else
#define SLUICE_HD inline
#endif

// x86 hosts with F16C (bundles build with -march=native): the bulk
// conversions of cpu_blas.h use its vector instructions. Never in nvcc's
// translation units, whose functions must also compile for the device.
#if defined(__F16C__) && !defined(__CUDACC__)
#include <immintrin.h>
#define SLUICE_F16C 1
#endif

/// Half-precision storage: the bits, converted to float for arithmetic.
struct sluice_f16 { uint16_t bits; };
struct sluice_bf16 { uint16_t bits; };

SLUICE_HD float sluice_bits_to_float(uint32_t word) {
  float f;
  memcpy(&f, &word, 4);
  return f;
}
SLUICE_HD uint32_t sluice_float_to_bits(float f) {
  uint32_t word;
  memcpy(&word, &f, 4);
  return word;
}

SLUICE_HD float sluice_load(sluice_bf16 v) { return sluice_bits_to_float((uint32_t)v.bits << 16); }
/// f16 -> float, exact. Branch-free (selects, one float subtraction for
/// subnormals) so that loops over f16 data vectorize; bit-identical to
/// F16C's vcvtph2ps (test/codegen/scalar-f16c.test). Relies on subnormals
/// not being flushed (no -ffast-math / -ftz). Device code: cvt.f32.f16,
/// exact as well.
SLUICE_HD float sluice_load(sluice_f16 v) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(v.bits));
#else
  uint32_t o = ((uint32_t)v.bits & 0x7fffu) << 13; // exponent and mantissa
  uint32_t exponent = o & 0x0f800000u;
  o += 0x38000000u;                                    // rebias 15 -> 127
  o += exponent == 0x0f800000u ? 0x38000000u : 0u;     // inf / NaN: exponent 255
  // Subnormals: 2^-14 * 0.mantissa, as (1.mantissa - 1) * 2^-14 in float.
  float subnormal = sluice_bits_to_float(o + 0x00800000u) - sluice_bits_to_float(0x38800000u);
  float magnitude = exponent == 0 ? subnormal : sluice_bits_to_float(o);
  return sluice_bits_to_float(sluice_float_to_bits(magnitude) |
                              (((uint32_t)v.bits & 0x8000u) << 16));
#endif
}
template <typename T> SLUICE_HD T sluice_load(T v) { return v; }

/// float -> bf16, round to nearest even (NaN stays NaN).
SLUICE_HD sluice_bf16 sluice_to_bf16(float f) {
#ifdef __CUDA_ARCH__
  // cvt.rn.bf16.f32: the same rounding; a NaN becomes the canonical 0x7fff.
  sluice_bf16 d;
  d.bits = __bfloat16_as_ushort(__float2bfloat16_rn(f));
  return d;
#else
  // Selects, not branches: stores in vectorized loops stay vectorized.
  uint32_t word = sluice_float_to_bits(f);
  uint32_t rounded = (word + 0x7fffu + ((word >> 16) & 1u)) >> 16;
  uint32_t quietNaN = (word >> 16) | 0x40u;
  sluice_bf16 r;
  r.bits = (uint16_t)((word & 0x7fffffffu) > 0x7f800000u ? quietNaN : rounded);
  return r;
#endif
}
/// float -> bf16 keeping the high half (ONNX Cast to bfloat16 before opset 19).
SLUICE_HD sluice_bf16 sluice_to_bf16_truncate(float f) {
  sluice_bf16 r;
  r.bits = (uint16_t)(sluice_float_to_bits(f) >> 16);
  return r;
}
/// float -> f16, round to nearest even, overflow to infinity, NaN to the
/// quiet NaN 0x7e00 (device code: 0x7fff). Branch-free so that stores in vectorized loops stay
/// vectorized; bit-identical to F16C's vcvtps2ph for every non-NaN float
/// (test/codegen/scalar-f16c.test). Subnormal results come from one float
/// addition that aligns the mantissa (round to nearest even), which relies
/// on subnormals not being flushed.
SLUICE_HD sluice_f16 sluice_to_f16(float f) {
#ifdef __CUDA_ARCH__
  // cvt.rn.f16.f32 (subnormals kept: nvcc does not flush them without
  // --use_fast_math / -ftz=true): the same result for every non-NaN float;
  // a NaN becomes the canonical 0x7fff.
  sluice_f16 d;
  d.bits = __half_as_ushort(__float2half_rn(f));
  return d;
#else
  uint32_t word = sluice_float_to_bits(f);
  uint32_t sign = (word >> 16) & 0x8000u;
  uint32_t absWord = word & 0x7fffffffu;
  // |f| < 2^-14: add 0.5 (0x3f000000), whose ulp is f16's smallest step.
  uint32_t subnormal =
      sluice_float_to_bits(sluice_bits_to_float(absWord) + sluice_bits_to_float(0x3f000000u)) -
      0x3f000000u;
  // Normal: rebias the exponent, round the 13 dropped bits to even.
  uint32_t normal = (absWord + 0xc8000fffu + ((absWord >> 13) & 1u)) >> 13;
  uint32_t bits = absWord >= 0x47800000u ? (absWord > 0x7f800000u ? 0x7e00u : 0x7c00u)
                  : absWord < 0x38800000u ? subnormal
                                          : normal;
  sluice_f16 r;
  r.bits = (uint16_t)(bits | sign);
  return r;
#endif
}

/// ONNX FLOAT8E4M3FN storage (fp8 quantization, Form F8): sign, 4 exponent
/// bits (bias 7), 3 mantissa bits; no infinities, NaN 0x7f / 0xff, largest
/// finite 448. Arithmetic happens in float.
struct sluice_f8e4m3 { uint8_t bits; };

SLUICE_HD float sluice_load(sluice_f8e4m3 v) {
  int exponent = (v.bits >> 3) & 0xf, mantissa = v.bits & 0x7;
  float magnitude = (v.bits & 0x7f) == 0x7f ? NAN
                    : exponent == 0         ? ldexpf((float)mantissa, -9)
                                            : ldexpf((float)(8 + mantissa), exponent - 10);
  return (v.bits & 0x80) ? -magnitude : magnitude;
}
/// float -> E4M3FN as ONNX Cast / QuantizeLinear (and the evaluator's
/// floatToFloat8E4M3): round to nearest even; beyond 464 (the tie between
/// 448 and the NaN code) +-448 when `saturate`, else NaN; NaN stays NaN.
/// E4M3's codes grow with the value, so the code is the count of ulps from
/// zero (ulp 2^-9 below 2^-6, else 2^(e-3)), carries included.
SLUICE_HD uint8_t sluice_f8e4m3_bits(float f, bool saturate) {
  uint8_t sign = signbit(f) ? 0x80 : 0;
  float a = fabsf(f);
  if (a != a)
    return sign | 0x7f;
  if (a > 464.0f)
    return sign | (saturate ? 0x7e : 0x7f);
  if (a < 0.015625f)
    return sign | (uint8_t)nearbyintf(ldexpf(a, 9));
  int exponent;
  frexpf(a, &exponent);
  int e = exponent - 1;
  int steps = (int)nearbyintf(ldexpf(a, 3 - e));
  return sign | (uint8_t)(((e + 7) << 3) + (steps - 8));
}
SLUICE_HD sluice_f8e4m3 sluice_to_f8e4m3(float f, bool saturate = true) {
  sluice_f8e4m3 r;
  r.bits = sluice_f8e4m3_bits(f, saturate);
  return r;
}
/// `f` rounded to the nearest E4M3FN value, as a float: the value of a cast
/// or quantize_linear to fp8 inside a fused expression (storing it again is
/// exact).
SLUICE_HD float sl_f8e4m3_round(float f, bool saturate) {
  return sluice_load(sluice_to_f8e4m3(f, saturate));
}

/// Stores a computed value into a storage type.
template <typename T> struct sluice_store_t {
  template <typename V> SLUICE_HD static T apply(V v) { return (T)v; }
};
template <> struct sluice_store_t<sluice_f16> {
  template <typename V> SLUICE_HD static sluice_f16 apply(V v) { return sluice_to_f16((float)v); }
};
template <> struct sluice_store_t<sluice_bf16> {
  template <typename V> SLUICE_HD static sluice_bf16 apply(V v) { return sluice_to_bf16((float)v); }
};
template <> struct sluice_store_t<sluice_f8e4m3> {
  template <typename V> SLUICE_HD static sluice_f8e4m3 apply(V v) {
    return sluice_to_f8e4m3((float)v);
  }
};
template <> struct sluice_store_t<bool> {
  template <typename V> SLUICE_HD static bool apply(V v) { return v != 0; }
};
#define SLUICE_STORE(T, v) sluice_store_t<T>::apply(v)

// Math on float and double with one spelling (the C library's f-suffixed
// functions exist on the host and in CUDA device code).
#define SLUICE_UNARY_MATH(name, fn)                                            \
  SLUICE_HD float sl_##name(float x) { return fn##f(x); }                      \
  SLUICE_HD double sl_##name(double x) { return fn(x); }
SLUICE_UNARY_MATH(exp, exp)
SLUICE_UNARY_MATH(log, log)
SLUICE_UNARY_MATH(sqrt, sqrt)
SLUICE_UNARY_MATH(tanh, tanh)
SLUICE_UNARY_MATH(sin, sin)
SLUICE_UNARY_MATH(cos, cos)
SLUICE_UNARY_MATH(tan, tan)
SLUICE_UNARY_MATH(asin, asin)
SLUICE_UNARY_MATH(acos, acos)
SLUICE_UNARY_MATH(atan, atan)
SLUICE_UNARY_MATH(sinh, sinh)
SLUICE_UNARY_MATH(cosh, cosh)
SLUICE_UNARY_MATH(asinh, asinh)
SLUICE_UNARY_MATH(acosh, acosh)
SLUICE_UNARY_MATH(atanh, atanh)
SLUICE_UNARY_MATH(ceil, ceil)
SLUICE_UNARY_MATH(floor, floor)
SLUICE_UNARY_MATH(fabs, fabs)
SLUICE_UNARY_MATH(round_even, nearbyint)
#undef SLUICE_UNARY_MATH
/// erf for float as a rational function (the odd 13th-degree numerator and
/// 8th-degree denominator Eigen uses), within 5e-7 of erf everywhere: plain
/// arithmetic, so the GELU loops of transformers vectorize (glibc's erff is
/// a scalar call). Beyond |x| = 4, erf is +-1 in single precision. NaN stays
/// NaN (both compares are false).
SLUICE_HD float sl_erf(float x) {
  x = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}
SLUICE_HD double sl_erf(double x) { return erf(x); }
/// tanh for float as Eigen's odd 13th-degree / even 6th-degree rational
/// function on [-7.9, 7.9] (+-1 beyond, x itself near 0), within a few ulp:
/// plain arithmetic, so tanh-GELU loops vectorize.
SLUICE_HD float sl_tanh_rational(float a) {
  const float x = a < -7.90531110763549805f ? -7.90531110763549805f
                  : (a > 7.90531110763549805f ? 7.90531110763549805f : a);
  const float x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * x;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return (a > -0.0004f && a < 0.0004f) ? a : p / q;
}
SLUICE_HD double sl_tanh_rational(double x) { return tanh(x); }
/// GELU, exact: 0.5 x (1 + erf(x / sqrt 2)).
template <typename T> SLUICE_HD T sl_gelu(T x) {
  return (T)0.5 * x * ((T)1 + sl_erf(x * (T)0.7071067811865476));
}
/// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename T> SLUICE_HD T sl_gelu_tanh(T x) {
  return (T)0.5 * x * ((T)1 + sl_tanh_rational((T)0.7978845608028654 * (x + (T)0.044715 * x * x * x)));
}
SLUICE_HD float sl_pow(float a, float b) { return powf(a, b); }
SLUICE_HD double sl_pow(double a, double b) { return pow(a, b); }
SLUICE_HD float sl_fmod(float a, float b) { return fmodf(a, b); }
SLUICE_HD double sl_fmod(double a, double b) { return fmod(a, b); }
SLUICE_HD int64_t sl_pow(int64_t base, int64_t exponent) {
  if (exponent < 0)
    return base == 1 ? 1 : base == -1 ? ((exponent % 2) ? -1 : 1) : 0;
  int64_t result = 1;
  while (exponent) {
    if (exponent & 1)
      result *= base;
    base *= base;
    exponent >>= 1;
  }
  return result;
}

template <typename T> SLUICE_HD bool sl_isnan(T v) { return v != v; }
SLUICE_HD bool sl_isnan(int64_t) { return false; }
template <typename T> SLUICE_HD T sl_abs(T v) { return v < 0 ? -v : v; }
SLUICE_HD float sl_abs(float v) { return fabsf(v); }
SLUICE_HD double sl_abs(double v) { return fabs(v); }
template <typename T> SLUICE_HD T sl_sign(T v) {
  return sl_isnan(v) ? v : (T)((v > 0) - (v < 0));
}
template <typename T> SLUICE_HD T sl_relu(T v) {
  return v > 0 ? v : (sl_isnan(v) ? v : (T)0);
}
template <typename T> SLUICE_HD T sl_sigmoid(T v) {
  return (T)1 / ((T)1 + sl_exp(-v));
}
/// SiLU: x * sigmoid(x).
template <typename T> SLUICE_HD T sl_silu(T v) { return v / ((T)1 + sl_exp(-v)); }
template <typename T> SLUICE_HD T sl_max(T a, T b) {
  return (sl_isnan(a) || sl_isnan(b)) ? (T)NAN : (a > b ? a : b);
}
template <typename T> SLUICE_HD T sl_min(T a, T b) {
  return (sl_isnan(a) || sl_isnan(b)) ? (T)NAN : (a < b ? a : b);
}
SLUICE_HD int64_t sl_max(int64_t a, int64_t b) { return a > b ? a : b; }
SLUICE_HD int64_t sl_min(int64_t a, int64_t b) { return a < b ? a : b; }
SLUICE_HD int64_t sl_div(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }
template <typename T> SLUICE_HD T sl_div(T a, T b) { return a / b; }
/// ONNX Mod with fmod=0: the result takes the divisor's sign.
template <typename T> SLUICE_HD T sl_pymod(T a, T b) {
  T r = sl_fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
SLUICE_HD int64_t sl_pymod(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
SLUICE_HD int64_t sl_cmod(int64_t a, int64_t b) { return b == 0 ? 0 : a % b; }
template <typename T> SLUICE_HD T sl_cmod(T a, T b) { return sl_fmod(a, b); }
SLUICE_HD int64_t sl_shl(int64_t a, int64_t b) {
  return b >= 64 ? 0 : (int64_t)((uint64_t)a << b);
}
SLUICE_HD int64_t sl_shr(int64_t a, int64_t b) {
  return b >= 64 ? 0 : (int64_t)((uint64_t)a >> b);
}
template <typename T> SLUICE_HD bool sl_isinf(T v, bool positive, bool negative) {
  return isinf((double)v) && ((v > 0 && positive) || (v < 0 && negative));
}

/// Float to integer as ONNX Cast does it: toward zero, NaN to 0, saturating
/// at the int64 range (narrower types then wrap, like the evaluator).
SLUICE_HD int64_t sl_f2i(double v) {
  if (v != v)
    return 0;
  if (v >= 9.2233720368547758e18)
    return INT64_MAX;
  if (v <= -9.2233720368547758e18)
    return INT64_MIN;
  return (int64_t)v;
}

/// ONNX QuantizeLinear of one value, as the evaluator computes it: the
/// quotient x / scale (already divided, in float for non-f64 inputs, so that
/// ties round as in the ONNX reference), rounded half to even, plus the zero
/// point, saturated to [lo, hi]; NaN gives 0. Float arithmetic for outputs
/// of up to 16 bits (every integer involved is exact in float), so that the
/// loops vectorize; double for wider ones.
SLUICE_HD int64_t sl_quantize(float q, float zero, float lo, float hi) {
  float r = nearbyintf(q) + zero;
  r = r > lo ? r : lo;
  r = r < hi ? r : hi;
  return q != q ? 0 : (int64_t)r;
}
SLUICE_HD int64_t sl_quantize(double q, double zero, double lo, double hi) {
  double r = nearbyint(q) + zero;
  r = r > lo ? r : lo;
  r = r < hi ? r : hi;
  return q != q ? 0 : (int64_t)r;
}

#endif // SLUICE_GEN_SCALAR_H
