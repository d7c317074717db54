//===- Shape.cpp - evaluators for shape and data-movement ops -------------===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

LogicalResult evalShape(Operation *op, ArrayRef<const Tensor *> operands,
                        std::vector<Tensor> &results) {
  auto shapeOp = cast<ShapeOp>(op);
  const auto &shape = operands[0]->shape();
  int64_t rank = shape.size();
  auto [start, end] = shapeRange(rank, shapeOp.getStart(), shapeOp.getEnd());
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(shape[i]);
  results.push_back(Tensor::fromInt64(dims));
  return success();
}

LogicalResult evalReshape(Operation *op, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> target = operands[1]->toInt64Vector();
  bool allowZero = cast<ReshapeOp>(op).getAllowzero();
  int64_t inferIndex = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= x.shape().size())
        return op->emitOpError("shape entry ") << i << " copies a missing dim";
      target[i] = x.dim(i);
    }
    if (target[i] == -1) {
      if (inferIndex >= 0)
        return op->emitOpError("shape has more than one -1");
      inferIndex = i;
      continue;
    }
    if (target[i] < 0)
      return op->emitOpError("shape has negative entry ") << target[i];
    known *= target[i];
  }
  if (inferIndex >= 0) {
    if (known == 0 || x.numElements() % known)
      return op->emitOpError("cannot infer -1 reshaping ") << x.describe();
    target[inferIndex] = x.numElements() / known;
  } else if (known != x.numElements()) {
    return op->emitOpError("cannot reshape ")
           << x.describe() << " to " << shapeToString(target);
  }
  results.push_back(x.reshaped(target));
  return success();
}

LogicalResult evalTranspose(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  ArrayRef<int64_t> perm = cast<TransposeOp>(op).getPerm();
  std::vector<int64_t> outShape;
  for (int64_t p : perm)
    outShape.push_back(x.dim(p));
  // Iterate the output with the input's strides permuted.
  std::vector<int64_t> inStrides = x.strides(), permuted;
  for (int64_t p : perm)
    permuted.push_back(inStrides[p]);
  Tensor out(x.dtype(), outShape);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  int64_t total = out.numElements(), rank = outShape.size();
  std::vector<int64_t> counter(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(dst + i * width, src + offset * width, width);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++counter[d] < outShape[d]) {
        offset += permuted[d];
        break;
      }
      offset -= permuted[d] * (outShape[d] - 1);
      counter[d] = 0;
    }
  }
  results.push_back(std::move(out));
  return success();
}


/// Shapes that come from runtime values (ConstantOfShape, Range, Expand,
/// Tile, Pad) are checked before allocating: a bad model must get an error,
/// not an overflowed element count or an allocation the machine cannot hold.
/// 2^32 elements is far beyond what the reference evaluator is used for.
LogicalResult checkShape(Operation *op, const std::vector<int64_t> &shape) {
  constexpr int64_t kMaxElements = int64_t(1) << 32;
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return op->emitOpError("result has negative dim ") << d;
    if (d != 0 && count > kMaxElements / d)
      return op->emitOpError("result of shape ")
             << shapeToString(shape) << " is too large to evaluate";
    count *= d;
  }
  return success();
}

/// Builds a tensor of `outShape` whose element at each index is copied from
/// `x` at the flat index `source(index)`, or from `fill` (one element of x's
/// type) where it returns -1.
template <typename Fn>
Tensor gatherFrom(const Tensor &x, const std::vector<int64_t> &outShape,
                  Fn &&source, const Tensor *fill = nullptr) {
  Tensor out(x.dtype(), outShape);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  auto *fillData = fill ? static_cast<const char *>(fill->rawData()) : nullptr;
  std::vector<int64_t> index;
  for (int64_t i = 0, total = out.numElements(); i < total; ++i) {
    unravelIndex(i, outShape, index);
    int64_t from = source(index);
    if (from >= 0)
      std::memcpy(dst + i * width, src + from * width, width);
    else if (fillData)
      std::memcpy(dst + i * width, fillData, width);
  }
  return out;
}

