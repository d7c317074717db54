//===- Launch.cpp - where a launcher put this process ---------------------===//

#include "runtime/core/Launch.h"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace sluice::runtime {

namespace {

/// The non-negative integer in variable `name`, or -1 when it is unset or
/// not one.
int32_t number(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return -1;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (*end || errno || value < 0 || value > INT32_MAX)
    return -1;
  return (int32_t)value;
}

bool set(const char *name) {
  const char *text = std::getenv(name);
  return text && *text;
}

} // namespace

LaunchInfo readLaunchEnvironment() {
  LaunchInfo info;
  auto found = [&](const char *source, int32_t rank, int32_t world,
                   int32_t local) {
    info.inJob = true;
    info.source = source;
    info.rank = rank;
    info.worldSize = world;
    info.localRank = local;
    return info;
  };
  if (set("OMPI_COMM_WORLD_SIZE")) // Open MPI's mpirun
    return found("OMPI_COMM_WORLD_*", number("OMPI_COMM_WORLD_RANK"),
                 number("OMPI_COMM_WORLD_SIZE"),
                 number("OMPI_COMM_WORLD_LOCAL_RANK"));
  if (set("PMI_SIZE") && set("PMI_RANK")) // MPICH's hydra, srun --mpi=pmi2
    return found("PMI_*", number("PMI_RANK"), number("PMI_SIZE"),
                 set("MPI_LOCALRANKID") ? number("MPI_LOCALRANKID")
                                        : number("SLURM_LOCALID"));
  if (set("PMIX_RANK")) // a PMIx launcher: the size comes with MPI_Init
    return found("PMIX_RANK", number("PMIX_RANK"), -1, number("SLURM_LOCALID"));
  // Slurm sets SLURM_PROCID in batch scripts too, where one process runs:
  // only a step that srun started (SLURM_STEP_ID) is a job of ranks.
  if (set("SLURM_PROCID") && set("SLURM_NTASKS") &&
      (set("SLURM_STEP_ID") || set("SLURM_STEPID")))
    return found("SLURM_*", number("SLURM_PROCID"), number("SLURM_NTASKS"),
                 number("SLURM_LOCALID"));
  return info;
}

} // namespace sluice::runtime
