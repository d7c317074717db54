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

/* Bumped whenever SluiceRunArgs or the exported functions change.
 * 3: the cuda target's fields (stream, device_state, host_arena,
 *    host_weights) and sluice_model_init/sluice_model_release. */
#define SLUICE_BUNDLE_ABI_VERSION 3

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
  /* cuda target only (manifest "target": "cuda"; null on cpu). Then inputs,
   * outputs, output_dims (each output's dims, which the runtime resets from
   * the manifest at the start of every run and copies back after it),
   * arena and weights are device pointers, and the run only
   * enqueues work: every launch, library call and copy goes to `stream`
   * (a cudaStream_t), the caller synchronizes. The run may be captured into
   * a CUDA graph, so it must not synchronize or allocate. */
  void *stream;
  void *device_state;            /* what sluice_model_init returned */
  unsigned char *host_arena;     /* pinned host memory, manifest
                                    "host_arena_bytes": the staging buffers
                                    of steps that run on the host */
  const unsigned char *host_weights; /* weights.bin mapped on the host */
} SluiceRunArgs;

/* Exported by every bundle library. */
int32_t sluice_model_abi_version(void);
/* 0 on success; otherwise a message naming the kernel is in args->error.
 * On cuda a failure can also surface later, at the caller's synchronize:
 * the runtime then calls sluice_model_check. */
int32_t sluice_model_run(const SluiceRunArgs *args);

/* Exported by cuda bundles only. One state per runtime context and device:
 * library handles (cuBLASLt, cuDNN), workspaces and per-shape algorithm
 * caches. Called with the context's device current; 0 on success, else a
 * message in `error`. */
int32_t sluice_model_init(void **device_state, void *stream, char *error,
                          size_t error_size);
void sluice_model_release(void *device_state);
/* After the caller synchronized the stream: 0, or 1 with the message of a
 * failure that happened asynchronously (a host step's error, a device
 * fault), naming the kernel. */
int32_t sluice_model_check(void *device_state, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_BUNDLE_ABI_H */
