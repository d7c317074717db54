//===- Linalg.cpp - evaluators for contractions, conv, normalization ------===//
//
// Reference semantics of the linalg family. Floating-point math runs in
// double and rounds once on store; integer contractions (matmul_integer,
// conv_integer) accumulate exactly in int64 and wrap to i32 like ONNX
// Runtime. Normalization statistics are double whatever the input type.
//
//===----------------------------------------------------------------------===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <cmath>
#include <limits>
#include <map>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Advances a multi-dim counter over `shape`; false once it wraps.
bool nextIndex(std::vector<int64_t> &index, ArrayRef<int64_t> shape) {
  for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
    if (++index[d] < shape[d])
      return true;
    index[d] = 0;
  }
  return false;
}

/// Values of a tensor in the accumulation type T (double or int64_t).
template <typename T> std::vector<T> valuesAs(const Tensor &t) {
  if constexpr (std::is_same_v<T, double>)
    return t.toDoubleVector();
  else
    return t.toInt64Vector();
}

template <typename T> void store(Tensor &out, int64_t i, T value) {
  if constexpr (std::is_same_v<T, double>)
    out.setDouble(i, value);
  else
    out.setInt(i, value);
}

//===----------------------------------------------------------------------===//
// MatMul
//===----------------------------------------------------------------------===//

/// NumPy matmul. `lhsZero`/`rhsZero` (integer form only) are subtracted per
/// row of lhs and per column of rhs (a single value applies everywhere).
template <typename T>
LogicalResult
matmulImpl(Operation *op, Tensor a, Tensor b, const std::vector<T> &lhsZero,
           const std::vector<T> &rhsZero, std::vector<Tensor> &results) {
  bool aVector = a.rank() == 1, bVector = b.rank() == 1;
  if (a.rank() == 0 || b.rank() == 0)
    return op->emitOpError("operands must have rank >= 1");
  if (aVector)
    a = a.reshaped({1, a.dim(0)});
  if (bVector)
    b = b.reshaped({b.dim(0), 1});
  int64_t m = a.dim(a.rank() - 2), k = a.dim(a.rank() - 1);
  int64_t n = b.dim(b.rank() - 1);
  if (b.dim(b.rank() - 2) != k)
    return op->emitOpError("contraction dims differ: ")
           << a.describe() << " x " << b.describe();
  if (lhsZero.size() > 1 && (int64_t)lhsZero.size() != m)
    return op->emitOpError("lhs zero point has ")
           << lhsZero.size() << " values for " << m << " rows";
  if (rhsZero.size() > 1 && (int64_t)rhsZero.size() != n)
    return op->emitOpError("rhs zero point has ")
           << rhsZero.size() << " values for " << n << " columns";
  std::vector<int64_t> aBatch(a.shape().begin(), a.shape().end() - 2);
  std::vector<int64_t> bBatch(b.shape().begin(), b.shape().end() - 2);
  auto batch = broadcastShapes(op, {aBatch, bBatch});
  if (failed(batch))
    return failure();
  std::vector<int64_t> outShape = *batch;
  outShape.push_back(m);
  outShape.push_back(n);
  Tensor out(resultDType(op), outShape);
  std::vector<T> av = valuesAs<T>(a), bv = valuesAs<T>(b);
  auto zeroAt = [](const std::vector<T> &z, int64_t i) -> T {
    return z.empty() ? T(0) : z.size() == 1 ? z[0] : z[i];
  };
  std::vector<T> acc(m * n);
  forEachBroadcast(*batch, {aBatch, bBatch},
                   [&](int64_t i, const std::vector<int64_t> &idx) {
                     const T *ap = av.data() + idx[0] * m * k;
                     const T *bp = bv.data() + idx[1] * k * n;
                     std::fill(acc.begin(), acc.end(), T(0));
                     for (int64_t r = 0; r < m; ++r)
                       for (int64_t c = 0; c < k; ++c) {
                         T x = ap[r * k + c] - zeroAt(lhsZero, r);
                         for (int64_t j = 0; j < n; ++j)
                           acc[r * n + j] +=
                               x * (bp[c * n + j] - zeroAt(rhsZero, j));
                       }
                     for (int64_t j = 0; j < m * n; ++j)
                       store<T>(out, i * m * n + j, acc[j]);
                   });
  std::vector<int64_t> finalShape = *batch;
  if (!aVector)
    finalShape.push_back(m);
  if (!bVector)
    finalShape.push_back(n);
  results.push_back(out.reshaped(finalShape));
  return success();
}

LogicalResult evalMatMul(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  if (isFloatDType(resultDType(op)))
    return matmulImpl<double>(op, *operands[0], *operands[1], {}, {}, results);
  return matmulImpl<int64_t>(op, *operands[0], *operands[1], {}, {}, results);
}

