//===- Indexing.cpp - evaluators for gathers, scatters, index-driven ops --===//
//
// Reference semantics of the indexing family, following the ONNX operator
// definitions (and, where the spec leaves details open, the ONNX reference
// implementation the backend test data was generated with). Indices read
// from tensors are validated: out-of-range values are op errors, not crashes.
//
//===----------------------------------------------------------------------===//

#include "lib/reference/EvalUtils.h"
#include "lib/reference/Resize.h"

#include "dialects/sluice/SluiceOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

int64_t product(const std::vector<int64_t> &dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i)
    p *= dims[i];
  return p;
}

/// Results larger than this are refused: a bad depth, scale or size read at
/// run time must give an error, not exhaust memory.
constexpr double kMaxResultElements = double(int64_t(1) << 32);

/// Fails on `op` when a result of `shape` would be unreasonably large.
LogicalResult checkResultSize(Operation *op, const std::vector<int64_t> &shape) {
  double count = 1;
  for (int64_t d : shape)
    count *= (double)d;
  if (count > kMaxResultElements ||
      llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return op->emitOpError("result of shape ")
           << shapeToString(shape) << " is too large";
  return success();
}

/// Copies element `from` of `src` to element `to` of `dst` (same dtype).
void copyElement(const Tensor &src, int64_t from, Tensor &dst, int64_t to) {
  size_t width = dtypeSize(src.dtype());
  std::memcpy(static_cast<char *>(dst.mutableData()) + to * width,
              static_cast<const char *>(src.rawData()) + from * width, width);
}

/// Resolves a possibly negative index against `extent`, or fails on `op`.
FailureOr<int64_t> resolveIndex(Operation *op, int64_t index, int64_t extent) {
  if (index < -extent || index >= extent)
    return op->emitOpError("index ")
           << index << " out of range for dim of size " << extent;
  return index < 0 ? index + extent : index;
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

LogicalResult evalGather(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  const Tensor &x = *operands[0], &indices = *operands[1];
  auto axis = normalizeAxis(op, cast<GatherOp>(op).getAxis(), x.rank());
  if (failed(axis))
    return failure();
  int64_t outer = 1, inner = 1, extent = x.dim(*axis);
  for (int64_t i = 0; i < *axis; ++i)
    outer *= x.dim(i);
  for (int64_t i = *axis + 1; i < x.rank(); ++i)
    inner *= x.dim(i);
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + *axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), x.shape().begin() + *axis + 1, x.shape().end());
  Tensor out(x.dtype(), shape);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  int64_t count = indices.numElements();
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = indices.getInt(j);
    if (index < -extent || index >= extent)
      return op->emitOpError("index ") << index << " out of range for dim of size "
                                       << extent;
    if (index < 0)
      index += extent;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + ((o * count + j) * inner) * width,
                  src + ((o * extent + index) * inner) * width, inner * width);
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalGatherElements(Operation *op,
                                 ArrayRef<const Tensor *> operands,
                                 std::vector<Tensor> &results) {
  const Tensor &x = *operands[0], &indices = *operands[1];
  auto axis = normalizeAxis(op, cast<GatherElementsOp>(op).getAxis(), x.rank());
  if (failed(axis))
    return failure();
  if (indices.rank() != x.rank())
    return op->emitOpError("indices rank differs from input rank");
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != *axis && indices.dim(d) > x.dim(d))
      return op->emitOpError("indices dim ") << d << " exceeds the input's";
  Tensor out(x.dtype(), indices.shape());
  std::vector<int64_t> strides = x.strides(), index;
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    unravelIndex(i, indices.shape(), index);
    auto target = resolveIndex(op, indices.getInt(i), x.dim(*axis));
    if (failed(target))
      return failure();
    index[*axis] = *target;
    int64_t offset = 0;
    for (int64_t d = 0; d < x.rank(); ++d)
      offset += index[d] * strides[d];
    copyElement(x, offset, out, i);
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalGatherND(Operation *op, ArrayRef<const Tensor *> operands,
                           std::vector<Tensor> &results) {
  const Tensor &x = *operands[0], &indices = *operands[1];
  int64_t batch = cast<GatherNDOp>(op).getBatchDims();
  int64_t r = x.rank(), q = indices.rank();
  if (q < 1 || batch >= std::min(q, r))
    return op->emitOpError("batch_dims does not fit the operand ranks");
  int64_t k = indices.dim(q - 1);
  if (k < 1 || batch + k > r)
    return op->emitOpError("index tuples do not fit the input rank");
  for (int64_t i = 0; i < batch; ++i)
    if (x.dim(i) != indices.dim(i))
      return op->emitOpError("batch dims of input and indices differ");
  std::vector<int64_t> shape(x.shape().begin(), x.shape().begin() + batch);
  shape.insert(shape.end(), indices.shape().begin() + batch,
               indices.shape().end() - 1);
  shape.insert(shape.end(), x.shape().begin() + batch + k, x.shape().end());
  Tensor out(x.dtype(), shape);
  int64_t batches = product(x.shape(), 0, batch);
  int64_t tuples = product(indices.shape(), batch, q - 1);
  int64_t slice = product(x.shape(), batch + k, r);
  int64_t perBatch = product(x.shape(), batch, r);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset = 0;
      for (int64_t j = 0; j < k; ++j) {
        auto index = resolveIndex(
            op, indices.getInt((bi * tuples + t) * k + j), x.dim(batch + j));
        if (failed(index))
          return failure();
        offset = offset * x.dim(batch + j) + *index;
      }
      std::memcpy(dst + (bi * tuples + t) * slice * width,
                  src + (bi * perBatch + offset * slice) * width, slice * width);
    }
  }
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

