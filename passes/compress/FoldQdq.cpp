//===- FoldQdq.cpp - explicit quantization: QDQ GEMMs as integer ops ------===//
//
// An ONNX QDQ model (ONNX Runtime's quantize_static, or TensorRT-style
// Q/DQ) says which tensors are quantized with which scales, but as written
// it computes in float: DequantizeLinear feeds every MatMul/Conv. TensorRT's
// explicit-quantization semantics run such a GEMM in integer arithmetic on
// the quantized tensors and apply the scales after it; this pass does that
// rewrite into Form I8 (docs/quantization.md), which the fuse phase and the
// code generators turn into one int8 launch with the dequantization in its
// epilogue:
//
//   matmul(DQ(aq, sa, za), DQ(wq, sw[n], 0))
//     -> mul(cast(matmul_integer(aq, wq, za, 0)), sa * sw[n])
//   conv(DQ(xq, sx, zx), DQ(wq, sw[m], 0), DQ(bq, sx * sw[m], 0))
//     -> add(mul(cast(conv_integer(xq, wq, zx, 0)), sx * sw[m]), bq * sx * sw[m])
//
// The weight stays an int8 constant (simplify leaves dequantized weights
// unfolded for this pass: FoldConstants' fold-dequantize). A 2-D transpose
// between the weight's DQ and the matmul (Gemm with transB) is folded into
// the constant. A matmul of two dequantized activations (attention's
// Q x K^T) becomes matmul_integer with both zero points. What does not
// match (per-channel activations, non-zero weight zero points, 16-bit
// types) keeps its float op on dequantized values, as the model says.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/compress/CompressGuard.h"

#include "lib/reference/Evaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <optional>

