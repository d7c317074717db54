//===- CApi.cpp - the C API of include/sluice/runtime.h -------------------===//
//
// Thin: checks arguments, forwards to Bundle and CpuContext, and turns their
// error strings into a status plus the thread-local last error. Nothing may
// throw across the C boundary, so allocation failures are caught here.
//
//===----------------------------------------------------------------------===//

#include "sluice/runtime.h"
#include "sluice/version.h"

#include "runtime/core/Bundle.h"
#include "runtime/cpu/CpuContext.h"

#include <new>
#include <string>
#include <vector>

using sluice::runtime::Bundle;
using sluice::runtime::CpuContext;
using sluice::runtime::TensorSpec;

struct SluiceModel {
  std::unique_ptr<Bundle> bundle;
  /// The C views of the manifest, pointing into it.
  std::vector<SluiceTensorInfo> inputs, outputs;
  std::vector<SluiceKernelInfo> kernels;
};

struct SluiceContext {
  explicit SluiceContext(const Bundle &bundle) : cpu(bundle) {}
  CpuContext cpu;
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

SluiceTensorInfo infoOf(const TensorSpec &spec) {
  return {spec.name.c_str(), spec.dtype.c_str(), (int32_t)spec.shape.size(),
          spec.shape.data(), spec.bytes};
}

/// Runs `body`, turning std::bad_alloc into a status.
template <typename Fn> SluiceStatus guarded(Fn body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(SLUICE_ERROR_OUT_OF_MEMORY, "out of memory");
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

} // namespace

extern "C" {

const char *sluice_runtime_version(void) { return SLUICE_VERSION_STRING; }

const char *sluice_last_error(void) { return lastError.c_str(); }

SluiceStatus sluice_model_load(const char *bundle_dir, SluiceModel **out) {
  if (!bundle_dir || !out)
    return nullArgument("sluice_model_load");
  *out = nullptr;
  return guarded([&] {
    std::string error;
    std::unique_ptr<Bundle> bundle = Bundle::load(bundle_dir, error);
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
    *out = model.release();
    return SLUICE_OK;
  });
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
  return modelQuery<size_t>(model, bytes, "sluice_model_weights_bytes",
                            [](const sluice::runtime::Manifest &m) {
                              return (size_t)m.weightsBytes;
                            });
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

SluiceStatus sluice_context_create(const SluiceModel *model,
                                   SluiceContext **out) {
  if (!model || !out)
    return nullArgument("sluice_context_create");
  *out = nullptr;
  return guarded([&] {
    auto context = std::make_unique<SluiceContext>(*model->bundle);
    std::string error;
    if (!context->cpu.init(error))
      return fail(SLUICE_ERROR_OUT_OF_MEMORY, error);
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
    if (!context->cpu.setInput(index, data, bytes, copy, error))
      return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_set_input(SluiceContext *context, size_t index,
                                      const void *data, size_t bytes) {
  return setInput(context, index, data, bytes, /*copy=*/true);
}

SluiceStatus sluice_context_bind_input(SluiceContext *context, size_t index,
                                       const void *data, size_t bytes) {
  return setInput(context, index, data, bytes, /*copy=*/false);
}

SluiceStatus sluice_context_set_num_threads(SluiceContext *context,
                                            int32_t num_threads) {
  if (!context)
    return nullArgument("sluice_context_set_num_threads");
  std::string error;
  if (!context->cpu.setNumThreads(num_threads, error))
    return fail(SLUICE_ERROR_INVALID_ARGUMENT, error);
  return SLUICE_OK;
}

SluiceStatus sluice_context_run(SluiceContext *context) {
  if (!context)
    return nullArgument("sluice_context_run");
  return guarded([&] {
    std::string error;
    if (!context->cpu.run(error))
      return fail(SLUICE_ERROR_RUN, error);
    return SLUICE_OK;
  });
}

SluiceStatus sluice_context_output(const SluiceContext *context, size_t index,
                                   const void **data, size_t *bytes) {
  if (!context || !data || !bytes)
    return nullArgument("sluice_context_output");
  size_t count = context->cpu.numOutputs();
  if (index >= count)
    return fail(SLUICE_ERROR_INVALID_ARGUMENT,
                "sluice_context_output: the bundle has " +
                    std::to_string(count) + " outputs; no index " +
                    std::to_string(index));
  *data = context->cpu.output(index).data();
  *bytes = context->cpu.outputBytes(index);
  return SLUICE_OK;
}

SluiceStatus sluice_context_enable_trace(SluiceContext *context, int on) {
  if (!context)
    return nullArgument("sluice_context_enable_trace");
  context->cpu.enableTrace(on != 0);
  return SLUICE_OK;
}

SluiceStatus sluice_context_run_time(const SluiceContext *context, double *us) {
  if (!context || !us)
    return nullArgument("sluice_context_run_time");
  *us = context->cpu.runMicroseconds();
  return SLUICE_OK;
}

SluiceStatus sluice_context_trace(const SluiceContext *context,
                                  const SluiceTraceEvent **events,
                                  size_t *count) {
  if (!context || !events || !count)
    return nullArgument("sluice_context_trace");
  const auto &trace = context->cpu.trace();
  *events = trace.data();
  *count = trace.size();
  return SLUICE_OK;
}

} // extern "C"
