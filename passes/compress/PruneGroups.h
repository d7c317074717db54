//===- PruneGroups.h - structurally tied dimensions of a function -*- C++ -*-===//
//
// The structure half of `sluice-prune` (DepGraph-style): which dimensions of
// which values must shrink together when one GEMM's output columns or one
// convolution's output channels are removed, and the rewrite that removes
// them. A group is a set of nodes (value, axis, inner): `axis` of `value`
// holds `units` units of `inner` consecutive positions each (a head of a Q
// projection's output is one unit of head_dim positions; after the reshape
// to [B, S, H, D] it is one position of axis H). Discovery starts at every
// GEMM with a constant 2-D weight and every convolution with a constant
// weight (group 1), and follows def and use edges by a rule per op to a
// fixpoint; constants met on the way are sliced where they are used
// (operand-locally), never followed to their other users. A group that
// reaches a function argument or result, an op without a rule, or an axis
// that cannot shrink (a normalized, reduced or softmax axis, attention's
// sequence axes) is unprunable, with the reason. Its sinks are the GEMMs
// and convolutions that consume its dimension as their K / input channels
// with a constant weight: the only places where the group's units leave
// it, so removing a unit is the same as zeroing its sink weights.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_COMPRESS_PRUNEGROUPS_H
#define SLUICE_PASSES_COMPRESS_PRUNEGROUPS_H

#include "passes/compress/CompressGuard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <string>
#include <vector>

namespace sluice::prune {

enum class GroupKind { Heads, Ffn, Channels };
const char *kindName(GroupKind kind);

/// `axis` of `value` holds the group's units, `inner` positions each, in
/// `blocks` consecutive pieces of `units * inner` positions (a fused QKV
/// projection's output is 3 blocks of the same heads; everything else 1).
struct PruneNode {
  mlir::Value value;
  int64_t axis = 0;
  int64_t inner = 1;
  int64_t blocks = 1;
};

/// Operand `operand` of `user` is a constant sliced along `axis`.
struct ConstantSlice {
  mlir::Operation *user = nullptr;
  unsigned operand = 0;
  int64_t axis = 0;
  int64_t inner = 1;
  int64_t blocks = 1;
};

/// A GEMM or convolution that consumes the group's dimension as its K /
/// input channels: operand 0 along `inputAxis`, its constant weight
/// (operand 1) along `weightAxis`, `inner` positions per unit and `blocks`
/// pieces in both.
struct Sink {
  mlir::Operation *op = nullptr;
  int64_t inputAxis = 0;
  int64_t weightAxis = 0;
  int64_t inner = 1;
  int64_t blocks = 1;
};

struct PruneGroup {
  GroupKind kind = GroupKind::Ffn;
  /// The GEMMs / convolutions whose outputs start the group, in block
  /// order; the first names the group in reports.
  std::vector<mlir::Operation *> seeds;
  int64_t units = 0;
  std::vector<PruneNode> nodes;
  std::vector<ConstantSlice> slices;
  std::vector<Sink> sinks;
  /// Why the group cannot shrink; empty when it can.
  std::string unprunable;
  bool prunable() const { return unprunable.empty(); }
};

/// Every group of `func`, seeded in block order (one group per set of tied
/// seeds). Groups without a sink or with fewer than two units are marked
/// unprunable too.
std::vector<PruneGroup> discoverGroups(mlir::func::FuncOp func);

/// `group` with its values and ops replaced by their clones in `mapping`
/// (a function cloned with it).
PruneGroup mapGroup(const PruneGroup &group, mlir::IRMapping &mapping);

/// Removes every unit of each group not in its `kept` list (ascending,
/// original numbering): constants sliced where used, values retyped,
/// reshape targets and split sizes rewritten, dead constants erased. The function's
/// interface never changes. Fails with `error` when the result does not
/// verify (an internal error).
mlir::LogicalResult applyPruning(mlir::func::FuncOp func, llvm::ArrayRef<const PruneGroup *> groups,
                                 llvm::ArrayRef<std::vector<int64_t>> kept,
                                 compress::ScratchBlobs *scratch, std::string &error);

/// What applyPruning computes, on zeros instead: the sink weights of every
/// unit not kept are zeroed and nothing changes shape (the differential
/// test's oracle, `mask-only`).
void maskPruned(mlir::func::FuncOp func, llvm::ArrayRef<const PruneGroup *> groups,
                llvm::ArrayRef<std::vector<int64_t>> kept);

/// The unit of position `p` along an axis of `blocks` pieces of `units`
/// units of `inner` positions.
inline int64_t unitAt(int64_t p, int64_t units, int64_t inner) {
  return (p % (units * inner)) / inner;
}

/// Units removed from `units` at `fraction`: fraction * units rounded.
int64_t removedAt(int64_t units, double fraction);

/// Kept units of `units` when `removed` go: at least one, raised until the
/// kept positions (kept * inner) are a multiple of 8 elements (the GEMM
/// kernels' vectors like it) where that still removes at least half of the
/// units it would have.
int64_t keptAfter(int64_t units, int64_t removed, int64_t inner);

/// Maps `axis` of a tensor of shape `from`, whose units are `inner`
/// positions, through a reshape to `to`: the output axis whose leading dims
/// hold the same outer elements, with the unit's positions there. False
/// when there is none: `rows` > 0 when units must coarsen to whole rows of
/// that axis (a unit count dividing `rows`), 0 when the reshape mixes the
/// axis with the dims before it.
bool mapReshapeAxis(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to, int64_t axis,
                    int64_t inner, int64_t &outAxis, int64_t &outInner, int64_t &rows);

} // namespace sluice::prune

#endif // SLUICE_PASSES_COMPRESS_PRUNEGROUPS_H
