//===- Movement.cpp - cpu emitters: movement ops ------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

namespace sluice::codegen {

void registerCpuMovementEmitters(CpuOpRegistry &registry) {}

} // namespace sluice::codegen
