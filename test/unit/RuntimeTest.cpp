//===- RuntimeTest.cpp - load and run a hand-written bundle ---------------===//
//
// The bundle in SLUICE_FAKE_BUNDLE (fixtures/FakeModel.cpp, built by CMake
// into a folder whose name has a space) computes y = x * 2 + w. Broken
// variants are made by copying it into a temporary folder and damaging one
// file each. SLUICE_COLLECTIVE_BUNDLE (test/runtime) is a 2-rank bundle:
// its ranks load here, their runs need MPI (test/runtime/check_ranks.py).
//
//===----------------------------------------------------------------------===//

#include "sluice/runtime.hpp"
#include "sluice/bundle_abi.h"
#include "sluice/version.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using sluice::rt::Context;
using sluice::rt::Model;

namespace {

const float kWeights[8] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f};

/// A fresh copy of the fake bundle under `name` in the test's temp folder.
std::string copyBundle(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("rt " + name + ".sluice");
  fs::remove_all(dir);
  fs::copy(SLUICE_FAKE_BUNDLE, dir, fs::copy_options::recursive);
  return dir.string();
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The manifest of `dir` with `from` replaced by `to`.
void editManifest(const std::string &dir, const std::string &from,
                  const std::string &to) {
  std::string text = readFile(dir + "/manifest.json");
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  writeFile(dir + "/manifest.json", text);
}

/// A symbol of the fake bundle's library, which a model of it has loaded
/// (dlopen gives the same handle back; the library is never unloaded).
template <typename Fn> Fn fakeLibrarySymbol(const char *name) {
  std::string file = std::string(SLUICE_FAKE_BUNDLE) + "/model.so";
  void *handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    return nullptr;
  auto *symbol = reinterpret_cast<Fn>(::dlsym(handle, name));
  ::dlclose(handle);
  return symbol;
}

/// Runs `context` once on the fake bundle's input; false on failure.
bool runOnce(Context &context) {
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  return context.setInput(0, x, sizeof x) && context.run();
}

/// The error loading `dir` gives ("" if it loads).
std::string loadError(const std::string &dir) {
  Model model;
  std::string error;
  return model.load(dir, &error) ? "" : error;
}

} // namespace

TEST(Runtime, LoadsQueriesAndRuns) {
  Model model;
  std::string error;
  ASSERT_TRUE(model.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  EXPECT_EQ(model.target(), "cpu");
  EXPECT_EQ(model.version(), SLUICE_VERSION_STRING);
  EXPECT_EQ(model.name(), "fake");
  EXPECT_EQ(model.arenaBytes(), 32u);
  EXPECT_EQ(model.weightsBytes(), 32u);
  ASSERT_EQ(model.numInputs(), 1u);
  ASSERT_EQ(model.numOutputs(), 1u);
  EXPECT_EQ(model.input(0).name, "x");
  EXPECT_EQ(model.input(0).dtype, "float32");
  EXPECT_EQ(model.input(0).shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(model.output(0).bytes, 32u);
  auto kernels = model.kernels();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "k0_scale");
  EXPECT_EQ(kernels[1].kind, "library");
  EXPECT_EQ(kernels[1].node, "/Add");

  Context context;
  ASSERT_TRUE(context.create(model, &error)) << error;
  ASSERT_TRUE(context.setNumThreads(2, &error)) << error;
  context.enableTrace(true);
  float x[8] = {1, 2, 3, 4, -1, -2, -3, -4};
  ASSERT_TRUE(context.setInput(0, x, sizeof x, &error)) << error;
  x[0] = 100; // set_input copied: this must not reach the run
  ASSERT_TRUE(context.run(&error)) << error;
  size_t bytes = 0;
  auto *y = static_cast<const float *>(context.output(0, &bytes));
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(bytes, 32u);
  const float want[8] = {2.5f, 5, 7.5f, 10, 0.5f, -1, -2.5f, -4};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(y[i], want[i]) << i;

  auto trace = context.trace();
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace[0].step, 0);
  EXPECT_EQ(trace[1].step, 1);
  EXPECT_LE(trace[0].begin_us, trace[0].end_us);
  EXPECT_LE(trace[0].end_us, trace[1].begin_us);
  EXPECT_LE(trace[1].end_us, context.runMicroseconds());
  // A cpu run is all compute: no host-to-device / device-to-host split.
  double h2d = -1, compute = -1, d2h = -1;
  EXPECT_FALSE(context.runSplit(h2d, compute, d2h));

  // Bound inputs are read in place; tracing off leaves no events.
  context.enableTrace(false);
  ASSERT_TRUE(context.bindInput(0, x, sizeof x, &error)) << error;
  ASSERT_TRUE(context.run(&error)) << error;
  EXPECT_EQ(y[0], 200.5f); // 100 * 2 + 0.5
  EXPECT_TRUE(context.trace().empty());
}

