/*===- sluice/runtime.h - load and run Sluice bundles (C API) -------------===*
 *
 * The Sluice runtime loads a bundle written by sluice-compile (a folder with
 * manifest.json, the compiled model library and weights.bin), binds inputs,
 * runs it and reports per-kernel timings. Plain C with opaque handles so it
 * can be used from any language; libsluice_runtime.so links only libc,
 * libdl and pthread (no MLIR, no LLVM).
 *
 * Errors: every function except sluice_runtime_version() and
 * sluice_last_error() returns a SluiceStatus; on failure the message, which
 * names the bundle folder or file, is in sluice_last_error() on the calling
 * thread until that thread's next failing call.
 *
 * Thread safety:
 *  - A SluiceModel is immutable once sluice_model_load() returns; it may be
 *    shared by any number of threads (queries and context creation are safe
 *    concurrently). Free it only after every context made from it is freed.
 *  - A SluiceContext holds one run's state (its own 64-byte-aligned arena,
 *    input and output buffers, trace). It belongs to one thread at a time:
 *    never call two functions on the same context concurrently. To run one
 *    model on several threads at once, give each thread its own context.
 *
 * cuda bundles (target "cuda"): a context lives on one GPU (its arena,
 * inputs, outputs and weights in device memory, a stream of its own, inputs
 * and outputs staged through pinned host memory). The CUDA support is a
 * separate library, libsluice_runtime_cuda.so, loaded from the folder of
 * libsluice_runtime.so (or the library search path) when the first cuda
 * context is created, so that this library links no CUDA: without it, a
 * CUDA driver or a GPU, sluice_context_create fails with
 * SLUICE_ERROR_DEVICE and one line saying which.
 *
 * Multi-rank bundles (sluice-compile --tp=N; manifest "world_size" N > 1)
 * run as N cooperating processes, one per rank, started by an MPI launcher
 * (mpirun, srun). Each process runs its rank through the functions of
 * "Multi-rank bundles" below, in this order:
 *
 *   SluiceCommunicator *comm;             // MPI_Init unless done already
 *   sluice_comm_init(NULL, &comm);        // (or pass &your_mpi_comm)
 *   sluice_comm_rank(comm, &rank, &world);
 *   SluiceModel *model;                   // maps weights.rank<rank>.bin only
 *   sluice_model_load_rank(dir, rank, &model);
 *   SluiceContext *context;               // collective: every rank calls it
 *   sluice_context_create_rank(model, comm, -1, &context);
 *   sluice_context_set_input(...);        // the same inputs on every rank
 *   sluice_context_run(context);          // collective: every rank runs
 *   sluice_context_output(...);           // every rank holds the outputs
 *   sluice_context_free(context);
 *   sluice_model_free(model);
 *   sluice_comm_free(comm);               // MPI_Finalize if init started it
 *
 * Every rank must create its contexts and run them in the same order (a
 * run's collectives pair up across ranks). The communication library
 * (libsluice_comm.so, which links MPI; libsluice_comm_cuda.so, NCCL, for
 * cuda bundles) is loaded from the folder of libsluice_runtime.so when
 * sluice_comm_init is first called, so that single-rank programs link
 * neither MPI nor NCCL. Everything that waits on other ranks has a
 * deadline, SLUICE_COMM_TIMEOUT seconds (default 10): a rank that died or
 * hangs makes the others fail with SLUICE_ERROR_COMM (or SLUICE_ERROR_RUN
 * for a run) and a message naming it, instead of hanging. After such a
 * failure the job cannot shut down cleanly: exit the process with an error
 * (the launcher ends the other ranks); sluice_comm_free then skips
 * MPI_Finalize. A multi-rank context belongs to one thread at a time, as
 * any context; MPI is initialized with MPI_THREAD_MULTIPLE asked for.
 *
 *===----------------------------------------------------------------------===*/
