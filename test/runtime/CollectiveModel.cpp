//===- CollectiveModel.cpp - a hand-written multi-rank bundle library -----===//
//
// Stands in for what sluice-compile --tp=N generates, so that the runtime's
// multi-rank half is tested on its own: one library for every rank (SPMD),
// its rank's weights w (weights.rank<R>.bin, 24 floats) and input x (24
// floats, the same on every rank), and a run that calls every collective of
// the ABI on data that depends on the rank's weights. Every output is
// complete on every rank (MakeCollectiveBundle.cpp computes what they must
// hold), so rank 0 can check them all:
//
//   all_reduce      [24]        sum_r w_r * x
//   all_gather      [2, W, 3]   rank p's block [2, 3] = w_p[o*3+k] + x[k]
//   reduce_scatter  [2, W, 3]   reduce_scatter of w_r[(o*W+p)*3+k] * x[k]
//                               (outer 2), then all_gather'ed
//   all_to_all      [W, W, 4]   all_to_all of r*1000 + p*10 + c + w_r[c],
//                               then all_gather'ed
//   send_recv       [W, 4]      each rank sends 2*w_r[0..4) to rank r+1 and
//                               receives from r-1, then all_gather'ed
//   broadcast       [4]         w_(W-1)[4..8) from rank W-1
//   all_reduce_i32  [4]         sum_r (r+1)*(i+1), an int32 all_reduce, in
//                               place
//
// It refuses x[0] == -12345 on rank 1 only (a failure of one rank), and
// x[0] == -777 makes every rank but 0 sleep 3 s before its first
// collective (a rank that is slow, not dead).
//
// Built with SLUICE_COLLECTIVE_SIM_CUDA it is a cuda bundle's library for
// the simulated CUDA runtime (test/unit/simcuda): the same steps run as
// stream host functions between the collectives, which the runtime's
// communicator only enqueues, so that the order holds when a run is
// captured into a graph and replayed.
//
//===----------------------------------------------------------------------===//

#include "sluice/bundle_abi.h"

#ifdef SLUICE_COLLECTIVE_SIM_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace {

constexpr int kN = 24, kK = 3, kC = 4;

/// One run's buffers (arena slices), fixed for a context.
struct Run {
  int W = 1, r = 0;
  const float *x = nullptr, *w = nullptr;
  void *const *outputs = nullptr;
  float *product, *block, *scatter, *reduced, *outgoing, *incoming, *sending,
      *got;
};

/// The computation between collectives.
enum Step {
  Product,
  Block,
  Scatter,
  Outgoing,
  Sending,
  Shared,
  Counts,
  NumSteps
};

void compute(const Run &run, Step step) {
  const int W = run.W, r = run.r;
  const float *x = run.x, *w = run.w;
  switch (step) {
  case Product:
    for (int i = 0; i < kN; ++i)
      run.product[i] = w[i] * x[i];
    break;
  case Block:
    for (int o = 0; o < 2; ++o)
      for (int k = 0; k < kK; ++k)
        run.block[o * kK + k] = w[o * kK + k] + x[k];
    break;
  case Scatter:
    for (int o = 0; o < 2; ++o)
      for (int p = 0; p < W; ++p)
        for (int k = 0; k < kK; ++k)
          run.scatter[(o * W + p) * kK + k] = w[(o * W + p) * kK + k] * x[k];
    break;
  case Outgoing:
    for (int p = 0; p < W; ++p)
      for (int c = 0; c < kC; ++c)
        run.outgoing[p * kC + c] = r * 1000.0f + p * 10.0f + c + w[c];
    break;
  case Sending:
    for (int c = 0; c < kC; ++c)
      run.sending[c] = 2 * w[c];
    break;
  case Shared:
    for (int c = 0; c < kC; ++c)
      static_cast<float *>(run.outputs[5])[c] = r == W - 1 ? w[kC + c] : -1.0f;
    break;
  case Counts:
    for (int i = 0; i < 4; ++i)
      static_cast<int32_t *>(run.outputs[6])[i] = (r + 1) * (i + 1);
    break;
  case NumSteps:
    break;
  }
}

int32_t refuse(const SluiceRunArgs *args, const char *step,
               const char *message) {
  if (args->error && args->error_size)
    std::snprintf(args->error, args->error_size, "%s: %s", step, message);
  return 1;
}

/// The collective's own message, prefixed with the step, as generated code
/// reports a failing library call.
int32_t failed(const SluiceRunArgs *args, const char *step) {
  char copy[512];
  std::snprintf(copy, sizeof copy, "%s", args->error);
  return refuse(args, step, copy);
}

/// Bump allocation in the arena, 64-byte aligned like the planner's.
struct Arena {
  unsigned char *base;
  size_t used = 0;
  float *take(size_t count) {
    float *p = reinterpret_cast<float *>(base + used);
    used += (count * sizeof(float) + 63) / 64 * 64;
    return p;
  }
};

#ifdef SLUICE_COLLECTIVE_SIM_CUDA
/// A context's device state: its run and one host call per step, whose
/// addresses a captured graph keeps.
struct State {
  Run run;
  struct Call {
    State *state;
    Step step;
  } calls[NumSteps];
};

void hostStep(void *data) {
  auto *call = static_cast<State::Call *>(data);
  compute(call->state->run, call->step);
}
#endif

} // namespace