LogicalResult evalMatMulInteger(Operation *op,
                                ArrayRef<const Tensor *> operands,
                                std::vector<Tensor> &results) {
  if (operands[2]->rank() > 1 || operands[3]->rank() > 1)
    return op->emitOpError("zero points must be scalars or 1-D");
  return matmulImpl<int64_t>(op, *operands[0], *operands[1],
                             operands[2]->toInt64Vector(),
                             operands[3]->toInt64Vector(), results);
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

struct Window {
  std::vector<int64_t> strides, dilations, padBegin, padEnd;
};

template <typename OpT> Window windowOf(OpT op) {
  Window w;
  w.strides.assign(op.getStrides().begin(), op.getStrides().end());
  w.dilations.assign(op.getDilations().begin(), op.getDilations().end());
  ArrayRef<int64_t> pads = op.getPads();
  size_t spatial = pads.size() / 2;
  w.padBegin.assign(pads.begin(), pads.begin() + spatial);
  w.padEnd.assign(pads.begin() + spatial, pads.end());
  return w;
}

/// Checks window attributes that verification only sees for ranked types.
LogicalResult checkWindow(Operation *op, const Window &win) {
  size_t spatial = win.strides.size();
  if (win.dilations.size() != spatial || win.padBegin.size() != spatial ||
      win.padEnd.size() != spatial)
    return op->emitOpError("strides, dilations and pads disagree in rank");
  for (size_t d = 0; d < spatial; ++d)
    if (win.strides[d] < 1 || win.dilations[d] < 1)
      return op->emitOpError("strides and dilations must be positive");
  return success();
}

/// Checks the runtime shapes of a convolution against its attributes.
LogicalResult checkConvShapes(Operation *op, const Tensor &x, const Tensor &w,
                              const Window &win, int64_t group,
                              bool transposed) {
  if (failed(checkWindow(op, win)))
    return failure();
  if (group < 1)
    return op->emitOpError("group must be positive");
  int64_t spatial = (int64_t)win.strides.size();
  if (x.rank() != spatial + 2 || w.rank() != spatial + 2)
    return op->emitOpError("expects input and weight of rank ")
           << spatial + 2 << ", got " << x.describe() << " and "
           << w.describe();
  if (transposed ? x.dim(1) != w.dim(0) : x.dim(1) != w.dim(1) * group)
    return op->emitOpError("channel mismatch between ")
           << x.describe() << " and weight " << w.describe() << " with group "
           << group;
  if (transposed ? x.dim(1) % group : w.dim(0) % group)
    return op->emitOpError("channels are not divisible by group ") << group;
  return success();
}

/// For every (position a on `outer`, kernel position k), the flat offset of
/// a*stride + k*dilation - padBegin on `target`, or -1 where that falls
/// outside it (into padding). Convolution gathers through this table (outer =
/// output, target = input); transposed convolution scatters (the reverse).
std::vector<int64_t> windowOffsets(ArrayRef<int64_t> outer,
                                   ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> target, const Window &win) {
  int64_t spatial = outer.size();
  int64_t outerSize = product(outer), kSize = product(kernel);
  std::vector<int64_t> offsets(outerSize * kSize, -1);
  std::vector<int64_t> a(spatial, 0), k(spatial, 0);
  for (int64_t ai = 0; ai < outerSize; ++ai) {
    std::fill(k.begin(), k.end(), 0);
    for (int64_t ki = 0; ki < kSize; ++ki) {
      int64_t offset = 0;
      bool inside = true;
      for (int64_t d = 0; d < spatial; ++d) {
        int64_t pos =
            a[d] * win.strides[d] + k[d] * win.dilations[d] - win.padBegin[d];
        if (pos < 0 || pos >= target[d]) {
          inside = false;
          break;
        }
        offset = offset * target[d] + pos;
      }
      if (inside)
        offsets[ai * kSize + ki] = offset;
      nextIndex(k, kernel);
    }
    nextIndex(a, outer);
  }
  return offsets;
}

/// out[n, m, o...] = sum over the group's channels and the kernel of
/// x[n, c, o*s - pb + k*d] * w[m, c', k...], skipping padding.
template <typename T>
std::vector<T> convolve(const std::vector<T> &x, ArrayRef<int64_t> xShape,
                        const std::vector<T> &w, ArrayRef<int64_t> wShape,
                        const Window &win, int64_t group,
                        ArrayRef<int64_t> outShape, T xZero,
                        const std::vector<T> &wZero) {
  int64_t batch = xShape[0], channels = xShape[1], outChannels = wShape[0];
  int64_t cPerGroup = channels / group, mPerGroup = outChannels / group;
  ArrayRef<int64_t> inSpatial = xShape.drop_front(2),
                    kernel = wShape.drop_front(2),
                    outSpatial = outShape.drop_front(2);
  int64_t inSize = product(inSpatial), kSize = product(kernel),
          outSize = product(outSpatial);
  std::vector<T> out(batch * outChannels * outSize, T(0));
  // For every (output position, kernel position): the input offset, or -1
  // when it falls into padding.
  std::vector<int64_t> offsets = windowOffsets(outSpatial, kernel, inSpatial, win);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < outChannels; ++m) {
      int64_t g = m / mPerGroup;
      T wz = wZero.empty() ? T(0) : wZero.size() == 1 ? wZero[0] : wZero[m];
      T *outp = out.data() + (n * outChannels + m) * outSize;
      for (int64_t c = 0; c < cPerGroup; ++c) {
        const T *xp = x.data() + (n * channels + g * cPerGroup + c) * inSize;
        const T *wp = w.data() + (m * cPerGroup + c) * kSize;
        for (int64_t oi = 0; oi < outSize; ++oi) {
          T acc = T(0);
          const int64_t *offs = offsets.data() + oi * kSize;
          for (int64_t ki = 0; ki < kSize; ++ki)
            if (offs[ki] >= 0)
              acc += (xp[offs[ki]] - xZero) * (wp[ki] - wz);
          outp[oi] += acc;
        }
      }
    }
  return out;
}

std::vector<int64_t> convOutputShape(const Tensor &x, const Tensor &w,
                                     const Window &win) {
  std::vector<int64_t> shape = {x.dim(0), w.dim(0)};
  for (size_t d = 0; d < win.strides.size(); ++d) {
    int64_t span = (w.dim(d + 2) - 1) * win.dilations[d] + 1;
    int64_t numer = x.dim(d + 2) + win.padBegin[d] + win.padEnd[d] - span;
    shape.push_back(numer < 0 ? 0 : numer / win.strides[d] + 1);
  }
  return shape;
}

LogicalResult evalConv(Operation *op, ArrayRef<const Tensor *> operands,
                       std::vector<Tensor> &results) {
  auto conv = cast<ConvOp>(op);
  Window win = windowOf(conv);
  const Tensor &x = *operands[0], &w = *operands[1];
  if (failed(checkConvShapes(op, x, w, win, conv.getGroup(), false)))
    return failure();
  std::vector<int64_t> outShape = convOutputShape(x, w, win);
  std::vector<double> out =
      convolve<double>(x.toDoubleVector(), x.shape(), w.toDoubleVector(),
                       w.shape(), win, conv.getGroup(), outShape, 0.0, {});
  if (conv.getBias()) {
    const Tensor &bias = *operands[2];
    if (bias.numElements() != outShape[1])
      return op->emitOpError("bias has ")
             << bias.numElements() << " values for " << outShape[1]
             << " output channels";
    int64_t plane = product(ArrayRef<int64_t>(outShape).drop_front(2));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] += bias.getDouble((i / plane) % outShape[1]);
  }
  results.push_back(Tensor::fromDoubles(resultDType(op), outShape, out));
  return success();
}

LogicalResult evalConvInteger(Operation *op, ArrayRef<const Tensor *> operands,
                              std::vector<Tensor> &results) {
  auto conv = cast<ConvIntegerOp>(op);
  Window win = windowOf(conv);
  const Tensor &x = *operands[0], &w = *operands[1];
  if (failed(checkConvShapes(op, x, w, win, conv.getGroup(), false)))
    return failure();
  if (operands[2]->numElements() != 1)
    return op->emitOpError("input zero point must be a single value");
  std::vector<int64_t> wZero = operands[3]->toInt64Vector();
  if (wZero.size() != 1 && (int64_t)wZero.size() != w.dim(0))
    return op->emitOpError("weight zero point must have 1 or ")
           << w.dim(0) << " values";
  std::vector<int64_t> outShape = convOutputShape(x, w, win);
  std::vector<int64_t> out = convolve<int64_t>(
      x.toInt64Vector(), x.shape(), w.toInt64Vector(), w.shape(), win,
      conv.getGroup(), outShape, operands[2]->getInt(0), wZero);
  Tensor result(resultDType(op), outShape);
  for (size_t i = 0; i < out.size(); ++i)
    result.setInt(i, out[i]);
  results.push_back(std::move(result));
  return success();
}

