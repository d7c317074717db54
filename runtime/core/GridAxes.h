//===- GridAxes.h - a context's communicators per grid axis --- -*- C++ -*-===//
//
// A bundle whose device grid has several axes (manifest "parallel.grid"
// [2, 2], "axes" ["pp", "tp"]: tensor parallelism inside pipeline stages)
// runs its tensor-parallel collectives among the ranks of one stage only.
// When a context is created every rank splits its communicator once per
// such axis (RankComm::splitAxis); the bundle's run finds them in
// SluiceComm.axes (bundle ABI 5). Ranks are laid out row-major over the
// grid, outermost axis first: rank r = stage x tp + tp index.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_GRIDAXES_H
#define SLUICE_RUNTIME_CORE_GRIDAXES_H

#include "runtime/core/Comm.h"
#include "runtime/core/Manifest.h"

#include <string>

namespace sluice::runtime {

/// The SluiceMeshAxis of a grid axis name, or -1 for an axis whose
/// collectives use the job's communicator ("pp": transfers by world rank).
inline int32_t meshAxisOf(const std::string &name) {
  if (name == "tp")
    return SLUICE_AXIS_TP;
  if (name == "ep")
    return SLUICE_AXIS_EP;
  return -1;
}

/// Splits `comm` (rank `rank` of the manifest's grid) into one communicator
/// per grid axis with one (nothing for a grid of one axis, which spans
/// every rank). Collective over the grid's ranks.
inline bool splitGridAxes(const Manifest &manifest, int32_t rank, RankComm &comm,
                          std::string &error) {
  const ParallelSpec &grid = manifest.parallel;
  if (grid.grid.size() < 2)
    return true;
  int64_t stride = 1;
  for (size_t d = grid.grid.size(); d-- > 0;) {
    int64_t extent = grid.grid[d];
    int32_t axis = meshAxisOf(grid.axes[d]);
    if (axis >= 0 && extent > 1) {
      int64_t coordinate = (rank / stride) % extent;
      int64_t color = rank - coordinate * stride;
      if (!comm.splitAxis(axis, (int32_t)color, (int32_t)coordinate,
                          manifest.collectiveMaxBytes, error)) {
        error = "creating the '" + grid.axes[d] + "' axis communicator: " + error;
        return false;
      }
    }
    stride *= extent;
  }
  return true;
}

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_GRIDAXES_H
