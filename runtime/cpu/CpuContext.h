//===- CpuContext.h - one thread's run state for a cpu bundle ---*- C++ -*-===//
//
// A context owns everything a run writes (arena, outputs, trace) and the
// inputs it copied, so contexts on different threads can run one shared
// Bundle at once without locks.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CPU_CPUCONTEXT_H
#define SLUICE_RUNTIME_CPU_CPUCONTEXT_H

#include "runtime/core/Bundle.h"
#include "runtime/core/Comm.h"
#include "runtime/core/RunContext.h"

#include "sluice/runtime.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace sluice::runtime {

/// A 64-byte-aligned heap block (the kernels' vector loads assume it).
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer &&other) noexcept
      : data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;

  /// Allocates `bytes` (rounded up to 64, at least 64); false when out of
  /// memory.
  bool allocate(size_t bytes);
  unsigned char *data() const { return data_; }
  size_t bytes() const { return bytes_; }

private:
  unsigned char *data_ = nullptr;
  size_t bytes_ = 0;
};

class CpuContext final : public RunContext {
public:
  /// `comm`: the communicator of a multi-rank bundle's rank (null for a
  /// single-rank bundle).
  CpuContext(const Bundle &bundle, std::unique_ptr<RankComm> comm = nullptr)
      : bundle(bundle), comm(std::move(comm)) {}

  /// Allocates the arena and the outputs.
  bool init(std::string &error);
  bool setInput(size_t index, const void *data, size_t bytes, bool copy,
                std::string &error) override;
  bool setNumThreads(int32_t threads, std::string &error) override;
  void enableTrace(bool on) override { tracing = on; }
  void enableCudaGraph(bool) override {}
  bool run(std::string &error) override;
  bool selectVariant(size_t variant, std::string &error) override;

  size_t numOutputs() const override { return outputs.size(); }
  const void *outputData(size_t index) const override {
    return outputs[index].data();
  }
  size_t outputBytes(size_t index) const override;
  const std::vector<int64_t> &outputDims(size_t index) const override {
    return outputShapes[index];
  }
  double runMicroseconds() const override { return lastRunUs; }
  const std::vector<SluiceTraceEvent> &trace() const override {
    return events;
  }
  const std::string &deviceName() const override { return device; }
  bool lastRunReplayedGraph() const override { return false; }
  std::string graphStatus() const override { return "the cpu target"; }
  std::string commTransport() const override {
    return comm ? comm->transport() : "";
  }

private:
  static void traceBegin(void *user, int32_t step);
  static void traceEnd(void *user, int32_t step);
  double elapsedUs() const;

  const Bundle &bundle;
  std::unique_ptr<RankComm> comm;
  AlignedBuffer arena;
  std::vector<AlignedBuffer> inputCopies, outputs;
  std::vector<std::vector<int64_t>> outputShapes;
  std::vector<const void *> inputs; ///< null until set
  std::vector<size_t> inputBytes;   ///< what each was set with
  /// The shape variant the runs use (manifest "variants"; 0 without).
  size_t variant = 0;
  /// The variant's inputs and outputs (the manifest's without variants).
  const std::vector<TensorSpec> &inputSpecs() const;
  const std::vector<TensorSpec> &outputSpecs() const;
  std::vector<int64_t> loadCounters; ///< what RunContext::expertLoad points at
  int32_t numThreads = 1;
  bool tracing = false;
  std::vector<SluiceTraceEvent> events;
  std::chrono::steady_clock::time_point runStart;
  double lastRunUs = 0;
  std::string device = "cpu";
};

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CPU_CPUCONTEXT_H