#ifndef SLUICE_RUNTIME_H
#define SLUICE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library hides everything but this API. */
#if defined(__GNUC__)
#define SLUICE_RT_API __attribute__((visibility("default")))
#else
#define SLUICE_RT_API
#endif

typedef enum SluiceStatus {
  SLUICE_OK = 0,
  SLUICE_ERROR_INVALID_ARGUMENT = 1, /* null pointer, bad index, wrong size */
  SLUICE_ERROR_BUNDLE = 2,           /* the bundle cannot be loaded */
  SLUICE_ERROR_RUN = 3,              /* the model's run reported a failure */
  SLUICE_ERROR_OUT_OF_MEMORY = 4,
  SLUICE_ERROR_DEVICE = 5, /* no device can run the bundle: no CUDA support,
                             driver or GPU; a GPU too old for its code; a
                             device-side allocation or setup failure */
  SLUICE_ERROR_COMM = 6,   /* multi-rank: no MPI or communication library, a
                             rank that did not answer within the timeout
                             (named in the message), an MPI failure */
  SLUICE_ERROR_INTERNAL = 7 /* a bug in the runtime (an unexpected exception,
                              caught so that it never crosses the C API) */
} SluiceStatus;

typedef struct SluiceModel SluiceModel;
typedef struct SluiceContext SluiceContext;
/* A process's place in a multi-rank job (an MPI communicator). */
typedef struct SluiceCommunicator SluiceCommunicator;

/* One graph input or output. Pointers stay valid while the model lives. */
typedef struct SluiceTensorInfo {
  const char *name;
  const char *dtype; /* NumPy's name: "float32", "int64", "bool" ... */
  int32_t rank;
  const int64_t *dims; /* `rank` dims; -1 marks an output's data-dependent
                          dim (NonZero, Unique ...): its extent is known
                          after a run (sluice_context_output_dims) */
  size_t bytes;        /* element count times element size (at the bound
                          of data-dependent dims) */
} SluiceTensorInfo;

/* One generated kernel or library call, as the manifest lists them. */
typedef struct SluiceKernelInfo {
  const char *name;
  const char *kind; /* "kernel", "library" or "host" (a cuda bundle's step
                       that runs on the cpu) */
  const char *op;   /* the sluice op, e.g. "sluice.matmul" ("" if unknown) */
  const char *node; /* the ONNX node it came from ("" if unknown) */
} SluiceKernelInfo;

/* One kernel or library call of the last traced run, in microseconds since
 * that run began. */
typedef struct SluiceTraceEvent {
  int32_t step; /* index into the model's kernels */
  double begin_us;
  double end_us;
} SluiceTraceEvent;

/* The runtime's version, SLUICE_VERSION_STRING. */
SLUICE_RT_API const char *sluice_runtime_version(void);
/* The calling thread's last error message ("" if none). */
SLUICE_RT_API const char *sluice_last_error(void);

/*---- Models ---------------------------------------------------------------*/

/* Loads the bundle in `bundle_dir`: reads and checks manifest.json, maps
 * weights.bin and opens the model library. */
SLUICE_RT_API SluiceStatus sluice_model_load(const char *bundle_dir, SluiceModel **out);
/* Frees a model (null is fine). Contexts made from it stay usable: each
 * keeps the bundle loaded until it is freed. */
SLUICE_RT_API SluiceStatus sluice_model_free(SluiceModel *model);

SLUICE_RT_API SluiceStatus sluice_model_num_inputs(const SluiceModel *model, size_t *count);
SLUICE_RT_API SluiceStatus sluice_model_num_outputs(const SluiceModel *model, size_t *count);
SLUICE_RT_API SluiceStatus sluice_model_input(const SluiceModel *model, size_t index,
                                SluiceTensorInfo *info);
SLUICE_RT_API SluiceStatus sluice_model_output(const SluiceModel *model, size_t index,
                                 SluiceTensorInfo *info);
