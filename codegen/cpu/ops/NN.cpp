//===- NN.cpp - cpu emitters: nn ops ------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

namespace sluice::codegen {

void registerCpuNNEmitters(CpuOpRegistry &registry) {}

} // namespace sluice::codegen
