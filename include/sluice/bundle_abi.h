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

/* Bumped whenever SluiceRunArgs, SluiceComm or the exported functions
 * change.
 * 3: the cuda target's fields (stream, device_state, host_arena,
 *    host_weights) and sluice_model_init/sluice_model_release.
 * 4: SluiceRunArgs.comm (multi-rank bundles, manifest "world_size" > 1).
 * 5: SluiceComm.axes (a communicator per axis of the device grid: the
 *    tensor-parallel ranks of one pipeline stage, docs/parallel.md).
 * 6: SluiceRunArgs.expert_load (the expert-load profile of moe ops). */
#define SLUICE_BUNDLE_ABI_VERSION 6

/* The axes of a device grid that have communicators of their own
 * (SluiceComm.axes). Pipeline transfers and the outputs' broadcast use the
 * whole job's communicator, with world ranks. */
typedef enum SluiceMeshAxis {
  SLUICE_AXIS_TP = 0,
  SLUICE_AXIS_EP = 1,
  SLUICE_MESH_AXES = 4
} SluiceMeshAxis;

/* Element types of collective buffers. */
typedef enum SluiceCommDType {
  SLUICE_COMM_F32 = 0,
  SLUICE_COMM_F16 = 1,
  SLUICE_COMM_BF16 = 2,
  SLUICE_COMM_F64 = 3,
  SLUICE_COMM_I32 = 4,
  SLUICE_COMM_I64 = 5,
  SLUICE_COMM_I8 = 6,
  SLUICE_COMM_U8 = 7
} SluiceCommDType;

/* The collectives a multi-rank bundle's run calls: one rank's handle on its
 * group of `world_size` ranks (ranks 0 .. world_size-1, this one `rank`).
 * The runtime's communication library (runtime/comm: MPI on cpu; NCCL, or
 * host-staged MPI when ranks share a GPU, on cuda) fills it; model libraries
 * only call through it, so they link neither MPI nor NCCL.
 *
 * Buffers: host pointers on cpu; device pointers on cuda, where every call
 * only enqueues on `stream` (a cudaStream_t; null on cpu) and must not
 * synchronize it or allocate while a CUDA graph may be capturing it. `send`
 * and `recv` never overlap. Every function returns 0, or nonzero with a
 * one-line message in `error` that names the peer rank at fault when one is
 * known (a rank that died or did not answer within the timeout). Every rank
 * calls the same collectives in the same order with the same sizes.
 *
 * Layouts (elements of `dtype`; W = world_size):
 *   all_reduce      send [count] -> recv [count], the sum over ranks
 *   all_gather      send [outer, inner] -> recv [outer, W, inner]: rank r's
 *                   block lands at recv[o][r][:] (a gather along any axis:
 *                   outer = the product of the dims before it)
 *   reduce_scatter  send [outer, W, inner] -> recv [outer, inner]: the sum
 *                   over ranks of send[o][rank][:]
 *   all_to_all      send [W, count] -> recv [W, count]: send[p] goes to rank
 *                   p, recv[p] came from rank p
 *   send / recv     [count] to / from rank `peer`
 *   broadcast       buf [count] from rank `root` to every rank */
typedef struct SluiceComm {
  void *state;
  int32_t rank;
  int32_t world_size;
  int32_t (*all_reduce)(void *state, const void *send, void *recv,
                        size_t count, int32_t dtype, void *stream, char *error,
                        size_t error_size);
  int32_t (*all_gather)(void *state, const void *send, void *recv,
                        size_t outer, size_t inner, int32_t dtype,
                        void *stream, char *error, size_t error_size);
  int32_t (*reduce_scatter)(void *state, const void *send, void *recv,
                            size_t outer, size_t inner, int32_t dtype,
                            void *stream, char *error, size_t error_size);
  int32_t (*all_to_all)(void *state, const void *send, void *recv,
                        size_t count, int32_t dtype, void *stream, char *error,
                        size_t error_size);
  int32_t (*send)(void *state, const void *buf, size_t count, int32_t dtype,
                  int32_t peer, void *stream, char *error, size_t error_size);
  int32_t (*recv)(void *state, void *buf, size_t count, int32_t dtype,
                  int32_t peer, void *stream, char *error, size_t error_size);
  int32_t (*broadcast)(void *state, void *buf, size_t count, int32_t dtype,
                       int32_t root, void *stream, char *error,
                       size_t error_size);
  /* ABI 5: the communicator of each grid axis (SluiceMeshAxis) for a
   * bundle whose grid has several axes, e.g. manifest "parallel.grid"
   * [2, 2] with axes ["pp", "tp"]: axes[SLUICE_AXIS_TP] spans the ranks
   * that differ only in their tp coordinate (rank r's group: the ranks of
   * its pipeline stage), ranked by their tp coordinate. Null where the
   * bundle has no such axis or it spans every rank (then this one). The
   * runtime makes them when a context is created (MPI_Comm_split on cpu
   * and for the host-staged cuda transport, ncclCommSplit on NCCL). */
  const struct SluiceComm *axes[SLUICE_MESH_AXES];
} SluiceComm;

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
  /* Multi-rank bundles (manifest "world_size" > 1): this rank's
   * communicator; `weights` is then this rank's weights file. Null for a
   * single-rank bundle, whose run calls no collective. */
  const SluiceComm *comm;
  /* ABI 6: the context's expert-load counters (int64 host memory; on cuda
   * mapped pinned memory that device code may write, in stream order), or
   * null: no profile. Each moe op of the manifest's "moe" list, in order,
   * owns "experts" consecutive counters (its offset is the sum of the
   * experts of the entries before it) and adds, per run, the tokens the
   * router sent to each expert over the whole routing (a token counted once
   * per chosen expert), whichever experts this rank holds. The runtime
   * zeroes them at context creation and on reset; runs only add. */
  int64_t *expert_load;
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

/* Exported by bundles whose manifest has "bundle_id": that id, 16 hex
 * digits, a hash of the generated source, its compile flags and the
 * weights' fingerprints. The runtime refuses a library whose id is not the
 * manifest's (a library and a manifest of different compiles). */
const char *sluice_model_bundle_id(void);

/* Optional (cpu bundles): frees the per-thread scratch (packing buffers,
 * im2col matrices) that the library's threads keep between runs. The
 * runtime calls it when the last model using the library is freed, so no
 * run can be in flight; later runs grow the buffers again. */
void sluice_model_release_scratch(void);
/* Optional, for tests: the bytes that scratch holds now. */
size_t sluice_model_scratch_bytes(void);

/* A weights file's fingerprint, recorded per file in the manifest
 * ("weights.fingerprint", or "fingerprint" of each "weights.ranks" entry)
 * and checked when the runtime maps it: FNV-1a (64 bit) over the size and
 * the first and last 64 KiB. Cheap at load (it reads 128 KiB), it catches
 * a weights file of another compile, not a deliberate forgery. */
static inline uint64_t sluice_weights_fingerprint(const unsigned char *data, uint64_t size) {
  uint64_t hash = 1469598103934665603ull, i;
  const uint64_t window = 65536, prime = 1099511628211ull;
  for (i = 0; i < 8; ++i) {
    hash ^= (size >> (8 * i)) & 0xff;
    hash *= prime;
  }
  for (i = 0; i < size && i < window; ++i) {
    hash ^= data[i];
    hash *= prime;
  }
  for (i = size > window ? size - window : size; i < size; ++i) {
    hash ^= data[i];
    hash *= prime;
  }
  return hash;
}

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_BUNDLE_ABI_H */