/// Normalizes runtime axes against `rank`, rejecting repeats.
FailureOr<std::vector<int64_t>> normalizeAxes(Operation *op,
                                              const std::vector<int64_t> &axes,
                                              int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    auto a = normalizeAxis(op, axis, rank);
    if (failed(a))
      return failure();
    if (seen[*a])
      return op->emitOpError("axis ") << axis << " is repeated";
    seen[*a] = true;
    out.push_back(*a);
  }
  return out;
}

LogicalResult evalSlice(Operation *op, ArrayRef<const Tensor *> operands,
                        std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> starts = operands[1]->toInt64Vector(),
                       ends = operands[2]->toInt64Vector(),
                       axesIn = operands[3]->toInt64Vector(),
                       steps = operands[4]->toInt64Vector();
  if (starts.size() != axesIn.size() || ends.size() != axesIn.size() ||
      steps.size() != axesIn.size())
    return op->emitOpError("starts, ends, axes and steps differ in length");
  auto axes = normalizeAxes(op, axesIn, x.rank());
  if (failed(axes))
    return failure();
  std::vector<int64_t> first(x.rank(), 0), step(x.rank(), 1), shape = x.shape();
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t a = (*axes)[i];
    if (steps[i] == 0)
      return op->emitOpError("step cannot be 0");
    auto [s, n] = sliceRange(x.dim(a), starts[i], ends[i], steps[i]);
    first[a] = s;
    step[a] = steps[i];
    shape[a] = n;
  }
  std::vector<int64_t> strides = x.strides();
  results.push_back(gatherFrom(x, shape, [&](const std::vector<int64_t> &idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      flat += (first[d] + idx[d] * step[d]) * strides[d];
    return flat;
  }));
  return success();
}

/// Copies `pieces` along `axis` into one tensor (concat), or one tensor into
/// `pieces` (split), as blocks of contiguous memory.
void copyBlocks(const Tensor &from, int64_t fromOffset, Tensor &to,
                int64_t toOffset, int64_t axis, int64_t length) {
  size_t width = dtypeSize(from.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= from.dim(d);
  for (int64_t d = axis + 1; d < from.rank(); ++d)
    inner *= from.dim(d);
  auto *src = static_cast<const char *>(from.rawData());
  auto *dst = static_cast<char *>(to.mutableData());
  int64_t fromRow = from.dim(axis) * inner, toRow = to.dim(axis) * inner;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + (o * toRow + toOffset * inner) * width,
                src + (o * fromRow + fromOffset * inner) * width,
                length * inner * width);
}

LogicalResult evalConcat(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  const Tensor &first = *operands[0];
  auto axis = normalizeAxis(op, cast<ConcatOp>(op).getAxis(), first.rank());
  if (failed(axis))
    return failure();
  std::vector<int64_t> shape = first.shape();
  shape[*axis] = 0;
  for (const Tensor *t : operands) {
    if (t->rank() != first.rank())
      return op->emitOpError("inputs differ in rank");
    for (int64_t d = 0; d < t->rank(); ++d)
      if (d != *axis && t->dim(d) != first.dim(d))
        return op->emitOpError("inputs differ in dim ") << d;
    shape[*axis] += t->dim(*axis);
  }
  Tensor out(first.dtype(), shape);
  int64_t offset = 0;
  for (const Tensor *t : operands) {
    if (t->numElements())
      copyBlocks(*t, 0, out, offset, *axis, t->dim(*axis));
    offset += t->dim(*axis);
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalSplit(Operation *op, ArrayRef<const Tensor *> operands,
                        std::vector<Tensor> &results) {
  auto split = cast<SplitOp>(op);
  const Tensor &x = *operands[0];
  auto axis = normalizeAxis(op, split.getAxis(), x.rank());
  if (failed(axis))
    return failure();
  int64_t count = split.getNumOutputs(), dim = x.dim(*axis);
  std::vector<int64_t> sizes;
  if (split.getSizes()) {
    sizes = operands[1]->toInt64Vector();
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0)
        return op->emitOpError("split size ") << s << " is negative";
      total += s;
    }
    if ((int64_t)sizes.size() != count || total != dim)
      return op->emitOpError("split sizes do not cover dim ") << dim;
  } else {
    int64_t chunk = (dim + count - 1) / count;
    for (int64_t i = 0; i < count; ++i)
      sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  }
  int64_t offset = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> shape = x.shape();
    shape[*axis] = size;
    Tensor piece(x.dtype(), shape);
    if (piece.numElements())
      copyBlocks(x, offset, piece, 0, *axis, size);
    offset += size;
    results.push_back(std::move(piece));
  }
  return success();
}

