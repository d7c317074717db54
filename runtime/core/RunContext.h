//===- RunContext.h - one context's run state, for any target ---*- C++ -*-===//
//
// What the C API's SluiceContext holds: a CpuContext (runtime/cpu, built into
// libsluice_runtime.so) or a CudaContext (runtime/cuda, built into
// libsluice_runtime_cuda.so, which the core dlopens only for a cuda bundle so
// that libsluice_runtime.so itself links no CUDA library).
//
// The two libraries are built together from this tree, so the interface is
// C++: the module exports one extern "C" factory (kCudaModuleFactory) that
// returns a RunContext it allocated; the core deletes it through the virtual
// destructor, whose code lives in the module. kCudaModuleInterface guards
// against a module from another build.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_RUNCONTEXT_H
#define SLUICE_RUNTIME_CORE_RUNCONTEXT_H

#include "runtime/core/Comm.h"

#include "sluice/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::runtime {

class Bundle;
class ProcessGroup;

class RunContext {
public:
  virtual ~RunContext() = default;

  /// Copies (`copy`) or binds input `index`.
  virtual bool setInput(size_t index, const void *data, size_t bytes,
                        bool copy, std::string &error) = 0;
  /// cuda: binds input `index` to device memory of the context's GPU (each
  /// run copies it on the device); elsewhere an error.
  virtual bool bindDeviceInput(size_t index, const void *data, size_t bytes,
                               std::string &error) {
    (void)index, (void)data, (void)bytes;
    error = "a cpu bundle reads its inputs from host memory; device memory is for cuda bundles";
    return false;
  }
  /// Threads of each run's host code (OpenMP).
  virtual bool setNumThreads(int32_t threads, std::string &error) = 0;
  virtual void enableTrace(bool on) = 0;
  /// cuda: capture runs into a CUDA graph (on by default); cpu: no effect.
  virtual void enableCudaGraph(bool on) = 0;
  /// Runs once; on failure sets `error` (the library's message included).
  virtual bool run(std::string &error) = 0;
  /// A bundle of shape variants (manifest "variants", cpu only): the
  /// variant the next runs use, which the C API picks from the inputs'
  /// shapes. A context without variants takes only 0.
  virtual bool selectVariant(size_t variant, std::string &error) {
    if (variant == 0)
      return true;
    error = "this bundle has no shape variant " + std::to_string(variant);
    return false;
  }

  virtual size_t numOutputs() const = 0;
  /// Host memory holding output `index` of the last run.
  virtual const void *outputData(size_t index) const = 0;
  /// Bytes of output `index` as the last run shaped it.
  virtual size_t outputBytes(size_t index) const = 0;
  /// Dims of output `index` as the last run shaped them (data-dependent dims
  /// resolved; before any run, the manifest's bounds).
  virtual const std::vector<int64_t> &outputDims(size_t index) const = 0;
  virtual double runMicroseconds() const = 0;
  virtual const std::vector<SluiceTraceEvent> &trace() const = 0;
  /// What runs the model: "cpu", or the GPU ("NVIDIA H100 ... (sm_90,
  /// device 0)").
  virtual const std::string &deviceName() const = 0;
  /// Whether the last run replayed a captured CUDA graph.
  virtual bool lastRunReplayedGraph() const = 0;
  /// Why it did not ("" when it did).
  virtual std::string graphStatus() const = 0;
  /// A multi-rank context's collective transport ("mpi", "nccl" ...); ""
  /// for a single-rank one.
  virtual std::string commTransport() const = 0;
  /// cuda: the last run's milliseconds copying the inputs to the device,
  /// running the model and copying the outputs back (CUDA events around
  /// each, replayed with a CUDA graph too); false on cpu, where a run is
  /// all compute, or before a run.
  virtual bool runSplit(double &hostToDeviceMs, double &computeMs,
                        double &deviceToHostMs) const {
    (void)hostToDeviceMs, (void)computeMs, (void)deviceToHostMs;
    return false;
  }

  /// The expert-load counters of the manifest's moe ops
  /// (Manifest::expertLoadCounters entries, zero at creation; null when
  /// there is none): runs add to them through SluiceRunArgs.expert_load,
  /// sluice_context_reset_expert_load zeroes them. Host memory the context
  /// owns (a vector on cpu; mapped pinned memory on cuda, which the device
  /// kernels write too), so concurrent contexts never share one.
  int64_t *expertLoad = nullptr;
  size_t expertLoadSize = 0;
};

/// Bumped whenever RunContext, Bundle, Manifest, CudaCommRequest or the
/// comm interfaces (runtime/core/Comm.h) change layout.
/// 3: RunContext::expertLoad, Manifest::moe. 4: RunContext::runSplit.
/// 5: RunContext::selectVariant, Manifest::variants, Bundle::runs_.
/// 6: RunContext::bindDeviceInput.
constexpr int32_t kCudaModuleInterface = 6;

/// A cuda context of a multi-rank job: its process group and the factory
/// of libsluice_comm_cuda.so, which the context calls with its device
/// current. Device kLocalRankDevice: the group's local rank, modulo the
/// GPUs this host has (so that ranks share GPUs when they outnumber them).
struct CudaCommRequest {
  ProcessGroup *group = nullptr;
  CudaCommFactory factory = nullptr;
};
constexpr int32_t kLocalRankDevice = -2;

/// The cuda module's file name, looked up next to libsluice_runtime.so
/// first, then on the default library search path.
constexpr const char *kCudaModuleFile = "libsluice_runtime_cuda.so";

/// The factory the cuda module exports:
///   int32_t sluice_cuda_create_context(int32_t interface,
///       const Bundle *bundle, int32_t device, const CudaCommRequest *comm,
///       RunContext **out, std::string *error);
/// `interface` is the caller's kCudaModuleInterface; `comm` is null for a
/// single-rank bundle. On success returns 0 and sets *out (selected device,
/// arena, weights uploaded, communicator created, the bundle's
/// sluice_model_init called); otherwise returns nonzero with *error set.
constexpr const char *kCudaModuleFactory = "sluice_cuda_create_context";
using CudaContextFactory = int32_t (*)(int32_t interface, const Bundle *bundle,
                                       int32_t device,
                                       const CudaCommRequest *comm,
                                       RunContext **out, std::string *error);

/// Creates the run state of a cuda bundle on `device` through the cuda
/// module (dlopened once, kept loaded); null with `error` set if the module,
/// the driver or a device is missing, or the device cannot run the bundle.
/// `comm`: null for a single-rank bundle.
RunContext *createCudaContext(const Bundle &bundle, int32_t device,
                              const CudaCommRequest *comm, std::string &error);

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_RUNCONTEXT_H
