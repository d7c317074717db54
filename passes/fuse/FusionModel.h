//===- FusionModel.h - op categories, group forms and the cost model -*- C++ -*-===//
//
// What the fuse passes know about ops: their category (view, elementwise,
// anchor), which kernel group forms (F1-F5 of docs/architecture.md "fuse")
// a set of ops makes, and the cost model that decides what may be recomputed.
// The grouping pass (FuseGroups.cpp) proposes merges; checkForm() is the one
// place that says whether a merged group is still a form the emitters take.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_FUSE_FUSIONMODEL_H
#define SLUICE_PASSES_FUSE_FUSIONMODEL_H

#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/Operation.h"

#include <string>

namespace sluice::fusion {

/// The attribute that ties the ops of one group together (an i64 id), and
/// the unit attribute that marks the op a group's kernel is named after.
constexpr llvm::StringLiteral kGroupAttr = "sluice.group";
constexpr llvm::StringLiteral kAnchorAttr = "sluice.group_anchor";

enum class Kind {
  View,        // index remap, no code (reshape, transpose, slice, split, ...)
  Elementwise, // isElementwise()
  Gemm,        // float matmul (a library call with an epilogue)
  Row,         // softmax / layer_norm / rms_norm / reduce over trailing axes
  Attention,   // sluice.attention
  Other,       // anything else: a group of its own (F5)
};

enum class Form { Elementwise, Gemm, Row, Attention, Single };

Kind kindOf(mlir::Operation *op);
/// Element types the GEMM and convolution library calls take: f32, f64, and
/// f16/bf16 (--precision; cuBLASLt/cuDNN accumulate them in fp32, the cpu
/// target widens them into f32 GEMMs).
bool isLibraryFloat(mlir::Type element);
/// Reshape, squeeze and unsqueeze: views that keep the row-major layout.
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
/// Whether `op`'s results (and operands) all have static shapes: groups are
/// only formed over static tensors.
bool hasStaticShapes(mlir::Operation *op);

//===-- Forms -------------------------------------------------------------===//

/// The form of the group made of `ops` (any order), or failure with the
/// reason in `why`. `allowViews` false admits only F1 without views and
/// singletons (what `mode=elementwise` produces).
mlir::FailureOr<Form> checkForm(llvm::ArrayRef<mlir::Operation *> ops,
                                bool allowViews, std::string &why);

/// "sluice.matmul (node 'x')": how remarks name an op.
std::string describeOp(mlir::Operation *op);

} // namespace sluice::fusion

#endif // SLUICE_PASSES_FUSE_FUSIONMODEL_H
