//===- CudaRuntimeTest.cpp - a cuda bundle through the runtime API --------===//
//
// Runs the fake cuda bundle (fixtures/FakeCudaModel.cu: y = x * 2 + w, a
// device kernel and a host step) through include/sluice/runtime.hpp on a GPU:
// eager first run, CUDA graph capture and replay with inputs that change
// every run (copied and bound), graphs turned off, traced runs, the
// asynchronous failure path with and without a graph, inputs bound to
// device memory, contexts on two
// threads, and the caller's current device kept across the calls. A plain program (not gtest) so that it can exit 77, ctest's
// "skipped", on machines without a CUDA device.
//
//   sluice-cuda-runtime-test BUNDLE [--uncapturable]
//
// --uncapturable: the bundle's run cannot be captured (the simulated
// bundle with SIM_MODEL_UNCAPTURABLE, simcuda/): expect the fallback to
// eager runs, with the same results.
//
//===----------------------------------------------------------------------===//

#include "sluice/runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <thread>

using sluice::rt::Context;
using sluice::rt::Model;

namespace {

const float kWeights[8] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f};
int failures = 0;
bool uncapturable = false; ///< expect no graph, ever

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      std::printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);            \
      std::printf(__VA_ARGS__);                                                \
      std::printf("\n");                                                       \
    }                                                                          \
  } while (0)

void fill(float *x, float base) {
  for (int i = 0; i < 8; ++i)
    x[i] = base + (float)i;
}

/// Whether output 0 is x * 2 + w (exact: small integers and halves).
bool matches(const Context &context, const float *x) {
  size_t bytes = 0;
  auto *y = static_cast<const float *>(context.output(0, &bytes));
  if (!y || bytes != 32)
    return false;
  for (int i = 0; i < 8; ++i)
    if (y[i] != x[i] * 2 + kWeights[i])
      return false;
  return true;
}

/// Whether the last run's host-to-device / compute / device-to-host split
/// is there and adds up to at most the run's time.
bool splitFits(const Context &context) {
  double h2d = -1, compute = -1, d2h = -1;
  if (!context.runSplit(h2d, compute, d2h))
    return false;
  double runMs = context.runMicroseconds() / 1000;
  return h2d >= 0 && compute >= 0 && d2h >= 0 &&
         h2d + compute + d2h <= runMs * 1.01 + 0.01;
}