namespace sluice {
#define GEN_PASS_DEF_FOLDQDQPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace {

using compress::constantTensor;

bool is8Bit(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.getElementType().isInteger(8);
}

bool isSigned8(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.getElementType().isInteger(8) && !t.getElementType().isUnsignedInteger();
}

/// A dequantize_linear with its parameters read out.
struct Dequantized {
  DequantizeLinearOp op;
  Value input;                ///< the integer tensor
  std::vector<double> scales; ///< one (per tensor) or per channel along axis
  std::vector<int64_t> zeros; ///< same count as scales, or one
  int64_t axis = 1;
  bool perTensor() const { return scales.size() == 1; }
  bool zeroFree() const {
    return llvm::all_of(zeros, [](int64_t z) { return z == 0; });
  }
};

std::optional<Dequantized> matchDq(Value v) {
  auto dq = v.getDefiningOp<DequantizeLinearOp>();
  if (!dq || !is8Bit(dq.getInput().getType()) || dq.getBlockSize() != 0)
    return std::nullopt;
  auto scale = constantTensor(dq.getScale());
  if (!scale || !cast<RankedTensorType>(dq.getResult().getType()).getElementType().isF32())
    return std::nullopt;
  Dequantized d;
  d.op = dq;
  d.input = dq.getInput();
  d.scales = scale->toDoubleVector();
  if (Value zp = dq.getZeroPoint()) {
    auto z = constantTensor(zp);
    if (!z)
      return std::nullopt;
    d.zeros = z->toInt64Vector();
  } else {
    d.zeros = {0};
  }
  int64_t rank = cast<RankedTensorType>(d.input.getType()).getRank();
  int64_t axis = (int64_t)dq.getAxis();
  d.axis = axis < 0 ? axis + rank : axis;
  if (d.scales.empty() || (d.zeros.size() != 1 && d.zeros.size() != d.scales.size()))
    return std::nullopt;
  return d;
}

Value constantOf(OpBuilder &b, Location loc, const Tensor &t) {
  auto type = RankedTensorType::get(t.shape(), typeFromDType(b.getContext(), t.dtype()));
  return ConstantOp::create(b, loc, attrFromTensor(b.getContext(), t, type));
}

/// The zero point operand of matmul_integer / conv_integer for `d`: its
/// own (scalar), or a 0 of the input's type.
Value zeroPointOf(OpBuilder &b, Location loc, const Dequantized &d) {
  auto element = cast<RankedTensorType>(d.input.getType()).getElementType();
  DType dtype = element.isUnsignedInteger() ? DType::U8 : DType::I8;
  return constantOf(b, loc, Tensor::scalar(dtype, (double)d.zeros.front()));
}

/// The 2-D int8 weight [K, N] and its per-column scales behind a matmul's B:
/// DQ(wq [K, N], axis 1 or per tensor), or transpose(DQ(wq [N, K], axis 0
/// or per tensor), [1, 0]). Zero points must be 0.
struct Weight {
  Tensor wq;
  std::vector<double> scales; ///< N entries (or one)
};

std::optional<Weight> matchWeight(Value b) {
  bool transposed = false;
  if (auto t = b.getDefiningOp<TransposeOp>()) {
    auto perm = t.getPerm();
    if (perm.size() != 2 || perm[0] != 1 || perm[1] != 0)
      return std::nullopt;
    b = t.getInput();
    transposed = true;
  }
  auto d = matchDq(b);
  if (!d || !isSigned8(d->input.getType()) || !d->zeroFree())
    return std::nullopt;
  auto wq = constantTensor(d->input);
  if (!wq || wq->rank() != 2)
    return std::nullopt;
  int64_t channelAxis = transposed ? 0 : 1;
  if (!d->perTensor() && d->axis != channelAxis)
    return std::nullopt;
  Weight w;
  w.scales = d->scales;
  if (!transposed) {
    w.wq = *wq;
    return w;
  }
  int64_t n = wq->dim(0), k = wq->dim(1);
  Tensor out(DType::I8, {k, n});
  const int8_t *src = wq->data<int8_t>();
  int8_t *dst = out.mutableData<int8_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      dst[j * n + i] = src[i * k + j];
  w.wq = out;
  return w;
}

/// cast(acc) * scales, scales shaped `shape` (a scalar when one value).
Value dequantize(OpBuilder &b, Location loc, Value acc, const std::vector<double> &scales,
                 std::vector<int64_t> shape) {
  auto accType = cast<RankedTensorType>(acc.getType());
  Value f = CastOp::create(b, loc, accType.clone(b.getF32Type()), acc, false);
  if (scales.size() == 1)
    shape.clear();
  Tensor s(DType::F32, shape);
  for (size_t i = 0; i < scales.size(); ++i)
    s.mutableData<float>()[i] = (float)scales[i];
  return MulOp::create(b, loc, f, constantOf(b, loc, s));
}

bool foldMatMul(MatMulOp mm) {
  auto a = matchDq(mm.getLhs());
  if (!a || !a->perTensor() || a->zeros.size() != 1)
    return false;
  if (cast<RankedTensorType>(a->input.getType()).getRank() < 2)
    return false;
  OpBuilder b(mm);
  Location loc = mm.getLoc();
  if (auto w = matchWeight(mm.getRhs())) {
    std::vector<double> scales;
    for (double s : w->scales)
      scales.push_back(a->scales[0] * s);
    Value acc = MatMulIntegerOp::create(b, loc, a->input, constantOf(b, loc, w->wq),
                                        zeroPointOf(b, loc, *a),
                                        constantOf(b, loc, Tensor::scalar(DType::I8, 0)));
    mm.getResult().replaceAllUsesWith(dequantize(b, loc, acc, scales, {w->wq.dim(1)}));
    mm.erase();
    return true;
  }
  // Two activations (attention): both per tensor.
  auto c = matchDq(mm.getRhs());
  if (!c || !c->perTensor() || c->zeros.size() != 1 ||
      cast<RankedTensorType>(c->input.getType()).getRank() < 2 ||
      matchPattern(c->input, m_Constant()))
    return false;
  Value acc = MatMulIntegerOp::create(b, loc, a->input, c->input, zeroPointOf(b, loc, *a),
                                      zeroPointOf(b, loc, *c));
  mm.getResult().replaceAllUsesWith(dequantize(b, loc, acc, {a->scales[0] * c->scales[0]}, {}));
  mm.erase();
  return true;
}

bool foldConv(ConvOp conv) {
  auto x = matchDq(conv.getInput());
  if (!x || !x->perTensor() || x->zeros.size() != 1)
    return false;
  auto w = matchDq(conv.getWeight());
  if (!w || !isSigned8(w->input.getType()) || !w->zeroFree() || (!w->perTensor() && w->axis != 0))
    return false;
  auto wq = constantTensor(w->input);
  if (!wq)
    return false;
  int64_t m = wq->dim(0), rank = wq->rank();
  // The bias: a dequantized int32 constant or a float constant.
  std::optional<Tensor> bias;
  if (Value bv = conv.getBias()) {
    if (auto bd = bv.getDefiningOp<DequantizeLinearOp>()) {
      auto bq = constantTensor(bd.getInput()), bs = constantTensor(bd.getScale());
      if (!bq || !bs)
        return false;
      std::optional<Tensor> bz;
      if (bd.getZeroPoint() && !(bz = constantTensor(bd.getZeroPoint())))
        return false;
      std::vector<double> q = bq->toDoubleVector(), s = bs->toDoubleVector();
      std::vector<double> z = bz ? bz->toDoubleVector() : std::vector<double>{0};
      if ((int64_t)q.size() != m)
        return false;
      std::vector<double> f(m);
      for (int64_t i = 0; i < m; ++i)
        f[i] = (q[i] - z[z.size() == 1 ? 0 : i]) * s[s.size() == 1 ? 0 : i];
      bias = Tensor::fromDoubles(DType::F32, {m}, f);
    } else {
      bias = constantTensor(bv);
      if (!bias || bias->numElements() != m)
        return false;
      bias = bias->castTo(DType::F32);
    }
  }
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  Value acc =
      ConvIntegerOp::create(b, loc, x->input, w->input, zeroPointOf(b, loc, *x),
                            constantOf(b, loc, Tensor::scalar(DType::I8, 0)), conv.getStridesAttr(),
                            conv.getDilationsAttr(), conv.getPadsAttr(), conv.getGroupAttr());
  std::vector<int64_t> shape = {m};
  for (int64_t d = 2; d < rank; ++d)
    shape.push_back(1);
  std::vector<double> scales;
  for (double s : w->scales)
    scales.push_back(x->scales[0] * s);
  Value y = dequantize(b, loc, acc, scales, shape);
  if (bias)
    y = AddOp::create(b, loc, y, constantOf(b, loc, bias->reshaped(shape)));
  conv.getResult().replaceAllUsesWith(y);
  conv.erase();
  return true;
}

struct FoldQdqPass : public sluice::impl::FoldQdqPassBase<FoldQdqPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, ConvOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto mm = dyn_cast<MatMulOp>(op))
        foldMatMul(mm);
      else
        foldConv(cast<ConvOp>(op));
    }
    // Dequantize ops left without users (the weights' own) go away.
    SmallVector<Operation *> dead;
    getOperation().walk([&](DequantizeLinearOp dq) {
      if (dq->use_empty())
        dead.push_back(dq);
    });
    for (Operation *op : dead)
      op->erase();
  }
};

} // namespace
