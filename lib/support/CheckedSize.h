//===- CheckedSize.h - overflow-checked sizes from untrusted input -*- C++ -*-===//
//
// Every shape, element count, byte count and offset computed from a file
// (ONNX, .npy, .pb, a manifest, .mlir) goes through these before anything is
// allocated or indexed: a product or sum that would wrap is refused, and so
// is a tensor larger than the cap (SLUICE_MAX_TENSOR_BYTES, default 64 GiB:
// larger than any device here, small enough that a hostile header cannot
// make a tool allocate terabytes). Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_SUPPORT_CHECKEDSIZE_H
#define SLUICE_SUPPORT_CHECKEDSIZE_H

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

namespace sluice {

/// a * b for non-negative a and b, or none when it exceeds int64_t.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  if (a < 0 || b < 0)
    return std::nullopt;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// a + b for non-negative a and b, or none when it exceeds int64_t.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  if (a < 0 || b < 0)
    return std::nullopt;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// The product of `dims` (1 for a scalar), or none when a dim is negative
/// or the product exceeds int64_t.
template <typename Dims> std::optional<int64_t> checkedProduct(const Dims &dims) {
  int64_t n = 1;
  for (auto d : dims) {
    auto r = checkedMul(n, (int64_t)d);
    if (!r)
      return std::nullopt;
    n = *r;
  }
  return n;
}

/// The largest tensor a tool reads or allocates from untrusted input, in
/// bytes: SLUICE_MAX_TENSOR_BYTES when set to a positive integer, else
/// 64 GiB.
inline int64_t maxTensorBytes() {
  if (const char *env = std::getenv("SLUICE_MAX_TENSOR_BYTES")) {
    char *end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (end && *end == '\0' && v > 0)
      return v;
  }
  return int64_t(64) << 30;
}

/// Bytes of `elements` elements of `bitsPerElement` bits (4-bit types
/// packed two per byte), or none when it overflows or exceeds
/// maxTensorBytes().
inline std::optional<int64_t> checkedTensorBytes(int64_t elements, int64_t bitsPerElement) {
  auto bits = checkedMul(elements, bitsPerElement);
  if (!bits)
    return std::nullopt;
  int64_t bytes = *bits / 8 + (*bits % 8 != 0);
  if (bytes > maxTensorBytes())
    return std::nullopt;
  return bytes;
}

} // namespace sluice

#endif // SLUICE_SUPPORT_CHECKEDSIZE_H
