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

#include "sluice/runtime.h"

#include <chrono>
#include <cstdlib>
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

class CpuContext {
public:
  explicit CpuContext(const Bundle &bundle) : bundle(bundle) {}

  /// Allocates the arena and the outputs.
  bool init(std::string &error);
  /// Copies (`copy`) or binds input `index`.
  bool setInput(size_t index, const void *data, size_t bytes, bool copy,
                std::string &error);
  bool setNumThreads(int32_t threads, std::string &error);
  void enableTrace(bool on) { tracing = on; }
  /// Runs once; on failure sets `error` (the library's message included).
  bool run(std::string &error);

  size_t numOutputs() const { return outputs.size(); }
  const AlignedBuffer &output(size_t index) const { return outputs[index]; }
  size_t outputBytes(size_t index) const {
    return bundle.manifest().outputs[index].bytes;
  }
  double runMicroseconds() const { return lastRunUs; }
  const std::vector<SluiceTraceEvent> &trace() const { return events; }

private:
  static void traceBegin(void *user, int32_t step);
  static void traceEnd(void *user, int32_t step);
  double elapsedUs() const;

  const Bundle &bundle;
  AlignedBuffer arena;
  std::vector<AlignedBuffer> inputCopies, outputs;
  std::vector<const void *> inputs; ///< null until set
  int32_t numThreads = 1;
  bool tracing = false;
  std::vector<SluiceTraceEvent> events;
  std::chrono::steady_clock::time_point runStart;
  double lastRunUs = 0;
};

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CPU_CPUCONTEXT_H
