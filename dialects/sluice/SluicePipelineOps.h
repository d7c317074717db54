//===- SluicePipelineOps.h - pipeline stages' transfers ------*- C++ -*-===//
//
// sluice.transfer (SluicePipelineOps.td), apart from SluiceOps.h so that
// only the pipeline pass, its evaluator and the code generators include it.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_DIALECTS_SLUICE_SLUICEPIPELINEOPS_H
#define SLUICE_DIALECTS_SLUICE_SLUICEPIPELINEOPS_H

#include "dialects/sluice/SluiceOps.h"

#define GET_OP_CLASSES
#include "dialects/sluice/SluicePipelineOps.h.inc"

#endif // SLUICE_DIALECTS_SLUICE_SLUICEPIPELINEOPS_H