/// Scatters every input element through the kernel into the full output
/// (stride*(in-1) + (k-1)*d + 1 + output_padding wide), cropped by the pads.
LogicalResult evalConvTranspose(Operation *op,
                                ArrayRef<const Tensor *> operands,
                                std::vector<Tensor> &results) {
  auto conv = cast<ConvTransposeOp>(op);
  Window win = windowOf(conv);
  const Tensor &x = *operands[0], &w = *operands[1];
  int64_t group = conv.getGroup();
  if (failed(checkConvShapes(op, x, w, win, group, true)))
    return failure();
  int64_t spatial = x.rank() - 2;
  ArrayRef<int64_t> outputPadding = conv.getOutputPadding();
  int64_t batch = x.dim(0), channels = x.dim(1);
  int64_t mPerGroup = w.dim(1), cPerGroup = channels / group;
  int64_t outChannels = mPerGroup * group;
  std::vector<int64_t> outShape = {batch, outChannels};
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t size = win.strides[d] * (x.dim(d + 2) - 1) + outputPadding[d] +
                   (w.dim(d + 2) - 1) * win.dilations[d] + 1 - win.padBegin[d] -
                   win.padEnd[d];
    if (size < 0)
      return op->emitOpError("output dim ") << d << " would be negative";
    outShape.push_back(size);
  }
  ArrayRef<int64_t> inSpatial = ArrayRef<int64_t>(x.shape()).drop_front(2),
                    kernel = ArrayRef<int64_t>(w.shape()).drop_front(2),
                    outSpatial = ArrayRef<int64_t>(outShape).drop_front(2);
  int64_t inSize = product(inSpatial), kSize = product(kernel),
          outSize = product(outSpatial);
  std::vector<double> xv = x.toDoubleVector(), wv = w.toDoubleVector();
  std::vector<double> out(batch * outChannels * outSize, 0.0);
  // Output offset of every (input position, kernel position), or -1: the
  // transposed convolution scatters along the same windows conv gathers.
  std::vector<int64_t> offsets = windowOffsets(inSpatial, kernel, outSpatial, win);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      int64_t g = c / cPerGroup;
      const double *xp = xv.data() + (n * channels + c) * inSize;
      for (int64_t m = 0; m < mPerGroup; ++m) {
        const double *wp = wv.data() + (c * mPerGroup + m) * kSize;
        double *outp =
            out.data() + (n * outChannels + g * mPerGroup + m) * outSize;
        for (int64_t ii = 0; ii < inSize; ++ii)
          for (int64_t ki = 0; ki < kSize; ++ki) {
            int64_t offset = offsets[ii * kSize + ki];
            if (offset >= 0)
              outp[offset] += xp[ii] * wp[ki];
          }
      }
    }
  if (conv.getBias()) {
    const Tensor &bias = *operands[2];
    if (bias.numElements() != outChannels)
      return op->emitOpError("bias has ")
             << bias.numElements() << " values for " << outChannels
             << " output channels";
    for (size_t e = 0; e < out.size(); ++e)
      out[e] +=
          bias.getDouble((e / std::max<int64_t>(outSize, 1)) % outChannels);
  }
  results.push_back(Tensor::fromDoubles(resultDType(op), outShape, out));
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

LogicalResult evalPool(Operation *op, ArrayRef<const Tensor *> operands,
                       std::vector<Tensor> &results) {
  auto pool = cast<PoolOp>(op);
  Window win = windowOf(pool);
  const Tensor &x = *operands[0];
  int64_t spatial = (int64_t)win.strides.size();
  if (failed(checkWindow(op, win)))
    return failure();
  if (x.rank() != spatial + 2)
    return op->emitOpError("expects an input of rank ") << spatial + 2;
  ArrayRef<int64_t> kernel = pool.getKernelShape();
  if ((int64_t)kernel.size() != spatial ||
      llvm::any_of(kernel, [](int64_t k) { return k < 1; }))
    return op->emitOpError("kernel_shape must have ")
           << spatial << " positive dims";
  ArrayRef<int64_t> inSpatial = ArrayRef<int64_t>(x.shape()).drop_front(2);
  std::vector<int64_t> outShape = {x.dim(0), x.dim(1)};
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t span = (kernel[d] - 1) * win.dilations[d] + 1;
    int64_t numer = inSpatial[d] + win.padBegin[d] + win.padEnd[d] - span;
    int64_t size = 0;
    if (numer >= 0) {
      size = (pool.getCeilMode() ? (numer + win.strides[d] - 1) / win.strides[d]
                                 : numer / win.strides[d]) +
             1;
      if (pool.getCeilMode() &&
          (size - 1) * win.strides[d] >= inSpatial[d] + win.padBegin[d])
        --size;
    }
    outShape.push_back(size);
  }
  ArrayRef<int64_t> outSpatial = ArrayRef<int64_t>(outShape).drop_front(2);
  int64_t planes = x.dim(0) * x.dim(1), inSize = product(inSpatial),
          outSize = product(outSpatial), kSize = product(kernel);
  PoolKind kind = pool.getKind();
  double p = (double)pool.getP();
  bool withIndices = pool.getReturnIndices();
  bool columnMajor = pool.getStorageOrder() == 1;
  std::vector<double> xv = x.toDoubleVector();
  Tensor out(resultDType(op), outShape);
  Tensor indices(DType::I64, withIndices ? outShape : std::vector<int64_t>{0});
  std::vector<int64_t> o(spatial), k(spatial), pos(spatial);
  for (int64_t plane = 0; plane < planes; ++plane) {
    const double *xp = xv.data() + plane * inSize;
    std::fill(o.begin(), o.end(), 0);
    for (int64_t oi = 0; oi < outSize; ++oi) {
      double acc = kind == PoolKind::max
                       ? -std::numeric_limits<double>::infinity()
                       : 0.0;
      int64_t argmax = -1, inBounds = 0, inPadded = 0;
      std::fill(k.begin(), k.end(), 0);
      for (int64_t ki = 0; ki < kSize; ++ki) {
        bool inside = true, insidePadded = true;
        int64_t offset = 0;
        for (int64_t d = 0; d < spatial; ++d) {
          pos[d] =
              o[d] * win.strides[d] - win.padBegin[d] + k[d] * win.dilations[d];
          if (pos[d] < 0 || pos[d] >= inSpatial[d])
            inside = false;
          if (pos[d] < -win.padBegin[d] ||
              pos[d] >= inSpatial[d] + win.padEnd[d])
            insidePadded = false;
          offset = offset * inSpatial[d] + pos[d];
        }
        inPadded += insidePadded;
        if (inside) {
          ++inBounds;
          double v = xp[offset];
          if (kind == PoolKind::max) {
            if (v > acc || argmax < 0) {
              acc = v;
              argmax = offset;
              if (columnMajor) {
                argmax = 0;
                for (int64_t d = spatial - 1; d >= 0; --d)
                  argmax = argmax * inSpatial[d] + pos[d];
              }
            }
          } else if (kind == PoolKind::avg) {
            acc += v;
          } else {
            acc += std::pow(std::fabs(v), p);
          }
        }
        nextIndex(k, kernel);
      }
      double value = acc;
      if (kind == PoolKind::avg)
        value = acc / double(pool.getCountIncludePad() ? inPadded : inBounds);
      else if (kind == PoolKind::lp)
        value = std::pow(acc, 1.0 / p);
      out.setDouble(plane * outSize + oi, value);
      if (withIndices)
        indices.setInt(plane * outSize + oi, plane * inSize + argmax);
      nextIndex(o, outSpatial);
    }
  }
  results.push_back(std::move(out));
  if (withIndices)
    results.push_back(std::move(indices));
  return success();
}

