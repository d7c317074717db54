//===- Misc.cpp - cpu emitters: misc ops ------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

namespace sluice::codegen {

void registerCpuMiscEmitters(CpuOpRegistry &registry) {}

} // namespace sluice::codegen