void runsReplayAGraph(const Model &model) {
  Context context;
  std::string error;
  EXPECT(context.create(model, &error), "%s", error.c_str());
  double unused = 0;
  EXPECT(!context.runSplit(unused, unused, unused), "a split before any run");
  std::printf("device: %s\n", context.device().c_str());
  EXPECT(context.device().find("(sm_") != std::string::npos, "%s",
         context.device().c_str());
  float x[8];
  std::string reason;
  for (int run = 0; run < 6; ++run) {
    fill(x, 10.0f * run);
    EXPECT(context.setInput(0, x, sizeof x, &error), "%s", error.c_str());
    EXPECT(context.run(&error), "run %d: %s", run, error.c_str());
    EXPECT(matches(context, x), "run %d: wrong output", run);
    // Eager and replayed runs alike time their copies and their model.
    EXPECT(splitFits(context), "run %d: no run split, or longer than the run",
           run);
    bool replayed = context.replayedCudaGraph(&reason);
    // The first run is eager; the second is captured and replayed.
    EXPECT(replayed == (run > 0 && !uncapturable), "run %d: replayed %d (%s)",
           run, replayed, reason.c_str());
    if (uncapturable && run > 0)
      EXPECT(reason.rfind("capture failed: ", 0) == 0, "run %d: %s", run,
             reason.c_str());
  }
  // Bound inputs are staged at every run, graph or not.
  float bound[8];
  fill(bound, -7);
  EXPECT(context.bindInput(0, bound, sizeof bound, &error), "%s",
         error.c_str());
  for (int run = 0; run < 3; ++run) {
    bound[3] = 100.0f + run;
    EXPECT(context.run(&error), "%s", error.c_str());
    EXPECT(matches(context, bound), "bound run %d: wrong output", run);
    EXPECT(context.replayedCudaGraph() != uncapturable,
           "bound run %d: replayed %d", run, !uncapturable);
  }

  // A failure found on the device surfaces at the synchronize, through the
  // graph too, and the next run is fine again.
  fill(x, 0);
  x[0] = -12345;
  EXPECT(context.setInput(0, x, sizeof x, &error), "%s", error.c_str());
  EXPECT(!context.run(&error), "the magic input ran");
  EXPECT(error.find("run failed: k0_scale (node '/Mul'): refused the magic "
                    "input -12345 (device-side check)") != std::string::npos,
         "%s", error.c_str());
  fill(x, 3);
  EXPECT(context.setInput(0, x, sizeof x, &error), "%s", error.c_str());
  EXPECT(context.run(&error), "after the failure: %s", error.c_str());
  EXPECT(matches(context, x), "after the failure: wrong output");

  // Graphs off: eager, and says so.
  context.enableCudaGraph(false);
  fill(x, 42);
  EXPECT(context.setInput(0, x, sizeof x, &error), "%s", error.c_str());
  EXPECT(context.run(&error), "%s", error.c_str());
  EXPECT(matches(context, x), "eager: wrong output");
  EXPECT(!context.replayedCudaGraph(&reason) && reason == "turned off", "%s",
         reason.c_str());
  x[0] = -12345;
  EXPECT(context.setInput(0, x, sizeof x, &error), "%s", error.c_str());
  EXPECT(!context.run(&error) &&
             error.find("k0_scale (node '/Mul')") != std::string::npos,
         "eager magic input: %s", error.c_str());

  // Traced: eager, one event per step timed on the GPU.
  context.enableCudaGraph(true);
  context.enableTrace(true);
  fill(x, 5);
  EXPECT(context.setInput(0, x, sizeof x, &error), "%s", error.c_str());
  EXPECT(context.run(&error), "%s", error.c_str());
  EXPECT(matches(context, x), "traced: wrong output");
  EXPECT(!context.replayedCudaGraph(), "a traced run replayed a graph");
  EXPECT(splitFits(context), "traced: no run split");
  auto trace = context.trace();
  EXPECT(trace.size() == 2, "%zu trace events", trace.size());
  if (trace.size() == 2) {
    EXPECT(trace[0].step == 0 && trace[1].step == 1, "steps %d %d",
           trace[0].step, trace[1].step);
    for (const SluiceTraceEvent &e : trace) {
      std::printf("step %d: %.3f..%.3f us (run %.3f us)\n", e.step,
                  e.begin_us, e.end_us, context.runMicroseconds());
      EXPECT(0 <= e.begin_us && e.begin_us <= e.end_us &&
                 e.end_us <= context.runMicroseconds() + 1,
             "step %d: %f..%f", e.step, e.begin_us, e.end_us);
    }
    EXPECT(trace[0].end_us <= trace[1].begin_us, "steps overlap");
  }
  context.enableTrace(false);
  EXPECT(context.run(&error), "%s", error.c_str());
  EXPECT(context.run(&error), "%s", error.c_str());
  EXPECT(context.replayedCudaGraph(&reason) != uncapturable,
         "graph on again: %s", reason.c_str());
  EXPECT(context.trace().empty(), "untraced run left events");
}

