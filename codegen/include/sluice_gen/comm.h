// sluice_gen/comm.h - collective calls of generated code (both targets).
//
// A multi-rank bundle's collectives go through the communicator the runtime
// hands each run (SluiceRunArgs.comm, sluice/bundle_abi.h): MPI on cpu,
// NCCL or host-staged MPI on cuda, which the runtime's communication
// library implements. A failure (a rank that died or did not answer in
// time) fails the run with the kernel's name and the communicator's
// message, which names the rank at fault.
#ifndef SLUICE_GEN_COMM_H
#define SLUICE_GEN_COMM_H

#include "sluice/bundle_abi.h"

#include <stdio.h>

static inline int32_t sluice_comm_failed(const SluiceRunArgs *args, const char *kernel,
                                         const char *what, const char *message) {
  if (args->error && args->error_size)
    snprintf(args->error, args->error_size, "%s: %s: %s", kernel, what,
             message && message[0] ? message : "failed without a message");
  return 1;
}

static inline const SluiceComm *sluice_comm_of(const SluiceRunArgs *args) {
  const SluiceComm *comm = args->comm;
  if (comm && comm->world_size >= 1)
    return comm;
  return 0;
}

#define SLUICE_COMM_NEEDED(args, kernel, what)                                                    \
  sluice_comm_failed(args, kernel, what,                                                          \
                     "this bundle runs as several ranks: run it with sluice-run --ranks=N, "      \
                     "or under mpirun -np N")

static inline int32_t sluice_all_reduce(const SluiceRunArgs *args, const char *kernel,
                                        const void *send, void *recv, size_t count,
                                        int32_t dtype, void *stream) {
  const SluiceComm *c = sluice_comm_of(args);
  char message[512] = {0};
  if (!c)
    return SLUICE_COMM_NEEDED(args, kernel, "all_reduce");
  if (c->all_reduce(c->state, send, recv, count, dtype, stream, message, sizeof message))
    return sluice_comm_failed(args, kernel, "all_reduce", message);
  return 0;
}

static inline int32_t sluice_all_gather(const SluiceRunArgs *args, const char *kernel,
                                        const void *send, void *recv, size_t outer,
                                        size_t inner, int32_t dtype, void *stream) {
  const SluiceComm *c = sluice_comm_of(args);
  char message[512] = {0};
  if (!c)
    return SLUICE_COMM_NEEDED(args, kernel, "all_gather");
  if (c->all_gather(c->state, send, recv, outer, inner, dtype, stream, message, sizeof message))
    return sluice_comm_failed(args, kernel, "all_gather", message);
  return 0;
}

static inline int32_t sluice_reduce_scatter(const SluiceRunArgs *args, const char *kernel,
                                            const void *send, void *recv, size_t outer,
                                            size_t inner, int32_t dtype, void *stream) {
  const SluiceComm *c = sluice_comm_of(args);
  char message[512] = {0};
  if (!c)
    return SLUICE_COMM_NEEDED(args, kernel, "reduce_scatter");
  if (c->reduce_scatter(c->state, send, recv, outer, inner, dtype, stream, message,
                        sizeof message))
    return sluice_comm_failed(args, kernel, "reduce_scatter", message);
  return 0;
}

static inline int32_t sluice_all_to_all(const SluiceRunArgs *args, const char *kernel,
                                        const void *send, void *recv, size_t count,
                                        int32_t dtype, void *stream) {
  const SluiceComm *c = sluice_comm_of(args);
  char message[512] = {0};
  if (!c)
    return SLUICE_COMM_NEEDED(args, kernel, "all_to_all");
  if (c->all_to_all(c->state, send, recv, count, dtype, stream, message, sizeof message))
    return sluice_comm_failed(args, kernel, "all_to_all", message);
  return 0;
}

#endif // SLUICE_GEN_COMM_H
