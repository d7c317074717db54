//===- SimCudaModel.cpp - FakeCudaModel.cu for the simulated CUDA runtime -===//
//
// The fake cuda bundle's library (y = x * 2 + w; k0_scale writes the arena,
// k1_bias is a host step through the pinned host arena and the mapped host
// weights; x[0] == -12345 raises a flag that sluice_model_check reports)
// with host functions in place of the kernel, so that it runs on
// SimCudart.cpp. With SIM_MODEL_UNCAPTURABLE set, every run also allocates,
// which a capture does not allow: the runtime must fall back to eager runs.
//
// Built with SIM_DYNAMIC_OUTPUT, it has a second output with a
// data-dependent dim (simcuda/dynamic-manifest.json.in): "positive", the
// elements of x above 0 in order, its extent written through output_dims.
//
//===----------------------------------------------------------------------===//

#include "sluice/bundle_abi.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kElements = 8;

struct State {
  int *flag = nullptr; // "device" memory
  const float *x = nullptr;
  float *scaled = nullptr;
  float *hostScaled = nullptr, *hostSum = nullptr;
  const float *hostWeights = nullptr;
  float *positive = nullptr;
  int64_t *positiveDims = nullptr; // "device" memory, like the outputs
};

int32_t refuse(const SluiceRunArgs *args, const char *message) {
  if (args->error && args->error_size)
    std::snprintf(args->error, args->error_size, "%s", message);
  return 1;
}

int32_t fail(const SluiceRunArgs *args, const char *kernel, const char *what,
             cudaError_t status) {
  if (args->error && args->error_size)
    std::snprintf(args->error, args->error_size, "%s: %s failed: %s", kernel,
                  what, cudaGetErrorString(status));
  return 1;
}

#define CHECK(kernel, call)                                                    \
  do {                                                                         \
    cudaError_t status_ = (call);                                              \
    if (status_ != cudaSuccess)                                                \
      return fail(args, kernel, #call, status_);                               \
  } while (0)

void scale(void *user) {
  auto *state = static_cast<State *>(user);
  for (int i = 0; i < kElements; ++i)
    state->scaled[i] = state->x[i] * 2;
  if (state->x[0] == -12345.0f)
    *state->flag = 1;
}

[[maybe_unused]] void selectPositive(void *user) {
  auto *state = static_cast<State *>(user);
  int64_t count = 0;
  for (int i = 0; i < kElements; ++i)
    if (state->x[i] > 0)
      state->positive[count++] = state->x[i];
  state->positiveDims[0] = count;
}

void addBias(void *user) {
  auto *state = static_cast<State *>(user);
  for (int i = 0; i < kElements; ++i)
    state->hostSum[i] = state->hostScaled[i] + state->hostWeights[i];
}

bool is(const void *p, cudaMemoryType type) {
  cudaPointerAttributes attributes;
  return cudaPointerGetAttributes(&attributes, p) == cudaSuccess &&
         attributes.type == type;
}

void mark(const SluiceRunArgs *args, int32_t step, bool begin) {
  if (args->trace)
    (begin ? args->trace->begin : args->trace->end)(args->trace->user, step);
}

} // namespace

extern "C" int32_t sluice_model_abi_version(void) {
  return SLUICE_BUNDLE_ABI_VERSION;
}

extern "C" int32_t sluice_model_init(void **device_state, void *, char *error,
                                     size_t error_size) {
  auto *state = new State();
  if (cudaMalloc(reinterpret_cast<void **>(&state->flag), sizeof(int)) !=
          cudaSuccess ||
      cudaMemset(state->flag, 0, sizeof(int)) != cudaSuccess) {
    std::snprintf(error, error_size, "init: cannot allocate the flag");
    delete state;
    return 1;
  }
  *device_state = state;
  return 0;
}

extern "C" void sluice_model_release(void *device_state) {
  auto *state = static_cast<State *>(device_state);
  cudaFree(state->flag);
  delete state;
}

extern "C" int32_t sluice_model_check(void *device_state, char *error,
                                      size_t error_size) {
  auto *state = static_cast<State *>(device_state);
  int flag = 0;
  if (cudaMemcpy(&flag, state->flag, sizeof flag, cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    std::snprintf(error, error_size, "k0_scale (node '/Mul'): cudaMemcpy");
    return 1;
  }
  if (!flag)
    return 0;
  std::snprintf(error, error_size,
                "k0_scale (node '/Mul'): refused the magic input -12345 "
                "(device-side check)");
  int zero = 0;
  cudaMemcpy(state->flag, &zero, sizeof zero, cudaMemcpyHostToDevice);
  return 1;
}

extern "C" int32_t sluice_model_run(const SluiceRunArgs *args) {
  auto stream = static_cast<cudaStream_t>(args->stream);
  auto *state = static_cast<State *>(args->device_state);
  if (!stream || !state || !args->host_arena || !args->host_weights)
    return refuse(args, "k0_scale: no stream, device state, host arena or "
                        "host weights");
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CHECK("k0_scale", cudaStreamIsCapturing(stream, &capture));
  if (capture == cudaStreamCaptureStatusNone &&
      (!is(args->inputs[0], cudaMemoryTypeDevice) ||
       !is(args->outputs[0], cudaMemoryTypeDevice) ||
       !is(args->output_dims[0], cudaMemoryTypeDevice) ||
       !is(args->arena, cudaMemoryTypeDevice) ||
       !is(args->weights, cudaMemoryTypeDevice) ||
       !is(args->host_arena, cudaMemoryTypeHost)))
    return refuse(args, "k0_scale: a buffer is not where the ABI puts it");
  if (std::getenv("SIM_MODEL_UNCAPTURABLE")) {
    void *scratch = nullptr;
    CHECK("k0_scale", cudaMalloc(&scratch, 64));
    CHECK("k0_scale", cudaFree(scratch));
  }
  state->x = static_cast<const float *>(args->inputs[0]);
  state->scaled = reinterpret_cast<float *>(args->arena);
  state->hostScaled = reinterpret_cast<float *>(args->host_arena);
  state->hostSum = state->hostScaled + kElements;
  state->hostWeights = reinterpret_cast<const float *>(args->host_weights);

  mark(args, 0, true);
  CHECK("k0_scale", cudaLaunchHostFunc(stream, scale, state));
  mark(args, 0, false);
  mark(args, 1, true);
  CHECK("k1_bias", cudaMemcpyAsync(state->hostScaled, state->scaled,
                                   kElements * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream));
  CHECK("k1_bias", cudaLaunchHostFunc(stream, addBias, state));
  CHECK("k1_bias", cudaMemcpyAsync(args->outputs[0], state->hostSum,
                                   kElements * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
  mark(args, 1, false);
#ifdef SIM_DYNAMIC_OUTPUT
  if (capture == cudaStreamCaptureStatusNone &&
      (!is(args->outputs[1], cudaMemoryTypeDevice) ||
       !is(args->output_dims[1], cudaMemoryTypeDevice)))
    return refuse(args, "k2_select: output 1 or its dims are not in device "
                        "memory");
  // The runtime reset the dims from the manifest: -1 until written.
  if (capture == cudaStreamCaptureStatusNone && args->output_dims[1][0] != -1)
    return refuse(args, "k2_select: the dims were not reset to the "
                        "manifest's shape before the run");
  state->positive = static_cast<float *>(args->outputs[1]);
  state->positiveDims = args->output_dims[1];
  // The runtime resets the dims from the manifest before each run.
  mark(args, 2, true);
  CHECK("k2_select", cudaLaunchHostFunc(stream, selectPositive, state));
  mark(args, 2, false);
#endif
  return 0;
}