/// Writes update element `from` of `updates` into element `to` of `out`,
/// combining with the existing value when a reduction is given. Floats
/// combine in double, integers in int64.
void scatterElement(Tensor &out, int64_t to, const Tensor &updates,
                    int64_t from, std::optional<ReduceKind> reduction) {
  if (!reduction) {
    copyElement(updates, from, out, to);
    return;
  }
  if (isFloatDType(out.dtype())) {
    double a = out.getDouble(to), b = updates.getDouble(from), r = b;
    switch (*reduction) {
    case ReduceKind::sum: r = a + b; break;
    case ReduceKind::prod: r = a * b; break;
    case ReduceKind::max: r = std::max(a, b); break;
    case ReduceKind::min: r = std::min(a, b); break;
    case ReduceKind::mean: break;
    }
    out.setDouble(to, r);
    return;
  }
  int64_t a = out.getInt(to), b = updates.getInt(from), r = b;
  switch (*reduction) {
  case ReduceKind::sum: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
  case ReduceKind::prod: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
  case ReduceKind::max: r = std::max(a, b); break;
  case ReduceKind::min: r = std::min(a, b); break;
  case ReduceKind::mean: break;
  }
  out.setInt(to, r);
}

LogicalResult evalScatterElements(Operation *op,
                                  ArrayRef<const Tensor *> operands,
                                  std::vector<Tensor> &results) {
  auto scatter = cast<ScatterElementsOp>(op);
  const Tensor &x = *operands[0], &indices = *operands[1],
               &updates = *operands[2];
  auto axis = normalizeAxis(op, scatter.getAxis(), x.rank());
  if (failed(axis))
    return failure();
  if (indices.shape() != updates.shape() || indices.rank() != x.rank())
    return op->emitOpError("indices ")
           << indices.describe() << " and updates " << updates.describe()
           << " must have one shape of the input's rank";
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != *axis && indices.dim(d) > x.dim(d))
      return op->emitOpError("indices dim ") << d << " exceeds the input's";
  Tensor out = Tensor::copyOf(x.dtype(), x.shape(), x.rawData());
  std::vector<int64_t> strides = x.strides(), index;
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    unravelIndex(i, indices.shape(), index);
    auto target = resolveIndex(op, indices.getInt(i), x.dim(*axis));
    if (failed(target))
      return failure();
    index[*axis] = *target;
    int64_t offset = 0;
    for (int64_t d = 0; d < x.rank(); ++d)
      offset += index[d] * strides[d];
    scatterElement(out, offset, updates, i, scatter.getReduction());
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalScatterND(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  auto scatter = cast<ScatterNDOp>(op);
  const Tensor &x = *operands[0], &indices = *operands[1],
               &updates = *operands[2];
  int64_t r = x.rank(), q = indices.rank();
  if (q < 1)
    return op->emitOpError("indices must have rank >= 1");
  int64_t k = indices.dim(q - 1);
  std::vector<int64_t> expected(indices.shape().begin(), indices.shape().end() - 1);
  if (k <= r)
    expected.insert(expected.end(), x.shape().begin() + k, x.shape().end());
  if (k > r || updates.shape() != expected)
    return op->emitOpError("updates ")
           << updates.describe() << " do not match indices "
           << indices.describe() << " into " << x.describe();
  Tensor out = Tensor::copyOf(x.dtype(), x.shape(), x.rawData());
  int64_t tuples = product(indices.shape(), 0, q - 1);
  int64_t slice = product(x.shape(), k, r);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      auto index = resolveIndex(op, indices.getInt(t * k + j), x.dim(j));
      if (failed(index))
        return failure();
      offset = offset * x.dim(j) + *index;
    }
    for (int64_t e = 0; e < slice; ++e)
      scatterElement(out, offset * slice + e, updates, t * slice + e,
                     scatter.getReduction());
  }
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// OneHot, NonZero, Compress
//===----------------------------------------------------------------------===//