/// Scatters every input value to its flat index in the natural output
/// ((in - 1) * stride + kernel - pads per spatial dim); an explicit
/// output_shape then places that natural output at its origin, zero-padded at
/// the end (the ONNX reference behaviour).
LogicalResult evalMaxUnpool(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  auto unpool = cast<MaxUnpoolOp>(op);
  const Tensor &x = *operands[0], &indices = *operands[1];
  if (x.shape() != indices.shape())
    return op->emitOpError("indices ")
           << indices.describe() << " do not match the input " << x.describe();
  ArrayRef<int64_t> kernel = unpool.getKernelShape(),
                    strides = unpool.getStrides(), pads = unpool.getPads();
  int64_t spatial = (int64_t)kernel.size();
  if (x.rank() != spatial + 2)
    return op->emitOpError("expects an input of rank ") << spatial + 2;
  std::vector<int64_t> natural = {x.dim(0), x.dim(1)};
  for (int64_t d = 0; d < spatial; ++d)
    natural.push_back((x.dim(d + 2) - 1) * strides[d] + kernel[d] - pads[d] -
                      pads[d + spatial]);
  if (llvm::any_of(natural, [](int64_t d) { return d < 0; }))
    return op->emitOpError("output dims would be negative");
  std::vector<int64_t> outShape = natural;
  if (unpool.getOutputShape()) {
    outShape = operands[2]->toInt64Vector();
    if ((int64_t)outShape.size() != spatial + 2 || outShape[0] != natural[0] ||
        outShape[1] != natural[1])
      return op->emitOpError("output_shape ")
             << shapeToString(outShape) << " does not fit the input "
             << x.describe();
    for (int64_t d = 2; d < spatial + 2; ++d)
      if (outShape[d] < natural[d])
        return op->emitOpError("output_shape ")
               << shapeToString(outShape) << " is smaller than the natural "
               << shapeToString(natural);
  }
  Tensor out(resultDType(op), outShape);
  int64_t count = product(natural);
  std::vector<int64_t> position;
  bool isFloat = isFloatDType(out.dtype());
  std::vector<int64_t> outStrides = out.strides();
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t index = indices.getInt(i);
    if (index < 0 || index >= count)
      return op->emitOpError("index ")
             << index << " outside an output of " << count << " elements";
    unravelIndex(index, natural, position);
    int64_t target = 0;
    for (size_t d = 0; d < position.size(); ++d)
      target += position[d] * outStrides[d];
    if (isFloat)
      out.setDouble(target, x.getDouble(i));
    else
      out.setInt(target, x.getInt(i));
  }
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// Reads a per-channel parameter, checking its size.
FailureOr<std::vector<double>> perChannel(Operation *op, const Tensor &t,
                                          int64_t channels, StringRef name) {
  if (t.numElements() != channels)
    return op->emitOpError() << name << " has " << t.numElements()
                             << " values for " << channels << " channels";
  return t.toDoubleVector();
}

LogicalResult evalBatchNorm(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  auto bn = cast<BatchNormOp>(op);
  const Tensor &x = *operands[0];
  if (x.rank() < 2)
    return op->emitOpError("expects rank >= 2");
  int64_t channels = x.dim(1);
  std::vector<std::vector<double>> params;
  const char *names[] = {"scale", "bias", "mean", "variance"};
  for (int i = 0; i < 4; ++i) {
    auto values = perChannel(op, *operands[i + 1], channels, names[i]);
    if (failed(values))
      return failure();
    params.push_back(*values);
  }
  double eps = bn.getEpsilon().convertToFloat();
  int64_t plane = product(ArrayRef<int64_t>(x.shape()).drop_front(2));
  Tensor out(resultDType(op), x.shape());
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t c = (i / plane) % channels;
    double v = (x.getDouble(i) - params[2][c]) / std::sqrt(params[3][c] + eps);
    out.setDouble(i, v * params[0][c] + params[1][c]);
  }
  results.push_back(std::move(out));
  return success();
}

/// Mean and 1/sqrt(var + eps) of `count` values from `at(i)`.
template <typename Fn>
std::pair<double, double> moments(int64_t count, double eps, Fn &&at) {
  double mean = 0.0, var = 0.0;
  for (int64_t i = 0; i < count; ++i)
    mean += at(i);
  mean /= double(count);
  for (int64_t i = 0; i < count; ++i) {
    double d = at(i) - mean;
    var += d * d;
  }
  var /= double(count);
  return {mean, 1.0 / std::sqrt(var + eps)};
}

LogicalResult evalLayerNorm(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  auto ln = cast<LayerNormOp>(op);
  const Tensor &x = *operands[0];
  auto axis = normalizeAxis(op, ln.getAxis(), x.rank());
  if (failed(axis))
    return failure();
  std::vector<int64_t> inner(x.shape().begin() + *axis, x.shape().end());
  int64_t outer = product(ArrayRef<int64_t>(x.shape()).take_front(*axis));
  int64_t count = product(inner);
  // Scale and bias broadcast against the normalized dims.
  auto paramValues = [&](const Tensor &t) -> FailureOr<std::vector<double>> {
    if (t.rank() > (int64_t)inner.size() ||
        failed(broadcastShapes(op, {t.shape(), inner})) ||
        *broadcastShapes(op, {t.shape(), inner}) != inner)
      return op->emitOpError("parameter ")
             << t.describe() << " does not broadcast to the normalized dims "
             << shapeToString(inner);
    std::vector<double> values(count);
    forEachBroadcast(inner, {t.shape()},
                     [&](int64_t i, const std::vector<int64_t> &idx) {
                       values[i] = t.getDouble(idx[0]);
                     });
    return values;
  };
  auto scale = paramValues(*operands[1]);
  if (failed(scale))
    return failure();
  std::vector<double> bias(count, 0.0);
  if (ln.getBias()) {
    auto b = paramValues(*operands[2]);
    if (failed(b))
      return failure();
    bias = *b;
  }
  double eps = ln.getEpsilon().convertToFloat();
  std::vector<double> xv = x.toDoubleVector();
  std::vector<int64_t> statShape = x.shape();
  for (size_t d = *axis; d < statShape.size(); ++d)
    statShape[d] = 1;
  Tensor out(resultDType(op), x.shape()), meanT(DType::F32, statShape),
      invStd(DType::F32, statShape);
  for (int64_t r = 0; r < outer; ++r) {
    const double *row = xv.data() + r * count;
    auto [mean, inv] = moments(count, eps, [&](int64_t i) { return row[i]; });
    for (int64_t i = 0; i < count; ++i)
      out.setDouble(r * count + i,
                    (row[i] - mean) * inv * (*scale)[i] + bias[i]);
    meanT.setDouble(r, mean);
    invStd.setDouble(r, inv);
  }
  results.push_back(std::move(out));
  results.push_back(std::move(meanT));
  results.push_back(std::move(invStd));
  return success();
}

