//===- Sharding.h - how a value is laid out over a 1-D device grid -*- C++ -*-===//
//
// The vocabulary the parallelize phase's two passes share: the plan
// (sluice-plan-tensor-parallel) marks which weights are split and how, and
// the partitioner (sluice-partition) propagates a Sharding through every op
// from those weights, rewriting each op into one rank's op and inserting the
// collectives where a value must change its layout. docs/parallel.md has the
// rules per composite; docs/architecture.md says why this is sluice's own
// design rather than the upstream `shard` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_PARALLEL_SHARDING_H
#define SLUICE_PASSES_PARALLEL_SHARDING_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <cstdint>
#include <optional>
#include <string>

namespace sluice::parallel {

/// On a constant: `array<i64: axis, groups>`, the split the plan chose for
/// this weight (groups > 1: a fused weight whose `groups` equal parts along
/// `axis` are each split, e.g. a fused Q/K/V projection).
constexpr const char *kSplitAttr = "sluice.split";
/// On a gather: the vocab-parallel embedding lookup of its (split) table.
constexpr const char *kVocabParallelAttr = "sluice.vocab_parallel";
/// On `main`: the grid size (`--tp`), sequence parallelism (`--sp`, unit),
/// and the number of transformer layers the plan found.
constexpr const char *kTensorParallelAttr = "sluice.tp";
constexpr const char *kSequenceParallelAttr = "sluice.sp";
constexpr const char *kLayersAttr = "sluice.layers";

/// How a value is held by the ranks: whole on each (replicated), split in
/// equal blocks along `axis` (block r on rank r; with `groups` > 1, block r
/// of each of `groups` equal groups along the axis), or as partial sums
/// (the value is the sum over ranks of what each holds).
struct Sharding {
  enum Kind { Replicated, Split, Partial };
  Kind kind = Replicated;
  int64_t axis = -1;
  int64_t groups = 1;

  static Sharding replicated() { return {}; }
  static Sharding split(int64_t axis, int64_t groups = 1) { return {Split, axis, groups}; }
  static Sharding partial() { return {Partial, -1, 1}; }
  bool isReplicated() const { return kind == Replicated; }
  bool isSplit() const { return kind == Split; }
  bool isPartial() const { return kind == Partial; }
  bool operator==(const Sharding &o) const {
    return kind == o.kind && axis == o.axis && groups == o.groups;
  }
  bool operator!=(const Sharding &o) const { return !(*this == o); }
  /// "replicated", "split(axis 2)", "split(axis 2, 3 groups)", "partial sums".
  std::string describe() const;
};

/// Rank and shape of a value of ranked tensor type.
int64_t rankOf(mlir::Value v);
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);
/// A possibly negative axis attribute (read as unsigned) against `rank`.
int64_t normalized(int64_t axis, int64_t rank);
/// Elementwise for a split: the Elementwise category plus the activation
/// composites (gelu, silu), which compute one element from one element.
bool actsElementwise(mlir::Operation *op);

/// Where a split of dim `axis` (`groups` groups) of a tensor of shape `from`
/// lands after a reshape to `to`, over `parts` ranks: (axis, groups) in
/// `to`, or none when the split cannot be carried through (the split dim is
/// inside a merged group, or the reshaped dims do not divide by `parts`).
/// Symmetric: map a result's split back to the operand with (to, from).
std::optional<std::pair<int64_t, int64_t>> mapSplitThroughReshape(llvm::ArrayRef<int64_t> from,
                                                                  llvm::ArrayRef<int64_t> to,
                                                                  int64_t axis, int64_t groups,
                                                                  int64_t parts);

} // namespace sluice::parallel

#endif // SLUICE_PASSES_PARALLEL_SHARDING_H
