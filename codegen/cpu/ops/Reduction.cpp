//===- Reduction.cpp - cpu emitters: reduction ops ------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

namespace sluice::codegen {

void registerCpuReductionEmitters(CpuOpRegistry &registry) {}

} // namespace sluice::codegen
