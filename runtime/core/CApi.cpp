//===- CApi.cpp - the C API of include/sluice/runtime.h -------------------===//
//
// Thin: checks arguments, forwards to Bundle and the context of the bundle's
// target (CpuContext here, CudaContext through the cuda module), and turns
// their error strings into a status plus the thread-local last error.
// Nothing may throw across the C boundary, so allocation failures are caught
// here.
//
//===----------------------------------------------------------------------===//

#include "sluice/runtime.h"
#include "sluice/version.h"

#include "runtime/core/Bundle.h"
#include "runtime/core/Comm.h"
#include "runtime/core/GridAxes.h"
#include "runtime/core/Launch.h"
#include "runtime/core/RunContext.h"
#include "runtime/cpu/CpuContext.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using sluice::runtime::Bundle;
using sluice::runtime::describeVariantShapes;
using sluice::runtime::Manifest;
using sluice::runtime::shapeText;
using sluice::runtime::VariantSpec;
using sluice::runtime::CpuContext;
using sluice::runtime::MoeSpec;
using sluice::runtime::ProcessGroup;
using sluice::runtime::RankComm;
using sluice::runtime::RunContext;
using sluice::runtime::splitGridAxes;
using sluice::runtime::TensorSpec;

struct SluiceModel {
  /// Shared with every context made from it: a context keeps the bundle
  /// (its library, weights and manifest) alive, so freeing the model
  /// before its contexts is safe.
  std::shared_ptr<Bundle> bundle;
  /// The C views of the manifest, pointing into it.
  std::vector<SluiceTensorInfo> inputs, outputs;
  std::vector<SluiceKernelInfo> kernels;
  std::vector<SluiceMoeInfo> moe;
  /// Each shape variant's inputs and outputs (one entry, the above, for a
  /// bundle without variants).
  std::vector<std::vector<SluiceTensorInfo>> variantInputs, variantOutputs;
};

struct SluiceCommunicator {
  std::unique_ptr<ProcessGroup> group;
  /// Contexts made with it and not freed: it must outlive them.
  std::atomic<int> contexts{0};
};

namespace {
/// Contexts alive in this process: by default they share the cores.
std::atomic<int> liveContexts{0};
} // namespace

struct SluiceContext {
  SluiceContext() { ++liveContexts; }
  /// The model's bundle, which `run` refers to: declared first, so that it
  /// is released after `run`.
  std::shared_ptr<const Bundle> bundle;
  /// A CpuContext or the cuda module's CudaContext.
  std::unique_ptr<RunContext> run;
  /// What sluice_context_cuda_graph last returned, kept for its pointer.
  mutable std::string graphStatus;
  /// Multi-rank: the communicator it was made with (null otherwise).
  SluiceCommunicator *comm = nullptr;
  std::string transport;
  /// Threads for each run: what sluice_context_set_num_threads set (0: not
  /// set), else SLUICE_NUM_THREADS as it was at creation (0: not set), else
  /// the default, the host's cores shared by the contexts alive and by the
  /// ranks on this host (a context made alone and then joined by others
  /// gives up its share at its next run).
  int32_t explicitThreads = 0;
  int32_t environmentThreads = 0;
  int32_t ranksOnHost = 1;
  /// What `run` was last given (0: nothing yet).
  int32_t appliedThreads = 0;
  /// Per input: its size as last set (0: not set) and the shape the caller
  /// declared (sluice_context_set_input_shape; none: not declared), from
  /// which each run picks the shape variant; and the variant the last run
  /// used.
  std::vector<size_t> inputBytes;
  std::vector<std::optional<std::vector<int64_t>>> inputShapes;
  size_t variant = 0;

  int32_t threads() const {
    if (explicitThreads)
      return explicitThreads;
    if (environmentThreads)
      return environmentThreads;
    unsigned hardware = std::thread::hardware_concurrency();
    int sharing = std::max(1, ranksOnHost) * std::max(1, liveContexts.load());
    return std::max<int32_t>(1, (int32_t)(hardware ? hardware : 1) / sharing);
  }
  ~SluiceContext() {
    run.reset(); // its communicator first
    if (comm)
      --comm->contexts;
    --liveContexts;
  }
};

