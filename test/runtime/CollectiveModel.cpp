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
//   all_reduce_i32  [4]         sum_r (r+1)*(i+1), an int32 all_reduce
//
// It refuses x[0] == -12345 on rank 1 only (a failure of one rank), and
// x[0] == -777 makes every rank but 0 sleep before its first collective
// (a rank that is slow, not dead).
//
//===----------------------------------------------------------------------===//

#include "sluice/bundle_abi.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace {

constexpr int kN = 24, kK = 3, kC = 4;

int32_t refuse(const SluiceRunArgs *args, const char *step,
               const char *message) {
  if (args->error && args->error_size)
    std::snprintf(args->error, args->error_size, "%s: %s", step, message);
  return 1;
}

/// The collective's own message, prefixed with the step, as generated code
/// reports a failing library call.
int32_t failed(const SluiceRunArgs *args, const char *step,
               const char *message) {
  char copy[512];
  std::snprintf(copy, sizeof copy, "%s", message);
  return refuse(args, step, copy);
}

/// Bump allocation in the arena, 64-byte aligned like the planner's.
struct Arena {
  unsigned char *base;
  size_t used = 0;
  template <typename T> T *take(size_t count) {
    T *p = reinterpret_cast<T *>(base + used);
    used += (count * sizeof(T) + 63) / 64 * 64;
    return p;
  }
};

} // namespace

extern "C" int32_t sluice_model_abi_version(void) {
  return SLUICE_BUNDLE_ABI_VERSION;
}

extern "C" int32_t sluice_model_run(const SluiceRunArgs *args) {
  const SluiceComm *comm = args->comm;
  if (!comm)
    return refuse(args, "k0_setup", "a multi-rank bundle's run got no comm");
  const int W = comm->world_size, r = comm->rank;
  const float *x = static_cast<const float *>(args->inputs[0]);
  const float *w = reinterpret_cast<const float *>(args->weights);
  char *error = args->error;
  size_t errorSize = args->error_size;
  void *state = comm->state;
  void *stream = args->stream;
  Arena arena{args->arena};

  if (x[0] == -12345.0f && r == 1)
    return refuse(args, "k1_all_reduce", "refused the magic input -12345");
  if (x[0] == -777.0f && r != 0)
    usleep(1500 * 1000);

  // all_reduce of w * x.
  float *product = arena.take<float>(kN);
  for (int i = 0; i < kN; ++i)
    product[i] = w[i] * x[i];
  if (comm->all_reduce(state, product, args->outputs[0], kN, SLUICE_COMM_F32,
                       stream, error, errorSize))
    return failed(args, "k1_all_reduce", error);

  // all_gather of a [2, 3] block per rank.
  float *block = arena.take<float>(2 * kK);
  for (int o = 0; o < 2; ++o)
    for (int k = 0; k < kK; ++k)
      block[o * kK + k] = w[o * kK + k] + x[k];
  if (comm->all_gather(state, block, args->outputs[1], 2, kK, SLUICE_COMM_F32,
                       stream, error, errorSize))
    return failed(args, "k2_all_gather", error);

  // reduce_scatter of [2, W, 3], then all_gather of the [2, 3] results.
  float *scatter = arena.take<float>(2 * W * kK);
  for (int o = 0; o < 2; ++o)
    for (int p = 0; p < W; ++p)
      for (int k = 0; k < kK; ++k)
        scatter[(o * W + p) * kK + k] = w[(o * W + p) * kK + k] * x[k];
  float *reduced = arena.take<float>(2 * kK);
  if (comm->reduce_scatter(state, scatter, reduced, 2, kK, SLUICE_COMM_F32,
                           stream, error, errorSize))
    return failed(args, "k3_reduce_scatter", error);
  if (comm->all_gather(state, reduced, args->outputs[2], 2, kK,
                       SLUICE_COMM_F32, stream, error, errorSize))
    return failed(args, "k4_all_gather", error);

  // all_to_all of [W, 4], then all_gather of the [W, 4] results.
  float *outgoing = arena.take<float>(W * kC);
  float *incoming = arena.take<float>(W * kC);
  for (int p = 0; p < W; ++p)
    for (int c = 0; c < kC; ++c)
      outgoing[p * kC + c] = r * 1000.0f + p * 10.0f + c + w[c];
  if (comm->all_to_all(state, outgoing, incoming, kC, SLUICE_COMM_F32, stream,
                       error, errorSize))
    return failed(args, "k5_all_to_all", error);
  if (comm->all_gather(state, incoming, args->outputs[3], 1, W * kC,
                       SLUICE_COMM_F32, stream, error, errorSize))
    return failed(args, "k6_all_gather", error);

  // send / recv around the ring: even ranks send first, odd ones receive
  // first, so that no two ranks wait on each other.
  float *sending = arena.take<float>(kC);
  float *got = arena.take<float>(kC);
  for (int c = 0; c < kC; ++c)
    sending[c] = 2 * w[c];
  int next = (r + 1) % W, previous = (r + W - 1) % W;
  for (int phase = 0; phase < 2; ++phase) {
    bool sendNow = (phase == 0) == (r % 2 == 0);
    int32_t status =
        sendNow ? comm->send(state, sending, kC, SLUICE_COMM_F32, next,
                             stream, error, errorSize)
                : comm->recv(state, got, kC, SLUICE_COMM_F32, previous,
                             stream, error, errorSize);
    if (status)
      return failed(args, sendNow ? "k7_send" : "k7_recv", error);
  }
  if (comm->all_gather(state, got, args->outputs[4], 1, kC, SLUICE_COMM_F32,
                       stream, error, errorSize))
    return failed(args, "k8_all_gather", error);

  // broadcast from the last rank.
  float *shared = static_cast<float *>(args->outputs[5]);
  for (int c = 0; c < kC; ++c)
    shared[c] = r == W - 1 ? w[kC + c] : -1.0f;
  if (comm->broadcast(state, shared, kC, SLUICE_COMM_F32, W - 1, stream,
                      error, errorSize))
    return failed(args, "k9_broadcast", error);

  // An int32 all_reduce, in place.
  int32_t *counts = static_cast<int32_t *>(args->outputs[6]);
  for (int i = 0; i < 4; ++i)
    counts[i] = (r + 1) * (i + 1);
  if (comm->all_reduce(state, counts, counts, 4, SLUICE_COMM_I32, stream,
                       error, errorSize))
    return failed(args, "k10_all_reduce", error);
  return 0;
}