// A context keeps its model's bundle alive (docs/hardening.md): freeing the model
// first once unmapped the weights and closed the library under the
// context, and its next run crashed.
TEST(Runtime, ContextOutlivesItsModel) {
  SluiceModel *model = nullptr;
  ASSERT_EQ(sluice_model_load(SLUICE_FAKE_BUNDLE, &model), SLUICE_OK) << sluice_last_error();
  SluiceContext *context = nullptr;
  ASSERT_EQ(sluice_context_create(model, &context), SLUICE_OK) << sluice_last_error();
  ASSERT_EQ(sluice_model_free(model), SLUICE_OK);
  float x[8] = {1, 2, 3, 4, -1, -2, -3, -4};
  ASSERT_EQ(sluice_context_set_input(context, 0, x, sizeof x), SLUICE_OK) << sluice_last_error();
  ASSERT_EQ(sluice_context_run(context), SLUICE_OK) << sluice_last_error();
  const void *data = nullptr;
  size_t bytes = 0;
  ASSERT_EQ(sluice_context_output(context, 0, &data, &bytes), SLUICE_OK);
  ASSERT_EQ(bytes, 32u);
  const float want[8] = {2.5f, 5, 7.5f, 10, 0.5f, -1, -2.5f, -4};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(static_cast<const float *>(data)[i], want[i]) << i;
  // The C API's run split: none on cpu (0 and zeros), arguments checked.
  double h2d = -1, compute = -1, d2h = -1;
  int available = -1;
  ASSERT_EQ(sluice_context_run_split(context, &h2d, &compute, &d2h, &available), SLUICE_OK);
  EXPECT_EQ(available, 0);
  EXPECT_EQ(h2d, 0);
  EXPECT_EQ(compute, 0);
  EXPECT_EQ(d2h, 0);
  EXPECT_EQ(sluice_context_run_split(context, &h2d, &compute, &d2h, nullptr),
            SLUICE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sluice_context_free(context), SLUICE_OK);
}