/// Normalizes `groups` consecutive slices of each sample, then applies a
/// per-channel affine transform (instance norm: one group per channel).
LogicalResult normalizeGroups(Operation *op, const Tensor &x, int64_t groups,
                              const std::vector<double> &scale,
                              const std::vector<double> &bias, double eps,
                              std::vector<Tensor> &results) {
  int64_t channels = x.dim(1);
  int64_t plane = product(ArrayRef<int64_t>(x.shape()).drop_front(2));
  int64_t perGroup = channels / groups * plane;
  std::vector<double> xv = x.toDoubleVector();
  Tensor out(resultDType(op), x.shape());
  for (int64_t s = 0; s < x.dim(0) * groups; ++s) {
    const double *slice = xv.data() + s * perGroup;
    auto [mean, inv] =
        moments(perGroup, eps, [&](int64_t i) { return slice[i]; });
    for (int64_t i = 0; i < perGroup; ++i) {
      int64_t flat = s * perGroup + i;
      int64_t c = (flat / plane) % channels;
      out.setDouble(flat, (slice[i] - mean) * inv * scale[c] + bias[c]);
    }
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalInstanceNorm(Operation *op, ArrayRef<const Tensor *> operands,
                               std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  if (x.rank() < 3)
    return op->emitOpError("expects rank >= 3");
  auto scale = perChannel(op, *operands[1], x.dim(1), "scale");
  auto bias = perChannel(op, *operands[2], x.dim(1), "bias");
  if (failed(scale) || failed(bias))
    return failure();
  double eps = cast<InstanceNormOp>(op).getEpsilon().convertToFloat();
  return normalizeGroups(op, x, x.dim(1), *scale, *bias, eps, results);
}

LogicalResult evalGroupNorm(Operation *op, ArrayRef<const Tensor *> operands,
                            std::vector<Tensor> &results) {
  auto gn = cast<GroupNormOp>(op);
  const Tensor &x = *operands[0];
  if (x.rank() < 2)
    return op->emitOpError("expects rank >= 2");
  int64_t groups = gn.getNumGroups(), channels = x.dim(1);
  if (groups < 1 || channels % groups)
    return op->emitOpError("channels of ")
           << x.describe() << " do not split into " << groups << " groups";
  // Per-group parameters (opset 18) apply to every channel of the group.
  auto expand = [&](const Tensor &t,
                    StringRef name) -> FailureOr<std::vector<double>> {
    std::vector<double> v = t.toDoubleVector();
    if ((int64_t)v.size() == channels)
      return v;
    if ((int64_t)v.size() != groups)
      return op->emitOpError() << name << " must have one value per group or "
                               << "channel, got " << v.size();
    std::vector<double> full(channels);
    for (int64_t c = 0; c < channels; ++c)
      full[c] = v[c / (channels / groups)];
    return full;
  };
  auto scale = expand(*operands[1], "scale");
  auto bias = expand(*operands[2], "bias");
  if (failed(scale) || failed(bias))
    return failure();
  return normalizeGroups(op, x, groups, *scale, *bias,
                         gn.getEpsilon().convertToFloat(), results);
}

LogicalResult evalLrn(Operation *op, ArrayRef<const Tensor *> operands,
                      std::vector<Tensor> &results) {
  auto lrn = cast<LrnOp>(op);
  const Tensor &x = *operands[0];
  if (x.rank() < 2)
    return op->emitOpError("expects rank >= 2");
  int64_t size = lrn.getSize(), channels = x.dim(1);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  double alpha = lrn.getAlpha().convertToFloat(),
         beta = lrn.getBeta().convertToFloat(),
         bias = lrn.getBias().convertToFloat();
  int64_t plane = product(ArrayRef<int64_t>(x.shape()).drop_front(2));
  std::vector<double> xv = x.toDoubleVector();
  Tensor out(resultDType(op), x.shape());
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t c = (i / plane) % channels;
    int64_t base = i - c * plane;
    double sum = 0.0;
    for (int64_t j = std::max<int64_t>(0, c - before);
         j <= std::min(channels - 1, c + after); ++j)
      sum += xv[base + j * plane] * xv[base + j * plane];
    out.setDouble(i, xv[i] / std::pow(bias + alpha / double(size) * sum, beta));
  }
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum, Det
//===----------------------------------------------------------------------===//

/// Sums the product of the operands over every assignment of the labels
/// absent from the output; a label repeated within an operand walks its
/// diagonal.
LogicalResult evalEinsum(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  auto einsum = cast<EinsumOp>(op);
  SmallVector<int64_t> ranks;
  for (const Tensor *t : operands)
    ranks.push_back(t->rank());
  SmallVector<SmallVector<int64_t>> labels;
  SmallVector<int64_t> outLabels;
  std::string error =
      EinsumOp::parseEquation(einsum.getEquation(), ranks, labels, outLabels);
  if (!error.empty())
    return op->emitOpError("equation '")
           << einsum.getEquation() << "': " << error;
  std::map<int64_t, int64_t> sizes;
  for (auto [t, operandLabels] : llvm::zip(operands, labels))
    for (auto [d, label] : llvm::enumerate(operandLabels)) {
      int64_t size = t->dim(d);
      auto it = sizes.find(label);
      if (it == sizes.end() || it->second == 1)
        sizes[label] = size;
      else if (size != 1 && size != it->second)
        return op->emitOpError("label sizes differ: ")
               << it->second << " vs " << size;
    }
  // All labels: output first, then the summed ones.
  std::vector<int64_t> all(outLabels.begin(), outLabels.end());
  for (auto [label, size] : sizes)
    if (!llvm::is_contained(outLabels, label))
      all.push_back(label);
  std::map<int64_t, size_t> position;
  std::vector<int64_t> extents;
  for (auto [i, label] : llvm::enumerate(all)) {
    position[label] = i;
    extents.push_back(sizes[label]);
  }
  // Per operand, the stride each label position contributes (0 when
  // broadcast, summed when repeated).
  std::vector<std::vector<int64_t>> strides;
  std::vector<std::vector<double>> values;
  for (auto [t, operandLabels] : llvm::zip(operands, labels)) {
    std::vector<int64_t> s(all.size(), 0);
    std::vector<int64_t> tStrides = t->strides();
    for (auto [d, label] : llvm::enumerate(operandLabels))
      if (t->dim(d) != 1 || sizes[label] == 1)
        s[position[label]] += tStrides[d];
    strides.push_back(s);
    values.push_back(t->toDoubleVector());
  }
  std::vector<int64_t> outShape(extents.begin(),
                                extents.begin() + outLabels.size());
  int64_t outCount = product(outShape);
  std::vector<int64_t> sumShape(extents.begin() + outLabels.size(),
                                extents.end());
  int64_t sumCount = product(sumShape);
  std::vector<double> out(outCount, 0.0);
  std::vector<int64_t> index(all.size(), 0);
  bool isFloat = isFloatDType(resultDType(op));
  if (outCount > 0 && sumCount > 0) {
    int64_t flat = 0;
    do {
      double term = 1.0;
      for (size_t k = 0; k < operands.size(); ++k) {
        int64_t offset = 0;
        for (size_t d = 0; d < all.size(); ++d)
          offset += index[d] * strides[k][d];
        term *= values[k][offset];
      }
      out[flat / sumCount] += term;
      ++flat;
    } while (nextIndex(index, extents));
  }
  Tensor result(resultDType(op), outShape);
  for (int64_t i = 0; i < outCount; ++i) {
    if (isFloat)
      result.setDouble(i, out[i]);
    else
      result.setInt(i, (int64_t)out[i]);
  }
  results.push_back(std::move(result));
  return success();
}

/// Determinants by LU decomposition with partial pivoting.
LogicalResult evalDet(Operation *op, ArrayRef<const Tensor *> operands,
                      std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  int64_t rank = x.rank();
  if (rank < 2 || x.dim(rank - 1) != x.dim(rank - 2))
    return op->emitOpError("expects square matrices, got ") << x.describe();
  int64_t n = x.dim(rank - 1);
  std::vector<int64_t> outShape(x.shape().begin(), x.shape().end() - 2);
  Tensor out(resultDType(op), outShape);
  std::vector<double> xv = x.toDoubleVector();
  for (int64_t b = 0; b < product(outShape); ++b) {
    std::vector<double> a(xv.begin() + b * n * n, xv.begin() + (b + 1) * n * n);
    double det = 1.0;
    for (int64_t c = 0; c < n && det != 0.0; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[r * n + c]) > std::fabs(a[pivot * n + c]))
          pivot = r;
      if (a[pivot * n + c] == 0.0) {
        det = 0.0;
        break;
      }
      if (pivot != c) {
        for (int64_t j = 0; j < n; ++j)
          std::swap(a[c * n + j], a[pivot * n + j]);
        det = -det;
      }
      det *= a[c * n + c];
      for (int64_t r = c + 1; r < n; ++r) {
        double f = a[r * n + c] / a[c * n + c];
        for (int64_t j = c; j < n; ++j)
          a[r * n + j] -= f * a[c * n + j];
      }
    }
    out.setDouble(b, det);
  }
  results.push_back(std::move(out));
  return success();
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

/// For element i of `x`, the index into a per-axis parameter of `count`
/// values (0 for per-tensor parameters).
FailureOr<std::function<int64_t(int64_t)>> paramIndexer(Operation *op,
                                                        const Tensor &x,
                                                        const Tensor &param,
                                                        int64_t axisAttr,
                                                        int64_t blockSize = 0) {
  int64_t count = param.numElements();
  if (blockSize > 0) {
    // Blocked (opset 21): param has x's rank, dim `axis` of ceil(dim /
    // blockSize); element i of x uses the entry of its block there.
    auto axis = normalizeAxis(op, axisAttr, x.rank());
    if (failed(axis))
      return failure();
    if (param.rank() != x.rank())
      return op->emitOpError("blocked quantization parameters have rank ")
             << param.rank() << ", the input " << x.rank();
    for (int64_t d = 0; d < x.rank(); ++d) {
      int64_t expected = d == *axis ? (x.dim(d) + blockSize - 1) / blockSize : x.dim(d);
      if (param.dim(d) != expected)
        return op->emitOpError("blocked quantization parameter dim ")
               << d << " is " << param.dim(d) << ", expected " << expected;
    }
    int64_t inner = product(ArrayRef<int64_t>(x.shape()).drop_front(*axis + 1));
    int64_t extent = x.dim(*axis), blocks = param.dim(*axis);
    return std::function<int64_t(int64_t)>(
        [inner, extent, blocks, blockSize](int64_t i) {
          int64_t outer = i / (inner * extent), along = (i / inner) % extent;
          return (outer * blocks + along / blockSize) * inner + i % inner;
        });
  }
  if (param.rank() == 0 || (param.rank() == 1 && count == 1))
    return std::function<int64_t(int64_t)>([](int64_t) { return int64_t(0); });
  if (param.rank() != 1)
    return op->emitOpError("quantization parameters must be scalars or 1-D");
  auto axis = normalizeAxis(op, axisAttr, x.rank());
  if (failed(axis))
    return failure();
  if (x.dim(*axis) != count)
    return op->emitOpError("per-axis parameter has ")
           << count << " values for a dim of size " << x.dim(*axis);
  int64_t inner = product(ArrayRef<int64_t>(x.shape()).drop_front(*axis + 1));
  return std::function<int64_t(int64_t)>(
      [inner, count](int64_t i) { return (i / inner) % count; });
}

/// Rounds to the nearest integer, ties to even (ONNX QuantizeLinear),
/// whatever the floating-point environment's rounding mode.
double roundHalfEven(double v) {
  double r = std::round(v); // ties away from zero
  if (std::fabs(v - std::trunc(v)) == 0.5)
    r = 2.0 * std::round(v / 2.0);
  return r;
}

std::pair<int64_t, int64_t> integerRange(DType type) {
  switch (type) {
  case DType::I4:
    return {-8, 7};
  case DType::U4:
    return {0, 15};
  case DType::I8:
    return {-128, 127};
  case DType::U8:
    return {0, 255};
  case DType::I16:
    return {-32768, 32767};
  case DType::U16:
    return {0, 65535};
  case DType::I32:
    return {INT32_MIN, INT32_MAX};
  case DType::U32:
    return {0, UINT32_MAX};
  default:
    return {INT64_MIN, INT64_MAX};
  }
}

LogicalResult evalQuantizeLinear(Operation *op,
                                 ArrayRef<const Tensor *> operands,
                                 std::vector<Tensor> &results) {
  auto q = cast<QuantizeLinearOp>(op);
  const Tensor &x = *operands[0], &scale = *operands[1];
  const Tensor *zero = q.getZeroPoint() ? operands[2] : nullptr;
  auto scaleAt = paramIndexer(op, x, scale, q.getAxis(), q.getBlockSize());
  if (failed(scaleAt))
    return failure();
  DType type = resultDType(op);
  auto [lo, hi] = integerRange(type);
  // fp32 inputs divide in fp32 like the ONNX reference, so that ties round
  // the same way.
  bool singlePrecision = x.dtype() != DType::F64;
  Tensor out(type, x.shape());
  if (type == DType::F8E4M3) {
    // Float8: x / scale (+ the zero point, 0 in any valid model) rounded to
    // the nearest E4M3FN value, saturating or NaN beyond 448 as `saturate`
    // says (ONNX's reference divides in fp32 too).
    auto *bits = out.mutableData<uint8_t>();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t p = (*scaleAt)(i);
      float v = float(x.getDouble(i)) / float(scale.getDouble(p));
      if (zero)
        v += float(zero->getDouble(p));
      bits[i] = floatToFloat8E4M3(v, q.getSaturate());
    }
    results.push_back(std::move(out));
    return success();
  }
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t p = (*scaleAt)(i);
    double s = scale.getDouble(p);
    double v = singlePrecision ? double(float(x.getDouble(i)) / float(s))
                               : x.getDouble(i) / s;
    double r = roundHalfEven(v) + double(zero ? zero->getInt(p) : 0);
    r = std::min(std::max(r, double(lo)), double(hi));
    out.setInt(i, std::isnan(v) ? 0 : (int64_t)r);
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalDequantizeLinear(Operation *op,
                                   ArrayRef<const Tensor *> operands,
                                   std::vector<Tensor> &results) {
  auto dq = cast<DequantizeLinearOp>(op);
  const Tensor &x = *operands[0], &scale = *operands[1];
  const Tensor *zero = dq.getZeroPoint() ? operands[2] : nullptr;
  auto scaleAt = paramIndexer(op, x, scale, dq.getAxis(), dq.getBlockSize());
  if (failed(scaleAt))
    return failure();
  Tensor out(resultDType(op), x.shape());
  if (x.dtype() == DType::F8E4M3) {
    // Float8 values are floats already: (x - zero point) * scale in fp32.
    for (int64_t i = 0; i < x.numElements(); ++i) {
      int64_t p = (*scaleAt)(i);
      float z = zero ? float(zero->getDouble(p)) : 0.0f;
      out.setDouble(i, (float(x.getDouble(i)) - z) * float(scale.getDouble(p)));
    }
    results.push_back(std::move(out));
    return success();
  }
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t p = (*scaleAt)(i);
    int64_t z = zero ? zero->getInt(p) : 0;
    out.setDouble(i, double(x.getInt(i) - z) * scale.getDouble(p));
  }
  results.push_back(std::move(out));
  return success();
}

} // namespace

