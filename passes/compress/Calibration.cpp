//===- Calibration.cpp - calibration data and activation ranges -----------===//
//
// See Calibration.h. The methods follow ONNX Runtime's calibrators
// (onnxruntime/quantization/calibrate.py): MinMax over every set, the
// percentile of a histogram of the values, and TensorRT's entropy
// calibration (minimal KL divergence between the distribution of |x| and
// its 128-level quantization).
//
//===----------------------------------------------------------------------===//

#include "passes/compress/Calibration.h"

#include "lib/reference/Evaluator.h"
#include "lib/support/TensorFiles.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace mlir;

namespace sluice::quant {

namespace {

/// The `.npy` files of one folder by stem, and its sub-folders, sorted.
void listFolder(const std::string &dir, std::map<std::string, std::string> &files,
                std::vector<std::string> &folders, std::vector<std::string> &others) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    std::string path = it->path();
    llvm::StringRef name = llvm::sys::path::filename(path);
    if (name.starts_with("."))
      continue;
    if (llvm::sys::fs::is_directory(path))
      folders.push_back(path);
    else if (name.ends_with(".npy"))
      files[llvm::sys::path::stem(name).str()] = path;
    else
      others.push_back(path);
  }
  std::sort(folders.begin(), folders.end());
}

bool readSet(func::FuncOp func, const std::vector<std::string> &names,
             const std::map<std::string, std::string> &files, const std::string &where,
             CalibrationSet &set, std::string &error) {
  std::set<std::string> used;
  std::string known, strays;
  for (const std::string &n : names)
    known += (known.empty() ? "" : ", ") + n;
  for (const auto &[stem, path] : files)
    if (!llvm::is_contained(names, stem))
      strays += (strays.empty() ? "'" : ", '") + stem + "'";
  for (auto [i, name] : llvm::enumerate(names)) {
    auto it = files.find(name);
    if (it == files.end()) {
      error = where + ": no " + name + ".npy for the model input '" + name +
              "' (a calibration set holds one NAME.npy per input" +
              (strays.empty() ? std::string(")")
                              : "; no model input is named " + strays + ": inputs are " + known +
                                    ")");
      return false;
    }
    used.insert(name);
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (!type) {
      error = it->second + ": the model input '" + name + "' is not a tensor";
      return false;
    }
    Tensor tensor;
    std::string readError;
    if (!readNpy(it->second, tensor, readError)) {
      error = readError;
      return false;
    }
    auto dtype = dtypeFromType(type.getElementType());
    if (failed(dtype) || tensor.dtype() != *dtype) {
      error = it->second + ": dtype " + dtypeName(tensor.dtype()) + ", the model input '" +
              name + "' is " + (failed(dtype) ? std::string("not numeric") : dtypeName(*dtype));
      return false;
    }
    if (!type.hasStaticShape()) {
      error = it->second + ": the model input '" + name +
              "' has a dynamic shape; calibration needs the compile shapes (--shape=" + name +
              "=...)";
      return false;
    }
    if (tensor.shape() != std::vector<int64_t>(type.getShape().begin(), type.getShape().end())) {
      error = it->second + ": shape " + shapeToString(tensor.shape()) + ", the model input '" +
              name + "' is compiled as " +
              shapeToString(std::vector<int64_t>(type.getShape().begin(), type.getShape().end())) +
              " (each set has the compile shapes)";
      return false;
    }
    set.inputs.push_back(RuntimeValue(std::move(tensor)));
  }
  for (const auto &[stem, path] : files)
    if (!used.count(stem)) {
      error = path + ": no model input is named '" + stem + "' (inputs: " + known + ")";
      return false;
    }
  return true;
}

} // namespace

bool loadCalibration(func::FuncOp func, const std::string &dir,
                     std::vector<CalibrationSet> &sets, std::string &error) {
  sets.clear();
  if (!llvm::sys::fs::is_directory(dir)) {
    error = dir + ": --calibration needs a folder of NAME.npy files (or of sub-folders of "
                  "them), and this is " +
            (llvm::sys::fs::exists(dir) ? "not a folder" : "missing");
    return false;
  }
  std::vector<std::string> names;
  if (auto attr = func->getAttrOfType<ArrayAttr>("sluice.input_names"))
    for (Attribute a : attr)
      names.push_back(cast<StringAttr>(a).str());
  while (names.size() < func.getNumArguments())
    names.push_back("input" + std::to_string(names.size()));
  std::map<std::string, std::string> files;
  std::vector<std::string> folders, others;
  listFolder(dir, files, folders, others);
  if (!files.empty()) {
    CalibrationSet set;
    set.name = ".";
    if (!readSet(func, names, files, dir, set, error))
      return false;
    sets.push_back(std::move(set));
  }
  for (const std::string &folder : folders) {
    std::map<std::string, std::string> sub;
    std::vector<std::string> nested, subOthers;
    listFolder(folder, sub, nested, subOthers);
    if (sub.empty())
      continue;
    CalibrationSet set;
    set.name = llvm::sys::path::filename(folder).str();
    if (!readSet(func, names, sub, folder, set, error))
      return false;
    sets.push_back(std::move(set));
  }
  if (sets.empty()) {
    error = dir + ": no calibration data (expected NAME.npy files named after the model's "
                  "inputs, or sub-folders of them)";
    return false;
  }
  return true;
}

