//===- QuantReference.h - host reference for the quantized cuda kernels ---===//
//
// What the quantized kernel tests (test/gpu/quant_test.cu on a device,
// test/unit/CudaQuantEmuTest.cpp under host emulation) check
// sluice_gen/cuda_quant*.cuh against, written independently of the
// kernels: QuantizeLinear with its own round-half-to-even, the exact int8
// GEMM in int64 (then modulo 2^32, as the kernels' int32 sums), the
// weight-only GEMM in double from the unpacked weights, and E4M3 on the
// host. Plain C++: the host compiler and nvcc's host pass both build it.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TEST_COMMON_QUANTREFERENCE_H
#define SLUICE_TEST_COMMON_QUANTREFERENCE_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace sluice_quant_test {

/// ONNX QuantizeLinear: x / scale in float, rounded half to even (by
/// hand: floor and the distance to it), plus zp, saturated; NaN -> qmin.
inline int32_t quantizeRef(float x, float scale, int32_t zp, int32_t qmin, int32_t qmax) {
  const float q = x / scale;
  if (std::isnan(q))
    return qmin;
  if (std::isinf(q))
    return q > 0 ? qmax : qmin;
  const double f = std::floor((double)q), frac = (double)q - f;
  double r = f;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(f, 2.0) != 0.0))
    r = f + 1.0;
  r += zp;
  return r < qmin ? qmin : r > qmax ? qmax : (int32_t)r;
}

/// acc[b][i][j] = sum_k (A(i, k) - zA) * B(k, j) computed in int64 and
/// wrapped to int32. A(i, k) at a[b * strideA + i * lda + k], B(k, j) at
/// b[b * strideB + k * sbk + j * sbn].
template <typename TA>
std::vector<int32_t> int8GemmRef(const TA *a, int64_t lda, int64_t strideA, const int8_t *b,
                                 int64_t sbk, int64_t sbn, int64_t strideB, int32_t zA,
                                 int64_t batch, int64_t m, int64_t n, int64_t k) {
  std::vector<int32_t> acc(batch * m * n);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += ((int64_t)a[bi * strideA + i * lda + p] - zA) *
               (int64_t)b[bi * strideB + p * sbk + j * sbn];
        acc[(bi * m + i) * n + j] = (int32_t)(uint32_t)(uint64_t)s;
      }
  return acc;
}

/// `v` rounded to f16's 11 significant bits, ties to even (normal range,
/// what dequantized weights need; 0 stays 0).
inline double roundToHalf(double v) {
  if (v == 0.0)
    return v;
  int exponent = 0;
  const double mantissa = std::frexp(v, &exponent); // v = mantissa * 2^exponent, 0.5 <= |m| < 1
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
}

/// One dequantized weight as dequantize_linear gives it: (q - zp) * scale
/// rounded to the scale's type (f16 when `halfScales`, else f32).
inline double dequantRef(int32_t q, int32_t zp, double scale, bool halfScales) {
  const double w = (double)(q - zp) * scale;
  return halfScales ? roundToHalf(w) : (double)(float)w;
}

/// The weight-only GEMM in double: y(i, j) = sum_k A(i, k) *
/// dequantRef(q(k, j), zp, scale[(k / group) * n + j]), A and scales given
/// as doubles (their rounded values), q unpacked.
inline std::vector<double> wonlyRef(const std::vector<double> &a, int64_t lda,
                                    const std::vector<int32_t> &q, const std::vector<double> &scale,
                                    int32_t zp, int64_t group, int64_t m, int64_t n, int64_t k,
                                    bool halfScales) {
  std::vector<double> y(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double av = a[i * lda + p];
      for (int64_t j = 0; j < n; ++j)
        y[i * n + j] += av * dequantRef(q[p * n + j], zp, scale[(p / group) * n + j], halfScales);
    }
  return y;
}

/// Relative L2 distance of `got` from `ref` (over |ref|, 1 when ref is 0).
inline double relL2(const std::vector<double> &got, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

/// E4M3 (fn: no infinities, 0x7f/0xff NaN, max 448) to float.
inline float e4m3ToFloat(uint8_t v) {
  const int sign = v >> 7, exponent = (v >> 3) & 15, mantissa = v & 7;
  if (exponent == 15 && mantissa == 7)
    return NAN;
  const float magnitude = exponent == 0 ? std::ldexp((float)mantissa / 8.0f, -6)
                                        : std::ldexp(1.0f + (float)mantissa / 8.0f, exponent - 7);
  return sign ? -magnitude : magnitude;
}

/// float to the nearest E4M3 (ties to even, saturating at +-448), by
/// search over the 126 finite magnitudes: slow and obviously right.
inline uint8_t floatToE4m3(float x) {
  const float ax = std::fabs(x);
  uint8_t best = 0;
  float bestErr = INFINITY;
  for (int code = 0; code < 0x7f; ++code) {
    const float err = std::fabs(e4m3ToFloat((uint8_t)code) - ax);
    if (err < bestErr || (err == bestErr && (code & 1) == 0)) {
      best = (uint8_t)code;
      bestErr = err;
    }
  }
  return (uint8_t)(best | (x < 0 ? 0x80 : 0));
}

} // namespace sluice_quant_test

#endif // SLUICE_TEST_COMMON_QUANTREFERENCE_H
