//===- KernelModel.h - the kernel model as code generation names it -*- C++ -*-===//
//
// Both targets' emitters live in namespace sluice::codegen and read the kernel
// model (dialects/sluice/KernelForms.h: op categories and forms; lib/kernel:
// strided views, group anatomy) a great deal; these declarations let them name it unqualified.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_KERNELMODEL_H
#define SLUICE_CODEGEN_COMMON_KERNELMODEL_H

#include "dialects/sluice/KernelForms.h"
#include "lib/kernel/Groups.h"
#include "lib/kernel/Views.h"

namespace sluice::codegen {

using kernel::isElementwise;
using kernel::isLayoutPreserving;
using kernel::isRowOp;
using kernel::isViewOp;

using kernel::GroupOps;
using kernel::RowAxisProblem;
using kernel::RowYield;
using kernel::rowAxisOf;
using kernel::splitGroupOps;

using kernel::broadcastStridesTo;
using kernel::contiguousStrides;
using kernel::reshapeStrides;
using kernel::resolveOutputView;
using kernel::resolveView;
using kernel::stripOutputViews;
using kernel::StridedView;

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_KERNELMODEL_H
