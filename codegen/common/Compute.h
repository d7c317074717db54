//===- Compute.h - the arithmetic of a kernel step -------------*- C++ -*-===//
//
// What a launch computes in (docs/quantization.md, `"compute"`): the
// report's and the manifest's steps[].compute. One definition for both
// targets and both outputs.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_COMPUTE_H
#define SLUICE_CODEGEN_COMMON_COMPUTE_H

#include "dialects/sluice/SluiceOps.h"

#include <string>

namespace sluice::codegen {

/// The arithmetic of `kernel`'s launch. The anchor (the body's first op
/// that is neither elementwise nor a view) decides:
///   matmul_integer / conv_integer with 8-bit operands        "int8"
///   matmul whose B is, through casts and views, a
///   dequantize_linear of a constant of i8 / i4 or ui4 / f8    "int8w" / "int4w" / "fp8"
///   otherwise the anchor's floating element type (its result's, else its
///   first floating operand's)                                 "f32" "f16" "bf16" "f64"
/// A group without a floating anchor (elementwise, views, integer ops):
/// the element type of its first output as MLIR spells it ("i64", "ui8",
/// "f32", "i1").
std::string computeOf(KernelOp kernel);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_COMPUTE_H
