//===- ArenaPlanner.h - offsets in one arena from buffer lifetimes -*- C++ -*-===//
//
// The arithmetic of memory planning, apart from IR so that it is unit tested:
// buffers with [first, last] step lifetimes get offsets in one arena such that
// two buffers live at the same step never overlap.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_PLAN_ARENAPLANNER_H
#define SLUICE_PASSES_PLAN_ARENAPLANNER_H

#include <cstdint>
#include <vector>

namespace sluice {

struct BufferLifetime {
  int64_t bytes = 0;
  int64_t firstStep = 0; ///< the step that writes it
  int64_t lastStep = 0;  ///< the last step that reads it (>= firstStep)
};

struct ArenaPlan {
  std::vector<int64_t> offsets; ///< one per buffer, multiples of alignment
  int64_t arenaBytes = 0;
};

/// First-fit placement in order of firstStep (ties: input order). A buffer
/// may reuse space of buffers whose lastStep is before its firstStep: the
/// buffers a step reads are never overwritten by what it writes.
ArenaPlan planArena(const std::vector<BufferLifetime> &buffers,
                    int64_t alignment = 64);

} // namespace sluice

#endif // SLUICE_PASSES_PLAN_ARENAPLANNER_H