namespace {

thread_local std::string lastError;

SluiceStatus fail(SluiceStatus status, std::string message) {
  lastError = std::move(message);
  return status;
}

SluiceStatus nullArgument(const char *function) {
  return fail(SLUICE_ERROR_INVALID_ARGUMENT,
              std::string(function) + ": null argument");
}

/// SLUICE_NUM_THREADS into `threads` (0 when unset); false with a message
/// when it is not a count >= 1. Read when a context is made, never set.
bool threadsFromEnvironment(int32_t &threads, std::string &error) {
  threads = 0;
  const char *env = std::getenv("SLUICE_NUM_THREADS");
  if (!env || !*env)
    return true;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(env, &end, 10);
  if (*end || errno || value < 1 || value > 65536) {
    error = std::string("SLUICE_NUM_THREADS='") + env +
            "' is not a thread count (1 to 65536)";
    return false;
  }
  threads = (int32_t)value;
  return true;
}

SluiceTensorInfo infoOf(const TensorSpec &spec) {
  return {spec.name.c_str(), spec.dtype.c_str(), (int32_t)spec.shape.size(),
          spec.shape.data(), spec.bytes};
}

/// Runs `body`, turning any exception into a status: none may cross
/// `extern "C"` (that terminates the host process).
template <typename Fn> SluiceStatus guarded(Fn body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(SLUICE_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(SLUICE_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(SLUICE_ERROR_INTERNAL, "internal error: an unknown exception");
  }
}

SluiceStatus tensorInfo(const SluiceModel *model, size_t index,
                        SluiceTensorInfo *info, bool input) {
  if (!model || !info)
    return nullArgument(input ? "sluice_model_input" : "sluice_model_output");
  const auto &list = input ? model->inputs : model->outputs;
  if (index >= list.size())
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "bundle '" + model->bundle->dir() + "' has " +
                    std::to_string(list.size()) +
                    (input ? " inputs" : " outputs") + "; no index " +
                    std::to_string(index));
  *info = list[index];
  return SLUICE_OK;
}

template <typename T>
SluiceStatus modelQuery(const SluiceModel *model, T *out, const char *function,
                        T (*get)(const sluice::runtime::Manifest &)) {
  if (!model || !out)
    return nullArgument(function);
  *out = get(model->bundle->manifest());
  return SLUICE_OK;
}

SluiceStatus loadModel(const char *bundle_dir, int32_t rank,
                              SluiceModel **out) {
  *out = nullptr;
  return guarded([&] {
    std::string error;
    std::shared_ptr<Bundle> bundle = Bundle::load(bundle_dir, rank, error);
    if (!bundle)
      return fail(SLUICE_ERROR_BUNDLE, error);
    auto model = std::make_unique<SluiceModel>();
    model->bundle = std::move(bundle);
    const auto &manifest = model->bundle->manifest();
    for (const TensorSpec &spec : manifest.inputs)
      model->inputs.push_back(infoOf(spec));
    for (const TensorSpec &spec : manifest.outputs)
      model->outputs.push_back(infoOf(spec));
    for (const auto &kernel : manifest.kernels)
      model->kernels.push_back({kernel.name.c_str(), kernel.kind.c_str(),
                                kernel.op.c_str(), kernel.node.c_str()});
    if (manifest.variants.empty()) {
      model->variantInputs.push_back(model->inputs);
      model->variantOutputs.push_back(model->outputs);
    }
    for (const VariantSpec &variant : manifest.variants) {
      model->variantInputs.emplace_back();
      model->variantOutputs.emplace_back();
      for (const TensorSpec &spec : variant.inputs)
        model->variantInputs.back().push_back(infoOf(spec));
      for (const TensorSpec &spec : variant.outputs)
        model->variantOutputs.back().push_back(infoOf(spec));
    }
    for (const MoeSpec &moe : manifest.moe)
      model->moe.push_back(
          {moe.node.c_str(), moe.gating.c_str(), moe.experts, moe.topK, moe.expertsPerRank});
    *out = model.release();
    return SLUICE_OK;
  });
}

} // namespace

extern "C" {

const char *sluice_runtime_version(void) { return SLUICE_VERSION_STRING; }

const char *sluice_last_error(void) { return lastError.c_str(); }

SluiceStatus sluice_model_load(const char *bundle_dir, SluiceModel **out) {
  if (!bundle_dir || !out)
    return nullArgument("sluice_model_load");
  return loadModel(bundle_dir, Bundle::kSingleRank, out);
}

SluiceStatus sluice_model_load_rank(const char *bundle_dir, int32_t rank,
                                    SluiceModel **out) {
  if (!bundle_dir || !out)
    return nullArgument("sluice_model_load_rank");
  if (rank < 0) {
    *out = nullptr;
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "sluice_model_load_rank: rank " + std::to_string(rank) +
                    " (ranks count from 0)");
  }
  return loadModel(bundle_dir, rank, out);
}

