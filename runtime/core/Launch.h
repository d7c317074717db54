//===- Launch.h - where a launcher put this process -------------*- C++ -*-===//
//
// mpirun and srun tell a process its rank through environment variables,
// readable before MPI starts: enough for sluice-run to decide whether it
// is one rank of a job or must launch the job itself, and to refuse a
// mismatched world size before MPI_Init.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_LAUNCH_H
#define SLUICE_RUNTIME_CORE_LAUNCH_H

#include <cstdint>

namespace sluice::runtime {

struct LaunchInfo {
  bool inJob = false;
  /// -1: unknown.
  int32_t rank = 0, worldSize = 1, localRank = 0;
  const char *source = ""; ///< the variables read
};

/// Reads Open MPI's, PMI's, PMIx's and Slurm's variables, in that order.
LaunchInfo readLaunchEnvironment();

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_LAUNCH_H