/* "cpu" or "cuda". */
SLUICE_RT_API SluiceStatus sluice_model_target(const SluiceModel *model, const char **target);
/* The version of sluice-compile that wrote the bundle. */
SLUICE_RT_API SluiceStatus sluice_model_version(const SluiceModel *model,
                                  const char **version);
/* The manifest's "model" name ("" if absent). */
SLUICE_RT_API SluiceStatus sluice_model_name(const SluiceModel *model, const char **name);
SLUICE_RT_API SluiceStatus sluice_model_arena_bytes(const SluiceModel *model, size_t *bytes);
SLUICE_RT_API SluiceStatus sluice_model_weights_bytes(const SluiceModel *model,
                                        size_t *bytes);
SLUICE_RT_API SluiceStatus sluice_model_num_kernels(const SluiceModel *model, size_t *count);
SLUICE_RT_API SluiceStatus sluice_model_kernel(const SluiceModel *model, size_t index,
                                 SluiceKernelInfo *info);

/* Shape variants (sluice-compile --shapes): a bundle with a program per
 * listed shape. sluice_model_input / sluice_model_output describe the first
 * variant; these list every variant's (a bundle without variants has one,
 * variant 0, those of sluice_model_input / sluice_model_output). Each run
 * runs the variant whose input shapes equal the inputs' (see
 * sluice_context_set_input_shape). */
SLUICE_RT_API SluiceStatus sluice_model_num_variants(const SluiceModel *model, size_t *count);
SLUICE_RT_API SluiceStatus sluice_model_variant_input(const SluiceModel *model, size_t variant,
                                                      size_t index, SluiceTensorInfo *info);
SLUICE_RT_API SluiceStatus sluice_model_variant_output(const SluiceModel *model, size_t variant,
                                                       size_t index, SluiceTensorInfo *info);

/*---- Contexts -------------------------------------------------------------*/

/* A context for running `model`; it allocates the arena and the outputs.
 * cuda bundles: on the GPU that the environment variable SLUICE_DEVICE
 * names (an index, as cudaSetDevice counts), else device 0; it checks that
 * the GPU can run the bundle's code (manifest "gpu_architectures"), uploads
 * the weights and sets up the bundle's device state. */
SLUICE_RT_API SluiceStatus sluice_context_create(const SluiceModel *model,
                                   SluiceContext **out);
/* sluice_context_create on CUDA device `device` (>= 0; -1: SLUICE_DEVICE or
 * 0). cpu bundles ignore `device`. */
SLUICE_RT_API SluiceStatus sluice_context_create_on_device(const SluiceModel *model,
                                             int32_t device,
                                             SluiceContext **out);
/* Frees a context (null is fine). */
SLUICE_RT_API SluiceStatus sluice_context_free(SluiceContext *context);

/* Copies input `index` from `data`; `bytes` must equal the input's size. */
SLUICE_RT_API SluiceStatus sluice_context_set_input(SluiceContext *context, size_t index,
                                      const void *data, size_t bytes);
/* Binds input `index` to caller memory without copying; `data` must stay
 * valid and unchanged until the context is freed or the input is set again.
 * cuda bundles: a run cannot read host memory in place, so each run copies
 * the bound memory into the context's pinned staging and from there to the
 * device (what set_input does once); binding still saves the caller's copy
 * and lets it update the data in place between runs. */
SLUICE_RT_API SluiceStatus sluice_context_bind_input(SluiceContext *context, size_t index,
                                       const void *data, size_t bytes);
/* Binds input `index` to device memory on the context's GPU (cuda bundles;
 * a torch cuda tensor's data, say): each run copies it on the device into
 * the model's input, with no host copy or staging; `device_data` must stay
 * valid, on the context's device and unchanged while a run uses it, until
 * the context is freed or the input is set again. A CUDA graph captured
 * with one pointer is captured again when another one is bound. Host
 * memory, another device's, or a cpu bundle: SLUICE_ERROR_INVALID_ARGUMENT.
 * Outputs stay in host memory (sluice_context_output). */
