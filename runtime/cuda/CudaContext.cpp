//===- CudaContext.cpp - run a cuda bundle --------------------------------===//
//
// Every CUDA call is checked; a failure names the call and CUDA's message
// (and, for a failing run, the kernel: the bundle's own message does). The
// whole of a run goes to one stream and only finishRun synchronizes, which
// is what lets a run be captured into a CUDA graph: the first run of a
// context is eager (the bundle may set up lazily: host steps, algorithm
// choices), the second is captured and every later one replays the graph.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaContext.h"
#include "runtime/core/GpuArch.h"
#include "runtime/core/GridAxes.h"

#include "sluice/version.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

namespace sluice::runtime {

namespace {

/// Device blocks are never empty, so that no kernel sees a null pointer;
/// cudaMalloc aligns to 256 bytes, beyond the ABI's 64.
size_t deviceBytes(size_t bytes) { return std::max<size_t>(bytes, 256); }

std::string cudaMessage(cudaError_t status) {
  return std::string(cudaGetErrorString(status)) + " (" +
         cudaGetErrorName(status) + ")";
}

/// Gives the calling thread its current device back at the end of a scope.
/// The current device is the host program's per-thread state: a context
/// makes its own device current for its calls (a context may run on any
/// thread), and a host thread that works on GPU 0 must not find GPU 1
/// current after running a context there. A thread that never chose one
/// gets device 0 back, CUDA's default.
class CallerDevice {
public:
  CallerDevice() {
    if (cudaGetDevice(&saved) != cudaSuccess) {
      saved = -1;
      (void)cudaGetLastError();
    }
  }
  ~CallerDevice() {
    int now = -1;
    if (saved >= 0 && cudaGetDevice(&now) == cudaSuccess && now != saved)
      (void)cudaSetDevice(saved);
  }
  CallerDevice(const CallerDevice &) = delete;
  CallerDevice &operator=(const CallerDevice &) = delete;

private:
  int saved = -1;
};

} // namespace

bool CudaContext::checked(cudaError_t status, const char *call,
                          std::string &error) const {
  if (status == cudaSuccess)
    return true;
  error = prefix() + call + " failed: " + cudaMessage(status);
  return false;
}

bool CudaContext::selectDevice(int32_t deviceIndex, const CudaCommRequest *comm,
                               std::string &error) {
  const Manifest &manifest = bundle.manifest();
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    error = "bundle '" + bundle.dir() +
            "' targets cuda: no CUDA device (cudaGetDeviceCount: " +
            (status != cudaSuccess ? cudaMessage(status)
                                   : std::string("0 devices")) +
            ")";
    // Leave no error behind for another user of this thread's runtime.
    (void)cudaGetLastError();
    return false;
  }
  // A rank's GPU: its local rank, wrapping around when ranks outnumber
  // GPUs (then the communicator stages through the host, as NCCL refuses
  // two ranks on one GPU).
  if (deviceIndex == kLocalRankDevice && comm)
    deviceIndex = comm->group->localRank() % count;
  if (deviceIndex < 0 || deviceIndex >= count) {
    error = "bundle '" + bundle.dir() + "' targets cuda: there is no CUDA "
            "device " + std::to_string(deviceIndex) + " (this machine has " +
            std::to_string(count) + ": 0.." + std::to_string(count - 1) + ")";
    return false;
  }
  device = deviceIndex;
  cudaDeviceProp properties;
  if (!checked(cudaGetDeviceProperties(&properties, device),
               "cudaGetDeviceProperties", error))
    return false;
  std::string gpu(properties.name,
                  strnlen(properties.name, sizeof properties.name));
  if (pickGpuArch(manifest.gpuArchitectures, properties.major,
                  properties.minor) < 0) {
    error = gpuArchMismatch(bundle.dir(), gpu, properties.major,
                            properties.minor, manifest.gpuArchitectures);
    return false;
  }
  name = gpu + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ", device " +
         std::to_string(device) + ")";
  return true;
}