LogicalResult evalOneHot(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  const Tensor &indices = *operands[0], &depthTensor = *operands[1],
               &values = *operands[2];
  if (depthTensor.numElements() != 1)
    return op->emitOpError("depth must hold one value, got ")
           << depthTensor.describe();
  int64_t depth = depthTensor.getInt(0);
  if (depth < 1)
    return op->emitOpError("depth must be positive, got ") << depth;
  if (values.numElements() != 2)
    return op->emitOpError("values must hold [off, on], got ")
           << values.describe();
  auto axis = normalizeAxis(op, cast<OneHotOp>(op).getAxis(), indices.rank() + 1);
  if (failed(axis))
    return failure();
  std::vector<int64_t> shape = indices.shape();
  shape.insert(shape.begin() + *axis, depth);
  if (failed(checkResultSize(op, shape)))
    return failure();
  Tensor out(values.dtype(), shape);
  int64_t outer = product(indices.shape(), 0, *axis);
  int64_t inner = product(indices.shape(), *axis, indices.rank());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t index = indices.getInt(o * inner + i);
        if (index < 0)
          index += depth;
        copyElement(values, index == d ? 1 : 0, out, (o * depth + d) * inner + i);
      }
    }
  }
  results.push_back(std::move(out));
  return success();
}

bool isNonZero(const Tensor &t, int64_t i) {
  return isFloatDType(t.dtype()) ? t.getDouble(i) != 0.0 : t.getInt(i) != 0;
}