SLUICE_RT_API SluiceStatus sluice_context_bind_device_input(SluiceContext *context, size_t index,
                                                            const void *device_data,
                                                            size_t bytes);
/* Declares the shape of input `index` (`rank` dims) for the next runs. A
 * bundle of shape variants runs the variant whose input shapes equal the
 * declared ones (an input set without a declared shape matches the
 * variants of its size, and a run whose inputs' sizes fit several variants
 * fails asking for the shapes); a shape no variant takes fails here, with
 * the list of the shapes the bundle has ("x: 1x128 | 8x128 | 32x128"). A
 * bundle without variants takes only its own shape. The size given to
 * set_input / bind_input must be that of the chosen variant's input. */
SLUICE_RT_API SluiceStatus sluice_context_set_input_shape(SluiceContext *context, size_t index,
                                                          const int64_t *dims, int32_t rank);
/* The shape variant the last run used (0 before any run, and always 0 for
 * a bundle without variants); its outputs are that variant's
 * (sluice_model_variant_output, sluice_context_output_dims). */
SLUICE_RT_API SluiceStatus sluice_context_variant(const SluiceContext *context, size_t *variant);
/* OpenMP threads for each run (>= 1); on cuda, those of the host steps
 * (ops run on the cpu). Without it a context takes SLUICE_NUM_THREADS (as
 * set when the context was made), else the hardware threads divided by
 * the contexts alive in the process (and by the ranks on the host), worked
 * out again at each run: contexts running side by side do not each start
 * a thread per core. */
SLUICE_RT_API SluiceStatus sluice_context_set_num_threads(SluiceContext *context,
                                            int32_t num_threads);
/* The thread count the context's next run uses. */
SLUICE_RT_API SluiceStatus sluice_context_num_threads(const SluiceContext *context,
                                                      int32_t *num_threads);
/* Runs the model once; every input must have been set. */
SLUICE_RT_API SluiceStatus sluice_context_run(SluiceContext *context);
/* Output `index` of the last run, owned by the context and valid until its
 * next run or its free (host memory on every target). */
SLUICE_RT_API SluiceStatus sluice_context_output(const SluiceContext *context, size_t index,
                                   const void **data, size_t *bytes);

/* Dims of output `index` as the last run shaped it (data-dependent dims
 * resolved; before any run, their bounds); owned by the context and valid
 * until its next run or its free. */
SLUICE_RT_API SluiceStatus sluice_context_output_dims(const SluiceContext *context,
                                        size_t index, const int64_t **dims,
                                        int32_t *rank);

/* Tracing: when on, each run records one event per kernel or library call.
 * Off by default (it costs two clock reads per call). cuda: traced runs are
 * not captured into a CUDA graph; each call is timed on the GPU by CUDA
 * events recorded around it on the context's stream. */
SLUICE_RT_API SluiceStatus sluice_context_enable_trace(SluiceContext *context, int on);

/* cuda bundles: capture a run into a CUDA graph and replay it, which saves
 * the launch cost of every kernel. On by default for bundles whose outputs
 * have static shapes: the first run is eager, the second is captured, later
 * runs replay it. A bundle whose run cannot be captured runs eagerly (see
 * sluice_context_cuda_graph). Turning it on again retries the capture. No
 * effect on cpu bundles. */
SLUICE_RT_API SluiceStatus sluice_context_enable_cuda_graph(SluiceContext *context,
                                              int on);
/* Whether the last run replayed a CUDA graph (`*replayed` 1 or 0) and, if
 * not, why (`*reason`, owned by the context, valid until the next call). */
SLUICE_RT_API SluiceStatus sluice_context_cuda_graph(const SluiceContext *context,
                                       int *replayed, const char **reason);
/* What runs the context: "cpu", or the GPU's name, architecture and index,
 * e.g. "NVIDIA H100 80GB HBM3 (sm_90, device 0)"; owned by the context. */
SLUICE_RT_API SluiceStatus sluice_context_device(const SluiceContext *context,
                                   const char **device);
