//===- CpuContext.cpp - run a cpu bundle ----------------------------------===//
//
// One run is one call of the library's sluice_model_run with this context's
// buffers; the library does the kernel scheduling and OpenMP threading.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include "runtime/cpu/CpuContext.h"

#include <cstdint>
#include <cstring>
#include <thread>

namespace sluice::runtime {

bool AlignedBuffer::allocate(size_t bytes) {
  // aligned_alloc wants a multiple of the alignment; a zero-sized buffer
  // still gets a block so that no kernel sees a null pointer.
  if (bytes > SIZE_MAX - 63)
    return false; // the rounding below would wrap to a tiny block
  size_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;
  std::free(data_);
  data_ = static_cast<unsigned char *>(std::aligned_alloc(64, rounded));
  bytes_ = data_ ? bytes : 0;
  if (data_)
    std::memset(data_, 0, rounded);
  return data_ != nullptr;
}

bool CpuContext::init(std::string &error) {
  const Manifest &manifest = bundle.manifest();
  if (!arena.allocate(manifest.arenaBytes)) {
    error = "bundle '" + bundle.dir() + "': cannot allocate the arena (" +
            std::to_string(manifest.arenaBytes) + " bytes)";
    return false;
  }
  loadCounters.assign(manifest.expertLoadCounters, 0);
  expertLoad = loadCounters.empty() ? nullptr : loadCounters.data();
  expertLoadSize = loadCounters.size();
  outputs.resize(manifest.outputs.size());
  outputShapes.clear();
  for (const TensorSpec &spec : manifest.outputs)
    outputShapes.push_back(spec.maxShape);
  for (size_t i = 0; i < outputs.size(); ++i) {
    // Shape variants: each output at the largest variant's size.
    size_t bytes = manifest.outputs[i].bytes;
    for (const VariantSpec &v : manifest.variants)
      bytes = std::max(bytes, v.outputs[i].bytes);
    if (!outputs[i].allocate(bytes)) {
      error = "bundle '" + bundle.dir() + "': cannot allocate output '" +
              manifest.outputs[i].name + "'";
      return false;
    }
  }
  inputCopies.resize(manifest.inputs.size());
  inputs.assign(manifest.inputs.size(), nullptr);
  inputBytes.assign(manifest.inputs.size(), 0);
  unsigned hardware = std::thread::hardware_concurrency();
  numThreads = hardware ? (int32_t)hardware : 1;
  events.reserve(manifest.kernels.size());
  return true;
}

bool CpuContext::setInput(size_t index, const void *data, size_t bytes,
                          bool copy, std::string &error) {
  const Manifest &manifest = bundle.manifest();
  if (index >= manifest.inputs.size()) {
    error = "bundle '" + bundle.dir() + "' has " +
            std::to_string(manifest.inputs.size()) + " inputs; no input " +
            std::to_string(index);
    return false;
  }
  const TensorSpec &spec = manifest.inputs[index];
  // Shape variants: any variant's size (the run checks it against the
  // variant it runs).
  bool fits = bytes == spec.bytes;
  std::string sizes = std::to_string(spec.bytes);
  for (size_t v = 1; v < manifest.variants.size(); ++v) {
    fits |= bytes == manifest.variants[v].inputs[index].bytes;
    sizes += " | " + std::to_string(manifest.variants[v].inputs[index].bytes);
  }
  if (!fits) {
    error = "bundle '" + bundle.dir() + "': input '" + spec.name + "' takes " + sizes +
            " bytes, got " + std::to_string(bytes) +
            (manifest.variants.empty() ? "" : " (its shapes: " + describeVariantShapes(manifest) + ")");
    return false;
  }
  if (!data && bytes) {
    error = "bundle '" + bundle.dir() + "': input '" + spec.name +
            "' given a null pointer";
    return false;
  }
  inputBytes[index] = bytes;
  if (!copy) {
    inputs[index] = data;
    return true;
  }
  AlignedBuffer &buffer = inputCopies[index];
  if ((!buffer.data() || buffer.bytes() < bytes) && !buffer.allocate(bytes)) {
    error = "bundle '" + bundle.dir() + "': cannot allocate input '" +
            spec.name + "'";
    return false;
  }
  if (bytes)
    std::memcpy(buffer.data(), data, bytes);
  inputs[index] = buffer.data();
  return true;
}

bool CpuContext::setNumThreads(int32_t threads, std::string &error) {
  if (threads < 1) {
    error = "bundle '" + bundle.dir() +
            "': thread count must be at least "
            "1, got " +
            std::to_string(threads);
    return false;
  }
  numThreads = threads;
  return true;
}

double CpuContext::elapsedUs() const {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - runStart)
      .count();
}

