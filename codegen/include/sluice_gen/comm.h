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

/* The communicator of grid axis `axis` (SluiceMeshAxis), or the job's for
 * -1: a collective among the tensor-parallel ranks of one pipeline stage
 * runs on its axis's. */
static inline const SluiceComm *sluice_comm_on(const SluiceRunArgs *args, int32_t axis) {
  const SluiceComm *comm = sluice_comm_of(args);
  if (!comm || axis < 0)
    return comm;
  return axis < SLUICE_MESH_AXES ? comm->axes[axis] : 0;
}

/* Calls communicator function `what` of grid axis `axis` (-1: the job's)
 * with the arguments after it (then the message buffer); returns from the
 * caller: 0, or 1 with the run's error. */
#define SLUICE_COMM_CALL_ON(args, axis, kernel, what, ...)                                        \
  do {                                                                                            \
    const SluiceComm *comm_ = sluice_comm_on(args, axis);                                         \
    char message_[512] = {0};                                                                     \
    if (!sluice_comm_of(args))                                                                    \
      return SLUICE_COMM_NEEDED(args, kernel, #what);                                             \
    if (!comm_)                                                                                   \
      return sluice_comm_failed(args, kernel, #what,                                              \
                                "the runtime made no communicator for this collective's grid "    \
                                "axis (bundle ABI 5)");                                           \
    if (comm_->what(comm_->state, __VA_ARGS__, message_, sizeof message_))                        \
      return sluice_comm_failed(args, kernel, #what, message_);                                   \
    return 0;                                                                                     \
  } while (0)

#define SLUICE_COMM_CALL(args, kernel, what, ...)                                                 \
  SLUICE_COMM_CALL_ON(args, -1, kernel, what, __VA_ARGS__)

/* The collectives: `axis` is the grid axis they span (-1: every rank). */
static inline int32_t sluice_all_reduce(const SluiceRunArgs *args, const char *kernel,
                                        const void *send, void *recv, size_t count,
                                        int32_t dtype, void *stream, int32_t axis) {
  SLUICE_COMM_CALL_ON(args, axis, kernel, all_reduce, send, recv, count, dtype, stream);
}

static inline int32_t sluice_all_gather(const SluiceRunArgs *args, const char *kernel,
                                        const void *send, void *recv, size_t outer,
                                        size_t inner, int32_t dtype, void *stream,
                                        int32_t axis) {
  SLUICE_COMM_CALL_ON(args, axis, kernel, all_gather, send, recv, outer, inner, dtype, stream);
}

static inline int32_t sluice_reduce_scatter(const SluiceRunArgs *args, const char *kernel,
                                            const void *send, void *recv, size_t outer,
                                            size_t inner, int32_t dtype, void *stream,
                                            int32_t axis) {
  SLUICE_COMM_CALL_ON(args, axis, kernel, reduce_scatter, send, recv, outer, inner, dtype,
                      stream);
}

static inline int32_t sluice_all_to_all(const SluiceRunArgs *args, const char *kernel,
                                        const void *send, void *recv, size_t count,
                                        int32_t dtype, void *stream, int32_t axis) {
  SLUICE_COMM_CALL_ON(args, axis, kernel, all_to_all, send, recv, count, dtype, stream);
}

static inline int32_t sluice_broadcast(const SluiceRunArgs *args, const char *kernel, void *buf,
                                       size_t count, int32_t dtype, int32_t root, void *stream) {
  SLUICE_COMM_CALL(args, kernel, broadcast, buf, count, dtype, root, stream);
}

/* Pipeline parallelism (sluice.transfer): ranks are stages of `stage_size`
 * consecutive ranks each (the tensor-parallel ranks of one stage). */
static inline int32_t sluice_stage(const SluiceRunArgs *args, int32_t stage_size) {
  const SluiceComm *comm = sluice_comm_of(args);
  return comm ? comm->rank / stage_size : 0;
}

/* `bytes` of an activation from stage `from` to stage `to`: rank r of stage
 * `from` sends to rank r + (to - from) * stage_size, which receives; other
 * stages do nothing. */
static inline int32_t sluice_transfer(const SluiceRunArgs *args, const char *kernel,
                                      const void *send, void *recv, size_t bytes, int32_t from,
                                      int32_t to, int32_t stage_size, void *stream) {
  const SluiceComm *comm = sluice_comm_of(args);
  if (!comm)
    return SLUICE_COMM_NEEDED(args, kernel, "transfer");
  int32_t stage = comm->rank / stage_size, hop = (to - from) * stage_size;
  if (stage == from)
    SLUICE_COMM_CALL(args, kernel, send, send, bytes, SLUICE_COMM_U8, comm->rank + hop, stream);
  if (stage == to)
    SLUICE_COMM_CALL(args, kernel, recv, recv, bytes, SLUICE_COMM_U8, comm->rank - hop, stream);
  return 0;
}

#endif // SLUICE_GEN_COMM_H