bool CudaContext::createStream(std::string &error) {
  if (!checked(cudaSetDevice(device), "cudaSetDevice", error) ||
      !checked(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags", error))
    return false;
  // The split's events exist before any run: a capture may not create them.
  for (cudaEvent_t &event : splitEvents)
    if (!checked(cudaEventCreate(&event), "cudaEventCreate", error))
      return false;
  return true;
}

bool CudaContext::createComm(const CudaCommRequest &comm, std::string &error) {
  const Manifest &manifest = bundle.manifest();
  group = comm.group;
  RankComm *created = nullptr;
  std::string why;
  int failed =
      comm.factory(kCommInterface, group, device, manifest.collectiveMaxBytes, &created, &why);
  if (failed != 0 || !created) {
    error = prefix() + "rank " + std::to_string(group->rank()) +
            ": cannot create the communicator on " + name + ": " +
            (why.empty() ? std::string("no message") : why);
    return false;
  }
  rankComm.reset(created);
  // Tensor parallelism inside pipeline stages: a communicator per axis.
  if (!splitGridAxes(manifest, group->rank(), *rankComm, why)) {
    error = prefix() + "rank " + std::to_string(group->rank()) + ": " + why;
    return false;
  }
  return true;
}

bool CudaContext::allocateBuffers(std::string &error) {
  const Manifest &manifest = bundle.manifest();
  if (!checked(cudaMalloc(reinterpret_cast<void **>(&arena),
                          deviceBytes(manifest.arenaBytes)),
               "cudaMalloc (arena)", error) ||
      !checked(cudaMalloc(reinterpret_cast<void **>(&weights),
                          deviceBytes(bundle.weightsBytes())),
               "cudaMalloc (weights)", error))
    return false;
  if (bundle.weightsBytes() &&
      !checked(cudaMemcpy(weights, bundle.weights(), bundle.weightsBytes(),
                          cudaMemcpyHostToDevice),
               "cudaMemcpy (weights upload)", error))
    return false;
  deviceInputs.assign(manifest.inputs.size(), nullptr);
  hostInputs.assign(manifest.inputs.size(), nullptr);
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    size_t bytes = deviceBytes(manifest.inputs[i].bytes);
    if (!checked(cudaMalloc(&deviceInputs[i], bytes), "cudaMalloc (input)",
                 error) ||
        !checked(cudaHostAlloc(reinterpret_cast<void **>(&hostInputs[i]), bytes,
                               cudaHostAllocDefault),
                 "cudaHostAlloc (input staging)", error))
      return false;
  }
  deviceOutputs.assign(manifest.outputs.size(), nullptr);
  hostOutputs.assign(manifest.outputs.size(), nullptr);
  for (size_t i = 0; i < manifest.outputs.size(); ++i) {
    size_t bytes = deviceBytes(manifest.outputs[i].bytes);
    if (!checked(cudaMalloc(&deviceOutputs[i], bytes), "cudaMalloc (output)",
                 error) ||
        !checked(cudaMemset(deviceOutputs[i], 0, bytes), "cudaMemset (output)",
                 error) ||
        !checked(cudaHostAlloc(reinterpret_cast<void **>(&hostOutputs[i]),
                               bytes, cudaHostAllocDefault),
                 "cudaHostAlloc (output staging)", error))
      return false;
    std::memset(hostOutputs[i], 0, bytes);
  }
  return true;
}

bool CudaContext::allocateOutputDims(std::string &error) {
  // The ABI fills the dims with the manifest's shape before each run and the
  // bundle writes the data-dependent ones; on cuda that is device memory,
  // reset from a pinned template as part of every run.
  const Manifest &manifest = bundle.manifest();
  totalDims = 0;
  for (const TensorSpec &spec : manifest.outputs) {
    dimOffsets.push_back(totalDims);
    totalDims += spec.shape.size();
    for (int64_t dim : spec.shape)
      staticShapes &= dim >= 0;
  }
  size_t dimBytes = std::max<size_t>(totalDims, 1) * sizeof(int64_t);
  if (!checked(cudaMalloc(reinterpret_cast<void **>(&deviceDims), dimBytes),
               "cudaMalloc (output dims)", error) ||
      !checked(cudaHostAlloc(reinterpret_cast<void **>(&hostDimsTemplate),
                             dimBytes, cudaHostAllocDefault),
               "cudaHostAlloc (output dims)", error) ||
      !checked(cudaHostAlloc(reinterpret_cast<void **>(&hostDims), dimBytes,
                             cudaHostAllocDefault),
               "cudaHostAlloc (output dims)", error))
    return false;
  for (size_t i = 0; i < manifest.outputs.size(); ++i) {
    const TensorSpec &spec = manifest.outputs[i];
    std::copy(spec.shape.begin(), spec.shape.end(),
              hostDimsTemplate + dimOffsets[i]);
    outputShapes.push_back(spec.maxShape);
    outputPointers.push_back(deviceOutputs[i]);
    dimPointers.push_back(deviceDims + dimOffsets[i]);
  }
  return true;
}

bool CudaContext::allocateHostState(std::string &error) {
  const Manifest &manifest = bundle.manifest();
  if (manifest.hostArenaBytes &&
      !checked(cudaHostAlloc(reinterpret_cast<void **>(&hostArena),
                             manifest.hostArenaBytes, cudaHostAllocDefault),
               "cudaHostAlloc (host arena)", error))
    return false;
  // The expert-load counters: mapped pinned memory, which the device MoE
  // kernel adds to (one thread, in stream order; with unified addressing
  // the host pointer is the device's) and host steps running the cpu
  // kernel too. Read after the caller's synchronize.
  if (manifest.expertLoadCounters) {
    size_t bytes = manifest.expertLoadCounters * sizeof(int64_t);
    if (!checked(cudaHostAlloc(reinterpret_cast<void **>(&expertLoad), bytes,
                               cudaHostAllocMapped),
                 "cudaHostAlloc (expert-load counters)", error))
      return false;
    std::memset(expertLoad, 0, bytes);
    expertLoadSize = manifest.expertLoadCounters;
  }
  return true;
}

bool CudaContext::initModel(std::string &error) {
  char message[1024] = {};
  if (bundle.initDevice(&modelState, stream, message, sizeof message) != 0) {
    message[sizeof message - 1] = 0;
    error = prefix() + "sluice_model_init failed: " +
            (message[0] ? std::string(message) : std::string("no message"));
    return false;
  }
  modelInitialized = true;
  return checked(cudaStreamSynchronize(stream),
                 "cudaStreamSynchronize (after sluice_model_init)", error);
}

bool CudaContext::init(int32_t deviceIndex, const CudaCommRequest *comm, std::string &error) {
  const Manifest &manifest = bundle.manifest();
  if (!selectDevice(deviceIndex, comm, error) || !createStream(error))
    return false;
  // The communicator next (collective over the job), with the device
  // current; its staging is allocated now, never during a run.
  if (comm && !createComm(*comm, error))
    return false;
  // Device memory: the arena, the weights (uploaded once), inputs, outputs
  // and every output's dims in one block.
  if (!allocateBuffers(error) || !allocateOutputDims(error) || !allocateHostState(error))
    return false;

  boundInputs.assign(manifest.inputs.size(), nullptr);
  deviceBound.assign(manifest.inputs.size(), nullptr);
  inputSet.assign(manifest.inputs.size(), false);
  unsigned hardware = std::thread::hardware_concurrency();
  numThreads = hardware ? (int32_t)hardware : 1;
  events.reserve(manifest.kernels.size());

  // The bundle's device state: library handles, workspaces.
  return initModel(error);
}

CudaContext::~CudaContext() {
  // Teardown cannot report; it frees what exists, in dependency order. The
  // context may be freed on another thread than the one that ran it.
  if (name.empty() && !stream)
    return;
  CallerDevice keep;
  (void)cudaSetDevice(device);
  if (stream)
    (void)cudaStreamSynchronize(stream);
  if (modelInitialized)
    bundle.releaseDevice(modelState);
  releaseGraph();
  rankComm.reset();
  for (cudaEvent_t event : eventPool)
    (void)cudaEventDestroy(event);
  if (startEvent)
    (void)cudaEventDestroy(startEvent);
  for (cudaEvent_t event : splitEvents)
    if (event)
      (void)cudaEventDestroy(event);
  for (void *p : deviceInputs)
    (void)cudaFree(p);
  for (void *p : deviceOutputs)
    (void)cudaFree(p);
  for (unsigned char *p : hostInputs)
    (void)cudaFreeHost(p);
  for (unsigned char *p : hostOutputs)
    (void)cudaFreeHost(p);
  (void)cudaFree(arena);
  (void)cudaFree(weights);
  (void)cudaFree(deviceDims);
  (void)cudaFreeHost(hostDimsTemplate);
  (void)cudaFreeHost(hostDims);
  (void)cudaFreeHost(hostArena);
  (void)cudaFreeHost(expertLoad);
  if (stream)
    (void)cudaStreamDestroy(stream);
  (void)cudaGetLastError();
}

bool CudaContext::setInput(size_t index, const void *data, size_t bytes,
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
    error = prefix() + "input '" + spec.name + "' takes " +
            std::to_string(spec.bytes) + " bytes, got " + std::to_string(bytes);
    return false;
  }
  if (!data && bytes) {
    error = prefix() + "input '" + spec.name + "' given a null pointer";
    return false;
  }
  if (deviceBound[index]) {
    deviceBound[index] = nullptr; // the graph copied from device memory
    releaseGraph();
  }
  if (copy) {
    if (bytes)
      std::memcpy(hostInputs[index], data, bytes);
    boundInputs[index] = nullptr;
  } else {
    boundInputs[index] = data;
  }
  inputSet[index] = true;
  return true;
}

