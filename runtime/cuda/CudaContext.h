//===- CudaContext.h - one context's run state for a cuda bundle -*- C++ -*-===//
//
// Built into libsluice_runtime_cuda.so, never into libsluice_runtime.so
// (runtime/core/RunContext.h says why and how the two meet).
//
// A context owns one device's worth of run state: the arena, the inputs and
// outputs in device memory, the weights uploaded once, pinned host staging
// for inputs, outputs and host steps, a stream, and the bundle's device
// state (sluice_model_init). A run copies the inputs from pinned staging to
// the device, enqueues the model, copies the outputs (at their bound) and
// their dims back and synchronizes. Runs of static-shape bundles after the
// first are captured once into a CUDA graph and replayed.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CUDA_CUDACONTEXT_H
#define SLUICE_RUNTIME_CUDA_CUDACONTEXT_H

#include "runtime/core/Bundle.h"
#include "runtime/core/RunContext.h"

#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace sluice::runtime {

class CudaContext final : public RunContext {
public:
  explicit CudaContext(const Bundle &bundle) : bundle(bundle) {}
  ~CudaContext() override;
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  /// Selects `device` (kLocalRankDevice: the rank's local rank modulo the
  /// GPUs), checks that it can run the bundle's code, allocates and uploads
  /// everything, creates the communicator of a multi-rank bundle (`comm`,
  /// null for a single-rank one) and calls the bundle's sluice_model_init.
  /// On failure sets `error`; the destructor frees what was made.
  bool init(int32_t device, const CudaCommRequest *comm, std::string &error);

  /// Inputs are staged in pinned host memory: `copy` copies now; a bound
  /// input (`copy` false) is copied from the caller's memory at every run,
  /// as the run reads it on the cpu target (no device-side zero copy).
  bool setInput(size_t index, const void *data, size_t bytes, bool copy,
                std::string &error) override;
  /// Device memory of this context's GPU: copied device to device into the
  /// model's input at every run (inside a captured graph too; another
  /// pointer than the captured one releases the graph).
  bool bindDeviceInput(size_t index, const void *data, size_t bytes,
                       std::string &error) override;
  bool setNumThreads(int32_t threads, std::string &error) override;
  /// Tracing runs eagerly (no graph), timing each step with CUDA events.
  void enableTrace(bool on) override { tracing = on; }
  void enableCudaGraph(bool on) override;
  bool run(std::string &error) override;

  size_t numOutputs() const override { return hostOutputs.size(); }
  const void *outputData(size_t index) const override {
    return hostOutputs[index];
  }
  size_t outputBytes(size_t index) const override;
  const std::vector<int64_t> &outputDims(size_t index) const override {
    return outputShapes[index];
  }
  double runMicroseconds() const override { return lastRunUs; }
  bool runSplit(double &hostToDeviceMs, double &computeMs,
                double &deviceToHostMs) const override;
  const std::vector<SluiceTraceEvent> &trace() const override {
    return events;
  }
  const std::string &deviceName() const override { return name; }
  bool lastRunReplayedGraph() const override { return lastRunReplayed; }
  std::string graphStatus() const override;
  std::string commTransport() const override {
    return rankComm ? rankComm->transport() : "";
  }

private:
  /// One traced step: indices into eventPool (-1 while open).
  struct Mark {
    int32_t step;
    int begin, end;
  };

  /// False with `error` naming `call` and the CUDA error unless `status` is
  /// cudaSuccess.
  bool checked(cudaError_t status, const char *call, std::string &error) const;
  std::string prefix() const { return "bundle '" + bundle.dir() + "': "; }
  // The steps of init, each false with `error` set if it fails.