std::optional<Method> parseMethod(llvm::StringRef name) {
  if (name == "minmax")
    return Method::MinMax;
  if (name == "percentile")
    return Method::Percentile;
  if (name == "entropy")
    return Method::Entropy;
  return std::nullopt;
}

const char *methodName(Method method) {
  switch (method) {
  case Method::MinMax:
    return "minmax";
  case Method::Percentile:
    return "percentile";
  case Method::Entropy:
    return "entropy";
  }
  return "?";
}

void RangeStats::addExtremes(const Tensor &t) {
  int64_t n = t.numElements();
  if (n == 0)
    return;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  if (t.dtype() == DType::F32) {
    const float *p = t.data<float>();
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(p[i])) {
        lo = std::min(lo, (double)p[i]);
        hi = std::max(hi, (double)p[i]);
      }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      double v = t.getDouble(i);
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  if (lo > hi)
    return;
  min = seen ? std::min(min, lo) : lo;
  max = seen ? std::max(max, hi) : hi;
  seen = true;
}

void RangeStats::addHistogram(const Tensor &t) {
  if (histogram.empty())
    histogram.assign(kHistogramBins, 0.0);
  double width = (max - min) / kHistogramBins;
  if (!(width > 0))
    return;
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    double v = t.dtype() == DType::F32 ? (double)t.data<float>()[i] : t.getDouble(i);
    if (!std::isfinite(v))
      continue;
    int64_t bin = (int64_t)((v - min) / width);
    histogram[std::clamp<int64_t>(bin, 0, kHistogramBins - 1)] += 1;
  }
}

namespace {

/// The value below which `fraction` of the histogram's mass lies.
double histogramQuantile(const RangeStats &s, double fraction) {
  double total = 0;
  for (double c : s.histogram)
    total += c;
  if (total <= 0)
    return fraction < 0.5 ? s.min : s.max;
  double width = (s.max - s.min) / kHistogramBins, target = fraction * total, acc = 0;
  for (int i = 0; i < kHistogramBins; ++i) {
    if (acc + s.histogram[i] >= target) {
      double inside = s.histogram[i] > 0 ? (target - acc) / s.histogram[i] : 0;
      return s.min + (i + inside) * width;
    }
    acc += s.histogram[i];
  }
  return s.max;
}

/// TensorRT's entropy threshold on a histogram of |x| (`abs` over [0,
/// amax], bins of `width`): the clip point i * width, i >= 128, that
/// minimizes KL(P || Q), P the histogram clipped at i with the outliers
/// added to its last bin, Q its quantization to 128 levels expanded back
/// over P's non-zero bins.
double entropyThreshold(const std::vector<double> &abs, double width) {
  const int levels = 128, bins = (int)abs.size();
  if (bins <= levels)
    return bins * width;
  double bestKl = std::numeric_limits<double>::infinity();
  int best = bins;
  std::vector<double> p, q;
  for (int i = levels; i <= bins; ++i) {
    p.assign(abs.begin(), abs.begin() + i);
    double outliers = 0;
    for (int j = i; j < bins; ++j)
      outliers += abs[j];
    p[i - 1] += outliers;
    q.assign(i, 0.0);
    double merge = (double)i / levels;
    for (int l = 0; l < levels; ++l) {
      int start = (int)std::floor(l * merge), stop = (int)std::floor((l + 1) * merge);
      stop = std::max(stop, start + 1);
      stop = std::min(stop, i);
      double sum = 0;
      int nonzero = 0;
      for (int j = start; j < stop; ++j) {
        sum += abs[j];
        nonzero += abs[j] != 0;
      }
      for (int j = start; j < stop; ++j)
        q[j] = abs[j] != 0 && nonzero ? sum / nonzero : 0;
    }
    double pSum = 0, qSum = 0;
    for (int j = 0; j < i; ++j) {
      pSum += p[j];
      qSum += q[j];
    }
    if (pSum <= 0 || qSum <= 0)
      continue;
    double kl = 0;
    for (int j = 0; j < i; ++j) {
      if (p[j] <= 0)
        continue;
      double pj = p[j] / pSum, qj = q[j] / qSum;
      // A bin Q leaves empty where P has mass: smoothed, as ORT does.
      kl += pj * std::log(pj / std::max(qj, 1e-10));
    }
    if (kl < bestKl) {
      bestKl = kl;
      best = i;
    }
  }
  return (best + 0.5) * width;
}

} // namespace

