//===- GroupContext.h - what a kernel-group emitter sees -------*- C++ -*-===//
//
// The C++ names a group's leaves and outputs have in generated code, the
// strings its emitter appends to, and form F1's plan (one iteration space,
// every leaf and output a strided access): shared by the cpu emitters, the
// cuda elementwise emitter and the GEMM/row epilogue code of both targets.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_GROUPCONTEXT_H
#define SLUICE_CODEGEN_COMMON_GROUPCONTEXT_H

#include "codegen/common/KernelModel.h"
#include "dialects/sluice/SluiceOps.h"
#include "lib/kernel/Access.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <set>
#include <string>
#include <vector>

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

/// Form F1 as both targets see it: one iteration space (the yielded values'
/// shape before their trailing views), every leaf and output an access with
/// an element offset and strides over `dims` (the space with unit dims
/// dropped and neighbours merged where every access is contiguous across
/// them; at least one dim, innermost last).
struct ElementwisePlan {
  /// Strides: one per entry of dims.
  using Access = kernel::Access;
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
} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_GROUPCONTEXT_H