LogicalResult evalRnn(Operation *op, ArrayRef<const Tensor *> operands,
                      std::vector<Tensor> &results);

void registerLinalgEvaluators(EvalRegistry &r) {
  r.add(MatMulOp::getOperationName(), evalMatMul);
  r.add(MatMulIntegerOp::getOperationName(), evalMatMulInteger);
  r.add(ConvOp::getOperationName(), evalConv);
  r.add(ConvIntegerOp::getOperationName(), evalConvInteger);
  r.add(ConvTransposeOp::getOperationName(), evalConvTranspose);
  r.add(PoolOp::getOperationName(), evalPool);
  r.add(MaxUnpoolOp::getOperationName(), evalMaxUnpool);
  r.add(BatchNormOp::getOperationName(), evalBatchNorm);
  r.add(LayerNormOp::getOperationName(), evalLayerNorm);
  r.add(InstanceNormOp::getOperationName(), evalInstanceNorm);
  r.add(GroupNormOp::getOperationName(), evalGroupNorm);
  r.add(LrnOp::getOperationName(), evalLrn);
  r.add(EinsumOp::getOperationName(), evalEinsum);
  r.add(DetOp::getOperationName(), evalDet);
  r.add(QuantizeLinearOp::getOperationName(), evalQuantizeLinear);
  r.add(DequantizeLinearOp::getOperationName(), evalDequantizeLinear);
  r.add(RnnOp::getOperationName(), evalRnn);
}

} // namespace sluice

