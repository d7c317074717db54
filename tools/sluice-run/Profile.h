//===- Profile.h - sluice-run --profile and --json -------------*- C++ -*-===//
//
// Latency statistics over the timed runs (--json), and the per-step profile
// of a bundle (--profile): each step's time summed over a set of traced
// runs, averaged per run, with the ONNX nodes the manifest says it holds.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_SLUICE_RUN_PROFILE_H
#define SLUICE_TOOLS_SLUICE_RUN_PROFILE_H

#include "sluice/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::tools {

/// End-to-end latency of the timed runs, in milliseconds.
struct LatencyStats {
  int iters = 0;
  double mean = 0, min = 0, median = 0, p90 = 0, p99 = 0, max = 0;
  double totalMs = 0; ///< all timed runs together (for the throughput)
};

/// Statistics of `ms` (one entry per timed run, not empty). Percentiles are
/// nearest-rank on the sorted times: element min(n - 1, floor(n * q)), the
/// median element n / 2, as sluice-run has always printed them.
LatencyStats latencyStats(std::vector<double> ms);

/// One step (kernel, library or host call) as the bundle's manifest lists it.
struct StepInfo {
  std::string name, kind, op, compute;
  std::vector<std::string> nodes; ///< ONNX nodes (or the one "node")
};

/// The steps of `bundle`'s manifest.json "kernels", or `fallback` (the
/// runtime's list, one node per step) when the manifest's list does not
/// match it name for name (a multi-rank bundle's rank manifest).
std::vector<StepInfo> stepsOf(const std::string &bundle, const std::vector<StepInfo> &fallback);

/// Per-step times summed over traced runs.
class StepProfile {
public:
  explicit StepProfile(std::vector<StepInfo> steps);

  /// Adds one traced run: its events and its end-to-end time (us). A step
  /// inside control flow may have 0..N events per run; each is a call.
  void addRun(const SluiceTraceEvent *events, size_t count, double runUs);

  struct Row {
    size_t step;        ///< index into the steps
    double msPerRun;    ///< summed time per run
    double callsPerRun; ///< calls per run (fractional: control flow)
    double share;       ///< of the summed step time, 0..1
  };
  /// The steps that ran, slowest first (ties by step order).
  std::vector<Row> rows() const;

  struct OpRow {
    std::string op; ///< the steps' op ("-" when the manifest has none)
    size_t steps;   ///< steps of that op that ran
    double msPerRun, share;
  };
  /// The steps that ran summed by op, slowest first: which kind of work
  /// dominates when no single step does (a transformer's dozens of GEMMs).
  std::vector<OpRow> byOp() const;

  const std::vector<StepInfo> &steps() const { return info; }
  int runs() const { return runCount; }
  /// The summed step time per run, and the mean traced run (ms).
  double stepMsPerRun() const;
  double runMsMean() const;

private:
  std::vector<StepInfo> info;
  std::vector<double> totalUs;
  std::vector<int64_t> calls;
  double runUs = 0;
  int runCount = 0;
};

/// Prints the profile table: the `top` slowest steps (all when top <= 0),
/// with the steps that did not run and the rest summed below it. `target`
/// says what timed the steps ("cpu target", "cuda target ...").
void printProfile(const StepProfile &profile, int top, const std::string &target);

/// The cuda run's split (ms per run), from CUDA events around the input
/// copies, the model and the output copies (sluice_context_run_split).
struct RunSplit {
  double hostToDevice = 0, compute = 0, deviceToHost = 0;
};

/// What --json writes. Null members are written as JSON null.
struct BenchReport {
  std::string model, target, device;
  int warmup = 0;
  LatencyStats latency;
  std::optional<std::string> cudaGraph; ///< cuda: "replayed" or why not
  std::optional<RunSplit> split;        ///< cuda only (cpu: null)
  const StepProfile *profile = nullptr; ///< with --profile
};

/// Writes `report` to `path` as JSON (indented); false and `error` when the
/// file cannot be written.
bool writeBenchJson(const std::string &path, const BenchReport &report, std::string &error);

} // namespace sluice::tools

#endif // SLUICE_TOOLS_SLUICE_RUN_PROFILE_H
