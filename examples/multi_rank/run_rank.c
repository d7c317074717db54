/*===- run_rank.c - run one rank of a multi-rank bundle (C API example) ---===*
 *
 * Start it as N processes, one per rank, with any MPI launcher:
 *
 *   mpirun -np 2 ./sluice-rank-example OUT.sluice
 *   srun -n 2 ./sluice-rank-example OUT.sluice
 *
 * Each process joins the job, loads its own rank of the bundle (which maps
 * only weights.rank<R>.bin), sets every input to ones on rank 0 and sends
 * them to the others (a program would read its real inputs there), runs,
 * and rank 0 prints the first values of each float32 output. The program
 * links only libsluice_runtime.so: no MPI, no NCCL (the runtime loads its
 * communication library itself). The call sequence is the one
 * include/sluice/runtime.h documents.
 *
 *===----------------------------------------------------------------------===*/

#include "sluice/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the failing call's message, naming the rank, and exits: the
 * launcher ends the other ranks (after a rank failed, MPI cannot be shut
 * down cleanly). */
static void check(SluiceStatus status, int rank, const char *what) {
  if (status == SLUICE_OK)
    return;
  fprintf(stderr, "run_rank: rank %d: %s: %s\n", rank, what,
          sluice_last_error());
  exit(2);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT.sluice (one process per rank)\n", argv[0]);
    return 2;
  }
  const char *bundle = argv[1];

  /* 1. Join the job: MPI_Init (unless this program did), this rank. */
  SluiceCommunicator *comm = NULL;
  check(sluice_comm_init(NULL, &comm), -1, "sluice_comm_init");
  int32_t rank = 0, world = 1;
  check(sluice_comm_rank(comm, &rank, &world), -1, "sluice_comm_rank");

  /* 2. This rank of the bundle, then tell the others whether it loaded:
   *    a rank that failed stops them here instead of in a collective. */
  SluiceModel *model = NULL;
  SluiceStatus loaded = sluice_model_load_rank(bundle, rank, &model);
  if (loaded != SLUICE_OK)
    fprintf(stderr, "run_rank: rank %d: %s\n", (int)rank, sluice_last_error());
  int32_t failed = 0, first_failed = -1;
  check(sluice_comm_agree(comm, loaded == SLUICE_OK, &failed, &first_failed),
        rank, "sluice_comm_agree");
  if (failed) {
    sluice_model_free(model);
    sluice_comm_free(comm);
    return 2;
  }

  /* 3. Its context: collective, every rank creates it. */
  SluiceContext *context = NULL;
  check(sluice_context_create_rank(model, comm, -1, &context), rank,
        "sluice_context_create_rank");

  /* 4. The same inputs on every rank: rank 0's, broadcast. */
  size_t num_inputs = 0;
  check(sluice_model_num_inputs(model, &num_inputs), rank, "inputs");
  for (size_t i = 0; i < num_inputs; ++i) {
    SluiceTensorInfo info;
    check(sluice_model_input(model, i, &info), rank, "sluice_model_input");
    unsigned char *data = calloc(info.bytes ? info.bytes : 1, 1);
    if (rank == 0 && strcmp(info.dtype, "float32") == 0)
      for (size_t e = 0; e < info.bytes / 4; ++e)
        ((float *)data)[e] = 1.0f;
    check(sluice_comm_broadcast(comm, data, info.bytes, 0), rank,
          "sluice_comm_broadcast");
    check(sluice_context_set_input(context, i, data, info.bytes), rank,
          "sluice_context_set_input");
    free(data);
  }

  /* 5. Run: collective, every rank runs. */
  check(sluice_context_run(context), rank, "sluice_context_run");

  /* 6. Rank 0 reports (every rank holds the outputs). */
  if (rank == 0) {
    const char *transport = "";
    sluice_context_comm_transport(context, &transport);
    printf("rank 0 of %d (%s):\n", (int)world, transport);
    size_t num_outputs = 0;
    sluice_model_num_outputs(model, &num_outputs);
    for (size_t i = 0; i < num_outputs; ++i) {
      SluiceTensorInfo info;
      const void *data = NULL;
      size_t bytes = 0;
      sluice_model_output(model, i, &info);
      check(sluice_context_output(context, i, &data, &bytes), rank,
            "sluice_context_output");
      if (strcmp(info.dtype, "float32") != 0)
        continue;
      printf("output '%s':", info.name);
      for (size_t e = 0; e < bytes / 4 && e < 4; ++e)
        printf(" %g", ((const float *)data)[e]);
      printf("\n");
    }
  }

  /* 7. Leave: contexts and models first, then the job (MPI_Finalize). */
  sluice_context_free(context);
  sluice_model_free(model);
  check(sluice_comm_free(comm), rank, "sluice_comm_free");
  return 0;
}
