//===- Limits.h - bounds the sluice ops' type inference enforces ---*- C++ -*-===//
//
// Hostile models must get errors, not huge allocations, from type inference.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_DIALECTS_SLUICE_LIMITS_H
#define SLUICE_DIALECTS_SLUICE_LIMITS_H

#include <cstdint>

namespace sluice {

/// The most dims a result whose rank comes from a shape operand's static
/// length may have (Reshape, Expand, ConstantOfShape, MaxUnpool): a model
/// declaring a shape input of a billion elements gets an error, not a
/// billion-dim type (found by the onnx_import fuzzer, 2026-11-27).
constexpr int64_t kMaxInferredRank = 64;

} // namespace sluice

#endif // SLUICE_DIALECTS_SLUICE_LIMITS_H