void CpuContext::traceBegin(void *user, int32_t step) {
  auto *self = static_cast<CpuContext *>(user);
  double now = self->elapsedUs();
  self->events.push_back({step, now, -1}); // end_us < 0: still open
}

void CpuContext::traceEnd(void *user, int32_t step) {
  auto *self = static_cast<CpuContext *>(user);
  double now = self->elapsedUs();
  // Calls may nest (a library call inside a kernel group): close the
  // innermost open event of this step.
  for (auto it = self->events.rbegin(); it != self->events.rend(); ++it)
    if (it->step == step && it->end_us < 0) {
      it->end_us = now;
      return;
    }
}

const std::vector<TensorSpec> &CpuContext::inputSpecs() const {
  const Manifest &manifest = bundle.manifest();
  return manifest.variants.empty() ? manifest.inputs : manifest.variants[variant].inputs;
}

const std::vector<TensorSpec> &CpuContext::outputSpecs() const {
  const Manifest &manifest = bundle.manifest();
  return manifest.variants.empty() ? manifest.outputs : manifest.variants[variant].outputs;
}

bool CpuContext::selectVariant(size_t v, std::string &error) {
  size_t count = std::max<size_t>(1, bundle.manifest().variants.size());
  if (v >= count) {
    error = "bundle '" + bundle.dir() + "' has " + std::to_string(count) +
            " shape variants; no variant " + std::to_string(v);
    return false;
  }
  variant = v;
  return true;
}

bool CpuContext::run(std::string &error) {
  const std::vector<TensorSpec> &inputSpec = inputSpecs(), &outputSpec = outputSpecs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      error = "bundle '" + bundle.dir() + "': input '" + inputSpec[i].name + "' was not set";
      return false;
    }
    if (inputBytes[i] != inputSpec[i].bytes) {
      error = "bundle '" + bundle.dir() + "': input '" + inputSpec[i].name + "' was set with " +
              std::to_string(inputBytes[i]) + " bytes; shape variant " +
              std::to_string(variant) + " (" + shapeText(inputSpec[i].shape) + ") takes " +
              std::to_string(inputSpec[i].bytes);
      return false;
    }
  }
  std::vector<void *> outputPointers(outputs.size());
  std::vector<int64_t *> dimPointers(outputs.size());
  outputShapes.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputPointers[i] = outputs[i].data();
    outputShapes[i] = outputSpec[i].shape;
    dimPointers[i] = outputShapes[i].data();
  }

  SluiceTraceHooks hooks = {this, &CpuContext::traceBegin,
                            &CpuContext::traceEnd};
  char message[1024] = {};
  SluiceRunArgs args = {};
  args.inputs = inputs.data();
  args.outputs = outputPointers.data();
  args.output_dims = dimPointers.data();
  args.arena = arena.data();
  args.weights = bundle.weights();
  args.num_threads = numThreads;
  args.trace = tracing ? &hooks : nullptr;
  args.error = message;
  args.error_size = sizeof message;
  args.comm = comm ? comm->comm() : nullptr;
  args.expert_load = expertLoad;

  events.clear();
  runStart = std::chrono::steady_clock::now();
  int32_t status = bundle.run(args, variant);
  lastRunUs = elapsedUs();
  for (SluiceTraceEvent &event : events)
    if (event.end_us < 0) // a call the library never closed
      event.end_us = event.begin_us;
  if (status != 0) {
    message[sizeof message - 1] = 0;
    error = "bundle '" + bundle.dir() + "': run failed: " +
            (message[0] ? std::string(message)
                        : "sluice_model_run returned " +
                              std::to_string(status) + " without a message");
    return false;
  }
  // A data-dependent extent beyond its bound would mean the library wrote
  // past the output buffer: refuse it rather than hand it out.
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t d = 0; d < outputShapes[i].size(); ++d)
      if (outputShapes[i][d] < 0 || outputShapes[i][d] > outputSpec[i].maxShape[d]) {
        error = "bundle '" + bundle.dir() + "': run gave output '" +
                outputSpec[i].name + "' dim " + std::to_string(d) + " = " +
                std::to_string(outputShapes[i][d]) + ", outside 0.." +
                std::to_string(outputSpec[i].maxShape[d]);
        return false;
      }
  return true;
}

size_t CpuContext::outputBytes(size_t index) const {
  const TensorSpec &spec = outputSpecs()[index];
  if (index >= outputShapes.size())
    return spec.bytes;
  size_t elements = 1;
  for (int64_t d : outputShapes[index])
    elements *= (size_t)std::max<int64_t>(d, 0);
  return elements * spec.elementBytes;
}

} // namespace sluice::runtime