/// Inputs bound to device memory (a torch cuda tensor's, say): copied on
/// the device at every run, graph or not; another pointer is captured
/// again; host memory, a wrong size and a null pointer are refused.
void bindsDeviceMemory(const Model &model) {
  using Malloc = int (*)(void **, size_t);
  using Free = int (*)(void *);
  using Memcpy = int (*)(void *, const void *, size_t, int);
  void *cudart = ::dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!cudart)
    cudart = ::dlopen("libcudart.so.13", RTLD_NOW);
  auto cudaMalloc = cudart ? reinterpret_cast<Malloc>(::dlsym(cudart, "cudaMalloc")) : nullptr;
  auto cudaFree = cudart ? reinterpret_cast<Free>(::dlsym(cudart, "cudaFree")) : nullptr;
  auto cudaMemcpy = cudart ? reinterpret_cast<Memcpy>(::dlsym(cudart, "cudaMemcpy")) : nullptr;
  if (!cudaMalloc || !cudaFree || !cudaMemcpy) {
    std::printf("no libcudart.so.13 to allocate device memory: device binding skipped\n");
    return;
  }
  const int kHostToDevice = 1; // cudaMemcpyHostToDevice
  void *first = nullptr, *second = nullptr;
  EXPECT(cudaMalloc(&first, 32) == 0 && cudaMalloc(&second, 32) == 0, "cudaMalloc");
  Context context;
  std::string error, reason;
  EXPECT(context.create(model, &error), "%s", error.c_str());
  float x[8];
  for (int run = 0; run < 4; ++run) {
    fill(x, 20.0f * run - 30);
    EXPECT(cudaMemcpy(first, x, sizeof x, kHostToDevice) == 0, "cudaMemcpy");
    if (run == 0)
      EXPECT(context.bindDeviceInput(0, first, sizeof x, &error), "%s", error.c_str());
    EXPECT(context.run(&error), "device run %d: %s", run, error.c_str());
    EXPECT(matches(context, x), "device run %d: wrong output", run);
    EXPECT(context.replayedCudaGraph(&reason) == (run > 0 && !uncapturable),
           "device run %d: %s", run, reason.c_str());
  }
  // Another pointer: the graph copied from the first, so it is captured
  // again, and the new memory is what runs (the first still holds other
  // values: a replay of the old graph would give them).
  fill(x, 1000);
  EXPECT(cudaMemcpy(second, x, sizeof x, kHostToDevice) == 0, "cudaMemcpy");
  EXPECT(context.bindDeviceInput(0, second, sizeof x, &error), "%s", error.c_str());
  for (int run = 0; run < 2; ++run) {
    EXPECT(context.run(&error), "%s", error.c_str());
    EXPECT(matches(context, x), "second pointer, run %d: wrong output", run);
    EXPECT(context.replayedCudaGraph(&reason) != uncapturable, "second pointer, run %d: %s",
           run, reason.c_str());
  }
  // Host input again after device binding: staged as before.
  fill(x, -3);
  EXPECT(context.setInput(0, x, sizeof x, &error), "%s", error.c_str());
  EXPECT(context.run(&error) && matches(context, x), "host after device: %s", error.c_str());

  EXPECT(!context.bindDeviceInput(0, x, sizeof x, &error) &&
             error.find("bound to host memory; this context runs on device 0") !=
                 std::string::npos,
         "host memory as device input: %s", error.c_str());
  EXPECT(!context.bindDeviceInput(0, first, 16, &error) &&
             error.find("takes 32 bytes, got 16") != std::string::npos,
         "wrong size: %s", error.c_str());
  EXPECT(!context.bindDeviceInput(0, nullptr, 32, &error) &&
             error.find("null pointer") != std::string::npos,
         "null: %s", error.c_str());
  EXPECT(!context.bindDeviceInput(3, first, 32, &error) &&
             error.find("no input 3") != std::string::npos,
         "index: %s", error.c_str());
  (void)cudaFree(first);
  (void)cudaFree(second);
}