std::pair<double, double> chooseRange(const RangeStats &s, Method method, double percentile) {
  if (!s.seen)
    return {0.0, 0.0};
  double lo = s.min, hi = s.max;
  if (method == Method::Percentile && !s.histogram.empty()) {
    double tail = (100.0 - percentile) / 100.0;
    lo = s.min >= 0 ? s.min : histogramQuantile(s, tail);
    hi = s.max <= 0 ? s.max : histogramQuantile(s, 1.0 - tail);
  } else if (method == Method::Entropy && !s.histogram.empty()) {
    // The |x| histogram from the signed one: fold the bins at zero.
    double amax = std::max(std::fabs(s.min), std::fabs(s.max));
    double width = (s.max - s.min) / kHistogramBins;
    std::vector<double> abs(kHistogramBins, 0.0);
    double absWidth = amax / kHistogramBins;
    if (absWidth > 0 && width > 0) {
      for (int i = 0; i < kHistogramBins; ++i) {
        double center = s.min + (i + 0.5) * width;
        int bin = std::min(kHistogramBins - 1, (int)(std::fabs(center) / absWidth));
        abs[bin] += s.histogram[i];
      }
      double t = entropyThreshold(abs, absWidth);
      lo = std::max(s.min, -t);
      hi = std::min(s.max, t);
    }
  }
  return {std::min(lo, 0.0), std::max(hi, 0.0)};
}

AffineU8 affineU8(double lo, double hi) {
  AffineU8 q;
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (!(hi - lo > 0))
    return q;
  q.scale = (float)((hi - lo) / 255.0);
  q.zeroPoint = (int32_t)std::clamp<double>(std::nearbyint(-lo / q.scale), 0, 255);
  return q;
}

std::optional<AccuracyMetric> parseAccuracyMetric(llvm::StringRef name) {
  if (name == "rel-l2")
    return AccuracyMetric::RelL2;
  if (name == "top1-agreement")
    return AccuracyMetric::Top1Agreement;
  return std::nullopt;
}

const char *accuracyMetricName(AccuracyMetric metric) {
  return metric == AccuracyMetric::RelL2 ? "rel-l2" : "top1-agreement";
}

double defaultAccuracyBudget(AccuracyMetric metric) {
  return metric == AccuracyMetric::RelL2 ? 0.05 : 0.01;
}

int64_t argmaxOf(const Tensor &t, int64_t first, int64_t n, int64_t stride) {
  int64_t best = 0;
  double bestValue = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.getDouble(first + i * stride);
    if (std::isnan(v))
      return i;
    if (i == 0 || v > bestValue) {
      best = i;
      bestValue = v;
    }
  }
  return best;
}

void ErrorSum::addL2(const Tensor &got, const Tensor &ref) {
  int64_t n = std::min(got.numElements(), ref.numElements());
  for (int64_t i = 0; i < n; ++i) {
    double r = ref.getDouble(i), d = got.getDouble(i) - r;
    diff2 += d * d;
    ref2 += r * r;
  }
}

void ErrorSum::add(const Tensor &got, const Tensor &ref) {
  addL2(got, ref);
  int64_t n = std::min(got.numElements(), ref.numElements());
  // Rows: every index but the last axis (a scalar is one row of one).
  int64_t width = ref.rank() ? ref.dim(ref.rank() - 1) : 1;
  if (width <= 0 || got.numElements() != ref.numElements())
    return;
  for (int64_t row = 0; row < n / width; ++row) {
    ++rows;
    changed += argmaxOf(got, row * width, width) != argmaxOf(ref, row * width, width);
  }
}

void ErrorSum::merge(const ErrorSum &other) {
  diff2 += other.diff2;
  ref2 += other.ref2;
  rows += other.rows;
  changed += other.changed;
}

double ErrorSum::value() const {
  if (ref2 > 0)
    return std::sqrt(diff2 / ref2);
  return diff2 > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

double ErrorSum::value(AccuracyMetric metric) const {
  if (metric == AccuracyMetric::RelL2)
    return value();
  return rows ? (double)changed / (double)rows : 0.0;
}

} // namespace sluice::quant