LogicalResult evalNonZero(Operation *, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.numElements(); ++i)
    if (isNonZero(x, i))
      hits.push_back(i);
  int64_t count = hits.size();
  Tensor out(DType::I64, {x.rank(), count});
  std::vector<int64_t> index;
  for (int64_t j = 0; j < count; ++j) {
    unravelIndex(hits[j], x.shape(), index);
    for (int64_t d = 0; d < x.rank(); ++d)
      out.setInt(d * count + j, index[d]);
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalCompress(Operation *op, ArrayRef<const Tensor *> operands,
                           std::vector<Tensor> &results) {
  const Tensor &x = *operands[0], &condition = *operands[1];
  std::optional<uint64_t> axisAttr = cast<CompressOp>(op).getAxis();
  int64_t outer = 1, extent = x.numElements(), inner = 1;
  std::optional<int64_t> axis;
  if (axisAttr) {
    auto normalized = normalizeAxis(op, (int64_t)*axisAttr, x.rank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
    outer = product(x.shape(), 0, *axis);
    extent = x.dim(*axis);
    inner = product(x.shape(), *axis + 1, x.rank());
  }
  if (condition.numElements() > extent)
    return op->emitOpError("condition has ")
           << condition.numElements() << " entries for a dim of " << extent;
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < condition.numElements(); ++i)
    if (condition.getInt(i))
      kept.push_back(i);
  std::vector<int64_t> shape{(int64_t)kept.size()};
  if (axis) {
    shape = x.shape();
    shape[*axis] = kept.size();
  }
  Tensor out(x.dtype(), shape);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  int64_t n = kept.size();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + (o * n + j) * inner * width,
                  src + (o * extent + kept[j]) * inner * width, inner * width);
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// Keys' cubic convolution weights for the 4 taps around a point at
/// fractional offset `t` in (0, 1] past the second tap.
std::vector<double> cubicWeights(double t, double a) {
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

/// Resamples `data` (doubles, row-major `shape`) along `axis`.
std::vector<double> applyAxis(const std::vector<double> &data,
                              std::vector<int64_t> &shape, int64_t axis,
                              const std::vector<ResizeSample> &samples,
                              double extrapolation) {
  int64_t outer = product(shape, 0, axis), in = shape[axis];
  int64_t inner = product(shape, axis + 1, shape.size());
  int64_t out = samples.size();
  std::vector<double> result(outer * out * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t y = 0; y < out; ++y) {
      const ResizeSample &s = samples[y];
      double *dst = &result[(o * out + y) * inner];
      if (s.extrapolate) {
        std::fill(dst, dst + inner, extrapolation);
        continue;
      }
      for (size_t t = 0; t < s.taps.size(); ++t) {
        double w = s.weights[t];
        if (w == 0)
          continue;
        const double *src = &data[(o * in + s.taps[t]) * inner];
        for (int64_t i = 0; i < inner; ++i)
          dst[i] += w * src[i];
      }
    }
  }
  shape[axis] = out;
  return result;
}

LogicalResult evalResize(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  auto resize = cast<ResizeOp>(op);
  const Tensor &x = *operands[0];
  unsigned next = 1;
  const Tensor *roi = resize.getRoi() ? operands[next++] : nullptr;
  const Tensor *scalesT = resize.getScales() ? operands[next++] : nullptr;
  const Tensor *sizesT = resize.getSizes() ? operands[next++] : nullptr;
  int64_t rank = x.rank();
  std::vector<double> scales(rank, 1.0);
  std::vector<int64_t> sizes(x.shape());
  if (sizesT && sizesT->numElements() > 0) {
    if (sizesT->numElements() != rank)
      return op->emitOpError("sizes has ")
             << sizesT->numElements() << " entries for rank " << rank;
    sizes = sizesT->toInt64Vector();
    for (int64_t i = 0; i < rank; ++i) {
      if (sizes[i] < 0)
        return op->emitOpError("size ") << sizes[i] << " is negative";
      scales[i] = x.dim(i) ? (double)sizes[i] / x.dim(i) : 1.0;
    }
  } else if (scalesT && scalesT->numElements() > 0) {
    if (scalesT->numElements() != rank)
      return op->emitOpError("scales has ")
             << scalesT->numElements() << " entries for rank " << rank;
    for (int64_t i = 0; i < rank; ++i) {
      scales[i] = (float)scalesT->getDouble(i);
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        return op->emitOpError("scale ") << scales[i]
                                          << " must be positive and finite";
      double size = std::floor(scales[i] * x.dim(i));
      if (size > kMaxResultElements)
        return op->emitOpError("scale ") << scales[i] << " makes dim " << i
                                         << " too large";
      sizes[i] = (int64_t)size;
    }
  } else {
    return op->emitOpError("needs non-empty scales or sizes");
  }
  if (failed(checkResultSize(op, sizes)))
    return failure();
  bool cropping = resize.getCoordinateTransformationMode() == "tf_crop_and_resize";
  std::vector<double> roiValues;
  if (roi && roi->numElements() > 0) {
    if (roi->numElements() != 2 * rank)
      return op->emitOpError("roi has ")
             << roi->numElements() << " entries for rank " << rank;
    roiValues = roi->toDoubleVector();
    if (!llvm::all_of(roiValues, [](double v) { return std::isfinite(v); }))
      return op->emitOpError("roi values must be finite");
  } else if (cropping) {
    return op->emitOpError("tf_crop_and_resize needs a roi of 2 * rank values");
  }
  double extrapolation = resize.getExtrapolationValue().convertToFloat();
  std::vector<double> data = x.toDoubleVector();
  std::vector<int64_t> shape = x.shape();
  for (int64_t axis = 0; axis < rank; ++axis) {
    double roiStart = roiValues.empty() ? 0.0 : roiValues[axis];
    double roiEnd = roiValues.empty() ? 1.0 : roiValues[axis + rank];
    bool identity = std::abs(scales[axis] - 1.0) <= 1e-9 &&
                    sizes[axis] == shape[axis] &&
                    (!cropping || (std::abs(roiStart) <= 1e-9 &&
                                   std::abs(roiEnd - 1.0) <= 1e-9));
    if (identity)
      continue;
    if (shape[axis] == 0 && sizes[axis] > 0)
      return op->emitOpError("cannot resize an empty dim to ") << sizes[axis];
    auto samples = resizeAxis(resize, shape[axis], sizes[axis],
                              scales[axis], roiStart, roiEnd);
    data = applyAxis(data, shape, axis, samples, extrapolation);
  }
  if (isFloatDType(x.dtype())) {
    results.push_back(Tensor::fromDoubles(x.dtype(), shape, data));
    return success();
  }
  // Integer inputs: round half to even and saturate to the element type, as
  // the ONNX reference's saturate_cast does.
  double lo = 0, hi = 0;
  switch (x.dtype()) {
  case DType::I8: lo = INT8_MIN; hi = INT8_MAX; break;
  case DType::I16: lo = INT16_MIN; hi = INT16_MAX; break;
  case DType::I32: lo = INT32_MIN; hi = INT32_MAX; break;
  case DType::U8: hi = UINT8_MAX; break;
  case DType::U16: hi = UINT16_MAX; break;
  case DType::U32: hi = UINT32_MAX; break;
  case DType::Bool: hi = 1; break;
  default: lo = -9.2e18; hi = 9.2e18; break;
  }
  Tensor out(x.dtype(), shape);
  for (size_t i = 0; i < data.size(); ++i)
    out.setInt(i, (int64_t)std::clamp(std::nearbyint(data[i]), lo, hi));
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Unique
//===----------------------------------------------------------------------===//

LogicalResult evalUnique(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  auto unique = cast<UniqueOp>(op);
  const Tensor &x = *operands[0];
  // View the input as [outer, n, inner]: slice i is every (o, i, in).
  int64_t outer = 1, n = x.numElements(), inner = 1;
  std::optional<int64_t> axis;
  if (std::optional<uint64_t> attr = unique.getAxis()) {
    auto normalized = normalizeAxis(op, (int64_t)*attr, x.rank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
    outer = product(x.shape(), 0, *axis);
    n = x.dim(*axis);
    inner = product(x.shape(), *axis + 1, x.rank());
  }
  bool isFloat = isFloatDType(x.dtype());
  // Three-way lexicographic comparison of slices i and j; NaNs sort last and
  // equal each other (NumPy's unique collapses them).
  auto compare = [&](int64_t i, int64_t j) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t e = 0; e < inner; ++e) {
        int64_t a = (o * n + i) * inner + e, b = (o * n + j) * inner + e;
        if (isFloat) {
          double va = x.getDouble(a), vb = x.getDouble(b);
          bool nanA = std::isnan(va), nanB = std::isnan(vb);
          if (nanA || nanB) {
            if (nanA != nanB)
              return nanA ? 1 : -1;
            continue;
          }
          if (va != vb)
            return va < vb ? -1 : 1;
        } else {
          int64_t va = x.getInt(a), vb = x.getInt(b);
          if (va != vb)
            return va < vb ? -1 : 1;
        }
      }
    }
    return 0;
  };
  // Sort slice positions (stably, so each run of equal slices starts with
  // its first occurrence), then number the runs.
  std::vector<int64_t> positions(n);
  std::iota(positions.begin(), positions.end(), 0);
  std::stable_sort(positions.begin(), positions.end(),
                   [&](int64_t p, int64_t q) { return compare(p, q) < 0; });
  std::vector<int64_t> firsts, counts, inverse(n);
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = positions[k];
    if (k == 0 || compare(positions[k - 1], p) != 0) {
      firsts.push_back(p);
      counts.push_back(0);
    }
    inverse[p] = firsts.size() - 1;
    ++counts.back();
  }
  // `firsts` is in value order; unsorted output lists first occurrences.
  int64_t u = firsts.size();
  std::vector<int64_t> order(u), rank(u);
  std::iota(order.begin(), order.end(), 0);
  if (!unique.getSorted())
    std::sort(order.begin(), order.end(),
              [&](int64_t p, int64_t q) { return firsts[p] < firsts[q]; });
  for (int64_t k = 0; k < u; ++k)
    rank[order[k]] = k;
  std::vector<int64_t> shape{u};
  if (axis) {
    shape = x.shape();
    shape[*axis] = u;
  }
  Tensor y(x.dtype(), shape);
  std::vector<int64_t> indices(u), sortedCounts(u), inverseOut(n);
  for (int64_t k = 0; k < u; ++k) {
    int64_t slice = firsts[order[k]];
    indices[k] = slice;
    sortedCounts[k] = counts[order[k]];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e)
        copyElement(x, (o * n + slice) * inner + e, y, (o * u + k) * inner + e);
  }
  for (int64_t i = 0; i < n; ++i)
    inverseOut[i] = rank[inverse[i]];
  results.push_back(std::move(y));
  results.push_back(Tensor::fromInt64(indices));
  results.push_back(Tensor::fromInt64(inverseOut));
  results.push_back(Tensor::fromInt64(sortedCounts));
  return success();
}

