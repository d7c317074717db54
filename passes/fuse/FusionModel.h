//===- FusionModel.h - fusion policy: op kinds, group legality, costs -*- C++ -*-===//
//
// What the fuse passes decide beyond the kernel model (dialects/sluice/
// KernelForms.h, which names each group's form): the kind an op plays in a
// group (view, elementwise, anchor), which merges keep a group legal for the
// emitters (checkForm), and the cost model that says what may be recomputed.
// The grouping pass (FuseGroups.cpp) proposes merges; checkForm() is the one
// place that accepts them, and it returns the form the kernel model judges.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_FUSE_FUSIONMODEL_H
#define SLUICE_PASSES_FUSE_FUSIONMODEL_H

#include "dialects/sluice/KernelForms.h"
#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Locations.h"

#include "mlir/IR/Operation.h"

#include <string>

namespace sluice::fusion {

/// The attribute that ties the ops of one group together (an i64 id), and
/// the unit attribute that marks the op a group's kernel is named after.
constexpr llvm::StringLiteral kGroupAttr = "sluice.group";
constexpr llvm::StringLiteral kAnchorAttr = "sluice.group_anchor";

using ::sluice::describeOp;
using kernel::hasStaticShapes;
using kernel::isLibraryFloat;

/// The part an op can play in a group.
enum class Kind {
  View,        // a kernel-model view op with constant parameters
  Elementwise, // kernel::isElementwise, except casts from or to strings
  Gemm,        // float matmul of rank >= 2, or an int8 matmul_integer /
               // conv_integer (kernel::isInt8Contraction), or an f32 2-D
               // conv (kernel::isEpilogueConv): a library call with an
               // epilogue
  Row,         // a row op over trailing dims (kernel::isTrailingRowOp)
  Attention,   // sluice.attention
  Other,       // anything else: a group of its own (F5)
};

Kind kindOf(mlir::Operation *op);
/// Reshape, squeeze and unsqueeze with constant parameters: views that keep
/// the row-major layout and that fusion may put in any group.
bool isLayoutView(mlir::Operation *op);

//===-- Cost model --------------------------------------------------------===//

/// Whether recomputing `op` in a second group costs real work: every anchor
/// (GEMM, reduction, attention, ...) and transcendental elementwise ops
/// (exp, log, erf, tanh, sigmoid, gelu, silu, pow, trigonometry). Views
/// cost nothing; add/mul/compare/select/cast are cheap.
bool isExpensive(mlir::Operation *op);
/// Most cheap elementwise ops one group may duplicate from its producers'
/// groups (a duplicate reads the producer's inputs instead of its result).
constexpr int kDuplicateBudget = 4;

//===-- Group legality ----------------------------------------------------===//

/// Whether the ops of a proposed group (any order) still make a group the
/// emitters take, with the roles fusion assigns (prologue, anchor,
/// epilogue, trailing views); on success the form kernel::judgeForm gives
/// it, else failure with the reason in `why`. `allowViews` false admits
/// only F1 without views and singletons (what `mode=elementwise` produces).
mlir::FailureOr<KernelForm> checkForm(llvm::ArrayRef<mlir::Operation *> ops, bool allowViews,
                                      std::string &why);

} // namespace sluice::fusion

#endif // SLUICE_PASSES_FUSE_FUSIONMODEL_H