SluiceStatus sluice_model_free(SluiceModel *model) {
  delete model;
  return SLUICE_OK;
}

SluiceStatus sluice_model_num_inputs(const SluiceModel *model, size_t *count) {
  if (!model || !count)
    return nullArgument("sluice_model_num_inputs");
  *count = model->inputs.size();
  return SLUICE_OK;
}

SluiceStatus sluice_model_num_outputs(const SluiceModel *model, size_t *count) {
  if (!model || !count)
    return nullArgument("sluice_model_num_outputs");
  *count = model->outputs.size();
  return SLUICE_OK;
}

SluiceStatus sluice_model_input(const SluiceModel *model, size_t index,
                                SluiceTensorInfo *info) {
  return tensorInfo(model, index, info, /*input=*/true);
}

SluiceStatus sluice_model_output(const SluiceModel *model, size_t index,
                                 SluiceTensorInfo *info) {
  return tensorInfo(model, index, info, /*input=*/false);
}

SluiceStatus sluice_model_target(const SluiceModel *model,
                                 const char **target) {
  if (!model || !target)
    return nullArgument("sluice_model_target");
  *target = model->bundle->manifest().target.c_str();
  return SLUICE_OK;
}

SluiceStatus sluice_model_version(const SluiceModel *model,
                                  const char **version) {
  if (!model || !version)
    return nullArgument("sluice_model_version");
  *version = model->bundle->manifest().version.c_str();
  return SLUICE_OK;
}

SluiceStatus sluice_model_name(const SluiceModel *model, const char **name) {
  if (!model || !name)
    return nullArgument("sluice_model_name");
  *name = model->bundle->manifest().model.c_str();
  return SLUICE_OK;
}

SluiceStatus sluice_model_arena_bytes(const SluiceModel *model, size_t *bytes) {
  return modelQuery<size_t>(
      model, bytes, "sluice_model_arena_bytes",
      [](const sluice::runtime::Manifest &m) { return (size_t)m.arenaBytes; });
}

SluiceStatus sluice_model_weights_bytes(const SluiceModel *model,
                                        size_t *bytes) {
  if (!model || !bytes)
    return nullArgument("sluice_model_weights_bytes");
  *bytes = (size_t)model->bundle->weightsBytes();
  return SLUICE_OK;
}

SluiceStatus sluice_model_num_kernels(const SluiceModel *model, size_t *count) {
  if (!model || !count)
    return nullArgument("sluice_model_num_kernels");
  *count = model->kernels.size();
  return SLUICE_OK;
}

SluiceStatus sluice_model_kernel(const SluiceModel *model, size_t index,
                                 SluiceKernelInfo *info) {
  if (!model || !info)
    return nullArgument("sluice_model_kernel");
  if (index >= model->kernels.size())
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "bundle '" + model->bundle->dir() + "' has " +
                    std::to_string(model->kernels.size()) +
                    " kernels; no index " + std::to_string(index));
  *info = model->kernels[index];
  return SLUICE_OK;
}

SluiceStatus sluice_model_num_moe(const SluiceModel *model, size_t *count) {
  if (!model || !count)
    return nullArgument("sluice_model_num_moe");
  *count = model->moe.size();
  return SLUICE_OK;
}

SluiceStatus sluice_model_moe(const SluiceModel *model, size_t index, SluiceMoeInfo *info) {
  if (!model || !info)
    return nullArgument("sluice_model_moe");
  if (index >= model->moe.size())
    return fail(SLUICE_ERROR_INVALID_ARGUMENT, "bundle '" + model->bundle->dir() + "' has " +
                                                   std::to_string(model->moe.size()) +
                                                   " moe ops; no index " + std::to_string(index));
  *info = model->moe[index];
  return SLUICE_OK;
}

SluiceStatus sluice_context_expert_load(const SluiceContext *context, size_t index, int64_t *counts,
                                        size_t count) {
  if (!context || !counts)
    return nullArgument("sluice_context_expert_load");
  const std::vector<MoeSpec> &moe = context->bundle->manifest().moe;
  if (index >= moe.size())
    return fail(SLUICE_ERROR_INVALID_ARGUMENT, "bundle '" + context->bundle->dir() + "' has " +
                                                   std::to_string(moe.size()) +
                                                   " moe ops; no index " + std::to_string(index));
  const MoeSpec &spec = moe[index];
  if (count < size_t(spec.experts))
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "sluice_context_expert_load: moe op " + std::to_string(index) + " has " +
                    std::to_string(spec.experts) + " experts; the buffer holds " +
                    std::to_string(count));
  const int64_t *load = context->run->expertLoad + spec.loadOffset;
  std::copy(load, load + spec.experts, counts);
  return SLUICE_OK;
}

