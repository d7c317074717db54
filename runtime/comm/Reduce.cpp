//===- Reduce.cpp - element types and sums of the host collectives --------===//

#include "runtime/comm/Reduce.h"

#include "sluice/bundle_abi.h"

#include <algorithm>
#include <cstring>

namespace sluice::runtime::comm {

size_t dtypeBytes(int32_t dtype) {
  switch (dtype) {
  case SLUICE_COMM_F32:
  case SLUICE_COMM_I32:
    return 4;
  case SLUICE_COMM_F16:
  case SLUICE_COMM_BF16:
    return 2;
  case SLUICE_COMM_F64:
  case SLUICE_COMM_I64:
    return 8;
  case SLUICE_COMM_I8:
  case SLUICE_COMM_U8:
    return 1;
  default:
    return 0;
  }
}

const char *dtypeName(int32_t dtype) {
  static const char *kNames[] = {"f32", "f16", "bf16", "f64",
                                 "i32", "i64", "i8",   "u8"};
  return dtype >= 0 && dtype < 8 ? kNames[dtype] : "?";
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  uint32_t word;
  if (exponent == 0x1f) { // inf, NaN
    word = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    word = sign;
  } else { // subnormal: normalize
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    word = sign | ((uint32_t)(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

uint16_t floatToHalf(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  uint16_t sign = (uint16_t)((word >> 16) & 0x8000);
  uint32_t exponent = (word >> 23) & 0xff, mantissa = word & 0x7fffff;
  if (exponent == 0xff) // inf stays inf, NaN stays a (quiet) NaN
    return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  int32_t e = (int32_t)exponent - 127 + 15;
  if (e >= 0x1f)
    return sign | 0x7c00; // overflow: inf
  if (e <= 0) {
    if (e < -10)
      return sign; // below half the smallest subnormal: zero
    // Subnormal: shift the mantissa (with its implicit one) into place and
    // round to nearest even.
    mantissa |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1)))
      ++half;
    return sign | (uint16_t)half;
  }
  uint32_t half = ((uint32_t)e << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // a carry into the exponent is right, up to inf
  return sign | (uint16_t)half;
}

float bf16ToFloat(uint16_t bits) {
  uint32_t word = (uint32_t)bits << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

uint16_t floatToBf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  if ((word & 0x7fffffff) > 0x7f800000) // NaN: keep it a quiet NaN
    return (uint16_t)((word >> 16) | 0x40);
  word += 0x7fff + ((word >> 16) & 1);
  return (uint16_t)(word >> 16);
}

namespace {

/// Elements summed per chunk: every source's chunk is read into `acc`
/// before dst's chunk is written, which is what lets dst be a source.
constexpr size_t kChunk = 1024;

template <typename T, typename Acc, typename Load, typename Store>
void sumChunks(void *dst, const void *const *sources, size_t numSources,
               size_t count, Load load, Store store) {
  Acc acc[kChunk];
  for (size_t start = 0; start < count; start += kChunk) {
    size_t n = std::min(kChunk, count - start);
    const T *first = static_cast<const T *>(sources[0]) + start;
    for (size_t i = 0; i < n; ++i)
      acc[i] = load(first[i]);
    for (size_t s = 1; s < numSources; ++s) {
      const T *source = static_cast<const T *>(sources[s]) + start;
      for (size_t i = 0; i < n; ++i)
        acc[i] = acc[i] + load(source[i]);
    }
    T *out = static_cast<T *>(dst) + start;
    for (size_t i = 0; i < n; ++i)
      out[i] = store(acc[i]);
  }
}

template <typename T>
void sumPlain(void *dst, const void *const *sources, size_t numSources,
              size_t count) {
  sumChunks<T, T>(
      dst, sources, numSources, count, [](T v) { return v; },
      [](T v) { return v; });
}

/// Signed integers add as their unsigned counterparts: wrap-around without
/// undefined behaviour.
template <typename T, typename U>
void sumWrapping(void *dst, const void *const *sources, size_t numSources,
                 size_t count) {
  sumChunks<T, U>(
      dst, sources, numSources, count, [](T v) { return (U)v; },
      [](U v) { return (T)v; });
}

} // namespace

void sumInto(void *dst, const void *const *sources, size_t numSources,
             size_t count, int32_t dtype) {
  if (numSources == 0 || count == 0)
    return;
  switch (dtype) {
  case SLUICE_COMM_F32:
    return sumPlain<float>(dst, sources, numSources, count);
  case SLUICE_COMM_F64:
    return sumPlain<double>(dst, sources, numSources, count);
  case SLUICE_COMM_F16:
    return sumChunks<uint16_t, float>(dst, sources, numSources, count,
                                      halfToFloat, floatToHalf);
  case SLUICE_COMM_BF16:
    return sumChunks<uint16_t, float>(dst, sources, numSources, count,
                                      bf16ToFloat, floatToBf16);
  case SLUICE_COMM_I32:
    return sumWrapping<int32_t, uint32_t>(dst, sources, numSources, count);
  case SLUICE_COMM_I64:
    return sumWrapping<int64_t, uint64_t>(dst, sources, numSources, count);
  case SLUICE_COMM_I8:
    return sumWrapping<int8_t, uint8_t>(dst, sources, numSources, count);
  case SLUICE_COMM_U8:
    return sumPlain<uint8_t>(dst, sources, numSources, count);
  default:
    return;
  }
}

} // namespace sluice::runtime::comm