  /// Picks the GPU (`deviceIndex`, or the rank's local rank) and checks
  /// that the bundle has code for it; sets device and name.
  bool selectDevice(int32_t deviceIndex, const CudaCommRequest *comm, std::string &error);
  /// Makes the device current and creates the stream and the split's
  /// events.
  bool createStream(std::string &error);
  /// Creates the communicator of a multi-rank bundle's rank, and one per
  /// grid axis.
  bool createComm(const CudaCommRequest &comm, std::string &error);
  /// The arena, the weights (uploaded once), and the inputs and outputs
  /// with their pinned staging.
  bool allocateBuffers(std::string &error);
  /// Every output's dims in one device block, and its pinned template of
  /// the manifest's shapes and the last run's copy.
  bool allocateOutputDims(std::string &error);
  /// The pinned host arena and the mapped expert-load counters, where the
  /// bundle has them.
  bool allocateHostState(std::string &error);
  /// Calls the bundle's sluice_model_init on the stream and waits for it.
  bool initModel(std::string &error);
  /// Enqueues one run: dims and inputs to the device, the model, outputs
  /// and dims back. False with `error` set if any of it fails.
  bool enqueueRun(const SluiceTraceHooks *hooks, std::string &error);
  /// Captures enqueueRun into graphExec; false (graphFailed set, the reason
  /// kept in graphNote) when the bundle's run cannot be captured.
  bool captureGraph();
  void releaseGraph();
  /// Synchronizes after an enqueued run and collects asynchronous failures
  /// (the stream's and the bundle's sluice_model_check).
  bool finishRun(std::string &error);
  /// A multi-rank run's synchronize: polls the stream, so that a rank that
  /// does not answer ends the wait (the communicator aborted, the silent
  /// rank named) instead of hanging it.
  bool waitForRun(std::string &error);
  int nextEvent();
  static void traceBegin(void *user, int32_t step);
  static void traceEnd(void *user, int32_t step);
  bool resolveTrace(std::string &error);

  const Bundle &bundle;
  int32_t device = 0;
  std::string name;
  cudaStream_t stream = nullptr;
  void *modelState = nullptr;
  bool modelInitialized = false;
  /// Multi-rank bundles: the job and this context's communicator.
  ProcessGroup *group = nullptr;
  std::unique_ptr<RankComm> rankComm;

  unsigned char *arena = nullptr;   ///< device
  unsigned char *weights = nullptr; ///< device
  int64_t *deviceDims = nullptr;    ///< every output's dims, concatenated
  std::vector<void *> deviceInputs, deviceOutputs;
  std::vector<unsigned char *> hostInputs, hostOutputs; ///< pinned
  unsigned char *hostArena = nullptr;                   ///< pinned
  int64_t *hostDimsTemplate = nullptr; ///< pinned: the manifest's shapes
  int64_t *hostDims = nullptr;         ///< pinned: the last run's dims
  std::vector<size_t> dimOffsets;
  size_t totalDims = 0;
  std::vector<void *> outputPointers;  ///< deviceOutputs, as the ABI takes
  std::vector<int64_t *> dimPointers;  ///< into deviceDims

  std::vector<const void *> boundInputs; ///< caller memory, copied per run
  /// Caller device memory, copied on the device per run (bindDeviceInput).
  std::vector<const void *> deviceBound;
  std::vector<bool> inputSet;
  std::vector<std::vector<int64_t>> outputShapes;
  int32_t numThreads = 1;

  bool tracing = false;
  bool graphEnabled = true;
  bool graphFailed = false;
  bool staticShapes = true;
  bool lastRunReplayed = false;
  int64_t runsDone = 0;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  std::string graphNote;

  std::vector<cudaEvent_t> eventPool;
  size_t eventsUsed = 0;
  cudaEvent_t startEvent = nullptr;
  /// Recorded by every run (eager or captured): before the input copies,
  /// after them, after the model, after the output copies.
  cudaEvent_t splitEvents[4] = {};
  bool splitValid = false;
  float splitMs[3] = {};
  std::vector<Mark> marks;
  std::string traceError;
  std::vector<SluiceTraceEvent> events;
  double lastRunUs = 0;
};

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CUDA_CUDACONTEXT_H