void contextsOnTwoThreads(const Model &model) {
  int bad[2] = {0, 0};
  auto worker = [&model](float base, int *failures) {
    Context context;
    std::string error;
    if (!context.create(model, &error) || !context.setNumThreads(1, &error)) {
      std::printf("context: %s\n", error.c_str());
      ++*failures;
      return;
    }
    for (int run = 0; run < 100; ++run) {
      float x[8];
      fill(x, base + run * 8);
      if (!context.setInput(0, x, sizeof x, &error) || !context.run(&error)) {
        std::printf("run: %s\n", error.c_str());
        ++*failures;
      } else if (!matches(context, x)) {
        ++*failures;
      }
    }
  };
  std::thread a(worker, 0.0f, &bad[0]);
  std::thread b(worker, 100000.0f, &bad[1]);
  a.join();
  b.join();
  EXPECT(bad[0] == 0 && bad[1] == 0, "%d and %d failed runs", bad[0], bad[1]);
}

/// A context on device `device` leaves the calling thread's current device
/// alone: creating, running and freeing it, with the caller on `caller`.
/// The CUDA runtime's calls are found in the process (the simulated one is
/// preloaded); where it is loaded privately (a real GPU), nothing to check.
void keepsTheCallersDevice(const Model &model, int caller, int device) {
  using Call = int (*)(int);
  using Query = int (*)(int *);
  auto setDevice = reinterpret_cast<Call>(::dlsym(RTLD_DEFAULT, "cudaSetDevice"));
  auto getDevice = reinterpret_cast<Query>(::dlsym(RTLD_DEFAULT, "cudaGetDevice"));
  if (!setDevice || !getDevice) {
    std::printf("the CUDA runtime is not visible here: device check skipped\n");
    return;
  }
  EXPECT(setDevice(caller) == 0, "cudaSetDevice(%d)", caller);
  int current = -1;
  Context context;
  std::string error;
  bool created = context.create(model, &error, device);
  EXPECT(created, "context on device %d: %s", device, error.c_str());
  EXPECT(getDevice(&current) == 0 && current == caller,
         "after create on device %d, device %d is current, not the caller's %d", device,
         current, caller);
  if (!created)
    return;
  float x[8];
  fill(x, 7);
  EXPECT(context.setInput(0, x, sizeof x, &error) && context.run(&error), "run: %s",
         error.c_str());
  EXPECT(matches(context, x), "wrong output on device %d", device);
  EXPECT(getDevice(&current) == 0 && current == caller,
         "after a run on device %d, device %d is current, not the caller's %d", device,
         current, caller);
  context = Context(); // frees it
  EXPECT(getDevice(&current) == 0 && current == caller,
         "after freeing a context of device %d, device %d is current, not the caller's %d",
         device, current, caller);
}

} // namespace

int main(int argc, char **argv) {
  uncapturable = argc == 3 && std::string(argv[2]) == "--uncapturable";
  if (argc != 2 && !uncapturable) {
    std::fprintf(stderr,
                 "usage: sluice-cuda-runtime-test BUNDLE [--uncapturable]\n");
    return 2;
  }
  Model model;
  std::string error;
  if (!model.load(argv[1], &error)) {
    std::printf("%s\n", error.c_str());
    return 1;
  }
  {
    Context probe;
    if (!probe.create(model, &error)) {
      std::printf("%s\n", error.c_str());
      if (error.find("no CUDA device") != std::string::npos) {
        std::printf("no CUDA device: skipped\n");
        return 77;
      }
      return 1;
    }
  }
  runsReplayAGraph(model);
  bindsDeviceMemory(model);
  contextsOnTwoThreads(model);
  int devices = 0;
  if (auto count = reinterpret_cast<int (*)(int *)>(::dlsym(RTLD_DEFAULT, "cudaGetDeviceCount"));
      count && count(&devices) == 0 && devices >= 2) {
    keepsTheCallersDevice(model, 0, 1);
    keepsTheCallersDevice(model, 1, 0);
  } else {
    std::printf("fewer than 2 devices visible: device check skipped\n");
  }
  std::printf("%s\n", failures ? "FAILED" : "all passed");
  return failures ? 1 : 0;
}