/* The last run's duration in microseconds (traced or not). */
SLUICE_RT_API SluiceStatus sluice_context_run_time(const SluiceContext *context,
                                     double *us);
/* cuda: the last run's split in milliseconds, timed on the GPU by CUDA
 * events recorded by every run (eager or a replayed CUDA graph): copying the
 * inputs to the device, running the model, copying the outputs back.
 * `*available` is 1 then; 0 (and the times 0) on cpu, where a run is all
 * compute, and before a run. */
SLUICE_RT_API SluiceStatus sluice_context_run_split(const SluiceContext *context,
                                      double *host_to_device_ms,
                                      double *compute_ms,
                                      double *device_to_host_ms,
                                      int *available);
/* The last traced run's events, in the order the calls began; the array is
 * owned by the context and valid until its next run or its free. */
SLUICE_RT_API SluiceStatus sluice_context_trace(const SluiceContext *context,
                                  const SluiceTraceEvent **events,
                                  size_t *count);

/*---- Multi-rank bundles ---------------------------------------------------*/

/* Where a launcher put this process, read from its environment before MPI
 * starts: Open MPI's OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK, PMIx's
 * PMIX_RANK, PMI's PMI_RANK / PMI_SIZE (MPICH, srun --mpi=pmi2), Slurm's
 * SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID (within an srun step). */
typedef struct SluiceLaunchInfo {
  int32_t in_job;     /* 1: started by an MPI launcher or srun */
  int32_t rank;       /* -1 when unknown (0 outside a job) */
  int32_t world_size; /* -1 when unknown (1 outside a job) */
  int32_t local_rank; /* among the ranks on this host; -1 when unknown */
  const char *source; /* the variables read, e.g. "OMPI_COMM_WORLD_*"; ""
                         outside a job; static storage */
} SluiceLaunchInfo;
SLUICE_RT_API SluiceStatus sluice_launch_info(SluiceLaunchInfo *info);

/* The "world_size" of the bundle in `bundle_dir`, reading its manifest only
 * (no library, no weights): how many ranks it runs as. */
SLUICE_RT_API SluiceStatus sluice_bundle_world_size(const char *bundle_dir,
                                                    int32_t *world_size);

/* Joins the job: loads libsluice_comm.so, initializes MPI unless the
 * program did (MPI_THREAD_MULTIPLE asked for) and takes a duplicate of
 * `*mpi_comm` (a pointer to the program's MPI_Comm; null: MPI_COMM_WORLD)
 * for the runtime's own messages. */
SLUICE_RT_API SluiceStatus sluice_comm_init(const void *mpi_comm,
                                            SluiceCommunicator **out);
/* Leaves the job: waits (with the deadline) for every rank to arrive, then
 * finalizes MPI if sluice_comm_init initialized it. Free the contexts made
 * with it first. After a rank failed, or when a rank does not arrive, it
 * returns SLUICE_ERROR_COMM and leaves MPI as it is: exit the process (null
 * is fine). */
SLUICE_RT_API SluiceStatus sluice_comm_free(SluiceCommunicator *comm);
SLUICE_RT_API SluiceStatus sluice_comm_rank(const SluiceCommunicator *comm,
                                            int32_t *rank,
                                            int32_t *world_size);
/* The rank among the ranks on this host, and how many there are: a cuda
 * rank's GPU is its local rank (modulo the host's GPUs). */
SLUICE_RT_API SluiceStatus sluice_comm_local_rank(
    const SluiceCommunicator *comm, int32_t *local_rank, int32_t *local_size);
/* `bytes` of host memory at `data` from rank `root` to every rank (e.g. the
 * inputs one rank read). Collective. */
SLUICE_RT_API SluiceStatus sluice_comm_broadcast(SluiceCommunicator *comm,
                                                 void *data, size_t bytes,
                                                 int32_t root);
