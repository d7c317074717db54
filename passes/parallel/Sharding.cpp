//===- Sharding.cpp - sharding descriptions and reshape mapping -----------===//

#include "passes/parallel/Sharding.h"

#include "dialects/sluice/KernelForms.h"

#include <vector>

namespace sluice::parallel {

int64_t rankOf(mlir::Value v) { return llvm::cast<mlir::RankedTensorType>(v.getType()).getRank(); }

llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
}

int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

bool actsElementwise(mlir::Operation *op) {
  return kernel::isElementwise(op) || llvm::isa<GeluOp, SiluOp>(op);
}

std::string Sharding::describe() const {
  switch (kind) {
  case Replicated:
    return "replicated";
  case Partial:
    return "partial sums";
  case Split:
    return "split(axis " + std::to_string(axis) +
           (groups > 1 ? ", " + std::to_string(groups) + " groups)" : ")");
  }
  return "?";
}

namespace {

struct DimGroup {
  size_t from0, from1, to0, to1;
};

/// Pairs runs of dims of `from` and `to` with equal products (the dims a
/// row-major reshape merges or splits together); empty when the element
/// counts differ or a dim is 0.
std::vector<DimGroup> reshapeGroups(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  for (int64_t d : from)
    if (d <= 0)
      return {};
  for (int64_t d : to)
    if (d <= 0)
      return {};
  while (i < from.size() || j < to.size()) {
    DimGroup g{i, i, j, j};
    int64_t pf = 1, pt = 1;
    if (i < from.size())
      pf *= from[i++];
    if (j < to.size())
      pt *= to[j++];
    while (pf != pt) {
      if (pf < pt) {
        if (i >= from.size())
          return {};
        pf *= from[i++];
      } else {
        if (j >= to.size())
          return {};
        pt *= to[j++];
      }
    }
    g.from1 = i;
    g.to1 = j;
    groups.push_back(g);
  }
  return groups;
}

} // namespace

std::optional<std::pair<int64_t, int64_t>> mapSplitThroughReshape(llvm::ArrayRef<int64_t> from,
                                                                  llvm::ArrayRef<int64_t> to,
                                                                  int64_t axis, int64_t groups,
                                                                  int64_t parts) {
  if (axis < 0 || axis >= (int64_t)from.size())
    return std::nullopt;
  for (const DimGroup &g : reshapeGroups(from, to)) {
    if ((size_t)axis < g.from0 || (size_t)axis >= g.from1)
      continue;
    // The group becomes one dim: the split dim's leading dims in the group
    // multiply the groups (each of their values is a group of blocks).
    if (g.to1 - g.to0 == 1) {
      int64_t pre = 1;
      for (size_t d = g.from0; d < (size_t)axis; ++d)
        pre *= from[d];
      return std::make_pair((int64_t)g.to0, groups * pre);
    }
    // One dim becomes several: the split lands on the first dim whose
    // leading dims in the group are exactly the groups.
    if (g.from1 - g.from0 == 1) {
      int64_t pre = 1;
      for (size_t k = g.to0; k < g.to1; pre *= to[k], ++k)
        if (pre == groups && to[k] > 1 && to[k] % parts == 0)
          return std::make_pair((int64_t)k, (int64_t)1);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace sluice::parallel