LogicalResult evalSqueeze(Operation *op, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> shape;
  if (operands.size() < 2) {
    for (int64_t d : x.shape())
      if (d != 1)
        shape.push_back(d);
  } else {
    auto axes = normalizeAxes(op, operands[1]->toInt64Vector(), x.rank());
    if (failed(axes))
      return failure();
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (!llvm::is_contained(*axes, d))
        shape.push_back(x.dim(d));
      else if (x.dim(d) != 1)
        return op->emitOpError("squeeze of dim ") << d << " of size " << x.dim(d);
    }
  }
  results.push_back(x.reshaped(shape));
  return success();
}

LogicalResult evalUnsqueeze(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> axesIn = operands[1]->toInt64Vector();
  int64_t rank = x.rank() + axesIn.size();
  auto axes = normalizeAxes(op, axesIn, rank);
  if (failed(axes))
    return failure();
  std::vector<int64_t> shape;
  for (int64_t d = 0, next = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*axes, d) ? 1 : x.dim(next++));
  results.push_back(x.reshaped(shape));
  return success();
}

LogicalResult evalExpand(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> target = operands[1]->toInt64Vector();
  for (int64_t d : target)
    if (d < 0)
      return op->emitOpError("shape has negative dim ") << d;
  auto shape = broadcastShapes(op, {x.shape(), target});
  if (failed(shape) || failed(checkShape(op, *shape)))
    return failure();
  Tensor out(x.dtype(), *shape);
  size_t width = dtypeSize(x.dtype());
  auto *src = static_cast<const char *>(x.rawData());
  auto *dst = static_cast<char *>(out.mutableData());
  forEachBroadcast(*shape, {x.shape()},
                   [&](int64_t i, const std::vector<int64_t> &in) {
                     std::memcpy(dst + i * width, src + in[0] * width, width);
                   });
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalTile(Operation *op, ArrayRef<const Tensor *> operands,
                       std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  std::vector<int64_t> repeats = operands[1]->toInt64Vector();
  if ((int64_t)repeats.size() != x.rank())
    return op->emitOpError("has ") << repeats.size() << " repeats for rank "
                                   << x.rank();
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (repeats[d] < 0)
      return op->emitOpError("repeat ") << repeats[d] << " is negative";
    if (x.dim(d) && repeats[d] > (int64_t(1) << 32))
      return op->emitOpError("repeat ") << repeats[d] << " is too large";
    shape.push_back(x.dim(d) * repeats[d]);
  }
  if (failed(checkShape(op, shape)))
    return failure();
  std::vector<int64_t> strides = x.strides();
  results.push_back(gatherFrom(x, shape, [&](const std::vector<int64_t> &idx) {
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      flat += (idx[d] % x.dim(d)) * strides[d];
    return flat;
  }));
  return success();
}