SluiceStatus sluice_context_reset_expert_load(SluiceContext *context) {
  if (!context)
    return nullArgument("sluice_context_reset_expert_load");
  RunContext &run = *context->run;
  if (run.expertLoad)
    std::fill(run.expertLoad, run.expertLoad + run.expertLoadSize, 0);
  return SLUICE_OK;
}

SluiceStatus sluice_context_create(const SluiceModel *model,
                                   SluiceContext **out) {
  return sluice_context_create_on_device(model, -1, out);
}

SluiceStatus sluice_context_create_on_device(const SluiceModel *model,
                                             int32_t device,
                                             SluiceContext **out) {
  if (!model || !out)
    return nullArgument("sluice_context_create");
  *out = nullptr;
  return guarded([&] {
    const Bundle &bundle = *model->bundle;
    if (bundle.manifest().worldSize > 1)
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "bundle '" + bundle.dir() + "' (rank " +
                      std::to_string(bundle.rank()) + " of " +
                      std::to_string(bundle.manifest().worldSize) +
                      ") runs with the other ranks: create its context with "
                      "sluice_context_create_rank");
    auto context = std::make_unique<SluiceContext>();
    context->bundle = model->bundle;
    std::string error;
    if (!threadsFromEnvironment(context->environmentThreads, error))
      return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
    if (bundle.manifest().target != "cuda") {
      // cpu: there is one device; `device` does not apply.
      auto cpu = std::make_unique<CpuContext>(bundle);
      if (!cpu->init(error))
        return fail(SLUICE_ERROR_OUT_OF_MEMORY, error);
      context->run = std::move(cpu);
      *out = context.release();
      return SLUICE_OK;
    }
    if (device < -1)
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "sluice_context_create_on_device: device " +
                      std::to_string(device) +
                      " (give an index >= 0, or -1 for SLUICE_DEVICE or 0)");
    if (device == -1) {
      device = 0;
      if (const char *env = std::getenv("SLUICE_DEVICE"); env && *env) {
        char *end = nullptr;
        errno = 0;
        long value = std::strtol(env, &end, 10);
        if (*end || errno || value < 0 || value > INT32_MAX)
          return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                      std::string("SLUICE_DEVICE='") + env +
                          "' is not a device index (0, 1, ...)");
        device = (int32_t)value;
      }
    }
    RunContext *cuda =
        sluice::runtime::createCudaContext(bundle, device, nullptr, error);
    if (!cuda)
      return fail(SLUICE_ERROR_DEVICE, error);
    context->run.reset(cuda);
    *out = context.release();
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_free(SluiceContext *context) {
  delete context;
  return SLUICE_OK;
}

static SluiceStatus setInput(SluiceContext *context, size_t index,
                             const void *data, size_t bytes, bool copy) {
  if (!context)
    return nullArgument(copy ? "sluice_context_set_input"
                             : "sluice_context_bind_input");
  return guarded([&] {
    std::string error;
    if (!context->run->setInput(index, data, bytes, copy, error))
      return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
    size_t inputs = context->bundle->manifest().inputs.size();
    context->inputBytes.resize(inputs, 0);
    context->inputBytes[index] = bytes;
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_set_input_shape(SluiceContext *context, size_t index,
                                            const int64_t *dims, int32_t rank) {
  if (!context || (!dims && rank > 0))
    return nullArgument("sluice_context_set_input_shape");
  return guarded([&] {
    const Manifest &manifest = context->bundle->manifest();
    const std::string &dir = context->bundle->dir();
    if (index >= manifest.inputs.size())
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "bundle '" + dir + "' has " + std::to_string(manifest.inputs.size()) +
                      " inputs; no input " + std::to_string(index));
    if (rank < 0)
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "sluice_context_set_input_shape: rank " + std::to_string(rank));
    std::vector<int64_t> shape(dims, dims + rank);
    bool known = false;
    if (manifest.variants.empty())
      known = shape == manifest.inputs[index].shape;
    for (const VariantSpec &variant : manifest.variants)
      known |= shape == variant.inputs[index].shape;
    if (!known)
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "bundle '" + dir + "': input '" + manifest.inputs[index].name +
                      "' has no shape " + shapeText(shape) +
                      (manifest.variants.empty()
                           ? " (it takes " + shapeText(manifest.inputs[index].shape) + ")"
                           : "; the bundle's shape variants take " +
                                 describeVariantShapes(manifest)));
    context->inputShapes.resize(manifest.inputs.size());
    context->inputShapes[index] = std::move(shape);
    return SLUICE_OK;
  });
}

