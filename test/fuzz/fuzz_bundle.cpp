//===- fuzz_bundle.cpp - libFuzzer target: loading a bundle through the C API ===//
//
// A bundle is a library, a manifest and weights. The library here is fixed
// (test/unit/fixtures/FakeModel.cpp built beside this target: y = x * 2 + w
// over float32[2x4], w the first 8 floats of the weights); the manifest and
// the weights come from the input, laid out as
//
//   <manifest.json text> NUL <weights.bin bytes>
//
// (no NUL: no weights file). Each input is written into one folder per
// process and loaded with sluice_model_load; what loads is queried, gets a
// context and, when its interface is the library's, runs once with its
// output checked against the input's weights. A refusal must say why (sluice_last_error).
//
// What a manifest declares is trusted as the bundle's plan (docs/hardening.md,
// "Trust model"): a context allocates the arena and outputs it states, and
// the library writes what it was built to. So the run happens only where the
// manifest matches the library, and contexts are made only for plans below
// 256 MiB (a 1 TiB arena is a legal plan, and libFuzzer's malloc limit
// would report it).
//
//===----------------------------------------------------------------------===//

#include "sluice/runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#ifndef SLUICE_FUZZ_BUNDLE_LIBRARY
#error "SLUICE_FUZZ_BUNDLE_LIBRARY: the fixed model library (test/fuzz/CMakeLists.txt)"
#endif

namespace {

bool writeFile(const std::string &path, const void *data, size_t size) {
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return false;
  bool ok = !size || std::fwrite(data, 1, size, file) == size;
  return std::fclose(file) == 0 && ok;
}

/// The folder the inputs are written into, with the fixed library copied
/// in once (a copy, not a link: the runtime checks the file it opens).
const std::string &bundleDir() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/sluice-fuzz-bundle-" +
                       std::to_string((long)::getpid());
    ::mkdir(path.c_str(), 0700);
    std::FILE *in = std::fopen(SLUICE_FUZZ_BUNDLE_LIBRARY, "rb");
    std::string library;
    if (in) {
      char buffer[1 << 16];
      size_t n;
      while ((n = std::fread(buffer, 1, sizeof buffer, in)) > 0)
        library.append(buffer, n);
      std::fclose(in);
    }
    if (library.empty() || !writeFile(path + "/model.so", library.data(), library.size())) {
      std::fprintf(stderr, "fuzz_bundle: cannot copy %s into %s\n", SLUICE_FUZZ_BUNDLE_LIBRARY,
                   path.c_str());
      std::abort();
    }
    return path;
  }();
  return dir;
}

/// A failed call must leave a message.
void refused() {
  const char *message = sluice_last_error();
  if (!message || !*message)
    __builtin_trap();
}

/// Whether the model's interface is the fixed library's: one float32[2x4]
/// input and output, an arena and weights of at least 8 floats.
bool matchesLibrary(const SluiceModel *model) {
  size_t inputs = 0, outputs = 0, arena = 0, weights = 0;
  SluiceTensorInfo x{}, y{};
  if (sluice_model_num_inputs(model, &inputs) != SLUICE_OK ||
      sluice_model_num_outputs(model, &outputs) != SLUICE_OK || inputs != 1 || outputs != 1 ||
      sluice_model_input(model, 0, &x) != SLUICE_OK ||
      sluice_model_output(model, 0, &y) != SLUICE_OK ||
      sluice_model_arena_bytes(model, &arena) != SLUICE_OK ||
      sluice_model_weights_bytes(model, &weights) != SLUICE_OK)
    return false;
  auto is2x4 = [](const SluiceTensorInfo &t) {
    return std::strcmp(t.dtype, "float32") == 0 && t.rank == 2 && t.dims[0] == 2 &&
           t.dims[1] == 4 && t.bytes == 32;
  };
  return is2x4(x) && is2x4(y) && arena >= 32 && weights >= 32;
}

/// Bytes a context of `model` allocates (saturating), per its manifest.
uint64_t planBytes(const SluiceModel *model) {
  size_t arena = 0, outputs = 0, inputs = 0;
  (void)sluice_model_arena_bytes(model, &arena);
  uint64_t total = arena;
  (void)sluice_model_num_outputs(model, &outputs);
  (void)sluice_model_num_inputs(model, &inputs);
  for (size_t i = 0; i < outputs + inputs; ++i) {
    SluiceTensorInfo info{};
    if ((i < outputs ? sluice_model_output(model, i, &info)
                     : sluice_model_input(model, i - outputs, &info)) != SLUICE_OK)
      continue;
    total = total + info.bytes < total ? UINT64_MAX : total + info.bytes;
  }
  return total;
}

/// Runs the model once and checks y = x * 2 + w against `weights` (the
/// weights file's bytes, at least 32 of them).
void runOnce(SluiceContext *context, const uint8_t *weights) {
  // The trace is on: the library reports steps 0 and 1 whatever the
  // manifest's kernel list says.
  (void)sluice_context_enable_trace(context, 1);
  (void)sluice_context_set_num_threads(context, 1);
  float x[8] = {1, 2, 3, 4, -1, -2, -3, -4};
  if (sluice_context_set_input(context, 0, x, sizeof x) != SLUICE_OK ||
      sluice_context_run(context) != SLUICE_OK) {
    refused();
    return;
  }
  const void *data = nullptr;
  size_t bytes = 0;
  const SluiceTraceEvent *events = nullptr;
  size_t count = 0;
  if (sluice_context_output(context, 0, &data, &bytes) != SLUICE_OK || bytes != 32 ||
      sluice_context_trace(context, &events, &count) != SLUICE_OK)
    __builtin_trap();
  float w[8], want[8];
  std::memcpy(w, weights, sizeof w);
  for (int i = 0; i < 8; ++i)
    want[i] = x[i] * 2 + w[i];
  if (std::memcmp(data, want, sizeof want) != 0)
    __builtin_trap(); // the weights the run saw are not the file's
}

void walk(SluiceModel *model, const uint8_t *weights) {
  const char *text = nullptr;
  if (sluice_model_target(model, &text) != SLUICE_OK || !text)
    __builtin_trap();
  size_t kernels = 0;
  (void)sluice_model_num_kernels(model, &kernels);
  for (size_t i = 0; i < kernels; ++i) {
    SluiceKernelInfo info{};
    if (sluice_model_kernel(model, i, &info) != SLUICE_OK)
      __builtin_trap();
  }
  if (planBytes(model) > (256u << 20))
    return;
  SluiceContext *context = nullptr;
  if (sluice_context_create(model, &context) != SLUICE_OK) {
    refused();
    return;
  }
  // A loaded model's weights file is the input's (its size was checked).
  if (weights && matchesLibrary(model))
    runOnce(context, weights);
  (void)sluice_context_free(context);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = bundleDir();
  const uint8_t *nul = static_cast<const uint8_t *>(std::memchr(data, 0, size));
  size_t manifestSize = nul ? (size_t)(nul - data) : size;
  if (!writeFile(dir + "/manifest.json", data, manifestSize))
    std::abort();
  std::string weights = dir + "/weights.bin";
  if (nul) {
    if (!writeFile(weights, nul + 1, size - manifestSize - 1))
      std::abort();
  } else {
    ::unlink(weights.c_str());
  }
  SluiceModel *model = nullptr;
  if (sluice_model_load(dir.c_str(), &model) != SLUICE_OK) {
    refused();
    return 0;
  }
  walk(model, nul ? nul + 1 : nullptr);
  (void)sluice_model_free(model);
  return 0;
}