//===----------------------------------------------------------------------===//
// NonMaxSuppression
//===----------------------------------------------------------------------===//

LogicalResult evalNonMaxSuppression(Operation *op,
                                    ArrayRef<const Tensor *> operands,
                                    std::vector<Tensor> &results) {
  auto nms = cast<NonMaxSuppressionOp>(op);
  const Tensor &boxes = *operands[0], &scores = *operands[1];
  unsigned next = 2;
  int64_t maxPerClass = 0;
  double iouThreshold = 0, scoreThreshold = -INFINITY;
  bool hasScoreThreshold = false;
  if (nms.getMaxOutputBoxesPerClass()) {
    const Tensor &t = *operands[next++];
    if (t.numElements() > 0)
      maxPerClass = t.getInt(0);
  }
  if (nms.getIouThreshold()) {
    const Tensor &t = *operands[next++];
    if (t.numElements() > 0)
      iouThreshold = t.getDouble(0);
  }
  if (nms.getScoreThreshold()) {
    const Tensor &t = *operands[next++];
    if (t.numElements() > 0) {
      scoreThreshold = t.getDouble(0);
      hasScoreThreshold = true;
    }
  }
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 ||
      scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    return op->emitOpError("boxes ")
           << boxes.describe() << " and scores " << scores.describe()
           << " must be [B, N, 4] and [B, C, N]";
  int64_t batches = boxes.dim(0), count = boxes.dim(1), classes = scores.dim(1);
  bool centered = nms.getCenterPointBox();
  // Boxes as (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2.
  auto corners = [&](int64_t b, int64_t i) {
    double v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = boxes.getDouble((b * count + i) * 4 + k);
    std::array<double, 4> c;
    if (centered) {
      c = {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
    } else {
      c = {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]),
           std::max(v[1], v[3])};
    }
    return c;
  };
  auto iou = [&](const std::array<double, 4> &p, const std::array<double, 4> &q) {
    double h = std::min(p[2], q[2]) - std::max(p[0], q[0]);
    double w = std::min(p[3], q[3]) - std::max(p[1], q[1]);
    if (h <= 0 || w <= 0)
      return 0.0;
    double inter = h * w;
    double areaP = (p[2] - p[0]) * (p[3] - p[1]);
    double areaQ = (q[2] - q[0]) * (q[3] - q[1]);
    double uni = areaP + areaQ - inter;
    if (areaP <= 0 || areaQ <= 0 || uni <= 0)
      return 0.0;
    return inter / uni;
  };
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < count; ++i) {
        double score = scores.getDouble((b * classes + c) * count + i);
        if (!hasScoreThreshold || score > scoreThreshold)
          candidates.push_back(i);
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t p, int64_t q) {
                         return scores.getDouble((b * classes + c) * count + p) >
                                scores.getDouble((b * classes + c) * count + q);
                       });
      std::vector<std::array<double, 4>> kept;
      for (int64_t i : candidates) {
        if ((int64_t)kept.size() >= maxPerClass)
          break;
        auto box = corners(b, i);
        bool suppressed = llvm::any_of(kept, [&](const auto &k) {
          return iou(k, box) > iouThreshold;
        });
        if (suppressed)
          continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  Tensor out(DType::I64, {(int64_t)selected.size() / 3, 3});
  for (size_t i = 0; i < selected.size(); ++i)
    out.setInt(i, selected[i]);
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

LogicalResult evalRoiAlign(Operation *op, ArrayRef<const Tensor *> operands,
                           std::vector<Tensor> &results) {
  auto align = cast<RoiAlignOp>(op);
  const Tensor &x = *operands[0], &rois = *operands[1],
               &batchIndices = *operands[2];
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 ||
      batchIndices.rank() != 1 || batchIndices.dim(0) != rois.dim(0))
    return op->emitOpError("expects X [N, C, H, W], rois [R, 4], batch_indices [R]");
  int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  int64_t pooledH = align.getOutputHeight(), pooledW = align.getOutputWidth();
  int64_t samplingRatio = align.getSamplingRatio();
  double spatialScale = align.getSpatialScale().convertToFloat();
  bool halfPixel = align.getCoordinateTransformationMode() == "half_pixel";
  bool maxMode = align.getMode() == "max";
  int64_t numRois = rois.dim(0);
  if (failed(checkResultSize(op, {numRois, channels, pooledH, pooledW})) ||
      failed(checkResultSize(op, {pooledH, pooledW, samplingRatio,
                                  samplingRatio})))
    return failure();
  Tensor out(x.dtype(), {numRois, channels, pooledH, pooledW});
  struct Tap {
    int64_t pos[4] = {0, 0, 0, 0};
    double w[4] = {0, 0, 0, 0};
  };
  for (int64_t n = 0; n < numRois; ++n) {
    int64_t batch = batchIndices.getInt(n);
    if (batch < 0 || batch >= x.dim(0))
      return op->emitOpError("batch index ") << batch << " out of range";
    double offset = halfPixel ? 0.5 : 0.0;
    double startW = rois.getDouble(n * 4 + 0) * spatialScale - offset;
    double startH = rois.getDouble(n * 4 + 1) * spatialScale - offset;
    double endW = rois.getDouble(n * 4 + 2) * spatialScale - offset;
    double endH = rois.getDouble(n * 4 + 3) * spatialScale - offset;
    double roiW = endW - startW, roiH = endH - startH;
    if (!halfPixel) {
      roiW = std::max(roiW, 1.0);
      roiH = std::max(roiH, 1.0);
    }
    if (!std::isfinite(roiW) || !std::isfinite(roiH))
      return op->emitOpError("roi ") << n << " is not finite";
    double binH = roiH / pooledH, binW = roiW / pooledW;
    int64_t gridH = samplingRatio > 0 ? samplingRatio
                                      : (int64_t)std::ceil(roiH / pooledH);
    int64_t gridW = samplingRatio > 0 ? samplingRatio
                                      : (int64_t)std::ceil(roiW / pooledW);
    if (failed(checkResultSize(op, {pooledH, pooledW, gridH, gridW})))
      return failure();
    int64_t count = std::max<int64_t>(gridH * gridW, 1);
    // Bilinear taps of every sample point, shared by all channels.
    std::vector<Tap> taps;
    for (int64_t ph = 0; ph < pooledH; ++ph)
      for (int64_t pw = 0; pw < pooledW; ++pw)
        for (int64_t iy = 0; iy < gridH; ++iy)
          for (int64_t ix = 0; ix < gridW; ++ix) {
            double y = startH + ph * binH + (iy + 0.5) * binH / gridH;
            double xx = startW + pw * binW + (ix + 0.5) * binW / gridW;
            Tap tap;
            if (y < -1.0 || y > height || xx < -1.0 || xx > width) {
              taps.push_back(tap);
              continue;
            }
            y = std::max(y, 0.0);
            xx = std::max(xx, 0.0);
            int64_t yLow = (int64_t)y, xLow = (int64_t)xx, yHigh, xHigh;
            if (yLow >= height - 1) {
              yHigh = yLow = height - 1;
              y = yLow;
            } else {
              yHigh = yLow + 1;
            }
            if (xLow >= width - 1) {
              xHigh = xLow = width - 1;
              xx = xLow;
            } else {
              xHigh = xLow + 1;
            }
            double ly = y - yLow, lx = xx - xLow, hy = 1 - ly, hx = 1 - lx;
            tap.pos[0] = yLow * width + xLow;
            tap.pos[1] = yLow * width + xHigh;
            tap.pos[2] = yHigh * width + xLow;
            tap.pos[3] = yHigh * width + xHigh;
            tap.w[0] = hy * hx;
            tap.w[1] = hy * lx;
            tap.w[2] = ly * hx;
            tap.w[3] = ly * lx;
            taps.push_back(tap);
          }
    for (int64_t c = 0; c < channels; ++c) {
      int64_t base = (batch * channels + c) * height * width;
      size_t t = 0;
      for (int64_t ph = 0; ph < pooledH; ++ph) {
        for (int64_t pw = 0; pw < pooledW; ++pw) {
          double value = 0;
          bool first = true;
          for (int64_t s = 0; s < gridH * gridW; ++s, ++t) {
            const Tap &tap = taps[t];
            if (maxMode) {
              double v = -INFINITY;
              for (int k = 0; k < 4; ++k)
                v = std::max(v, tap.w[k] * x.getDouble(base + tap.pos[k]));
              value = first ? v : std::max(value, v);
              first = false;
            } else {
              for (int k = 0; k < 4; ++k)
                value += tap.w[k] * x.getDouble(base + tap.pos[k]);
            }
          }
          if (!maxMode)
            value /= count;
          out.setDouble(((n * channels + c) * pooledH + ph) * pooledW + pw,
                        value);
        }
      }
    }
  }
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// GridSample
//===----------------------------------------------------------------------===//

/// Reflects `x` into [lo, hi] by bouncing off the nearer border.
double reflect(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0)
    return lo;
  if (x < lo) {
    double dx = lo - x, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

LogicalResult evalGridSample(Operation *op, ArrayRef<const Tensor *> operands,
                             std::vector<Tensor> &results) {
  auto sample = cast<GridSampleOp>(op);
  const Tensor &x = *operands[0], &grid = *operands[1];
  if (x.rank() != 4 || grid.rank() != 4 || grid.dim(3) != 2 ||
      grid.dim(0) != x.dim(0))
    return op->emitOpError("expects X [N, C, H, W] and grid [N, H_out, W_out, 2]");
  int64_t batches = x.dim(0), channels = x.dim(1), height = x.dim(2),
          width = x.dim(3), outH = grid.dim(1), outW = grid.dim(2);
  StringRef mode = sample.getMode(), padding = sample.getPaddingMode();
  bool alignCorners = sample.getAlignCorners();
  double minX = alignCorners ? 0.0 : -0.5, maxX = alignCorners ? width - 1.0 : width - 0.5;
  double minY = alignCorners ? 0.0 : -0.5, maxY = alignCorners ? height - 1.0 : height - 0.5;
  auto denormalize = [&](double v, int64_t length) {
    return (double)(float)(alignCorners ? (v + 1) / 2.0 * (length - 1)
                                        : ((v + 1) * length - 1) / 2.0);
  };
  Tensor out(x.dtype(), {batches, channels, outH, outW});
  for (int64_t n = 0; n < batches; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      int64_t base = (n * channels + c) * height * width;
      // The pixel at integer (row, col) under the padding mode.
      auto pixel = [&](int64_t row, int64_t col) -> double {
        if (padding == "zeros") {
          if (row < 0 || row >= height || col < 0 || col >= width)
            return 0.0;
        } else if (padding == "border") {
          row = std::clamp<int64_t>(row, 0, height - 1);
          col = std::clamp<int64_t>(col, 0, width - 1);
        } else {
          row = (int64_t)reflect(row, minY, maxY);
          col = (int64_t)reflect(col, minX, maxX);
          row = std::clamp<int64_t>(row, 0, height - 1);
          col = std::clamp<int64_t>(col, 0, width - 1);
        }
        return x.getDouble(base + row * width + col);
      };
      for (int64_t oy = 0; oy < outH; ++oy) {
        for (int64_t ox = 0; ox < outW; ++ox) {
          int64_t g = ((n * outH + oy) * outW + ox) * 2;
          double px = denormalize(grid.getDouble(g), width);
          double py = denormalize(grid.getDouble(g + 1), height);
          int64_t flat = ((n * channels + c) * outH + oy) * outW + ox;
          if (!std::isfinite(px) || !std::isfinite(py)) {
            // No pixel to read: NaN for floats, as a NaN coordinate would
            // give through the interpolation arithmetic.
            out.setDouble(flat, NAN);
            continue;
          }
          if (padding == "zeros") {
            // Far outside, every tap reads zero: clamping keeps the integer
            // conversions below defined without changing the result.
            px = std::clamp(px, -8.0, width + 8.0);
            py = std::clamp(py, -8.0, height + 8.0);
          }
          if (mode == "nearest") {
            px = std::nearbyint(px);
            py = std::nearbyint(py);
          }
          if (px < minX || px > maxX) {
            if (padding == "border")
              px = std::clamp(px, 0.0, width - 1.0);
            else if (padding == "reflection")
              px = reflect(px, minX, maxX);
          }
          if (py < minY || py > maxY) {
            if (padding == "border")
              py = std::clamp(py, 0.0, height - 1.0);
            else if (padding == "reflection")
              py = reflect(py, minY, maxY);
          }
          double value;
          if (mode == "nearest") {
            value = pixel((int64_t)py, (int64_t)px);
          } else if (mode == "bilinear") {
            int64_t x0 = (int64_t)std::floor(px), y0 = (int64_t)std::floor(py);
            double fx = px - x0, fy = py - y0;
            double top = (1 - fx) * pixel(y0, x0) + fx * pixel(y0, x0 + 1);
            double bottom = (1 - fx) * pixel(y0 + 1, x0) + fx * pixel(y0 + 1, x0 + 1);
            value = (1 - fy) * top + fy * bottom;
          } else {
            int64_t x0 = (int64_t)std::floor(px), y0 = (int64_t)std::floor(py);
            std::vector<double> wx = cubicWeights(px - x0, -0.75);
            std::vector<double> wy = cubicWeights(py - y0, -0.75);
            value = 0;
            for (int i = 0; i < 4; ++i) {
              double row = 0;
              for (int j = 0; j < 4; ++j)
                row += wx[j] * pixel(y0 - 1 + i, x0 - 1 + j);
              value += wy[i] * row;
            }
          }
          out.setDouble(flat, value);
        }
      }
    }
  }
  results.push_back(std::move(out));
  return success();
}

} // namespace