/// The shape variant whose input shapes equal the ones declared
/// (sluice_context_set_input_shape), and whose sizes equal those of inputs
/// set without one; fails listing the shapes the bundle has.
static bool pickVariant(SluiceContext *context, size_t &variant, std::string &error) {
  const Manifest &manifest = context->bundle->manifest();
  variant = 0;
  if (manifest.variants.empty())
    return true;
  context->inputBytes.resize(manifest.inputs.size(), 0);
  context->inputShapes.resize(manifest.inputs.size());
  std::vector<size_t> matches;
  for (size_t v = 0; v < manifest.variants.size(); ++v) {
    bool fits = true;
    for (size_t i = 0; fits && i < manifest.inputs.size(); ++i) {
      const TensorSpec &spec = manifest.variants[v].inputs[i];
      if (context->inputShapes[i])
        fits = *context->inputShapes[i] == spec.shape;
      else if (context->inputBytes[i])
        fits = context->inputBytes[i] == spec.bytes;
    }
    if (fits)
      matches.push_back(v);
  }
  std::string given;
  for (size_t i = 0; i < manifest.inputs.size(); ++i)
    given += (i ? ", " : "") + manifest.inputs[i].name + " " +
             (context->inputShapes[i] ? shapeText(*context->inputShapes[i])
                                      : std::to_string(context->inputBytes[i]) + " bytes");
  if (matches.empty()) {
    error = "bundle '" + context->bundle->dir() + "': no shape variant takes the inputs (" +
            given + "); the bundle has " + describeVariantShapes(manifest);
    return false;
  }
  if (matches.size() > 1) {
    std::string which;
    for (size_t v : matches)
      which += (which.empty() ? "" : " and ") + std::to_string(v);
    error = "bundle '" + context->bundle->dir() + "': the inputs (" + given +
            ") fit shape variants " + which + " (" + describeVariantShapes(manifest) +
            "): give their shapes with sluice_context_set_input_shape";
    return false;
  }
  variant = matches.front();
  return true;
}

SluiceStatus sluice_context_set_input(SluiceContext *context, size_t index,
                                      const void *data, size_t bytes) {
  return setInput(context, index, data, bytes, /*copy=*/true);
}

SluiceStatus sluice_context_bind_input(SluiceContext *context, size_t index,
                                       const void *data, size_t bytes) {
  return setInput(context, index, data, bytes, /*copy=*/false);
}