bool CudaContext::bindDeviceInput(size_t index, const void *data, size_t bytes,
                                  std::string &error) {
  const Manifest &manifest = bundle.manifest();
  if (index >= manifest.inputs.size()) {
    error = "bundle '" + bundle.dir() + "' has " + std::to_string(manifest.inputs.size()) +
            " inputs; no input " + std::to_string(index);
    return false;
  }
  const TensorSpec &spec = manifest.inputs[index];
  if (bytes != spec.bytes) {
    error = prefix() + "input '" + spec.name + "' takes " + std::to_string(spec.bytes) +
            " bytes, got " + std::to_string(bytes);
    return false;
  }
  if (!data && bytes) {
    error = prefix() + "input '" + spec.name + "' given a null pointer";
    return false;
  }
  if (bytes) {
    cudaPointerAttributes attributes = {};
    if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
      (void)cudaGetLastError();
      attributes.type = cudaMemoryTypeUnregistered;
    }
    bool onDevice = attributes.type == cudaMemoryTypeDevice ||
                    attributes.type == cudaMemoryTypeManaged;
    if (!onDevice || attributes.device != device) {
      error = prefix() + "input '" + spec.name + "' bound to " +
              (onDevice ? "memory of device " + std::to_string(attributes.device)
                        : std::string("host memory")) +
              "; this context runs on device " + std::to_string(device) +
              " (bind host memory with sluice_context_bind_input)";
      return false;
    }
  }
  if (deviceBound[index] != data)
    releaseGraph(); // a captured graph copies from the old pointer
  deviceBound[index] = data;
  boundInputs[index] = nullptr;
  inputSet[index] = true;
  return true;
}

