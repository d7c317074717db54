//===- WeightTransform.h - weights stored in a kernel's own layout -*- C++ -*-===//
//
// Some kernels read a weight in a layout of their own, made once at compile
// time: the cpu int8 GEMM reads its B packed into 64-column panels with the
// column sums (sluice_gen/cpu_int8.h, sluice_int8_pack_b). The target says,
// per kernel input, which transform it wants (a WeightTransformQuery); the
// weight is then stored transformed in weights.bin, in place of its raw
// bytes (never twice), when every kernel that reads it asks for the same
// transform. A weight read raw by any kernel stays raw, and the kernels
// that wanted it transformed transform it at run time instead: they ask
// storedTransform, which gives the same answer to ModelFacts (which writes
// the bytes) and to every emitter (which reads them).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_WEIGHTTRANSFORM_H
#define SLUICE_CODEGEN_COMMON_WEIGHTTRANSFORM_H

#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Tensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice::codegen {

/// A weight's layout in the bundle when it is not the tensor's row-major
/// bytes.
struct WeightTransform {
  /// The transform and all its parameters ("int8_pack_b k=768 n=3072 ...");
  /// kernels sharing a weight agree when their keys are equal.
  std::string key;
  /// The stored bytes, from the weight's value.
  std::function<std::vector<unsigned char>(const Tensor &)> apply;
};

/// The transform a kernel wants for its input `input` (an index into the
/// kernel's inputs), or none: it reads that input as it is.
using WeightTransformQuery =
    llvm::function_ref<std::optional<WeightTransform>(KernelOp kernel, unsigned input)>;

/// How the top-level constant `weight` is stored: the transform every
/// kernel reading it asks for through `query`, or none (a user reads it
/// raw, the users disagree, or `query` is null).
std::optional<WeightTransform> storedTransform(mlir::Value weight, WeightTransformQuery query);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_WEIGHTTRANSFORM_H