// The threads' scratch of a model library is freed with the last model
// using it (it was kept until the process ended: OpenMP's threads never
// end), and not before: a context of another model of the library may run.
TEST(Runtime, ScratchFreedWithTheLastModel) {
  Model first, second;
  std::string error;
  ASSERT_TRUE(first.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  ASSERT_TRUE(second.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  auto scratchBytes = fakeLibrarySymbol<size_t (*)()>("sluice_model_scratch_bytes");
  ASSERT_NE(scratchBytes, nullptr);
  std::thread([&] {
    Context context;
    ASSERT_TRUE(context.create(first, &error)) << error;
    ASSERT_TRUE(runOnce(context)) << error;
  }).join();
  {
    Context context; // on this thread too
    ASSERT_TRUE(context.create(second, &error)) << error;
    ASSERT_TRUE(runOnce(context)) << error;
    // The other thread ended: its buffer went with it.
    EXPECT_EQ(scratchBytes(), size_t(1) << 20);
  }
  first = Model();
  EXPECT_EQ(scratchBytes(), size_t(1) << 20) << "freed while a model of the library is loaded";
  second = Model();
  EXPECT_EQ(scratchBytes(), 0u);
  // The library stays loaded; a later model grows the buffer again.
  ASSERT_TRUE(first.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  Context context;
  ASSERT_TRUE(context.create(first, &error)) << error;
  ASSERT_TRUE(runOnce(context)) << error;
  EXPECT_EQ(scratchBytes(), size_t(1) << 20);
}

// Contexts share the cores by default (each took all of them, so two
// contexts running at once ran twice the threads there are cores); an
// explicit count and SLUICE_NUM_THREADS win.
TEST(Runtime, DefaultThreadsShareTheCores) {
  ::unsetenv("SLUICE_NUM_THREADS");
  Model model;
  std::string error;
  ASSERT_TRUE(model.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  auto lastThreads = fakeLibrarySymbol<int32_t (*)()>("fake_last_num_threads");
  ASSERT_NE(lastThreads, nullptr);
  unsigned hardware = std::thread::hardware_concurrency();
  int32_t all = std::max<int32_t>(1, (int32_t)hardware);
  Context a;
  ASSERT_TRUE(a.create(model, &error)) << error;
  EXPECT_EQ(a.numThreads(), all);
  ASSERT_TRUE(runOnce(a)) << error;
  EXPECT_EQ(lastThreads(), all);
  {
    Context b;
    ASSERT_TRUE(b.create(model, &error)) << error;
    EXPECT_EQ(a.numThreads(), std::max(1, all / 2));
    EXPECT_EQ(b.numThreads(), std::max(1, all / 2));
    ASSERT_TRUE(runOnce(a)) << error;
    EXPECT_EQ(lastThreads(), std::max(1, all / 2));
    ASSERT_TRUE(b.setNumThreads(3, &error)) << error;
    EXPECT_EQ(b.numThreads(), 3);
    ASSERT_TRUE(runOnce(b)) << error;
    EXPECT_EQ(lastThreads(), 3);
  }
  // b is gone: a takes every core again at its next run.
  EXPECT_EQ(a.numThreads(), all);
  ASSERT_TRUE(runOnce(a)) << error;
  EXPECT_EQ(lastThreads(), all);

  ::setenv("SLUICE_NUM_THREADS", "5", 1);
  Context c;
  ASSERT_TRUE(c.create(model, &error)) << error;
  EXPECT_EQ(c.numThreads(), 5);
  ASSERT_TRUE(runOnce(c)) << error;
  EXPECT_EQ(lastThreads(), 5);
  EXPECT_EQ(a.numThreads(), std::max(1, all / 2)) << "read when a context is made";
  ::setenv("SLUICE_NUM_THREADS", "0", 1);
  Context d;
  EXPECT_FALSE(d.create(model, &error));
  EXPECT_NE(error.find("SLUICE_NUM_THREADS='0' is not a thread count"), std::string::npos)
      << error;
  ::unsetenv("SLUICE_NUM_THREADS");
}

TEST(Runtime, ContextErrors) {
  Model model;
  std::string error;
  ASSERT_TRUE(model.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  Context context;
  ASSERT_TRUE(context.create(model, &error)) << error;
  std::string dir = SLUICE_FAKE_BUNDLE;

  EXPECT_FALSE(context.run(&error));
  EXPECT_EQ(error, "bundle '" + dir + "': input 'x' was not set");

  float x[8] = {};
  EXPECT_FALSE(context.setInput(0, x, 16, &error));
  EXPECT_EQ(error, "bundle '" + dir + "': input 'x' takes 32 bytes, got 16");
  EXPECT_FALSE(context.setInput(1, x, 32, &error));
  EXPECT_EQ(error, "bundle '" + dir + "' has 1 inputs; no input 1");
  EXPECT_FALSE(context.setNumThreads(0, &error));
  EXPECT_NE(error.find("thread count must be at least 1"), std::string::npos);

  // The library's own message comes through, with the bundle named.
  x[0] = -12345;
  ASSERT_TRUE(context.setInput(0, x, sizeof x, &error)) << error;
  EXPECT_FALSE(context.run(&error));
  EXPECT_EQ(error, "bundle '" + dir +
                       "': run failed: k1_bias (node '/Add'): "
                       "refused the magic input -12345");

  SluiceModel *raw = nullptr;
  EXPECT_EQ(sluice_model_load(nullptr, &raw), SLUICE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(sluice_last_error(), "sluice_model_load: null argument");
  // The last error is per thread.
  std::string other = "unset";
  std::thread([&] { other = sluice_last_error(); }).join();
  EXPECT_EQ(other, "");
}

TEST(Runtime, ContextsRunConcurrently) {
  Model model;
  std::string error;
  ASSERT_TRUE(model.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  auto worker = [&model](float base, int *failures) {
    Context context;
    std::string error;
    if (!context.create(model, &error) || !context.setNumThreads(1, &error)) {
      ++*failures;
      return;
    }
    context.enableTrace(true);
    for (int iter = 0; iter < 200; ++iter) {
      float x[8];
      for (int i = 0; i < 8; ++i)
        x[i] = base + iter * 8 + i;
      if (!context.setInput(0, x, sizeof x, &error) || !context.run(&error)) {
        ++*failures;
        continue;
      }
      auto *y = static_cast<const float *>(context.output(0));
      for (int i = 0; i < 8; ++i)
        if (y[i] != x[i] * 2 + kWeights[i])
          ++*failures;
      if (context.trace().size() != 2)
        ++*failures;
    }
  };
  int failuresA = 0, failuresB = 0;
  std::thread a(worker, 0.0f, &failuresA);
  std::thread b(worker, 100000.0f, &failuresB);
  a.join();
  b.join();
  EXPECT_EQ(failuresA, 0);
  EXPECT_EQ(failuresB, 0);
}

// A bundle sluice-compile generated, named by SLUICE_TEST_GENERATED_BUNDLE
// (scripts/sanitize.sh thread builds fixtures/concurrent.onnxtxt with
// ThreadSanitizer: a GEMM over OpenMP threads with per-thread scratch):
// contexts on three threads run it at once, each
// output bit for bit the one of a run alone (same thread count, static
// schedules). SLUICE_TEST_OMP_THREADS sets each run's OpenMP threads
// (default 2; ThreadSanitizer runs use 1: libgomp is not instrumented, so
// its barriers are invisible to it). Skipped without the bundle.
TEST(Runtime, GeneratedBundleRunsConcurrently) {
  const char *dir = std::getenv("SLUICE_TEST_GENERATED_BUNDLE");
  if (!dir || !*dir)
    GTEST_SKIP() << "SLUICE_TEST_GENERATED_BUNDLE is not set";
  const char *threadsText = std::getenv("SLUICE_TEST_OMP_THREADS");
  int32_t threads = threadsText && *threadsText ? std::atoi(threadsText) : 2;
  ASSERT_GE(threads, 1);
  Model model;
  std::string error;
  ASSERT_TRUE(model.load(dir, &error)) << error;
  // Inputs: each input's bytes from one pattern (small float32 values).
  std::vector<std::vector<float>> inputs;
  for (size_t i = 0; i < model.numInputs(); ++i) {
    sluice::rt::TensorInfo info = model.input(i);
    ASSERT_EQ(info.dtype, "float32") << info.name;
    inputs.emplace_back(info.bytes / sizeof(float));
    for (size_t e = 0; e < inputs.back().size(); ++e)
      inputs.back()[e] = (float)((e * 7 + i * 3) % 17) / 16.0f - 0.5f;
  }
  auto runAll = [&](Context &context, std::vector<std::string> &outputs, std::string &why) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!context.setInput(i, inputs[i].data(), inputs[i].size() * sizeof(float), &why))
        return false;
    if (!context.run(&why))
      return false;
    outputs.clear();
    for (size_t o = 0; o < model.numOutputs(); ++o) {
      size_t bytes = 0;
      const void *data = context.output(o, &bytes);
      outputs.emplace_back(static_cast<const char *>(data), bytes);
    }
    return true;
  };
  std::vector<std::string> alone;
  {
    Context context;
    ASSERT_TRUE(context.create(model, &error) && context.setNumThreads(threads, &error)) << error;
    ASSERT_TRUE(runAll(context, alone, error)) << error;
  }
  constexpr int kThreads = 3;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      Context context;
      std::string why;
      if (!context.create(model, &why) || !context.setNumThreads(threads, &why)) {
        failures[t] = why;
        return;
      }
      std::vector<std::string> outputs;
      for (int run = 0; run < 10 && failures[t].empty(); ++run)
        if (!runAll(context, outputs, why))
          failures[t] = why;
        else if (outputs != alone)
          failures[t] = "run " + std::to_string(run) + " differs from a run alone";
    });
  for (std::thread &worker : workers)
    worker.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(Runtime, BadBundles) {
  std::string dir = copyBundle("missing-manifest");
  fs::remove(dir + "/manifest.json");
  EXPECT_EQ(loadError(dir),
            dir + "/manifest.json: cannot open: No such file or directory");

  dir = copyBundle("corrupt");
  writeFile(dir + "/manifest.json", "{\"format\": \"sluice-bundle\", \"ver");
  EXPECT_EQ(loadError(dir),
            dir + "/manifest.json: invalid JSON at byte 32: unterminated "
                  "string");

  dir = copyBundle("truncated");
  writeFile(dir + "/weights.bin", std::string(20, '\0'));
  EXPECT_EQ(loadError(dir), dir + "/weights.bin: is 20 bytes, the manifest "
                                  "says 32 (truncated?)");

  dir = copyBundle("missing-weights");
  fs::remove(dir + "/weights.bin");
  EXPECT_EQ(loadError(dir), dir + "/weights.bin: cannot open the bundle's "
                                  "weights: No such file or directory");

  dir = copyBundle("missing-library");
  fs::remove(dir + "/model.so");
  std::string error = loadError(dir);
  EXPECT_EQ(error.rfind(dir + "/model.so: cannot load the model library: ", 0),
            0u)
      << error;

  dir = copyBundle("not-a-library");
  writeFile(dir + "/model.so", "not an ELF file");
  EXPECT_EQ(loadError(dir), dir + "/model.so: not a complete 64-bit ELF shared "
                                  "library (truncated or corrupt)");

  // A real library cut short: its headers promise segments past the end of
  // the file, which dlopen would map and fault on (SIGBUS).
  dir = copyBundle("truncated-library");
  {
    std::ifstream in(std::string(SLUICE_FAKE_BUNDLE) + "/model.so", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    writeFile(dir + "/model.so", bytes.substr(0, bytes.size() / 2));
  }
  EXPECT_EQ(loadError(dir), dir + "/model.so: not a complete 64-bit ELF shared "
                                  "library (truncated or corrupt)");

  dir = copyBundle("version");
  editManifest(dir, "\"version\": \"" SLUICE_VERSION_STRING "\"",
               "\"version\": \"0.2.9\"");
  EXPECT_EQ(loadError(dir), "bundle '" + dir +
                                "' was written by Sluice 0.2.9; this runtime "
                                "(" SLUICE_VERSION_STRING
                                ") runs bundles of version 0.3.x");

  dir = copyBundle("abi");
  editManifest(dir, "\"abi\": " + std::to_string(SLUICE_BUNDLE_ABI_VERSION), "\"abi\": 7");
  EXPECT_EQ(loadError(dir), "bundle '" + dir +
                                "' uses bundle ABI 7; this "
                                "runtime supports ABI " +
                                std::to_string(SLUICE_BUNDLE_ABI_VERSION));

  dir = copyBundle("tpu");
  editManifest(dir, "\"target\": \"cpu\"", "\"target\": \"tpu\"");
  EXPECT_EQ(loadError(dir), "bundle '" + dir +
                                "' is for target 'tpu'; this "
                                "runtime runs cpu and cuda bundles");

  // A cpu library in a cuda bundle: the manifest must name the GPU codes,
  // the library must export the cuda entry points.
  dir = copyBundle("cuda");
  editManifest(dir, "\"target\": \"cpu\"", "\"target\": \"cuda\"");
  EXPECT_EQ(loadError(dir), dir + "/manifest.json: a cuda bundle must list its "
                                  "'gpu_architectures' (\"sm_90\", "
                                  "\"compute_90\" ...)");
  editManifest(dir, "\"gpu_architectures\": []",
               "\"gpu_architectures\": [\"sm_90\"]");
  EXPECT_EQ(loadError(dir), dir + "/model.so: the bundle targets cuda but its "
                                  "library does not export sluice_model_init");

  dir = copyBundle("no-weights");
  editManifest(dir, "\"bytes\": 32", "\"bytes\": 0");
  fs::remove(dir + "/weights.bin");
  EXPECT_EQ(loadError(dir), ""); // no weights: the file may be left out

  EXPECT_EQ(loadError(dir + "/nothing"),
            "bundle '" + dir + "/nothing': No such file or directory");
  EXPECT_EQ(loadError(dir + "/manifest.json"),
            "bundle '" + dir +
                "/manifest.json' is not a folder (a bundle is "
                "the folder sluice-compile writes)");
}

TEST(Runtime, CudaBundleWithoutDevice) {
  // The stand-in cuda bundle loads anywhere: the manifest, its codes and the
  // library's cuda entry points are checked without CUDA.
  Model model;
  std::string error;
  ASSERT_TRUE(model.load(SLUICE_FAKE_CUDA_BUNDLE, &error)) << error;
  EXPECT_EQ(model.target(), "cuda");
  Context context;
  if (context.create(model, &error)) {
    // A machine with a GPU (and the cuda module): the stand-in has no
    // device code, so its run fails naming its first step.
    EXPECT_NE(context.device().find("(sm_"), std::string::npos)
        << context.device();
    float x[8] = {};
    ASSERT_TRUE(context.setInput(0, x, sizeof x, &error)) << error;
    EXPECT_FALSE(context.run(&error));
    EXPECT_NE(error.find("run failed: k0_scale: this stand-in bundle has no "
                         "device code"),
              std::string::npos)
        << error;
    GTEST_SKIP() << "this machine has a CUDA device; the refusal is untested";
  }
  std::string dir = SLUICE_FAKE_CUDA_BUNDLE;
  SluiceModel *raw = nullptr;
  ASSERT_EQ(sluice_model_load(dir.c_str(), &raw), SLUICE_OK);
  SluiceContext *rawContext = nullptr;
  EXPECT_EQ(sluice_context_create(raw, &rawContext), SLUICE_ERROR_DEVICE);
  EXPECT_EQ(rawContext, nullptr);
  sluice_model_free(raw);
#if SLUICE_HAS_CUDA_MODULE
  // One line: the bundle, the target, and what CUDA said.
  EXPECT_EQ(error.rfind("bundle '" + dir +
                            "' targets cuda: no CUDA device "
                            "(cudaGetDeviceCount: ",
                        0),
            0u)
      << error;
#else
  EXPECT_EQ(error.rfind("bundle '" + dir +
                            "' targets cuda: this runtime has no CUDA "
                            "support (",
                        0),
            0u)
      << error;
#endif
  EXPECT_EQ(error.back(), ')') << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;

  // A bad SLUICE_DEVICE is refused before any CUDA call.
  ::setenv("SLUICE_DEVICE", "gpu1", 1);
  EXPECT_FALSE(context.create(model, &error));
  ::unsetenv("SLUICE_DEVICE");
  EXPECT_EQ(error, "SLUICE_DEVICE='gpu1' is not a device index (0, 1, ...)");
}

TEST(Runtime, CpuContextQueries) {
  Model model;
  std::string error;
  ASSERT_TRUE(model.load(SLUICE_FAKE_BUNDLE, &error)) << error;
  Context context;
  // cpu bundles take any device index and ignore it.
  ASSERT_TRUE(context.create(model, &error, /*device=*/3)) << error;
  EXPECT_EQ(context.device(), "cpu");
  context.enableCudaGraph(false); // no effect on cpu
  float x[8] = {};
  ASSERT_TRUE(context.setInput(0, x, sizeof x, &error)) << error;
  ASSERT_TRUE(context.run(&error)) << error;
  std::string reason;
  EXPECT_FALSE(context.replayedCudaGraph(&reason));
  EXPECT_EQ(reason, "the cpu target");
}

/// A fresh copy of the 2-rank bundle.
static std::string copyRankBundle(const std::string &name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("rt " + name + ".sluice");
  fs::remove_all(dir);
  fs::copy(SLUICE_COLLECTIVE_BUNDLE, dir, fs::copy_options::recursive);
  return dir.string();
}

TEST(Runtime, LoadsOneRankOfAMultiRankBundle) {
  std::string dir = SLUICE_COLLECTIVE_BUNDLE;
  int32_t world = 0;
  ASSERT_EQ(sluice_bundle_world_size(dir.c_str(), &world), SLUICE_OK);
  EXPECT_EQ(world, 2);
  ASSERT_EQ(sluice_bundle_world_size(SLUICE_FAKE_BUNDLE, &world), SLUICE_OK);
  EXPECT_EQ(world, 1);

  // Each rank maps its own weights file; rank 1's differ from rank 0's.
  Model rank0, rank1;
  std::string error;
  ASSERT_TRUE(rank0.loadRank(dir, 0, &error)) << error;
  ASSERT_TRUE(rank1.loadRank(dir, 1, &error)) << error;
  EXPECT_EQ(rank0.worldSize(), 2);
  EXPECT_EQ(rank1.rank(), 1);
  EXPECT_EQ(rank1.weightsBytes(), 24 * sizeof(float));
  EXPECT_EQ(rank1.numOutputs(), 7u);

  // A single-rank bundle is rank 0 of 1.
  Model single;
  ASSERT_TRUE(single.loadRank(SLUICE_FAKE_BUNDLE, 0, &error)) << error;
  EXPECT_EQ(single.worldSize(), 1);
  EXPECT_EQ(single.rank(), 0);

  // Refusals, one line each.
  EXPECT_EQ(loadError(dir),
            "bundle '" + dir +
                "' is planned for 2 ranks: run it with sluice-run --ranks=2, "
                "or load one rank of it under MPI (sluice_model_load_rank, "
                "docs/parallel.md)");
  Model model;
  EXPECT_FALSE(model.loadRank(dir, 2, &error));
  EXPECT_EQ(error, "bundle '" + dir + "' has 2 ranks (0..1); there is no rank 2");
  EXPECT_FALSE(model.loadRank(dir, -1, &error));
  EXPECT_EQ(error, "sluice_model_load_rank: rank -1 (ranks count from 0)");
  EXPECT_FALSE(model.loadRank(SLUICE_FAKE_BUNDLE, 1, &error));
  EXPECT_EQ(error, std::string("bundle '") + SLUICE_FAKE_BUNDLE +
                       "' has 1 rank (0..0); there is no rank 1");

  // A multi-rank model's context needs the job's communicator.
  Context context;
  EXPECT_FALSE(context.create(rank1, &error));
  EXPECT_EQ(error, "bundle '" + dir +
                       "' (rank 1 of 2) runs with the other ranks: create its "
                       "context with sluice_context_create_rank");
  EXPECT_EQ(sluice_context_create_rank(rank1.get(), nullptr, -1, nullptr),
            SLUICE_ERROR_INVALID_ARGUMENT);
}

TEST(Runtime, MissingRankWeights) {
  std::string dir = copyRankBundle("missing rank");
  fs::remove(dir + "/weights.rank1.bin");
  Model model;
  std::string error;
  ASSERT_TRUE(model.loadRank(dir, 0, &error)) << error; // rank 0's is there
  EXPECT_FALSE(model.loadRank(dir, 1, &error));
  EXPECT_EQ(error, dir + "/weights.rank1.bin: cannot open rank 1's weights: "
                         "No such file or directory");

  dir = copyRankBundle("short rank");
  writeFile(dir + "/weights.rank0.bin", "tiny");
  EXPECT_FALSE(model.loadRank(dir, 0, &error));
  EXPECT_EQ(error, dir + "/weights.rank0.bin: is 4 bytes, the manifest says "
                         "96 (truncated?)");
}

TEST(Runtime, LaunchEnvironment) {
  const char *names[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
                         "PMIX_RANK", "SLURM_PROCID", "SLURM_NTASKS",
                         "SLURM_LOCALID", "SLURM_STEP_ID", "SLURM_STEPID",
                         "MPI_LOCALRANKID"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char *name : names)
    if (const char *value = std::getenv(name)) {
      saved.emplace_back(name, value);
      ::unsetenv(name);
    }
  SluiceLaunchInfo info = sluice::rt::launchInfo();
  EXPECT_EQ(info.in_job, 0);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);

  // A Slurm batch script is one process, even with SLURM_NTASKS=4.
  ::setenv("SLURM_PROCID", "0", 1);
  ::setenv("SLURM_NTASKS", "4", 1);
  EXPECT_EQ(sluice::rt::launchInfo().in_job, 0);
  // An srun step is a job.
  ::setenv("SLURM_STEP_ID", "0", 1);
  ::setenv("SLURM_PROCID", "3", 1);
  ::setenv("SLURM_LOCALID", "1", 1);
  info = sluice::rt::launchInfo();
  EXPECT_EQ(info.in_job, 1);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_STREQ(info.source, "SLURM_*");

  // Open MPI's variables come first.
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  info = sluice::rt::launchInfo();
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_STREQ(info.source, "OMPI_COMM_WORLD_*");
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_STEP_ID",
                           "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"})
    ::unsetenv(name);

  // PMIx alone gives the rank; the size comes with MPI_Init.
  ::setenv("PMIX_RANK", "5", 1);
  info = sluice::rt::launchInfo();
  EXPECT_EQ(info.in_job, 1);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, -1);
  ::unsetenv("PMIX_RANK");
  for (const auto &[name, value] : saved)
    ::setenv(name.c_str(), value.c_str(), 1);
}

