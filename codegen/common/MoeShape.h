//===- MoeShape.h - the sizes a MoE kernel is generated with ----*- C++ -*-===//
//
// Both targets' MoE kernels (sluice_gen/cpu_moe.h, cuda_moe.h) take the
// same `sluice_moe_shape` (sluice_gen/moe_shape.h); this writes its
// initializer for one `sluice.moe`, field for field.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_MOESHAPE_H
#define SLUICE_CODEGEN_COMMON_MOESHAPE_H

#include "dialects/sluice/SluiceOps.h"

#include <string>

namespace sluice::codegen {

/// `static const sluice_moe_shape shape = {...};` for `op` (static shapes:
/// kernel::moeKernelRefusal accepted it).
std::string moeShapeDecl(MoeOp op);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_MOESHAPE_H
