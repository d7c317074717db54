//===- AttentionDescriptor.h - an attention plan as descriptor fields -*- C++ -*-===//
//
// Both targets pass an attention group (lib/kernel/AttentionPlan.h) to their
// kernels as a descriptor with the same field names (sluice_attn_desc in
// sluice_gen/cpu_attention.h, sluice_cuda_attn_desc in cuda_attention.h);
// this spells the plan as the statements that fill one.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_ATTENTIONDESCRIPTOR_H
#define SLUICE_CODEGEN_COMMON_ATTENTIONDESCRIPTOR_H

#include "codegen/common/CodeWriter.h"
#include "lib/kernel/AttentionPlan.h"

#include <string>

namespace sluice::codegen {

/// The descriptor's field assignments (`d.sq = 128; ...`), one statement
/// group per line at `w`'s indent (inside the initializing lambda).
void writeAttentionDescriptorFields(CodeWriter &w, const kernel::AttentionPlan &plan);

/// An exact C++ float literal (hex float, NAN, INFINITY).
std::string exactFloatLiteral(float f);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_ATTENTIONDESCRIPTOR_H