std::vector<ResizeSample> resizeAxis(ResizeOp resize, int64_t in, int64_t out,
                                     double scale, double roiStart, double roiEnd) {
  StringRef mode = resize.getMode();
  StringRef transform = resize.getCoordinateTransformationMode();
  StringRef nearest = resize.getNearestMode();
  double a = resize.getCubicCoeffA().convertToFloat();
  bool excludeOutside = resize.getExcludeOutside();
  // The reference uses the unrounded output length in the transforms.
  double outLength = scale * in;
  std::vector<ResizeSample> samples(out);
  for (int64_t y = 0; y < out; ++y) {
    ResizeSample &s = samples[y];
    double x;
    if (transform == "align_corners") {
      x = outLength == 1 ? 0.0 : y * (in - 1) / (outLength - 1);
    } else if (transform == "asymmetric") {
      x = y / scale;
    } else if (transform == "tf_crop_and_resize") {
      x = outLength == 1 ? (roiEnd - roiStart) * (in - 1) / 2
                         : y * (roiEnd - roiStart) * (in - 1) / (outLength - 1);
      x += roiStart * (in - 1);
      if (x < 0 || x > in - 1) {
        s.extrapolate = true;
        continue;
      }
    } else if (transform == "pytorch_half_pixel") {
      x = outLength == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    } else if (transform == "tf_half_pixel_for_nn") {
      x = (y + 0.5) / scale;
    } else {
      x = (y + 0.5) / scale - 0.5;
    }
    // Prefer the pixel left of x: an integer x sits at ratio 1 past `base`.
    double floorX = std::floor(x);
    bool integral = x == floorX;
    int64_t base = integral ? (int64_t)floorX - 1 : (int64_t)floorX;
    double ratio = integral ? 1.0 : x - floorX;
    std::vector<double> weights;
    if (mode == "nearest") {
      bool up;
      if (integral || nearest == "ceil")
        up = true;
      else if (nearest == "floor")
        up = false;
      else if (nearest == "round_prefer_ceil")
        up = ratio >= 0.5;
      else
        up = ratio > 0.5;
      weights = {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
    } else if (mode == "linear") {
      weights = {1 - ratio, ratio};
    } else {
      weights = cubicWeights(ratio, a);
    }
    int64_t n = weights.size(), first = base - (n / 2 - 1);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t tap = first + i;
      if (excludeOutside && (tap < 0 || tap >= in))
        weights[i] = 0;
      total += weights[i];
      s.taps.push_back(std::clamp<int64_t>(tap, 0, in - 1));
    }
    if (excludeOutside && total != 0)
      for (double &w : weights)
        w /= total;
    s.weights = std::move(weights);
  }
  return samples;
}

void registerIndexingEvaluators(EvalRegistry &r) {
  r.add(GatherOp::getOperationName(), evalGather);
  r.add(GatherElementsOp::getOperationName(), evalGatherElements);
  r.add(GatherNDOp::getOperationName(), evalGatherND);
  r.add(ScatterElementsOp::getOperationName(), evalScatterElements);
  r.add(ScatterNDOp::getOperationName(), evalScatterND);
  r.add(OneHotOp::getOperationName(), evalOneHot);
  r.add(NonZeroOp::getOperationName(), evalNonZero);
  r.add(CompressOp::getOperationName(), evalCompress);
  r.add(ResizeOp::getOperationName(), evalResize);
  r.add(UniqueOp::getOperationName(), evalUnique);
  r.add(NonMaxSuppressionOp::getOperationName(), evalNonMaxSuppression);
  r.add(RoiAlignOp::getOperationName(), evalRoiAlign);
  r.add(GridSampleOp::getOperationName(), evalGridSample);
}

} // namespace sluice