//===----------------------------------------------------------------------===//
// Recurrent (RNN, GRU, LSTM)
//===----------------------------------------------------------------------===//

namespace sluice {
namespace {

/// One ONNX recurrent activation with its alpha/beta.
struct Activation {
  std::string name;
  double alpha = 0.0, beta = 0.0;
  double operator()(double x) const {
    if (name == "Sigmoid")
      return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh")
      return std::tanh(x);
    if (name == "Relu")
      return std::max(x, 0.0);
    if (name == "Affine")
      return alpha * x + beta;
    if (name == "LeakyRelu")
      return x < 0 ? alpha * x : x;
    if (name == "ThresholdedRelu")
      return x > alpha ? x : 0.0;
    if (name == "ScaledTanh")
      return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid")
      return std::max(0.0, std::min(1.0, alpha * x + beta));
    if (name == "Elu")
      return x < 0 ? alpha * (std::exp(x) - 1.0) : x;
    if (name == "Softsign")
      return x / (1.0 + std::fabs(x));
    return std::log1p(std::exp(x)); // Softplus
  }
};

/// Binds alpha/beta lists to the activations that take them, in order.
std::vector<Activation> bindActivations(RnnOp op) {
  std::vector<Activation> acts;
  ArrayRef<float> alphas = op.getActivationAlpha(),
                  betas = op.getActivationBeta();
  size_t ai = 0, bi = 0;
  for (Attribute a : op.getActivations()) {
    Activation act;
    act.name = cast<StringAttr>(a).getValue().str();
    static const std::map<std::string, std::pair<double, double>> defaults = {
        {"Affine", {1.0, 0.0}},        {"LeakyRelu", {0.01, 0.0}},
        {"ThresholdedRelu", {1.0, 0}}, {"ScaledTanh", {1.0, 1.0}},
        {"HardSigmoid", {0.2, 0.5}},   {"Elu", {1.0, 0.0}}};
    auto it = defaults.find(act.name);
    if (it != defaults.end()) {
      act.alpha = ai < alphas.size() ? alphas[ai++] : it->second.first;
      if (act.name == "Affine" || act.name == "ScaledTanh" ||
          act.name == "HardSigmoid")
        act.beta = bi < betas.size() ? betas[bi++] : it->second.second;
    }
    acts.push_back(act);
  }
  return acts;
}

} // namespace

LogicalResult evalRnn(Operation *op, ArrayRef<const Tensor *> operands,
                      std::vector<Tensor> &results) {
  auto rnn = cast<RnnOp>(op);
  StringRef cell = rnn.getCell(), direction = rnn.getDirection();
  int64_t gates = cell == "lstm" ? 4 : cell == "gru" ? 3 : 1;
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t hidden = rnn.getHiddenSize();
  const Tensor &x = *operands[0];
  if (x.rank() != 3)
    return op->emitOpError("input must be (seq, batch, features)");
  int64_t seq = x.dim(0), batch = x.dim(1), features = x.dim(2);
  auto expect = [&](const Tensor &t, std::vector<int64_t> shape,
                    StringRef name) -> LogicalResult {
    if (t.shape() != shape)
      return op->emitOpError() << name << " is " << t.describe()
                               << ", expected " << shapeToString(shape);
    return success();
  };
  if (failed(expect(*operands[1], {dirs, gates * hidden, features}, "W")) ||
      failed(expect(*operands[2], {dirs, gates * hidden, hidden}, "R")) ||
      failed(expect(*operands[3], {dirs, 2 * gates * hidden}, "B")) ||
      failed(expect(*operands[4], {batch}, "sequence_lens")) ||
      failed(expect(*operands[5], {dirs, batch, hidden}, "initial_h")))
    return failure();
  bool lstm = cell == "lstm";
  if (lstm &&
      (failed(expect(*operands[6], {dirs, batch, hidden}, "initial_c")) ||
       failed(expect(*operands[7], {dirs, 3 * hidden}, "P"))))
    return failure();
  std::vector<double> xv = x.toDoubleVector(),
                      w = operands[1]->toDoubleVector(),
                      r = operands[2]->toDoubleVector(),
                      bias = operands[3]->toDoubleVector(),
                      h0 = operands[5]->toDoubleVector();
  std::vector<double> c0, peep;
  if (lstm) {
    c0 = operands[6]->toDoubleVector();
    peep = operands[7]->toDoubleVector();
  }
  std::vector<int64_t> lens = operands[4]->toInt64Vector();
  for (int64_t len : lens)
    if (len < 0 || len > seq)
      return op->emitOpError("sequence length ")
             << len << " outside [0, " << seq << "]";
  std::vector<Activation> acts = bindActivations(rnn);
  size_t perDir = lstm ? 3 : cell == "gru" ? 2 : 1;
  if (acts.size() != perDir * dirs)
    return op->emitOpError("expects ") << perDir * dirs << " activations";
  std::optional<double> clip;
  if (auto c = rnn.getClip())
    clip = c->convertToDouble();
  auto clipped = [&](double v) {
    return clip ? std::min(std::max(v, -*clip), *clip) : v;
  };
  bool linearBeforeReset = rnn.getLinearBeforeReset();
  bool inputForget = rnn.getInputForget();
  DType type = resultDType(op);
  Tensor y(type, {seq, dirs, batch, hidden}), yh(type, {dirs, batch, hidden}),
      yc(type, {dirs, batch, hidden});
  int64_t gh = gates * hidden;
  std::vector<double> xw(gh), hr(gh);
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation *f = &acts[d * perDir];
    const double *wd = w.data() + d * gh * features;
    const double *rd = r.data() + d * gh * hidden;
    const double *wb = bias.data() + d * 2 * gh, *rb = wb + gh;
    for (int64_t n = 0; n < batch; ++n) {
      std::vector<double> h(h0.begin() + (d * batch + n) * hidden,
                            h0.begin() + (d * batch + n + 1) * hidden);
      std::vector<double> c(hidden, 0.0);
      if (lstm)
        c.assign(c0.begin() + (d * batch + n) * hidden,
                 c0.begin() + (d * batch + n + 1) * hidden);
      for (int64_t step = 0; step < lens[n]; ++step) {
        int64_t t = reverse ? lens[n] - 1 - step : step;
        const double *xt = xv.data() + (t * batch + n) * features;
        for (int64_t g = 0; g < gh; ++g) {
          double a = 0.0, b = 0.0;
          for (int64_t i = 0; i < features; ++i)
            a += xt[i] * wd[g * features + i];
          for (int64_t i = 0; i < hidden; ++i)
            b += h[i] * rd[g * hidden + i];
          xw[g] = a + wb[g];
          hr[g] = b + rb[g];
        }
        std::vector<double> next(hidden);
        if (cell == "rnn") {
          for (int64_t i = 0; i < hidden; ++i)
            next[i] = f[0](clipped(xw[i] + hr[i]));
        } else if (cell == "gru") {
          // Gate order z, r, h.
          std::vector<double> z(hidden), reset(hidden);
          for (int64_t i = 0; i < hidden; ++i) {
            z[i] = f[0](clipped(xw[i] + hr[i]));
            reset[i] = f[0](clipped(xw[hidden + i] + hr[hidden + i]));
          }
          for (int64_t i = 0; i < hidden; ++i) {
            double recurrent;
            if (linearBeforeReset) {
              recurrent = reset[i] * hr[2 * hidden + i];
            } else {
              double s = 0.0;
              for (int64_t j = 0; j < hidden; ++j)
                s += reset[j] * h[j] * rd[(2 * hidden + i) * hidden + j];
              recurrent = s + rb[2 * hidden + i];
            }
            double cand = f[1](clipped(xw[2 * hidden + i] + recurrent));
            next[i] = (1.0 - z[i]) * cand + z[i] * h[i];
          }
        } else {
          // Gate order i, o, f, c; peepholes i, o, f.
          const double *p = peep.data() + d * 3 * hidden;
          for (int64_t i = 0; i < hidden; ++i) {
            double in = f[0](clipped(xw[i] + hr[i] + p[i] * c[i]));
            double forget =
                inputForget
                    ? 1.0 - in
                    : f[0](clipped(xw[2 * hidden + i] + hr[2 * hidden + i] +
                                   p[2 * hidden + i] * c[i]));
            double cand =
                f[1](clipped(xw[3 * hidden + i] + hr[3 * hidden + i]));
            c[i] = forget * c[i] + in * cand;
            double out = f[0](clipped(xw[hidden + i] + hr[hidden + i] +
                                      p[hidden + i] * c[i]));
            next[i] = out * f[2](c[i]);
          }
        }
        h = next;
        for (int64_t i = 0; i < hidden; ++i)
          y.setDouble(((t * dirs + d) * batch + n) * hidden + i, h[i]);
      }
      for (int64_t i = 0; i < hidden; ++i) {
        yh.setDouble((d * batch + n) * hidden + i, h[i]);
        yc.setDouble((d * batch + n) * hidden + i, c[i]);
      }
    }
  }
  results.push_back(std::move(y));
  results.push_back(std::move(yh));
  if (lstm)
    results.push_back(std::move(yc));
  return success();
}

} // namespace sluice