/* Every rank says whether it is ready (`ok` nonzero); every rank learns how
 * many are not (`*num_failed`) and the lowest of them (`*first_failed`, -1
 * if none): so that a rank that failed to load stops the others cleanly
 * instead of leaving them waiting in a collective. Collective. */
SLUICE_RT_API SluiceStatus sluice_comm_agree(SluiceCommunicator *comm,
                                             int32_t ok, int32_t *num_failed,
                                             int32_t *first_failed);

/* Loads rank `rank` of the bundle in `bundle_dir`: as sluice_model_load,
 * but maps only that rank's weights file (weights.rank<rank>.bin). A
 * single-rank bundle has rank 0 only. sluice_model_load refuses a
 * multi-rank bundle. */
SLUICE_RT_API SluiceStatus sluice_model_load_rank(const char *bundle_dir,
                                                  int32_t rank,
                                                  SluiceModel **out);
/* The bundle's world size (1 for a single-rank bundle) and the rank it was
 * loaded as. */
SLUICE_RT_API SluiceStatus sluice_model_world_size(const SluiceModel *model,
                                                   int32_t *world_size);
SLUICE_RT_API SluiceStatus sluice_model_rank(const SluiceModel *model,
                                             int32_t *rank);

/* A context for a rank of a multi-rank bundle: `model` loaded as the rank
 * `comm` has, the world sizes equal. It gets a communicator of its own (on
 * cpu, MPI on host buffers; on cuda, NCCL, or MPI staged through pinned
 * host memory when ranks share a GPU). cuda: on GPU `device`, or with -1
 * on the rank's local rank modulo the host's GPUs (SLUICE_DEVICE does not
 * apply). cpu: OpenMP threads default to the hardware's divided by the
 * ranks on this host. Collective: every rank creates its contexts in the
 * same order. sluice_context_create refuses a multi-rank model. */
SLUICE_RT_API SluiceStatus sluice_context_create_rank(const SluiceModel *model,
                                                      SluiceCommunicator *comm,
                                                      int32_t device,
                                                      SluiceContext **out);
/* A multi-rank context's collective transport: "mpi", "nccl", or "mpi,
 * staged through pinned host memory (ranks share a GPU)"; "" for a
 * single-rank context. Owned by the context. */
SLUICE_RT_API SluiceStatus sluice_context_comm_transport(
    const SluiceContext *context, const char **transport);

/*---- Mixture of experts: the expert-load profile ---------------------------*/

/* One mixture-of-experts op of the bundle (manifest "moe"). */
typedef struct SluiceMoeInfo {
  const char *node;         /* the ONNX node ("" if unknown) */
  const char *gating;       /* "top_k" (a learned router) or "hard" (an
                               expert index per sample) */
  int64_t experts;          /* E, the model's experts */
  int64_t top_k;            /* experts each token goes to */
  int64_t experts_per_rank; /* E / ep: rank r holds experts
                               [r * this, (r + 1) * this) */
} SluiceMoeInfo;

/* The bundle's moe ops (0 when it has none) and op `index`'s facts, owned
 * by the model. */
SLUICE_RT_API SluiceStatus sluice_model_num_moe(const SluiceModel *model, size_t *count);
SLUICE_RT_API SluiceStatus sluice_model_moe(const SluiceModel *model, size_t index,
                                            SluiceMoeInfo *info);
/* The tokens moe op `index` routed to each of its `experts` experts, summed
 * over the context's runs since it was created or last reset (a token
 * counted once per chosen expert; every rank counts the whole routing, not
 * only its experts' share). `counts` holds `count` entries, at least
 * `experts`. Counters belong to the context: contexts running at once do
 * not share them. */
SLUICE_RT_API SluiceStatus sluice_context_expert_load(const SluiceContext *context, size_t index,
                                                      int64_t *counts, size_t count);
/* Zeroes the context's expert-load counters (every moe op). */
SLUICE_RT_API SluiceStatus sluice_context_reset_expert_load(SluiceContext *context);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_RUNTIME_H */
