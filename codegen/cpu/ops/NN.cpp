//===- NN.cpp - cpu emitters: convolution, pooling and the nn family ------===//
//
// Conv, ConvTranspose, ConvInteger and the pools as calls into
// sluice_gen/cpu_nn.h (direct loops) and sluice_gen/cpu_nn_blas.h (im2col +
// OpenBLAS for f32/f64). The window geometry is a compile-time
// `sluice_window`, every 1-D/2-D form padded to 3-D with leading unit dims so
// one loop nest covers them all. Also quantize/dequantize, matmul_integer,
// det, einsum, max_unpool, resize (taps and weights computed here at compile
// time), roi_align, grid_sample and rnn (RNN/GRU/LSTM).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "dialects/sluice/SluiceOps.h"
#include "dialects/sluice/SluiceTypes.h"
#include "lib/reference/Resize.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <map>

using namespace mlir;

namespace sluice::codegen {
namespace {

/// `static const sluice_window win = {...};` for spatial sizes `in`/`out`,
/// padded to three dims at the front (one statement, no newline).
FailureOr<std::string> windowDecl(Operation *op, ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> out, ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  size_t spatial = in.size();
  if (spatial > 3 || kernel.size() != spatial || out.size() != spatial ||
      strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial)
    return op->emitOpError("cpu target: window ops support 1 to 3 spatial dims with "
                           "matching attributes");
  auto padded = [&](ArrayRef<int64_t> v, int64_t fill) {
    std::vector<int64_t> r(3 - spatial, fill);
    r.insert(r.end(), v.begin(), v.end());
    return cInt64List(r);
  };
  return "static const sluice_window win = {" + padded(in, 1) + ", " + padded(kernel, 1) + ", " +
         padded(out, 1) + ", " + padded(strides, 1) + ", " + padded(dilations, 1) + ", " +
         padded(pads.take_front(spatial), 0) + ", " + padded(pads.drop_front(spatial), 0) + "};";
}

/// `if (call)` failing the run with `message` (a C++ string expression):
/// calls that return nonzero when they run out of memory or meet a bad
/// input.
void failOnNonzero(CpuOpContext &ctx, const std::string &call, const std::string &message) {
  ctx.code.line("if ({0})", call);
  auto fail = ctx.code.indented();
  ctx.code.line("{0}", ctx.fail(message));
}

/// Float types whose convolutions run as GEMMs (f16/bf16 widened to f32,
/// cpu_nn_blas.h).
bool isBlasFloat(Type t) { return t.isF32() || t.isF64() || t.isF16() || t.isBF16(); }

/// What every convolution form starts from: the input, weight and output
/// shapes (spatial dims required) and the window declaration in the body.
struct ConvSetup {
  ArrayRef<int64_t> x, w, o;
};
template <typename ConvLike>
FailureOr<ConvSetup> convSetup(CpuOpContext &ctx, ConvLike conv, StringRef what) {
  ConvSetup c{shapeOf(conv.getInput()), shapeOf(conv.getWeight()), shapeOf(conv.getOutput())};
  if (c.x.size() < 3)
    return conv.emitOpError("cpu target: ") << what << " needs spatial dims";
  auto win = windowDecl(ctx.op, c.x.drop_front(2), c.w.drop_front(2), c.o.drop_front(2),
                        conv.getStrides(), conv.getDilations(), conv.getPads());
  if (failed(win))
    return failure();
  ctx.code.line("{0}", *win);
  return c;
}

/// The bias pointer of a float convolution (null when it has none).
template <typename ConvLike>
std::string biasPointer(CpuOpContext &ctx, ConvLike conv) {
  return conv.getBias() ? ctx.in[2]
                        : "(const " + storageType(elementOf(conv.getInput())) + " *)nullptr";
}

/// The conv paths of the cpu target (SLUICE_CPU_CONV, docs/tools.md).
enum class CpuConvPath { onednn, im2col };

/// Whether f32 convolutions run through oneDNN under `config`: the compiler
/// was built with it and the config does not ask for im2col.
bool onednnConvs(const CpuTargetConfig &config) {
  return cpuHasOnednn() && config.conv != "im2col";
}

/// oneDNN for f32 convolutions where onednnConvs(): its direct and
/// depthwise kernels (with oneDNN's blocked layouts inside the call)
/// measured faster than im2col + OpenBLAS and the direct loops on
/// ResNet-18's and depthwise shapes (bench/cpu/conv_bench.cpp,
/// docs/benchmarks.md); f64 and the widened f16/bf16 keep the GEMM path.
CpuConvPath cpuConvPath(Operation *op, Type et) {
  return et.isF32() && onednnConvs(cpuTargetConfig(op)) ? CpuConvPath::onednn : CpuConvPath::im2col;
}

} // namespace

bool cpuHasOnednn() {
#if SLUICE_CPU_DNNL
  return true;
#else
  return false;
#endif
}

const char *cpuConvPathName(const CpuTargetConfig &config) {
  return onednnConvs(config) ? "onednn" : "im2col";
}

bool cpuConvKeepsBlockedLayout(const CpuTargetConfig &config) {
  return onednnConvs(config) && config.conv != "onednn-nchw";
}

namespace {

/// The im2col GEMM (other floats) or direct loops (depthwise, integers) of
/// a convolution.
void emitConvLoops(CpuOpContext &ctx, ConvOp conv, const std::string &dims, bool depthwise) {
  Type et = elementOf(conv.getInput());
  std::string bias = biasPointer(ctx, conv);
  if (isBlasFloat(et) && !depthwise) {
    ctx.include("sluice_gen/cpu_nn_blas.h");
    failOnNonzero(ctx,
                  cCall("sluice_conv_gemm",
                        {"args->num_threads", "win", dims, ctx.in[0], ctx.in[1], bias, ctx.out[0]}),
                  "\"out of memory\"");
    return;
  }
  ctx.include("sluice_gen/cpu_nn.h");
  // f32 (depthwise) accumulates in f32: twice the SIMD width, and each
  // output sums only C/group * kSize products.
  std::string acc = et.isF32() ? "float" : "double";
  ctx.code.line("{0};", cCall("sluice_conv_direct<" + acc + ">",
                              {"args->num_threads", "win", dims, ctx.in[0], ctx.in[1], bias,
                               acc + "(0)", "(const int64_t *)nullptr", "0", ctx.out[0]}));
}

/// The post-ops of a convolution whose oneDNN call refused (or that runs on
/// the im2col path): out = relu?(out + residual?) over the output.
void emitConvPostOpsLoop(CpuOpContext &ctx, ConvOp conv, const CpuConvPostOps &post) {
  if (post.residual.empty() && !post.relu)
    return;
  int64_t n = 1;
  for (int64_t d : shapeOf(conv.getOutput()))
    n *= d;
  ctx.code.line("#pragma omp parallel for simd num_threads(args->num_threads)");
  auto loop = ctx.code.block("for (int64_t i = 0; i < {0}; ++i)", cInt64(n));
  ctx.code.line("const float v = {0}[i]{1};", ctx.out[0],
                post.residual.empty() ? "" : " + " + post.residual + "[i]");
  ctx.code.line("{0}[i] = {1};", ctx.out[0], post.relu ? "v > 0.f ? v : 0.f" : "v");
}

} // namespace

LogicalResult emitConvWithPostOps(CpuOpContext &ctx, const CpuConvPostOps &post) {
  auto conv = cast<ConvOp>(ctx.op);
  auto setup = convSetup(ctx, conv, "conv");
  if (failed(setup))
    return failure();
  ArrayRef<int64_t> x = setup->x, w = setup->w;
  int64_t group = conv.getGroup();
  std::string dims =
      decimal(x[0]) + ", " + decimal(x[1]) + ", " + decimal(w[0]) + ", " + decimal(group);
  bool depthwise = x[1] == group;
  bool any = !post.residual.empty() || post.relu;
  if (any && !elementOf(conv.getInput()).isF32())
    return conv.emitOpError("cpu target: conv post-ops need f32");
  if (cpuConvPath(conv, elementOf(conv.getInput())) == CpuConvPath::onednn) {
    // One oneDNN primitive (built once per thread count, weights reordered
    // once: cpu_nn_dnnl.h), its post-ops included; the loops below (and
    // the post-ops as a loop) when oneDNN refuses it.
    ctx.include("sluice_gen/cpu_nn_dnnl.h");
    ctx.code.line("static sluice_dnnl_conv dnnl_(win, {0}, {1}, true, {2}, {3}, {4});", dims,
                  conv.getBias() ? "true" : "false", post.residual.empty() ? "false" : "true",
                  post.relu ? "true" : "false", decimal(post.blockedSides));
    std::vector<std::string> call = {"args->num_threads", ctx.in[0], ctx.in[1],
                                     biasPointer(ctx, conv), ctx.out[0]};
    if (!post.residual.empty())
      call.push_back(post.residual);
    auto fallback = ctx.code.block("if ({0})", cCall("dnnl_.run", call));
    if (!post.blockedSides) {
      emitConvLoops(ctx, conv, dims, depthwise);
      emitConvPostOpsLoop(ctx, conv, post);
      return success();
    }
    // Blocked sides: the loops run on plain copies (cpu_nn_dnnl.h).
    ArrayRef<int64_t> o = shapeOf(conv.getOutput());
    ctx.code.line("sluice_dnnl_plain_io io_({0});",
                  llvm::join(std::vector<std::string>{
                                 "args->num_threads", decimal(post.blockedSides), decimal(x[0]),
                                 decimal(x[1]), decimal(w[0]), decimal(product(x.drop_front(2))),
                                 decimal(product(o.drop_front(2))), ctx.in[0], ctx.out[0],
                                 post.residual.empty() ? "nullptr" : post.residual},
                             ", "));
    ctx.code.line("if (!io_.ok())");
    ctx.code.line("  {0}", ctx.fail("\"out of memory\""));
    std::string in = ctx.in[0], out = ctx.out[0];
    ctx.in[0] = "io_.x";
    ctx.out[0] = "io_.out";
    CpuConvPostOps plainPost = post;
    if (!post.residual.empty())
      plainPost.residual = "io_.residual";
    emitConvLoops(ctx, conv, dims, depthwise);
    emitConvPostOpsLoop(ctx, conv, plainPost);
    ctx.in[0] = in;
    ctx.out[0] = out;
    ctx.code.line("io_.finish();");
    return success();
  }
  emitConvLoops(ctx, conv, dims, depthwise);
  emitConvPostOpsLoop(ctx, conv, post);
  return success();
}

namespace {

LogicalResult emitConv(CpuOpContext &ctx) { return emitConvWithPostOps(ctx, CpuConvPostOps()); }

LogicalResult emitConvInteger(CpuOpContext &ctx) {
  auto conv = cast<ConvIntegerOp>(ctx.op);
  auto setup = convSetup(ctx, conv, "conv");
  if (failed(setup))
    return failure();
  ArrayRef<int64_t> x = setup->x, w = setup->w;
  int64_t wZeroCount = product(shapeOf(conv.getWeightZeroPoint()));
  int64_t xZeroCount = product(shapeOf(conv.getInputZeroPoint()));
  if (xZeroCount != 1)
    return conv.emitOpError("cpu target: input zero point must be a single value");
  if (wZeroCount != 1 && wZeroCount != w[0])
    return conv.emitOpError("cpu target: weight zero point must have 1 or M values");
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line(
      "{0};", cCall("sluice_conv_direct<int64_t>",
                    {"args->num_threads", "win", decimal(x[0]), decimal(x[1]), decimal(w[0]),
                     decimal(conv.getGroup()), ctx.in[0], ctx.in[1], "(const int64_t *)nullptr",
                     "(int64_t)" + ctx.in[2] + "[0]", ctx.in[3], decimal(wZeroCount), ctx.out[0]}));
  return success();
}

LogicalResult emitConvTranspose(CpuOpContext &ctx) {
  auto conv = cast<ConvTransposeOp>(ctx.op);
  // The window maps input positions to (cropped) output positions.
  auto setup = convSetup(ctx, conv, "conv_transpose");
  if (failed(setup))
    return failure();
  ArrayRef<int64_t> x = setup->x, o = setup->o;
  int64_t group = conv.getGroup();
  Type et = elementOf(conv.getInput());
  std::string bias = biasPointer(ctx, conv);
  std::string dims =
      decimal(x[0]) + ", " + decimal(x[1]) + ", " + decimal(o[1]) + ", " + decimal(group);
  std::string fn = isBlasFloat(et) ? "sluice_conv_transpose_gemm" : "sluice_conv_transpose_direct";
  ctx.include(isBlasFloat(et) ? "sluice_gen/cpu_nn_blas.h" : "sluice_gen/cpu_nn.h");
  failOnNonzero(
      ctx, cCall(fn, {"args->num_threads", "win", dims, ctx.in[0], ctx.in[1], bias, ctx.out[0]}),
      "\"out of memory\"");
  return success();
}

LogicalResult emitPool(CpuOpContext &ctx) {
  auto pool = cast<PoolOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(pool.getInput()), o = shapeOf(pool.getOutput());
  if (x.size() < 3)
    return pool.emitOpError("cpu target: pool needs spatial dims");
  auto win = windowDecl(ctx.op, x.drop_front(2), pool.getKernelShape(), o.drop_front(2),
                        pool.getStrides(), pool.getDilations(), pool.getPads());
  if (failed(win))
    return failure();
  int kind = pool.getKind() == PoolKind::max ? 0 : pool.getKind() == PoolKind::avg ? 1 : 2;
  bool withIndices = pool.getReturnIndices() && pool->getNumResults() > 1;
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("{0}", *win);
  ctx.code.line("{0};",
                cCall("sluice_pool",
                      {"args->num_threads", "win", decimal(x[0] * x[1]), decimal(kind),
                       pool.getCountIncludePad() ? "true" : "false", decimal(pool.getP()) + ".0",
                       pool.getStorageOrder() == 1 ? "true" : "false", decimal(x.size() - 2),
                       ctx.in[0], ctx.out[0], withIndices ? ctx.out[1] : "(int64_t *)nullptr"}));
  return success();
}

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// (inner, params) of a per-tensor or per-axis quantization parameter.
FailureOr<std::pair<int64_t, int64_t>> paramLayout(Operation *op, Value x, Value param,
                                                   int64_t axis) {
  ArrayRef<int64_t> xs = shapeOf(x), ps = shapeOf(param);
  int64_t count = numElements(ps);
  if (ps.empty() || (ps.size() == 1 && count == 1))
    return std::make_pair(int64_t(1), int64_t(1));
  int64_t rank = xs.size();
  if (ps.size() != 1 || axis < -rank || axis >= rank)
    return op->emitOpError("cpu target: unsupported quantization parameter layout");
  if (axis < 0)
    axis += rank;
  if (xs[axis] != count)
    return op->emitOpError("cpu target: per-axis parameter size mismatch");
  return std::make_pair(numElements(xs.drop_front(axis + 1)), count);
}

LogicalResult emitQuantizeLinear(CpuOpContext &ctx) {
  auto q = cast<QuantizeLinearOp>(ctx.op);
  auto layout = paramLayout(ctx.op, q.getInput(), q.getScale(), q.getAxis());
  if (failed(layout))
    return failure();
  Type rt = elementOf(q.getOutput());
  if (isa<Float8E4M3FNType>(rt)) {
    std::string zero = q.getZeroPoint() ? ctx.in[2] : "(const sluice_f8e4m3 *)nullptr";
    ctx.include("sluice_gen/cpu_nn.h");
    ctx.code.line("{0};", cCall("sluice_quantize_f8",
                                {"args->num_threads", decimal(numElements(shapeOf(q.getInput()))),
                                 decimal(layout->first), decimal(layout->second),
                                 q.getSaturate() ? "true" : "false", ctx.in[0], ctx.in[1], zero,
                                 ctx.out[0]}));
    return success();
  }
  unsigned width = rt.getIntOrFloatBitWidth();
  bool isUnsigned = rt.isUnsignedInteger();
  double lo, hi;
  if (width >= 64) {
    lo = isUnsigned ? 0.0 : -9223372036854775808.0;
    hi = isUnsigned ? 18446744073709551615.0 : 9223372036854775807.0;
  } else if (isUnsigned) {
    lo = 0;
    hi = double((uint64_t(1) << width) - 1);
  } else {
    lo = -double(int64_t(1) << (width - 1));
    hi = double((int64_t(1) << (width - 1)) - 1);
  }
  bool single = !elementOf(q.getInput()).isF64();
  std::string zero = q.getZeroPoint() ? ctx.in[2] : "(const int64_t *)nullptr";
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line(
      "{0};", cCall("sluice_quantize",
                    {"args->num_threads", decimal(numElements(shapeOf(q.getInput()))),
                     decimal(layout->first), decimal(layout->second), single ? "true" : "false",
                     ctx.in[0], ctx.in[1], zero, doubleDigits(lo), doubleDigits(hi), ctx.out[0]}));
  return success();
}

LogicalResult emitDequantizeLinear(CpuOpContext &ctx) {
  auto dq = cast<DequantizeLinearOp>(ctx.op);
  auto layout = paramLayout(ctx.op, dq.getInput(), dq.getScale(), dq.getAxis());
  if (failed(layout))
    return failure();
  bool fp8 = isa<Float8E4M3FNType>(elementOf(dq.getInput()));
  std::string zero = dq.getZeroPoint() ? ctx.in[2]
                     : fp8             ? "(const sluice_f8e4m3 *)nullptr"
                                       : "(const int64_t *)nullptr";
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("{0};", cCall(fp8 ? "sluice_dequantize_f8" : "sluice_dequantize",
                              {"args->num_threads", decimal(numElements(shapeOf(dq.getInput()))),
                               decimal(layout->first), decimal(layout->second), ctx.in[0],
                               ctx.in[1], zero, ctx.out[0]}));
  return success();
}

LogicalResult emitMatMulInteger(CpuOpContext &ctx) {
  auto mm = cast<MatMulIntegerOp>(ctx.op);
  std::vector<int64_t> as(shapeOf(mm.getLhs()).begin(), shapeOf(mm.getLhs()).end()),
      bs(shapeOf(mm.getRhs()).begin(), shapeOf(mm.getRhs()).end());
  if (as.empty() || bs.empty())
    return mm.emitOpError("cpu target: matmul_integer operands must have rank >= 1");
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  size_t batchRank = std::max(as.size(), bs.size()) - 2;
  auto batchDim = [&](const std::vector<int64_t> &s, size_t d) -> int64_t {
    int64_t idx = (int64_t)d - (int64_t)(batchRank - (s.size() - 2));
    return idx < 0 ? 1 : s[idx];
  };
  std::vector<int64_t> batch(batchRank);
  int64_t batches = 1;
  for (size_t d = 0; d < batchRank; ++d) {
    batch[d] = std::max(batchDim(as, d), batchDim(bs, d));
    batches *= batch[d];
  }
  if (batches > (1 << 20))
    return mm.emitOpError("cpu target: too many matmul batches");
  std::vector<int64_t> aOff, bOff;
  for (int64_t i = 0; i < batches; ++i) {
    int64_t rest = i, ao = 0, bo = 0, aStride = m * k, bStride = k * n;
    for (int64_t d = (int64_t)batchRank - 1; d >= 0; --d) {
      int64_t c = rest % batch[d];
      rest /= batch[d];
      int64_t ad = batchDim(as, d), bd = batchDim(bs, d);
      ao += (ad == 1 ? 0 : c) * aStride;
      bo += (bd == 1 ? 0 : c) * bStride;
      aStride *= ad;
      bStride *= bd;
    }
    aOff.push_back(ao);
    bOff.push_back(bo);
  }
  int64_t az = numElements(shapeOf(mm.getLhsZeroPoint())),
          bz = numElements(shapeOf(mm.getRhsZeroPoint()));
  if ((az != 1 && az != m) || (bz != 1 && bz != n))
    return mm.emitOpError("cpu target: zero points must be scalars or per row / column");
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("{0}", cInt64ArrayDecl("a_off", aOff));
  ctx.code.line("{0}", cInt64ArrayDecl("b_off", bOff));
  ctx.code.line("{0};", cCall("sluice_matmul_integer",
                              {"args->num_threads", decimal(batches), decimal(m), decimal(n),
                               decimal(k), ctx.in[0], "a_off", ctx.in[1], "b_off", ctx.in[2],
                               decimal(az), ctx.in[3], decimal(bz), ctx.out[0]}));
  return success();
}

LogicalResult emitDet(CpuOpContext &ctx) {
  ArrayRef<int64_t> x = shapeOf(ctx.op->getOperand(0));
  if (x.size() < 2 || x.back() != x[x.size() - 2])
    return ctx.op->emitOpError("cpu target: det expects square matrices");
  int64_t n = x.back();
  ctx.include("sluice_gen/cpu_nn.h");
  // A fresh workspace per run: concurrent runs must not share it.
  CodeWriter &w = ctx.code;
  w.line("double *work = (double *)malloc({0} * sizeof(double));", std::max<int64_t>(n * n, 1));
  w.line("if (!work)");
  {
    auto fail = w.indented();
    w.line("{0}", ctx.fail("\"out of memory\""));
  }
  w.line("{0};", cCall("sluice_det", {decimal(numElements(x.drop_back(2))), decimal(n), ctx.in[0],
                                      ctx.out[0], "work"}));
  w.line("free(work);");
  return success();
}

LogicalResult emitEinsum(CpuOpContext &ctx) {
  auto einsum = cast<EinsumOp>(ctx.op);
  SmallVector<int64_t> ranks;
  for (Value v : einsum.getInputs())
    ranks.push_back(shapeOf(v).size());
  SmallVector<SmallVector<int64_t>> labels;
  SmallVector<int64_t> outLabels;
  std::string error = EinsumOp::parseEquation(einsum.getEquation(), ranks, labels, outLabels);
  if (!error.empty())
    return einsum.emitOpError("cpu target: equation: ") << error;
  std::map<int64_t, int64_t> sizes;
  for (auto [v, operandLabels] : llvm::zip(einsum.getInputs(), labels))
    for (auto [d, label] : llvm::enumerate(operandLabels)) {
      int64_t size = shapeOf(v)[d];
      auto it = sizes.find(label);
      if (it == sizes.end() || it->second == 1)
        sizes[label] = size;
    }
  std::vector<int64_t> all(outLabels.begin(), outLabels.end());
  for (auto [label, size] : sizes)
    if (!llvm::is_contained(outLabels, label))
      all.push_back(label);
  if (all.size() > 64)
    return einsum.emitOpError("cpu target: too many einsum labels");
  std::map<int64_t, size_t> position;
  std::vector<int64_t> extents, strides;
  for (auto [i, label] : llvm::enumerate(all)) {
    position[label] = i;
    extents.push_back(sizes[label]);
  }
  for (auto [v, operandLabels] : llvm::zip(einsum.getInputs(), labels)) {
    ArrayRef<int64_t> shape = shapeOf(v);
    std::vector<int64_t> s(all.size(), 0), tStrides(shape.size(), 1);
    for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
      tStrides[d] = tStrides[d + 1] * shape[d + 1];
    for (auto [d, label] : llvm::enumerate(operandLabels))
      if (shape[d] != 1 || sizes[label] == 1)
        s[position[label]] += tStrides[d];
    strides.insert(strides.end(), s.begin(), s.end());
  }
  std::string t = storageType(elementOf(einsum.getInputs()[0]));
  std::string ptrs;
  for (size_t i = 0; i < einsum.getInputs().size(); ++i)
    ptrs += (i ? ", " : "") + ctx.in[i];
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("{0}", cInt64ArrayDecl("extents", extents));
  ctx.code.line("{0}", cInt64ArrayDecl("strides", strides));
  ctx.code.line("const {0} *const operands[] = {{{1}};", t, ptrs);
  ctx.code.line("{0};", cCall("sluice_einsum",
                              {"args->num_threads", decimal(einsum.getInputs().size()), "operands",
                               decimal(all.size()), decimal(outLabels.size()), "extents", "strides",
                               isa<FloatType>(elementOf(einsum.getOutput())) ? "false" : "true",
                               ctx.out[0]}));
  return success();
}

LogicalResult emitMaxUnpool(CpuOpContext &ctx) {
  auto unpool = cast<MaxUnpoolOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(unpool.getInput());
  ArrayRef<int64_t> kernel = unpool.getKernelShape(), strides = unpool.getStrides(),
                    pads = unpool.getPads();
  int64_t spatial = kernel.size();
  if ((int64_t)x.size() != spatial + 2 || (int64_t)strides.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial)
    return unpool.emitOpError("cpu target: max_unpool attributes do not match the input");
  std::vector<int64_t> natural = {x[0], x[1]};
  for (int64_t d = 0; d < spatial; ++d)
    natural.push_back((x[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + spatial]);
  ArrayRef<int64_t> out = shapeOf(unpool.getOutput());
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("{0}", cInt64ArrayDecl("natural", natural));
  ctx.code.line("{0}", cInt64ArrayDecl("out_shape", out));
  failOnNonzero(
      ctx,
      cCall("sluice_max_unpool", {decimal(numElements(x)), decimal(natural.size()), "natural",
                                  "out_shape", ctx.in[0], ctx.in[1], ctx.out[0]}),
      "\"index outside the output\"");
  return success();
}

/// One resized axis as the flat tables the kernel reads: `ntaps` taps and
/// weights per output position (zeros where it extrapolates), from the
/// evaluator's sampling rule (lib/reference/Resize.h).
struct ResizeAxis {
  int64_t ntaps = 0;
  std::vector<int64_t> taps;
  std::vector<double> weights;
  std::vector<int64_t> extrapolate;
};

ResizeAxis resizeTables(ResizeOp resize, int64_t in, int64_t out, double scale,
                        double roiStart, double roiEnd) {
  ResizeAxis r;
  StringRef mode = resize.getMode();
  r.ntaps = mode == "nearest" || mode == "linear" ? 2 : 4;
  for (const ResizeSample &sample : resizeAxis(resize, in, out, scale, roiStart, roiEnd)) {
    r.extrapolate.push_back(sample.extrapolate);
    for (int64_t i = 0; i < r.ntaps; ++i) {
      bool tap = !sample.extrapolate && i < (int64_t)sample.taps.size();
      r.taps.push_back(tap ? sample.taps[i] : 0);
      r.weights.push_back(tap ? sample.weights[i] : 0.0);
    }
  }
  return r;
}

/// Float values of a constant operand, seen through the kernel boundary:
/// constants too big to be cloned into the group (dense_resource blobs are
/// never cloned) are kernel inputs defined by a top-level constant.
std::optional<SmallVector<double>> constantFloats(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    if (Operation *parent = arg.getOwner()->getParentOp())
      if (isa<KernelOp>(parent) && arg.getArgNumber() < parent->getNumOperands())
        value = parent->getOperand(arg.getArgNumber());
  return getConstantFloatValues(value);
}

/// `static const double name[] = {...};` (one statement, no newline).
std::string cDoubleArrayDecl(const std::string &name, ArrayRef<double> values) {
  std::string s = "static const double " + name + "[] = {";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + doubleDigits(values[i]);
  if (values.empty())
    s += "0";
  return s + "};";
}

/// A resize as a chain of one-axis passes over a double buffer: each
/// resized axis with its tables, the buffer size the largest pass needs,
/// and the range the result is clamped to (integers).
struct ResizePlan {
  struct Pass {
    int64_t outer = 1, in = 0, out = 0, inner = 1;
    ResizeAxis tables;
  };
  std::vector<Pass> passes;
  int64_t maxCount = 1;
  bool integer = false;
  double lo = 0, hi = 0;
};

/// The resize's scales and roi (constants), then one pass per axis that
/// changes.
FailureOr<ResizePlan> planResize(ResizeOp resize) {
  ArrayRef<int64_t> x = shapeOf(resize.getInput()), o = shapeOf(resize.getOutput());
  int64_t rank = x.size();
  std::vector<double> scales(rank, 1.0);
  if (resize.getSizes()) {
    for (int64_t i = 0; i < rank; ++i)
      scales[i] = x[i] ? (double)o[i] / x[i] : 1.0;
  } else {
    auto values = resize.getScales() ? constantFloats(resize.getScales())
                                     : std::nullopt;
    if (!values || (int64_t)values->size() != rank)
      return resize.emitOpError("cpu target: resize needs constant scales");
    for (int64_t i = 0; i < rank; ++i)
      scales[i] = (float)(*values)[i];
  }
  bool cropping = resize.getCoordinateTransformationMode() == "tf_crop_and_resize";
  std::vector<double> roi;
  if (resize.getRoi()) {
    auto values = constantFloats(resize.getRoi());
    if (values && (int64_t)values->size() == 2 * rank)
      roi.assign(values->begin(), values->end());
    else if (cropping)
      return resize.emitOpError("cpu target: tf_crop_and_resize needs a constant roi");
  } else if (cropping) {
    return resize.emitOpError("cpu target: tf_crop_and_resize needs a roi");
  }
  ResizePlan plan;
  plan.maxCount = numElements(x);
  std::vector<int64_t> shape(x.begin(), x.end());
  for (int64_t axis = 0; axis < rank; ++axis) {
    double roiStart = roi.empty() ? 0.0 : roi[axis];
    double roiEnd = roi.empty() ? 1.0 : roi[axis + rank];
    bool identity = std::abs(scales[axis] - 1.0) <= 1e-9 && o[axis] == shape[axis] &&
                    (!cropping || (std::abs(roiStart) <= 1e-9 && std::abs(roiEnd - 1.0) <= 1e-9));
    if (identity)
      continue;
    if (shape[axis] == 0 && o[axis] > 0)
      return resize.emitOpError("cpu target: cannot resize an empty dim");
    ResizePlan::Pass pass;
    pass.tables = resizeTables(resize, shape[axis], o[axis], scales[axis], roiStart, roiEnd);
    pass.in = shape[axis];
    pass.out = o[axis];
    for (int64_t d = 0; d < axis; ++d)
      pass.outer *= shape[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      pass.inner *= shape[d];
    shape[axis] = o[axis];
    plan.maxCount = std::max(plan.maxCount, pass.outer * pass.out * pass.inner);
    plan.passes.push_back(std::move(pass));
  }
  Type et = elementOf(resize.getInput());
  plan.integer = !isa<FloatType>(et);
  if (plan.integer) {
    unsigned width = et.getIntOrFloatBitWidth();
    if (width == 1) {
      plan.hi = 1;
    } else if (width >= 64) {
      plan.lo = -9.2e18;
      plan.hi = 9.2e18;
    } else if (et.isUnsignedInteger()) {
      plan.hi = double((uint64_t(1) << width) - 1);
    } else {
      plan.lo = -double(int64_t(1) << (width - 1));
      plan.hi = double((int64_t(1) << (width - 1)) - 1);
    }
  }
  return plan;
}

LogicalResult emitResize(CpuOpContext &ctx) {
  auto resize = cast<ResizeOp>(ctx.op);
  auto plan = planResize(resize);
  if (failed(plan))
    return failure();
  CodeWriter &w = ctx.code;
  for (auto [i, pass] : llvm::enumerate(plan->passes)) {
    const ResizeAxis &r = pass.tables;
    std::string id = decimal(i);
    w.line("{0}", cInt64ArrayDecl("taps" + id, r.taps));
    w.line("{0}", cDoubleArrayDecl("weights" + id, r.weights));
    std::string flags;
    for (size_t e = 0; e < r.extrapolate.size(); ++e)
      flags += (e ? ", " : "") + decimal(r.extrapolate[e]);
    w.line("static const unsigned char extrapolate{0}[] = {{{1}};", id,
           r.extrapolate.empty() ? "0" : flags);
  }
  ctx.include("sluice_gen/cpu_nn.h");
  int64_t buffer = std::max<int64_t>(plan->maxCount, 1);
  w.line("double *src = (double *)malloc({0} * sizeof(double)), *dst = (double *)malloc({0} * "
         "sizeof(double));",
         buffer);
  w.line("if (!src || !dst) {{ free(src); free(dst); {0} }", ctx.fail("\"out of memory\""));
  w.line("sluice_to_double({0}, {1}, src);", numElements(shapeOf(resize.getInput())), ctx.in[0]);
  std::string extrapolation = doubleDigits(resize.getExtrapolationValue().convertToFloat());
  for (auto [i, pass] : llvm::enumerate(plan->passes)) {
    std::string id = decimal(i);
    w.line("{0};",
           cCall("sluice_resize_axis",
                 {"args->num_threads", decimal(pass.outer), decimal(pass.in), decimal(pass.out),
                  decimal(pass.inner), decimal(pass.tables.ntaps), "taps" + id, "weights" + id,
                  "extrapolate" + id, extrapolation, "src", "dst"}));
    w.line("{{ double *t = src; src = dst; dst = t; }");
  }
  w.line("{0};",
         cCall("sluice_from_double", {decimal(numElements(shapeOf(resize.getOutput()))), "src",
                                      plan->integer ? "true" : "false", doubleDigits(plan->lo),
                                      doubleDigits(plan->hi), ctx.out[0]}));
  w.line("free(src);");
  w.line("free(dst);");
  return success();
}

LogicalResult emitRoiAlign(CpuOpContext &ctx) {
  auto align = cast<RoiAlignOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(align.getInput()), rois = shapeOf(align.getRois());
  if (x.size() != 4 || rois.size() != 2 || rois[1] != 4)
    return align.emitOpError("cpu target: roi_align expects X [N, C, H, W], rois [R, 4]");
  std::string scale = doubleDigits(align.getSpatialScale().convertToFloat());
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("if (int32_t status = {0})",
                cCall("sluice_roi_align",
                      {"args->num_threads", decimal(x[0]), decimal(x[1]), decimal(x[2]),
                       decimal(x[3]), decimal(rois[0]), decimal(align.getOutputHeight()),
                       decimal(align.getOutputWidth()), decimal(align.getSamplingRatio()), scale,
                       align.getCoordinateTransformationMode() == "half_pixel" ? "true" : "false",
                       align.getMode() == "max" ? "true" : "false", ctx.in[0], ctx.in[1], ctx.in[2],
                       ctx.out[0]}));
  auto fail = ctx.code.indented();
  ctx.code.line("{0}", ctx.fail("status == 2 ? \"out of memory\" : \"batch index out of range "
                                "or roi not finite\""));
  return success();
}

LogicalResult emitGridSample(CpuOpContext &ctx) {
  auto sample = cast<GridSampleOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(sample.getInput()), grid = shapeOf(sample.getGrid());
  if (x.size() != 4 || grid.size() != 4 || grid[3] != 2)
    return sample.emitOpError("cpu target: grid_sample supports 4-D inputs only");
  StringRef mode = sample.getMode(), padding = sample.getPaddingMode();
  int modeCode = mode == "nearest" ? 1 : mode == "bilinear" ? 0 : 2;
  int paddingCode = padding == "border" ? 1 : padding == "reflection" ? 2 : 0;
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("{0};", cCall("sluice_grid_sample",
                              {"args->num_threads", decimal(x[0]), decimal(x[1]), decimal(x[2]),
                               decimal(x[3]), decimal(grid[1]), decimal(grid[2]), decimal(modeCode),
                               decimal(paddingCode), sample.getAlignCorners() ? "true" : "false",
                               ctx.in[0], ctx.in[1], ctx.out[0]}));
  return success();
}

LogicalResult emitRnn(CpuOpContext &ctx) {
  auto rnn = cast<RnnOp>(ctx.op);
  StringRef cell = rnn.getCell(), direction = rnn.getDirection();
  int cellCode = cell == "lstm" ? 2 : cell == "gru" ? 1 : 0;
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  ArrayRef<int64_t> x = shapeOf(rnn.getInput());
  if (x.size() != 3)
    return rnn.emitOpError("cpu target: rnn input must be (seq, batch, features)");
  if (cellCode == 2 && rnn.getExtras().size() < 2)
    return rnn.emitOpError("cpu target: lstm needs initial_c and peepholes");
  // Activations with their alpha/beta bound as the evaluator binds them.
  static const std::map<std::string, std::pair<double, double>> defaults = {
      {"Affine", {1.0, 0.0}},        {"LeakyRelu", {0.01, 0.0}},
      {"ThresholdedRelu", {1.0, 0}}, {"ScaledTanh", {1.0, 1.0}},
      {"HardSigmoid", {0.2, 0.5}},   {"Elu", {1.0, 0.0}}};
  static const char *names[] = {"Sigmoid",    "Tanh",        "Relu",     "Affine",
                                "LeakyRelu",  "ThresholdedRelu", "ScaledTanh",
                                "HardSigmoid", "Elu",        "Softsign", "Softplus"};
  ArrayRef<float> alphas = rnn.getActivationAlpha(), betas = rnn.getActivationBeta();
  size_t ai = 0, bi = 0;
  std::string acts;
  size_t count = 0;
  for (Attribute a : rnn.getActivations()) {
    std::string name = cast<StringAttr>(a).getValue().str();
    int kind = 10;
    for (int k = 0; k < 11; ++k)
      if (name == names[k])
        kind = k;
    double alpha = 0.0, beta = 0.0;
    auto it = defaults.find(name);
    if (it != defaults.end()) {
      alpha = ai < alphas.size() ? alphas[ai++] : it->second.first;
      if (name == "Affine" || name == "ScaledTanh" || name == "HardSigmoid")
        beta = bi < betas.size() ? betas[bi++] : it->second.second;
    }
    acts += std::string(count++ ? ", " : "") + "{" + decimal(kind) + ", " + doubleDigits(alpha) +
            ", " + doubleDigits(beta) + "}";
  }
  size_t perDir = cellCode == 2 ? 3 : cellCode == 1 ? 2 : 1;
  if (count != perDir * dirs)
    return rnn.emitOpError("cpu target: rnn expects ") << perDir * dirs << " activations";
  std::string clip = doubleDigits(rnn.getClip() ? rnn.getClip()->convertToDouble() : 0.0);
  std::string t = storageType(elementOf(rnn.getInput()));
  std::string none = "(const " + t + " *)nullptr";
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.code.line("static const sluice_act acts[] = {{{0}};", acts);
  ctx.code.line("if (int32_t status = {0})",
                cCall("sluice_rnn", {"args->num_threads",
                                     decimal(cellCode),
                                     decimal(dirs),
                                     direction == "reverse" ? "true" : "false",
                                     decimal(x[0]),
                                     decimal(x[1]),
                                     decimal(x[2]),
                                     decimal(rnn.getHiddenSize()),
                                     "acts",
                                     rnn.getClip() ? "true" : "false",
                                     clip,
                                     rnn.getLinearBeforeReset() ? "true" : "false",
                                     rnn.getInputForget() ? "true" : "false",
                                     ctx.in[0],
                                     ctx.in[1],
                                     ctx.in[2],
                                     ctx.in[3],
                                     ctx.in[4],
                                     ctx.in[5],
                                     cellCode == 2 ? ctx.in[6] : none,
                                     cellCode == 2 ? ctx.in[7] : none,
                                     ctx.out[0],
                                     ctx.out[1],
                                     ctx.out.size() > 2 ? ctx.out[2] : "(" + t + " *)nullptr"}));
  auto fail = ctx.code.indented();
  ctx.code.line("{0}", ctx.fail("status == 2 ? \"out of memory\" : \"sequence length out of "
                                "range\""));
  return success();
}

} // namespace

void registerCpuNNEmitters(CpuOpRegistry &registry) {
  registry.add(ConvOp::getOperationName(), emitConv);
  registry.add(ConvIntegerOp::getOperationName(), emitConvInteger);
  registry.add(ConvTransposeOp::getOperationName(), emitConvTranspose);
  registry.add(PoolOp::getOperationName(), emitPool);
  registry.add(QuantizeLinearOp::getOperationName(), emitQuantizeLinear);
  registry.add(DequantizeLinearOp::getOperationName(), emitDequantizeLinear);
  registry.add(MatMulIntegerOp::getOperationName(), emitMatMulInteger);
  registry.add(DetOp::getOperationName(), emitDet);
  registry.add(EinsumOp::getOperationName(), emitEinsum);
  registry.add(MaxUnpoolOp::getOperationName(), emitMaxUnpool);
  registry.add(ResizeOp::getOperationName(), emitResize);
  registry.add(RoiAlignOp::getOperationName(), emitRoiAlign);
  registry.add(GridSampleOp::getOperationName(), emitGridSample);
  registry.add(RnnOp::getOperationName(), emitRnn);
}

} // namespace sluice::codegen
