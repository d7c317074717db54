/*===- sluice/bundle_abi.h - the contract between a bundle and the runtime -===*
 *
 * A Sluice bundle's compiled library (model.so) is generated C++ that
 * includes this header and exports the two functions below. The runtime
 * (runtime/) dlopens the library, checks sluice_model_abi_version() against
 * SLUICE_BUNDLE_ABI_VERSION and calls sluice_model_run() once per run with
 * that run's buffers. Plain C so that both sides may be built by different
 * compilers; no MLIR, no LLVM.
 *
 *===----------------------------------------------------------------------===*/
#ifndef SLUICE_BUNDLE_ABI_H
#define SLUICE_BUNDLE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever SluiceRunArgs or the exported functions change. */
#define SLUICE_BUNDLE_ABI_VERSION 2

/* Called around every kernel and library call when tracing is on; `step` is
 * the index into the manifest's "kernels" array. */
typedef struct SluiceTraceHooks {
  void *user;
  void (*begin)(void *user, int32_t step);
  void (*end)(void *user, int32_t step);
} SluiceTraceHooks;

/* One run's buffers. Shapes are static except data-dependent output dims
 * (NonZero, Unique, NonMaxSuppression ...): the manifest gives every input's
 * and output's dtype and shape (-1 for such a dim, with the output's
 * "max_shape" bounding it), and the arena's size. */
typedef struct SluiceRunArgs {
  const void *const *inputs;     /* one per graph input, graph order */
  void *const *outputs;          /* one per graph output, caller-allocated
                                    (at its manifest "max_shape" if any) */
  int64_t *const *output_dims;   /* one per graph output: its dims, filled
                                    with the manifest's shape before the run;
                                    the model writes the actual extent of
                                    every data-dependent (-1) dim */
  unsigned char *arena;          /* manifest "arena_bytes", 64-byte aligned */
  const unsigned char *weights;  /* weights.bin, mapped, 64-byte aligned */
  int32_t num_threads;           /* >= 1: OpenMP threads for this run */
  const SluiceTraceHooks *trace; /* null: no tracing */
  char *error;                   /* where a failing run writes its message */
  size_t error_size;
} SluiceRunArgs;

/* Exported by every bundle library. */
int32_t sluice_model_abi_version(void);
/* 0 on success; otherwise a message naming the kernel is in args->error. */
int32_t sluice_model_run(const SluiceRunArgs *args);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_BUNDLE_ABI_H */