extern "C" int32_t sluice_model_abi_version(void) {
  return SLUICE_BUNDLE_ABI_VERSION;
}

#ifdef SLUICE_COLLECTIVE_SIM_CUDA
extern "C" int32_t sluice_model_init(void **deviceState, void *, char *,
                                     size_t) {
  auto *state = new State();
  for (int s = 0; s < NumSteps; ++s)
    state->calls[s] = {state, (Step)s};
  *deviceState = state;
  return 0;
}

extern "C" void sluice_model_release(void *deviceState) {
  delete static_cast<State *>(deviceState);
}

extern "C" int32_t sluice_model_check(void *, char *, size_t) { return 0; }
#endif

extern "C" int32_t sluice_model_run(const SluiceRunArgs *args) {
  const SluiceComm *comm = args->comm;
  if (!comm)
    return refuse(args, "k0_setup", "a multi-rank bundle's run got no comm");
#ifdef SLUICE_COLLECTIVE_SIM_CUDA
  Run &run = static_cast<State *>(args->device_state)->run;
  auto then = [&](Step step) {
    auto *state = static_cast<State *>(args->device_state);
    return cudaLaunchHostFunc(static_cast<cudaStream_t>(args->stream), hostStep,
                              &state->calls[step]) == cudaSuccess;
  };
#else
  Run run;
  auto then = [&](Step step) {
    compute(run, step);
    return true;
  };
#endif
  const int W = comm->world_size, r = comm->rank;
  Arena arena{args->arena};
  run.W = W;
  run.r = r;
  run.x = static_cast<const float *>(args->inputs[0]);
  run.w = reinterpret_cast<const float *>(args->weights);
  run.outputs = args->outputs;
  run.product = arena.take(kN);
  run.block = arena.take(2 * kK);
  run.scatter = arena.take(2 * W * kK);
  run.reduced = arena.take(2 * kK);
  run.outgoing = arena.take(W * kC);
  run.incoming = arena.take(W * kC);
  run.sending = arena.take(kC);
  run.got = arena.take(kC);

  char *error = args->error;
  size_t errorSize = args->error_size;
  void *state = comm->state;
  void *stream = args->stream;
  if (run.x[0] == -12345.0f && r == 1)
    return refuse(args, "k1_all_reduce", "refused the magic input -12345");
  if (run.x[0] == -777.0f && r != 0)
    usleep(3000 * 1000);

  // Step 0 of the manifest's kernels, traced as generated code does.
  if (args->trace)
    args->trace->begin(args->trace->user, 0);
  if (!then(Product) ||
      comm->all_reduce(state, run.product, args->outputs[0], kN,
                       SLUICE_COMM_F32, stream, error, errorSize))
    return failed(args, "k1_all_reduce");
  if (args->trace)
    args->trace->end(args->trace->user, 0);
  if (!then(Block) ||
      comm->all_gather(state, run.block, args->outputs[1], 2, kK,
                       SLUICE_COMM_F32, stream, error, errorSize))
    return failed(args, "k2_all_gather");
  if (!then(Scatter) ||
      comm->reduce_scatter(state, run.scatter, run.reduced, 2, kK,
                           SLUICE_COMM_F32, stream, error, errorSize))
    return failed(args, "k3_reduce_scatter");
  if (comm->all_gather(state, run.reduced, args->outputs[2], 2, kK,
                       SLUICE_COMM_F32, stream, error, errorSize))
    return failed(args, "k4_all_gather");
  if (!then(Outgoing) ||
      comm->all_to_all(state, run.outgoing, run.incoming, kC, SLUICE_COMM_F32,
                       stream, error, errorSize))
    return failed(args, "k5_all_to_all");
  if (comm->all_gather(state, run.incoming, args->outputs[3], 1, W * kC,
                       SLUICE_COMM_F32, stream, error, errorSize))
    return failed(args, "k6_all_gather");

  // send / recv around the ring: even ranks send first, odd ones receive
  // first, so that no two ranks wait on each other.
  if (!then(Sending))
    return failed(args, "k7_send");
  int next = (r + 1) % W, previous = (r + W - 1) % W;
  for (int phase = 0; phase < 2; ++phase) {
    bool sendNow = (phase == 0) == (r % 2 == 0);
    int32_t status = sendNow
                         ? comm->send(state, run.sending, kC, SLUICE_COMM_F32,
                                      next, stream, error, errorSize)
                         : comm->recv(state, run.got, kC, SLUICE_COMM_F32,
                                      previous, stream, error, errorSize);
    if (status)
      return failed(args, sendNow ? "k7_send" : "k7_recv");
  }
  if (comm->all_gather(state, run.got, args->outputs[4], 1, kC, SLUICE_COMM_F32,
                       stream, error, errorSize))
    return failed(args, "k8_all_gather");

  if (!then(Shared) ||
      comm->broadcast(state, args->outputs[5], kC, SLUICE_COMM_F32, W - 1,
                      stream, error, errorSize))
    return failed(args, "k9_broadcast");
  if (!then(Counts) ||
      comm->all_reduce(state, args->outputs[6], args->outputs[6], 4,
                       SLUICE_COMM_I32, stream, error, errorSize))
    return failed(args, "k10_all_reduce");
  return 0;
}