LogicalResult evalPad(Operation *op, ArrayRef<const Tensor *> operands,
                      std::vector<Tensor> &results) {
  auto pad = cast<PadOp>(op);
  const Tensor &x = *operands[0];
  std::vector<int64_t> pads = operands[1]->toInt64Vector();
  int64_t rank = x.rank();
  if ((int64_t)pads.size() != 2 * rank)
    return op->emitOpError("has ") << pads.size() << " pads for rank " << rank;
  Tensor fill(x.dtype(), {});
  if (pad.getConstantValue()) {
    const Tensor &value = *operands[2];
    if (value.numElements() > 1)
      return op->emitOpError("constant_value must hold one element");
    if (value.numElements() == 1)
      fill = value.castTo(x.dtype()).reshaped({});
  }
  PadMode mode = pad.getMode();
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    constexpr int64_t kMaxPad = int64_t(1) << 32;
    if (pads[d] > kMaxPad || pads[d] < -kMaxPad || pads[d + rank] > kMaxPad ||
        pads[d + rank] < -kMaxPad)
      return op->emitOpError("pads of dim ") << d << " are too large";
    shape.push_back(x.dim(d) + pads[d] + pads[d + rank]);
    if (shape.back() < 0)
      return op->emitOpError("pads crop dim ") << d << " below zero";
    if (mode != PadMode::constant && x.dim(d) == 0 && shape.back() > 0)
      return op->emitOpError("cannot pad an empty dim in this mode");
  }
  if (failed(checkShape(op, shape)))
    return failure();
  std::vector<int64_t> strides = x.strides();
  results.push_back(gatherFrom(
      x, shape,
      [&](const std::vector<int64_t> &idx) -> int64_t {
        int64_t flat = 0;
        for (int64_t d = 0; d < rank; ++d) {
          int64_t dim = x.dim(d), i = idx[d] - pads[d];
          if (i < 0 || i >= dim) {
            switch (mode) {
            case PadMode::constant:
              return -1;
            case PadMode::edge:
              i = std::clamp<int64_t>(i, 0, dim - 1);
              break;
            case PadMode::wrap:
              i = ((i % dim) + dim) % dim;
              break;
            case PadMode::reflect:
              if (dim == 1) {
                i = 0;
                break;
              }
              // Mirror without repeating the edge: period 2 * (dim - 1).
              i = std::abs(i) % (2 * (dim - 1));
              if (i >= dim)
                i = 2 * (dim - 1) - i;
              break;
            }
          }
          flat += i * strides[d];
        }
        return flat;
      },
      &fill));
  return success();
}

LogicalResult evalConstantOfShape(Operation *op,
                                  ArrayRef<const Tensor *> operands,
                                  std::vector<Tensor> &results) {
  auto value = tensorFromAttr(cast<ConstantOfShapeOp>(op).getValue());
  if (failed(value))
    return op->emitOpError("unsupported value attribute");
  std::vector<int64_t> shape = operands[0]->toInt64Vector();
  if (failed(checkShape(op, shape)))
    return failure();
  Tensor scalar = value->reshaped({});
  results.push_back(gatherFrom(
      scalar, shape, [](const std::vector<int64_t> &) { return int64_t(0); }));
  return success();
}

