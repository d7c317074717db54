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
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].allocate(manifest.outputs[i].bytes)) {
      error = "bundle '" + bundle.dir() + "': cannot allocate output '" +
              manifest.outputs[i].name + "'";
      return false;
    }
  inputCopies.resize(manifest.inputs.size());
  inputs.assign(manifest.inputs.size(), nullptr);
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
  if (bytes != spec.bytes) {
    error = "bundle '" + bundle.dir() + "': input '" + spec.name + "' takes " +
            std::to_string(spec.bytes) + " bytes, got " + std::to_string(bytes);
    return false;
  }
  if (!data && bytes) {
    error = "bundle '" + bundle.dir() + "': input '" + spec.name +
            "' given a null pointer";
    return false;
  }
  if (!copy) {
    inputs[index] = data;
    return true;
  }
  AlignedBuffer &buffer = inputCopies[index];
  if (!buffer.data() && !buffer.allocate(bytes)) {
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

bool CpuContext::run(std::string &error) {
  const Manifest &manifest = bundle.manifest();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) {
      error = "bundle '" + bundle.dir() + "': input '" +
              manifest.inputs[i].name + "' was not set";
      return false;
    }
  std::vector<void *> outputPointers(outputs.size());
  std::vector<int64_t *> dimPointers(outputs.size());
  outputShapes.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputPointers[i] = outputs[i].data();
    outputShapes[i] = manifest.outputs[i].shape;
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
  int32_t status = bundle.run(args);
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
      if (outputShapes[i][d] < 0 || outputShapes[i][d] > manifest.outputs[i].maxShape[d]) {
        error = "bundle '" + bundle.dir() + "': run gave output '" +
                manifest.outputs[i].name + "' dim " + std::to_string(d) + " = " +
                std::to_string(outputShapes[i][d]) + ", outside 0.." +
                std::to_string(manifest.outputs[i].maxShape[d]);
        return false;
      }
  return true;
}

size_t CpuContext::outputBytes(size_t index) const {
  const TensorSpec &spec = bundle.manifest().outputs[index];
  if (index >= outputShapes.size())
    return spec.bytes;
  size_t elements = 1;
  for (int64_t d : outputShapes[index])
    elements *= (size_t)std::max<int64_t>(d, 0);
  return elements * spec.elementBytes;
}

} // namespace sluice::runtime
