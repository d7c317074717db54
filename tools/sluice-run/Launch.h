//===- Launch.h - --ranks: start the ranks via mpirun --------- -*- C++ -*-===//
//
// `sluice-run OUT.sluice --ranks=N ...` outside an MPI job runs
// `mpirun -np N <this sluice-run> OUT.sluice --ranks=N ...`, with what a
// container needs so that the user sets nothing: ranks beyond the cores
// (--oversubscribe), root (OMPI_ALLOW_RUN_AS_ROOT), no binding of a rank to
// one core (its OpenMP threads need several), no single-copy shared memory
// (Docker's default seccomp profile denies the ptrace it needs). Each rank
// then finds itself in the job from mpirun's environment.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_SLUICE_RUN_LAUNCH_H
#define SLUICE_TOOLS_SLUICE_RUN_LAUNCH_H

#include <string>
#include <vector>

namespace sluice::tools {

/// Runs `arguments` (sluice-run's own, unchanged; `bundle` is the bundle
/// they name, for messages) as `ranks` processes
/// under mpirun (SLUICE_MPIRUN, else mpirun on PATH) and waits. Returns
/// sluice-run's exit status: the ranks' 0 (match) or 1 (mismatch) as they
/// are; anything else (a rank failed, was killed, or mpirun could not start
/// them all) prints one line saying so and returns 2. Dies with one line
/// when there is no mpirun.
int launchRanks(int ranks, const std::string &bundle,
                const std::vector<std::string> &arguments);

} // namespace sluice::tools

#endif // SLUICE_TOOLS_SLUICE_RUN_LAUNCH_H
