//===- Calibration.h - calibration data and activation ranges ---*- C++ -*-===//
//
// The compress phase's view of `--calibration=DIR`: sample sets read and
// checked against the model's inputs, and the ranges an activation takes on
// them, reduced to one per-tensor quantization range by ONNX Runtime's
// calibration methods (MinMax, Percentile, Entropy). Used by the int8
// quantizer and its accuracy guard (Quantize.cpp); the arithmetic is here,
// free of IR, so that it is testable on its own.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_COMPRESS_CALIBRATION_H
#define SLUICE_PASSES_COMPRESS_CALIBRATION_H

#include "lib/support/RuntimeValue.h"
#include "lib/support/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice::quant {

/// One calibration sample set: a value per model input, in argument order.
struct CalibrationSet {
  std::string name; ///< the sub-folder's name ("." for a flat folder)
  std::vector<RuntimeValue> inputs;
};

/// Reads DIR: either one set (a `NAME.npy` per model input, named after the
/// input) or several sets as sub-folders of such files, in name order. Each
/// file must match its input's dtype and (static) shape; a missing input, a
/// file no input is named after, or a mismatch is one error naming the
/// file. `func` is the model's main function (`sluice.input_names`).
bool loadCalibration(mlir::func::FuncOp func, const std::string &dir,
                     std::vector<CalibrationSet> &sets, std::string &error);

enum class Method { MinMax, Percentile, Entropy };
std::optional<Method> parseMethod(llvm::StringRef name);
const char *methodName(Method method);

/// Statistics of one activation over every calibration set: its extremes
/// (first pass) and, for Percentile and Entropy, a histogram of its values
/// over [min, max] (second pass, once the extremes are known).
struct RangeStats {
  double min = 0, max = 0;
  bool seen = false;
  std::vector<double> histogram; ///< counts over [min, max], kHistogramBins bins
  void addExtremes(const Tensor &t);
  void addHistogram(const Tensor &t);
};
constexpr int kHistogramBins = 2048;

/// The range [lo, hi] quantized, by `method`: MinMax the extremes;
/// Percentile the `percentile`-th and (100 - percentile)-th percentiles
/// (ONNX Runtime's default 99.999); Entropy the threshold T that minimizes
/// the KL divergence between the |x| distribution and its 128-level
/// quantization (TensorRT's calibrator, as ONNX Runtime's), clipped to
/// [-T, T]. Always contains 0 (an exact zero point).
std::pair<double, double> chooseRange(const RangeStats &stats, Method method,
                                      double percentile = 99.999);

/// Asymmetric u8 parameters of [lo, hi] (lo <= 0 <= hi): scale (hi - lo) /
/// 255, zero point round(-lo / scale); scale 1 for an all-zero range.
struct AffineU8 {
  float scale = 1;
  int32_t zeroPoint = 0;
};
AffineU8 affineU8(double lo, double hi);

/// How the accuracy guards of the compress phase judge a compressed
/// model's outputs against the uncompressed model's on the calibration sets
/// (`--accuracy-metric`).
enum class AccuracyMetric {
  /// The relative L2 error of an output over every set: ||got - ref|| /
  /// ||ref||.
  RelL2,
  /// The share of an output's rows (every index but the last axis) whose
  /// argmax over the last axis changed: the predictions of a classifier
  /// that differ, the budget is the share allowed to.
  Top1Agreement,
};
std::optional<AccuracyMetric> parseAccuracyMetric(llvm::StringRef name);
const char *accuracyMetricName(AccuracyMetric metric);
/// The budget of `metric` when none is given: a relative L2 error of 0.05,
/// or one row in a hundred changed.
double defaultAccuracyBudget(AccuracyMetric metric);

/// The index of the largest of `n` values at `values[i * stride]`, the
/// first of equals; a NaN counts as the largest (numpy's argmax).
int64_t argmaxOf(const Tensor &t, int64_t first, int64_t n, int64_t stride = 1);

/// One output's error accumulated over several tensors (sets), under both
/// metrics: the guards decide by their metric and break its ties (many
/// candidates change no prediction at all) by the relative L2 error.
struct ErrorSum {
  double diff2 = 0, ref2 = 0;
  int64_t rows = 0, changed = 0; ///< top-1 rows seen and changed
  void add(const Tensor &got, const Tensor &ref);
  /// The relative L2 part of add() alone (an intermediate's error).
  void addL2(const Tensor &got, const Tensor &ref);
  void merge(const ErrorSum &other);
  /// The relative L2 error.
  double value() const;
  double value(AccuracyMetric metric) const;
};

} // namespace sluice::quant

#endif // SLUICE_PASSES_COMPRESS_CALIBRATION_H