bool CudaContext::setNumThreads(int32_t threads, std::string &error) {
  if (threads < 1) {
    error = prefix() + "thread count must be at least 1, got " +
            std::to_string(threads);
    return false;
  }
  if (threads != numThreads)
    releaseGraph(); // a captured run carries the old count
  numThreads = threads;
  return true;
}

void CudaContext::enableCudaGraph(bool on) {
  graphEnabled = on;
  graphFailed = false; // turning it on again retries a failed capture
  graphNote.clear();
  releaseGraph();
}

std::string CudaContext::graphStatus() const {
  if (lastRunReplayed)
    return "";
  if (!graphEnabled)
    return "turned off";
  if (graphFailed)
    return "capture failed: " + graphNote;
  if (!staticShapes)
    return "an output has a data-dependent shape";
  if (tracing)
    return "tracing runs eagerly";
  return "the first run is eager; later ones are captured";
}

void CudaContext::releaseGraph() {
  if (graphExec)
    (void)cudaGraphExecDestroy(graphExec);
  if (graph)
    (void)cudaGraphDestroy(graph);
  graphExec = nullptr;
  graph = nullptr;
}

bool CudaContext::enqueueRun(const SluiceTraceHooks *hooks,
                             std::string &error) {
  const Manifest &manifest = bundle.manifest();
  // The split's marks: external, so that a capture records them as graph
  // nodes and every replay times its copies and its model too.
  auto mark = [&](int index) {
    return checked(cudaEventRecordWithFlags(splitEvents[index], stream,
                                            cudaEventRecordExternal),
                   "cudaEventRecordWithFlags", error);
  };
  if (!mark(0))
    return false;
  if (totalDims &&
      !checked(cudaMemcpyAsync(deviceDims, hostDimsTemplate,
                               totalDims * sizeof(int64_t),
                               cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (output dims to the device)", error))
    return false;
  for (size_t i = 0; i < deviceInputs.size(); ++i)
    if (manifest.inputs[i].bytes &&
        !(deviceBound[i]
              ? checked(cudaMemcpyAsync(deviceInputs[i], deviceBound[i], manifest.inputs[i].bytes,
                                        cudaMemcpyDeviceToDevice, stream),
                        "cudaMemcpyAsync (bound device input)", error)
              : checked(cudaMemcpyAsync(deviceInputs[i], hostInputs[i], manifest.inputs[i].bytes,
                                        cudaMemcpyHostToDevice, stream),
                        "cudaMemcpyAsync (input to the device)", error)))
      return false;
  if (!mark(1))
    return false;

  char message[1024] = {};
  SluiceRunArgs args = {};
  args.inputs = deviceInputs.data();
  args.outputs = outputPointers.data();
  args.output_dims = dimPointers.data();
  args.arena = arena;
  args.weights = weights;
  args.num_threads = numThreads;
  args.trace = hooks;
  args.error = message;
  args.error_size = sizeof message;
  args.stream = stream;
  args.device_state = modelState;
  args.host_arena = hostArena;
  args.host_weights = bundle.weights();
  args.expert_load = expertLoad;
  if (rankComm) {
    rankComm->beginRun();
    args.comm = rankComm->comm();
  }
  int32_t status = bundle.run(args);
  if (status != 0) {
    message[sizeof message - 1] = 0;
    error = prefix() + "run failed: " +
            (message[0] ? std::string(message)
                        : "sluice_model_run returned " +
                              std::to_string(status) + " without a message");
    return false;
  }
  if (!mark(2))
    return false;

  for (size_t i = 0; i < deviceOutputs.size(); ++i)
    if (manifest.outputs[i].bytes &&
        !checked(cudaMemcpyAsync(hostOutputs[i], deviceOutputs[i],
                                 manifest.outputs[i].bytes,
                                 cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync (output to the host)", error))
      return false;
  if (totalDims &&
      !checked(cudaMemcpyAsync(hostDims, deviceDims,
                               totalDims * sizeof(int64_t),
                               cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync (output dims to the host)", error))
    return false;
  return mark(3);
}

bool CudaContext::runSplit(double &hostToDeviceMs, double &computeMs,
                           double &deviceToHostMs) const {
  if (!splitValid)
    return false;
  hostToDeviceMs = splitMs[0];
  computeMs = splitMs[1];
  deviceToHostMs = splitMs[2];
  return true;
}

bool CudaContext::captureGraph() {
  std::string why;
  cudaError_t status =
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (status != cudaSuccess) {
    why = "cudaStreamBeginCapture failed: " + cudaMessage(status);
  } else {
    bool enqueued = enqueueRun(/*hooks=*/nullptr, why);
    // End the capture whatever happened, so the stream is usable again.
    cudaGraph_t captured = nullptr;
    status = cudaStreamEndCapture(stream, &captured);
    if (!enqueued) {
      if (captured)
        (void)cudaGraphDestroy(captured);
    } else if (status != cudaSuccess || !captured) {
      why = "cudaStreamEndCapture failed: " + cudaMessage(status);
      if (captured)
        (void)cudaGraphDestroy(captured);
    } else {
      graph = captured;
      status = cudaGraphInstantiate(&graphExec, graph, 0);
      if (status != cudaSuccess) {
        why = "cudaGraphInstantiate failed: " + cudaMessage(status);
        graphExec = nullptr;
        releaseGraph();
      }
    }
  }
  if (graphExec)
    return true;
  // Not capturable (a call the bundle makes is not allowed in a capture):
  // run eagerly from now on. Capture errors are not sticky; clear the one
  // the runtime remembers so the eager run starts clean.
  (void)cudaGetLastError();
  graphFailed = true;
  graphNote = why;
  return false;
}

bool CudaContext::waitForRun(std::string &error) {
  using Clock = std::chrono::steady_clock;
  // A run's collectives each wait at most the timeout for a peer
  // (host-staged: then the rest are skipped); the whole run gets twice that
  // before it counts as hung.
  double timeout = group->timeoutSeconds();
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(2 * timeout));
  cudaError_t status;
  while ((status = cudaStreamQuery(stream)) == cudaErrorNotReady) {
    if (Clock::now() > deadline) {
      // NCCL's kernels wait on the device for the missing rank: abort the
      // communicator so that they end, then ask every rank over MPI who is
      // not there (the live ones are here too, after their own timeout).
      rankComm->abort();
      std::string who;
      unsigned char here = 1;
      std::vector<unsigned char> arrived(group->worldSize());
      if (group->allGather(&here, 1, arrived.data(), who))
        who = "every rank answered a probe";
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g s", 2 * timeout);
      error = prefix() + "run failed: rank " + std::to_string(group->rank()) +
              ": the run did not finish within " + limit + " (" +
              rankComm->transport() + " communicator aborted): " + who;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  std::string failure = rankComm->asyncError();
  if (!failure.empty()) {
    error = prefix() + "run failed: " + failure;
    return false;
  }
  return checked(status, "run failed: cudaStreamQuery", error);
}

bool CudaContext::finishRun(std::string &error) {
  if (rankComm && !waitForRun(error)) {
    (void)cudaGetLastError();
    return false;
  }
  cudaError_t status = cudaStreamSynchronize(stream);
  char message[1024] = {};
  int32_t failed = bundle.checkDevice(modelState, message, sizeof message);
  message[sizeof message - 1] = 0;
  if (status != cudaSuccess) {
    error = prefix() + "run failed: cudaStreamSynchronize: " +
            cudaMessage(status) +
            (failed && message[0] ? std::string("; ") + message
                                  : std::string());
    return false;
  }
  if (failed) {
    error = prefix() + "run failed: " +
            (message[0] ? std::string(message)
                        : std::string("sluice_model_check reported a failure "
                                      "without a message"));
    return false;
  }
  return true;
}

int CudaContext::nextEvent() {
  if (eventsUsed == eventPool.size()) {
    cudaEvent_t event = nullptr;
    cudaError_t status = cudaEventCreate(&event);
    if (status != cudaSuccess) {
      if (traceError.empty())
        traceError = "cudaEventCreate failed: " + cudaMessage(status);
      return -1;
    }
    eventPool.push_back(event);
  }
  int index = (int)eventsUsed++;
  cudaError_t status = cudaEventRecord(eventPool[index], stream);
  if (status != cudaSuccess) {
    if (traceError.empty())
      traceError = "cudaEventRecord failed: " + cudaMessage(status);
    return -1;
  }
  return index;
}

void CudaContext::traceBegin(void *user, int32_t step) {
  auto *self = static_cast<CudaContext *>(user);
  self->marks.push_back({step, self->nextEvent(), -1});
}

void CudaContext::traceEnd(void *user, int32_t step) {
  auto *self = static_cast<CudaContext *>(user);
  // Calls may nest: close the innermost open mark of this step.
  for (auto it = self->marks.rbegin(); it != self->marks.rend(); ++it)
    if (it->step == step && it->end < 0) {
      it->end = self->nextEvent();
      if (it->end < 0) // keep it closed even when recording failed
        it->end = it->begin;
      return;
    }
}

bool CudaContext::resolveTrace(std::string &error) {
  if (!traceError.empty()) {
    error = prefix() + "tracing: " + traceError;
    return false;
  }
  auto at = [&](int index, double &us) {
    float ms = 0;
    if (index < 0)
      return true;
    if (!checked(cudaEventElapsedTime(&ms, startEvent, eventPool[index]),
                 "cudaEventElapsedTime", error))
      return false;
    us = ms * 1000.0;
    return true;
  };
  for (const Mark &mark : marks) {
    SluiceTraceEvent event = {mark.step, 0, 0};
    if (!at(mark.begin, event.begin_us))
      return false;
    event.end_us = event.begin_us;
    if (mark.end >= 0 && !at(mark.end, event.end_us))
      return false;
    events.push_back(event);
  }
  return true;
}

bool CudaContext::run(std::string &error) {
  const Manifest &manifest = bundle.manifest();
  for (size_t i = 0; i < inputSet.size(); ++i)
    if (!inputSet[i]) {
      error = prefix() + "input '" + manifest.inputs[i].name +
              "' was not set";
      return false;
    }
  // The current device is per thread; a context may move between threads.
  CallerDevice keep;
  if (!checked(cudaSetDevice(device), "cudaSetDevice", error))
    return false;
  for (size_t i = 0; i < boundInputs.size(); ++i)
    if (boundInputs[i] && manifest.inputs[i].bytes)
      std::memcpy(hostInputs[i], boundInputs[i], manifest.inputs[i].bytes);

  events.clear();
  marks.clear();
  eventsUsed = 0;
  traceError.clear();
  splitValid = false;
  auto start = std::chrono::steady_clock::now();
  bool useGraph = graphEnabled && !graphFailed && !tracing && staticShapes &&
                  runsDone > 0;
  if (useGraph && !graphExec)
    useGraph = captureGraph();
  lastRunReplayed = false;
  if (useGraph) {
    if (!checked(cudaGraphLaunch(graphExec, stream), "cudaGraphLaunch", error))
      return false;
  } else {
    SluiceTraceHooks hooks = {this, &CudaContext::traceBegin,
                              &CudaContext::traceEnd};
    if (tracing) {
      if (!startEvent &&
          !checked(cudaEventCreate(&startEvent), "cudaEventCreate", error))
        return false;
      if (!checked(cudaEventRecord(startEvent, stream), "cudaEventRecord",
                   error))
        return false;
    }
    if (!enqueueRun(tracing ? &hooks : nullptr, error)) {
      // Let what was enqueued drain before the caller reuses the buffers.
      (void)cudaStreamSynchronize(stream);
      return false;
    }
  }
  if (!finishRun(error))
    return false;
  // The run has finished, so its events have too: reading them waits on
  // nothing. A split that cannot be read is absent, not a failed run.
  splitValid = true;
  for (int i = 0; i < 3 && splitValid; ++i)
    splitValid = cudaEventElapsedTime(&splitMs[i], splitEvents[i],
                                      splitEvents[i + 1]) == cudaSuccess;
  if (!splitValid)
    (void)cudaGetLastError(); // not this run's error
  lastRunReplayed = useGraph;
  lastRunUs = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  ++runsDone;
  if (tracing && !resolveTrace(error))
    return false;

  // A data-dependent extent beyond its bound would mean the library wrote
  // past the output buffer: refuse it rather than hand it out.
  for (size_t i = 0; i < outputShapes.size(); ++i) {
    const TensorSpec &spec = manifest.outputs[i];
    std::vector<int64_t> &shape = outputShapes[i];
    shape.assign(hostDims + dimOffsets[i],
                 hostDims + dimOffsets[i] + spec.shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0 || shape[d] > spec.maxShape[d]) {
        error = prefix() + "run gave output '" + spec.name + "' dim " +
                std::to_string(d) + " = " + std::to_string(shape[d]) +
                ", outside 0.." + std::to_string(spec.maxShape[d]);
        return false;
      }
  }
  return true;
}

size_t CudaContext::outputBytes(size_t index) const {
  const TensorSpec &spec = bundle.manifest().outputs[index];
  size_t elements = 1;
  for (int64_t d : outputShapes[index])
    elements *= (size_t)std::max<int64_t>(d, 0);
  return elements * spec.elementBytes;
}

} // namespace sluice::runtime

using sluice::runtime::Bundle;
using sluice::runtime::CudaContext;
using sluice::runtime::RunContext;

/// The module's one export (runtime/core/RunContext.h).
extern "C" __attribute__((visibility("default"))) int32_t
sluice_cuda_create_context(int32_t interface, const Bundle *bundle,
                           int32_t device,
                           const sluice::runtime::CudaCommRequest *comm,
                           RunContext **out, std::string *error) {
  if (interface != sluice::runtime::kCudaModuleInterface) {
    *error = "libsluice_runtime_cuda.so has module interface " +
             std::to_string(sluice::runtime::kCudaModuleInterface) +
             ", the runtime " + std::to_string(interface) +
             " (install the two libraries of one build)";
    return 1;
  }
  try {
    sluice::runtime::CallerDevice keep; // init (and the delete of a failed one) select theirs
    auto *context = new CudaContext(*bundle);
    if (!context->init(device, comm, *error)) {
      delete context;
      return 1;
    }
    *out = context;
    return 0;
  } catch (const std::bad_alloc &) {
    *error = "bundle '" + bundle->dir() + "': out of memory";
    return 1;
  }
}