LogicalResult evalRange(Operation *op, ArrayRef<const Tensor *> operands,
                        std::vector<Tensor> &results) {
  for (const Tensor *t : operands)
    if (t->numElements() != 1)
      return op->emitOpError("start, limit and delta must be scalars");
  const Tensor &start = *operands[0], &limit = *operands[1],
               &delta = *operands[2];
  DType dtype = start.dtype();
  constexpr double kMaxLength = double(int64_t(1) << 32);
  if (isFloatDType(dtype)) {
    double s = start.getDouble(0), l = limit.getDouble(0), d = delta.getDouble(0);
    if (d == 0)
      return op->emitOpError("delta cannot be 0");
    double count = std::ceil((l - s) / d);
    if (std::isnan(count) || count > kMaxLength)
      return op->emitOpError("range from ") << s << " to " << l << " by " << d
                                            << " is not a finite, evaluable length";
    int64_t n = std::max<int64_t>(0, (int64_t)count);
    std::vector<double> values;
    for (int64_t i = 0; i < n; ++i)
      values.push_back(s + i * d);
    results.push_back(Tensor::fromDoubles(dtype, {n}, values));
    return success();
  }
  int64_t s = start.getInt(0), l = limit.getInt(0), d = delta.getInt(0);
  if (d == 0)
    return op->emitOpError("delta cannot be 0");
  // 128-bit so that extreme limits (INT64_MAX) cannot overflow the span.
  __int128 span = (__int128)l - s;
  __int128 count = 0;
  if (span != 0 && (span > 0) == (d > 0))
    count = (span + d + (d > 0 ? -1 : 1)) / d;
  if (count > (__int128)kMaxLength)
    return op->emitOpError("range is too long to evaluate");
  int64_t n = (int64_t)count;
  Tensor out(dtype, {n});
  for (int64_t i = 0; i < n; ++i)
    out.setInt(i, s + i * d);
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalTrilu(Operation *op, ArrayRef<const Tensor *> operands,
                        std::vector<Tensor> &results) {
  auto trilu = cast<TriluOp>(op);
  const Tensor &x = *operands[0];
  if (x.rank() < 2)
    return op->emitOpError("input must have rank >= 2");
  int64_t k = 0;
  if (trilu.getK()) {
    if (operands[1]->numElements() != 1)
      return op->emitOpError("k must be a scalar");
    k = operands[1]->getInt(0);
  }
  bool upper = trilu.getUpper();
  Tensor zero(x.dtype(), {});
  results.push_back(gatherFrom(
      x, x.shape(),
      [&](const std::vector<int64_t> &idx) -> int64_t {
        int64_t i = idx[idx.size() - 2], j = idx.back();
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep)
          return -1;
        int64_t flat = 0;
        for (size_t d = 0; d < idx.size(); ++d)
          flat = flat * x.dim(d) + idx[d];
        return flat;
      },
      &zero));
  return success();
}

LogicalResult evalReverseSequence(Operation *op,
                                  ArrayRef<const Tensor *> operands,
                                  std::vector<Tensor> &results) {
  auto rs = cast<ReverseSequenceOp>(op);
  const Tensor &x = *operands[0];
  int64_t batchAxis = rs.getBatchAxis(), timeAxis = rs.getTimeAxis();
  if (x.rank() < 2)
    return op->emitOpError("input must have rank >= 2");
  std::vector<int64_t> lens = operands[1]->toInt64Vector();
  if ((int64_t)lens.size() != x.dim(batchAxis))
    return op->emitOpError("has ") << lens.size()
                                   << " sequence lengths for a batch of "
                                   << x.dim(batchAxis);
  for (int64_t len : lens)
    if (len < 0 || len > x.dim(timeAxis))
      return op->emitOpError("sequence length ") << len << " out of range";
  std::vector<int64_t> strides = x.strides();
  results.push_back(gatherFrom(x, x.shape(), [&](const std::vector<int64_t> &idx) {
    int64_t len = lens[idx[batchAxis]];
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t i = idx[d];
      if ((int64_t)d == timeAxis && i < len)
        i = len - 1 - i;
      flat += i * strides[d];
    }
    return flat;
  }));
  return success();
}

} // namespace

void registerShapeEvaluators(EvalRegistry &r) {
  r.add(ShapeOp::getOperationName(), evalShape);
  r.add(ReshapeOp::getOperationName(), evalReshape);
  r.add(TransposeOp::getOperationName(), evalTranspose);
  r.add(SliceOp::getOperationName(), evalSlice);
  r.add(ConcatOp::getOperationName(), evalConcat);
  r.add(SplitOp::getOperationName(), evalSplit);
  r.add(SqueezeOp::getOperationName(), evalSqueeze);
  r.add(UnsqueezeOp::getOperationName(), evalUnsqueeze);
  r.add(ExpandOp::getOperationName(), evalExpand);
  r.add(TileOp::getOperationName(), evalTile);
  r.add(PadOp::getOperationName(), evalPad);
  r.add(ConstantOfShapeOp::getOperationName(), evalConstantOfShape);
  r.add(RangeOp::getOperationName(), evalRange);
  r.add(TriluOp::getOperationName(), evalTrilu);
  r.add(ReverseSequenceOp::getOperationName(), evalReverseSequence);
}

} // namespace sluice