SluiceStatus sluice_context_bind_device_input(SluiceContext *context, size_t index,
                                              const void *device_data, size_t bytes) {
  if (!context)
    return nullArgument("sluice_context_bind_device_input");
  return guarded([&] {
    std::string error;
    if (!context->run->bindDeviceInput(index, device_data, bytes, error))
      return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
    size_t inputs = context->bundle->manifest().inputs.size();
    context->inputBytes.resize(inputs, 0);
    context->inputBytes[index] = bytes;
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_set_num_threads(SluiceContext *context,
                                            int32_t num_threads) {
  if (!context)
    return nullArgument("sluice_context_set_num_threads");
  std::string error;
  if (!context->run->setNumThreads(num_threads, error))
    return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
  context->explicitThreads = context->appliedThreads = num_threads;
  return SLUICE_OK;
}

SluiceStatus sluice_context_num_threads(const SluiceContext *context,
                                        int32_t *num_threads) {
  if (!context || !num_threads)
    return nullArgument("sluice_context_num_threads");
  *num_threads = context->threads();
  return SLUICE_OK;
}

SluiceStatus sluice_context_run(SluiceContext *context) {
  if (!context)
    return nullArgument("sluice_context_run");
  return guarded([&] {
    std::string error;
    // The default follows the contexts alive now (set only on a change: a
    // cuda context recaptures its graph when the count changes).
    int32_t threads = context->threads();
    if (threads != context->appliedThreads) {
      if (!context->run->setNumThreads(threads, error))
        return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
      context->appliedThreads = threads;
    }
    size_t variant = 0;
    if (!pickVariant(context, variant, error))
      return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
    if (!context->run->selectVariant(variant, error))
      return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
    context->variant = variant;
    if (!context->run->run(error))
      return fail(SLUICE_ERROR_RUN, error);
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_variant(const SluiceContext *context, size_t *variant) {
  if (!context || !variant)
    return nullArgument("sluice_context_variant");
  *variant = context->variant;
  return SLUICE_OK;
}

SluiceStatus sluice_model_num_variants(const SluiceModel *model, size_t *count) {
  if (!model || !count)
    return nullArgument("sluice_model_num_variants");
  *count = model->variantInputs.size();
  return SLUICE_OK;
}

static SluiceStatus variantTensor(const SluiceModel *model, size_t variant, size_t index,
                                  SluiceTensorInfo *info, bool input) {
  const char *function = input ? "sluice_model_variant_input" : "sluice_model_variant_output";
  if (!model || !info)
    return nullArgument(function);
  const auto &all = input ? model->variantInputs : model->variantOutputs;
  if (variant >= all.size())
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                std::string(function) + ": bundle '" + model->bundle->dir() + "' has " +
                    std::to_string(all.size()) + " shape variants; no variant " +
                    std::to_string(variant));
  if (index >= all[variant].size())
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                std::string(function) + ": bundle '" + model->bundle->dir() + "' has " +
                    std::to_string(all[variant].size()) + (input ? " inputs" : " outputs") +
                    "; no index " + std::to_string(index));
  *info = all[variant][index];
  return SLUICE_OK;
}

SluiceStatus sluice_model_variant_input(const SluiceModel *model, size_t variant, size_t index,
                                        SluiceTensorInfo *info) {
  return variantTensor(model, variant, index, info, /*input=*/true);
}

SluiceStatus sluice_model_variant_output(const SluiceModel *model, size_t variant, size_t index,
                                         SluiceTensorInfo *info) {
  return variantTensor(model, variant, index, info, /*input=*/false);
}

SluiceStatus sluice_context_output(const SluiceContext *context, size_t index,
                                   const void **data, size_t *bytes) {
  if (!context || !data || !bytes)
    return nullArgument("sluice_context_output");
  size_t count = context->run->numOutputs();
  if (index >= count)
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "sluice_context_output: the bundle has " +
                    std::to_string(count) + " outputs; no index " +
                    std::to_string(index));
  *data = context->run->outputData(index);
  *bytes = context->run->outputBytes(index);
  return SLUICE_OK;
}

SluiceStatus sluice_context_output_dims(const SluiceContext *context, size_t index,
                                        const int64_t **dims, int32_t *rank) {
  if (!context || !dims || !rank)
    return nullArgument("sluice_context_output_dims");
  size_t count = context->run->numOutputs();
  if (index >= count)
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "sluice_context_output_dims: the bundle has " +
                    std::to_string(count) + " outputs; no index " +
                    std::to_string(index));
  const std::vector<int64_t> &shape = context->run->outputDims(index);
  *dims = shape.data();
  *rank = (int32_t)shape.size();
  return SLUICE_OK;
}

SluiceStatus sluice_context_enable_trace(SluiceContext *context, int on) {
  if (!context)
    return nullArgument("sluice_context_enable_trace");
  context->run->enableTrace(on != 0);
  return SLUICE_OK;
}

SluiceStatus sluice_context_enable_cuda_graph(SluiceContext *context, int on) {
  if (!context)
    return nullArgument("sluice_context_enable_cuda_graph");
  context->run->enableCudaGraph(on != 0);
  return SLUICE_OK;
}

SluiceStatus sluice_context_cuda_graph(const SluiceContext *context,
                                       int *replayed, const char **reason) {
  if (!context || !replayed || !reason)
    return nullArgument("sluice_context_cuda_graph");
  return guarded([&] {
    *replayed = context->run->lastRunReplayedGraph() ? 1 : 0;
    context->graphStatus = context->run->graphStatus();
    *reason = context->graphStatus.c_str();
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_device(const SluiceContext *context,
                                   const char **device) {
  if (!context || !device)
    return nullArgument("sluice_context_device");
  *device = context->run->deviceName().c_str();
  return SLUICE_OK;
}

SluiceStatus sluice_context_run_split(const SluiceContext *context,
                                      double *host_to_device_ms,
                                      double *compute_ms,
                                      double *device_to_host_ms,
                                      int *available) {
  if (!context || !host_to_device_ms || !compute_ms || !device_to_host_ms ||
      !available)
    return nullArgument("sluice_context_run_split");
  *host_to_device_ms = *compute_ms = *device_to_host_ms = 0;
  *available = context->run->runSplit(*host_to_device_ms, *compute_ms,
                                      *device_to_host_ms)
                   ? 1
                   : 0;
  return SLUICE_OK;
}

SluiceStatus sluice_context_run_time(const SluiceContext *context, double *us) {
  if (!context || !us)
    return nullArgument("sluice_context_run_time");
  *us = context->run->runMicroseconds();
  return SLUICE_OK;
}

SluiceStatus sluice_context_trace(const SluiceContext *context,
                                  const SluiceTraceEvent **events,
                                  size_t *count) {
  if (!context || !events || !count)
    return nullArgument("sluice_context_trace");
  const auto &trace = context->run->trace();
  *events = trace.data();
  *count = trace.size();
  return SLUICE_OK;
}

/*---- Multi-rank bundles ---------------------------------------------------*/

SluiceStatus sluice_launch_info(SluiceLaunchInfo *info) {
  if (!info)
    return nullArgument("sluice_launch_info");
  sluice::runtime::LaunchInfo launch = sluice::runtime::readLaunchEnvironment();
  info->in_job = launch.inJob ? 1 : 0;
  info->rank = launch.rank;
  info->world_size = launch.worldSize;
  info->local_rank = launch.localRank;
  info->source = launch.source;
  return SLUICE_OK;
}

SluiceStatus sluice_bundle_world_size(const char *bundle_dir,
                                      int32_t *world_size) {
  if (!bundle_dir || !world_size)
    return nullArgument("sluice_bundle_world_size");
  return guarded([&] {
    sluice::runtime::Manifest manifest;
    std::string error;
    if (!sluice::runtime::readManifest(bundle_dir, manifest, error))
      return fail(SLUICE_ERROR_BUNDLE, error);
    *world_size = (int32_t)manifest.worldSize;
    return SLUICE_OK;
  });
}

SluiceStatus sluice_comm_init(const void *mpi_comm, SluiceCommunicator **out) {
  if (!out)
    return nullArgument("sluice_comm_init");
  *out = nullptr;
  return guarded([&] {
    std::string error;
    auto group = sluice::runtime::createProcessGroup(mpi_comm, error);
    if (!group)
      return fail(SLUICE_ERROR_COMM, error);
    auto comm = std::make_unique<SluiceCommunicator>();
    comm->group = std::move(group);
    *out = comm.release();
    return SLUICE_OK;
  });
}

SluiceStatus sluice_comm_free(SluiceCommunicator *comm) {
  if (!comm)
    return SLUICE_OK;
  if (int live = comm->contexts.load())
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "sluice_comm_free: " + std::to_string(live) +
                    " context(s) made with this communicator are not freed");
  return guarded([&] {
    std::string error;
    bool clean = comm->group->shutdown(error);
    int32_t rank = comm->group->rank();
    delete comm;
    if (!clean)
      return fail(SLUICE_ERROR_COMM,
                  "rank " + std::to_string(rank) + ": " + error +
                      " (MPI is left as it is: exit the process)");
    return SLUICE_OK;
  });
}

SluiceStatus sluice_comm_rank(const SluiceCommunicator *comm, int32_t *rank,
                              int32_t *world_size) {
  if (!comm || !rank || !world_size)
    return nullArgument("sluice_comm_rank");
  *rank = comm->group->rank();
  *world_size = comm->group->worldSize();
  return SLUICE_OK;
}

SluiceStatus sluice_comm_local_rank(const SluiceCommunicator *comm,
                                    int32_t *local_rank, int32_t *local_size) {
  if (!comm || !local_rank || !local_size)
    return nullArgument("sluice_comm_local_rank");
  *local_rank = comm->group->localRank();
  *local_size = comm->group->localSize();
  return SLUICE_OK;
}

SluiceStatus sluice_comm_broadcast(SluiceCommunicator *comm, void *data,
                                   size_t bytes, int32_t root) {
  if (!comm || (!data && bytes))
    return nullArgument("sluice_comm_broadcast");
  return guarded([&] {
    std::string error;
    if (!comm->group->broadcast(data, bytes, root, error))
      return fail(SLUICE_ERROR_COMM, "rank " +
                                         std::to_string(comm->group->rank()) +
                                         ": " + error);
    return SLUICE_OK;
  });
}

SluiceStatus sluice_comm_agree(SluiceCommunicator *comm, int32_t ok,
                               int32_t *num_failed, int32_t *first_failed) {
  if (!comm || !num_failed || !first_failed)
    return nullArgument("sluice_comm_agree");
  return guarded([&] {
    std::string error;
    unsigned char mine = ok ? 1 : 0;
    std::vector<unsigned char> all(comm->group->worldSize());
    if (!comm->group->allGather(&mine, 1, all.data(), error))
      return fail(SLUICE_ERROR_COMM, "rank " +
                                         std::to_string(comm->group->rank()) +
                                         ": " + error);
    *num_failed = 0;
    *first_failed = -1;
    for (size_t r = 0; r < all.size(); ++r)
      if (!all[r]) {
        if (*first_failed < 0)
          *first_failed = (int32_t)r;
        ++*num_failed;
      }
    return SLUICE_OK;
  });
}

SluiceStatus sluice_model_world_size(const SluiceModel *model,
                                     int32_t *world_size) {
  if (!model || !world_size)
    return nullArgument("sluice_model_world_size");
  *world_size = (int32_t)model->bundle->manifest().worldSize;
  return SLUICE_OK;
}

SluiceStatus sluice_model_rank(const SluiceModel *model, int32_t *rank) {
  if (!model || !rank)
    return nullArgument("sluice_model_rank");
  *rank = model->bundle->rank();
  return SLUICE_OK;
}

SluiceStatus sluice_context_create_rank(const SluiceModel *model,
                                        SluiceCommunicator *comm,
                                        int32_t device, SluiceContext **out) {
  if (!model || !comm || !out)
    return nullArgument("sluice_context_create_rank");
  *out = nullptr;
  return guarded([&] {
    const Bundle &bundle = *model->bundle;
    ProcessGroup &group = *comm->group;
    int64_t world = bundle.manifest().worldSize;
    if (world == 1) // a single-rank bundle calls no collective
      return sluice_context_create_on_device(model, device, out);
    if (world != group.worldSize())
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "bundle '" + bundle.dir() + "' is planned for " +
                      std::to_string(world) + " ranks; this job has " +
                      std::to_string(group.worldSize()));
    if (bundle.rank() != group.rank())
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "bundle '" + bundle.dir() + "' was loaded as rank " +
                      std::to_string(bundle.rank()) + "; this process is rank " +
                      std::to_string(group.rank()) + " of the job");
    if (device < -1)
      return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                  "sluice_context_create_rank: device " +
                      std::to_string(device) +
                      " (give an index >= 0, or -1 for the local rank)");
    auto context = std::make_unique<SluiceContext>();
    context->bundle = model->bundle;
    std::string error;
    if (!threadsFromEnvironment(context->environmentThreads, error))
      return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
    // The host's cores are shared by its ranks.
    context->ranksOnHost = std::max(1, group.localSize());
    if (bundle.manifest().target != "cuda") {
      std::unique_ptr<RankComm> rankComm;
      if (!group.createHostComm(bundle.manifest().collectiveMaxBytes, rankComm,
                                error) ||
          !splitGridAxes(bundle.manifest(), group.rank(), *rankComm, error))
        return fail(SLUICE_ERROR_COMM,
                    "rank " + std::to_string(group.rank()) + ": " + error);
      auto cpu = std::make_unique<CpuContext>(bundle, std::move(rankComm));
      if (!cpu->init(error))
        return fail(SLUICE_ERROR_OUT_OF_MEMORY, error);
      context->run = std::move(cpu);
    } else {
      sluice::runtime::CudaCommRequest request;
      request.group = &group;
      request.factory = sluice::runtime::cudaCommFactory(error);
      if (!request.factory)
        return fail(SLUICE_ERROR_COMM, "bundle '" + bundle.dir() + "': " + error);
      RunContext *cuda = sluice::runtime::createCudaContext(
          bundle, device == -1 ? sluice::runtime::kLocalRankDevice : device,
          &request, error);
      if (!cuda)
        return fail(SLUICE_ERROR_DEVICE, error);
      context->run.reset(cuda);
    }
    context->transport = context->run->commTransport();
    context->comm = comm;
    ++comm->contexts;
    *out = context.release();
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_comm_transport(const SluiceContext *context,
                                           const char **transport) {
  if (!context || !transport)
    return nullArgument("sluice_context_comm_transport");
  *transport = context->transport.c_str();
  return SLUICE_OK;
}

} // extern "C"
