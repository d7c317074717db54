//===- sluice_gen/cpu.h - scaffolding of generated cpu kernels -*- C++ -*-===//
//
// Included first by every cpu-target bundle source: the bundle ABI, the
// scalar helpers shared with the cuda target, the failure path and the step
// macro of the run function (tracing hooks around every kernel and library
// call, and early return on failure).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_H
#define SLUICE_GEN_CPU_H

#include "sluice/bundle_abi.h"
#include "sluice_gen/cpu_scratch.h"
#include "sluice_gen/scalar.h"

#include <memory>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/// Writes "<kernel>: <message>" into the run's error buffer; returns 1.
static inline int32_t sluice_fail(const SluiceRunArgs *args, const char *kernel,
                                  const char *message) {
  if (args->error && args->error_size)
    snprintf(args->error, args->error_size, "%s: %s", kernel, message);
  return 1;
}

/// A kernel that runs another's code (the cpu emitter defines kernels that
/// are alike but for their names once): the status of `shared`, with a
/// failure's message naming `kernel`, the step that ran.
static inline int32_t sluice_forward(const SluiceRunArgs *args, int32_t status,
                                     const char *shared, const char *kernel) {
  if (!status || !args->error || args->error_size == 0)
    return status;
  size_t n = strlen(shared), k = strlen(kernel), len = strlen(args->error);
  if (len < n || strncmp(args->error, shared, n) != 0 || args->error[n] != ':')
    return status;
  size_t room = args->error_size - 1;
  if (k > room)
    k = room;
  size_t tail = len - n < room - k ? len - n : room - k;
  memmove(args->error + k, args->error + n, tail);
  memcpy(args->error, kernel, k);
  args->error[k + tail] = 0;
  return status;
}

#define SLUICE_STEP(index, call)                                               \
  do {                                                                         \
    if (args->trace)                                                           \
      args->trace->begin(args->trace->user, index);                            \
    int32_t sluice_status = (call);                                            \
    if (args->trace)                                                           \
      args->trace->end(args->trace->user, index);                              \
    if (sluice_status)                                                         \
      return sluice_status;                                                    \
  } while (0)

#endif // SLUICE_GEN_CPU_H
