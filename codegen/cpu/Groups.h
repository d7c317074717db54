//===- Groups.h - kernel-group emitters of the cpu target ---*- C++ -*-===//
//
// The fuse phase leaves kernel groups of five forms (docs/architecture.md,
// "fuse"): elementwise (F1), GEMM with an epilogue (F2), row op with a
// prologue and an epilogue (F3), attention with its views (F4) and single
// ops (F5). emitCpuModel classifies each kernel body and calls one of the
// emitters below; F5 goes through the op registry (CpuEmitter.h).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_CPU_GROUPS_H
#define SLUICE_CODEGEN_CPU_GROUPS_H

#include "codegen/common/KernelModel.h"
#include "lib/kernel/Groups.h"
#include "dialects/sluice/SluiceOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <set>
#include <string>
#include <variant>

namespace sluice::codegen {

/// What a group emitter sees: the kernel, C++ names for its leaves and
/// outputs, and the strings it appends to.
struct GroupContext {
  KernelOp kernel;
  std::string name;
  /// Statements of the kernel function (which returns 0 after them).
  std::string *body;
  /// Namespace-scope declarations for this kernel (constant arrays).
  std::string *prologue;
  std::set<std::string> *headers;
  /// `const T *` names of leaves: block arguments ("inN") and non-splat
  /// dense constants ("cN", arrays in the prologue).
  llvm::DenseMap<mlir::Value, std::string> pointers;
  /// C++ literals of splat (or one-element) constants.
  llvm::DenseMap<mlir::Value, std::string> literals;
  /// `T *` name of yield operand i: "out<i>".
  std::string output(unsigned i) const { return "out" + std::to_string(i); }
  void include(const std::string &header) { headers->insert(header); }
  /// A statement that fails the run with a C++ string literal expression.
  std::string fail(const std::string &messageExpr) const {
    return "return sluice_fail(args, \"" + name + "\", " + messageExpr + ");";
  }
  /// The C++ pointer expression for a leaf view: "(in0 + 128)"; fails (with
  /// an error) when the view's base is not a leaf.
  mlir::FailureOr<std::string> leafPointer(const StridedView &view) const;
};

LogicalResult emitElementwiseGroup(GroupContext &ctx);

/// Form F1 as both targets see it: one iteration space (the yielded values'
/// shape before their trailing views), every leaf and output an access with
/// an element offset and strides over `dims` (the space with unit dims
/// dropped and neighbours merged where every access is contiguous across
/// them; at least one dim, innermost last).
struct ElementwisePlan {
  struct Access {
    std::string pointer;
    int64_t offset = 0;
    std::vector<int64_t> strides; ///< one per entry of dims
  };
  std::vector<Access> accesses;
  std::vector<int64_t> dims;
  int64_t total = 1;
  KernelYieldOp yield;
  /// Leaf values read by compute ops (or yielded as they are) -> access.
  llvm::MapVector<mlir::Value, unsigned> leafAccess;
  /// Access of each yield operand.
  std::vector<unsigned> outAccess;
  /// The yielded values before their trailing views.
  llvm::SmallVector<mlir::Value> roots;
  llvm::SmallVector<mlir::Operation *> computeOps;

  /// The statements computing one element: a local per op, then a store
  /// per output. `index(a)` spells access a's element index.
  mlir::FailureOr<std::string>
  scalarBody(const llvm::DenseMap<mlir::Value, std::string> &literals,
             llvm::function_ref<std::string(unsigned)> index,
             const std::string &indent) const;
};
mlir::FailureOr<ElementwisePlan>
planElementwiseGroup(KernelOp kernel, const llvm::DenseMap<mlir::Value, std::string> &pointers,
                     const llvm::DenseMap<mlir::Value, std::string> &literals,
                     llvm::function_ref<std::string(unsigned)> outputName);
LogicalResult emitGemmGroup(GroupContext &ctx);
LogicalResult emitRowGroup(GroupContext &ctx);
LogicalResult emitAttentionGroup(GroupContext &ctx);

using kernel::GroupOps;
using kernel::RowAxisProblem;
using kernel::rowAxisOf;
using kernel::splitGroupOps;

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CPU_GROUPS_H
