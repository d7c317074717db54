//===- NN.cpp - cpu emitters: convolution and pooling ---------------------===//
//
// Conv, ConvTranspose, ConvInteger and the pools as calls into
// sluice_gen/cpu_nn.h (direct loops) and sluice_gen/cpu_nn_blas.h (im2col +
// OpenBLAS for f32/f64). The window geometry is a compile-time
// `sluice_window`, every 1-D/2-D form padded to 3-D with leading unit dims so
// one loop nest covers them all.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/ScalarEmitter.h"
#include "dialects/sluice/SluiceOps.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// `static const sluice_window win = {...};` for spatial sizes `in`/`out`,
/// padded to three dims at the front.
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
    return cArray(r);
  };
  return "  static const sluice_window win = {" + padded(in, 1) + ", " + padded(kernel, 1) +
         ", " + padded(out, 1) + ", " + padded(strides, 1) + ", " + padded(dilations, 1) +
         ", " + padded(pads.take_front(spatial), 0) + ", " + padded(pads.drop_front(spatial), 0) +
         "};\n";
}

std::string str(int64_t v) { return std::to_string(v); }

bool isBlasFloat(Type t) { return t.isF32() || t.isF64(); }

LogicalResult emitConv(CpuOpContext &ctx) {
  auto conv = cast<ConvOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()),
                    o = shapeOf(conv.getOutput());
  if (x.size() < 3)
    return conv.emitOpError("cpu target: conv needs spatial dims");
  auto win = windowDecl(ctx.op, x.drop_front(2), w.drop_front(2), o.drop_front(2),
                        conv.getStrides(), conv.getDilations(), conv.getPads());
  if (failed(win))
    return failure();
  int64_t group = conv.getGroup();
  Type et = elementOf(conv.getInput());
  std::string t = storageType(et);
  std::string bias = conv.getBias() ? ctx.in[2] : "(const " + t + " *)nullptr";
  std::string dims = str(x[0]) + ", " + str(x[1]) + ", " + str(w[0]) + ", " + str(group);
  ctx.body += *win;
  bool depthwise = x[1] == group;
  if (isBlasFloat(et) && !depthwise) {
    ctx.include("sluice_gen/cpu_nn_blas.h");
    ctx.body += "  if (sluice_conv_gemm(args->num_threads, win, " + dims + ", " + ctx.in[0] +
                ", " + ctx.in[1] + ", " + bias + ", " + ctx.out[0] + "))\n    " +
                ctx.fail("\"out of memory\"") + "\n";
    return success();
  }
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.body += "  sluice_conv_direct<double>(args->num_threads, win, " + dims + ", " + ctx.in[0] +
              ", " + ctx.in[1] + ", " + bias + ", 0.0, (const int64_t *)nullptr, 0, " +
              ctx.out[0] + ");\n";
  return success();
}

LogicalResult emitConvInteger(CpuOpContext &ctx) {
  auto conv = cast<ConvIntegerOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()),
                    o = shapeOf(conv.getOutput());
  if (x.size() < 3)
    return conv.emitOpError("cpu target: conv needs spatial dims");
  auto win = windowDecl(ctx.op, x.drop_front(2), w.drop_front(2), o.drop_front(2),
                        conv.getStrides(), conv.getDilations(), conv.getPads());
  if (failed(win))
    return failure();
  int64_t wZeroCount = 1;
  for (int64_t d : shapeOf(conv.getWeightZeroPoint()))
    wZeroCount *= d;
  int64_t xZeroCount = 1;
  for (int64_t d : shapeOf(conv.getInputZeroPoint()))
    xZeroCount *= d;
  if (xZeroCount != 1)
    return conv.emitOpError("cpu target: input zero point must be a single value");
  if (wZeroCount != 1 && wZeroCount != w[0])
    return conv.emitOpError("cpu target: weight zero point must have 1 or M values");
  ctx.include("sluice_gen/cpu_nn.h");
  ctx.body += *win;
  ctx.body += "  sluice_conv_direct<int64_t>(args->num_threads, win, " + str(x[0]) + ", " +
              str(x[1]) + ", " + str(w[0]) + ", " + str(conv.getGroup()) + ", " + ctx.in[0] +
              ", " + ctx.in[1] + ", (const int64_t *)nullptr, (int64_t)" + ctx.in[2] + "[0], " +
              ctx.in[3] + ", " + str(wZeroCount) + ", " + ctx.out[0] + ");\n";
  return success();
}

LogicalResult emitConvTranspose(CpuOpContext &ctx) {
  auto conv = cast<ConvTransposeOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()),
                    o = shapeOf(conv.getOutput());
  if (x.size() < 3)
    return conv.emitOpError("cpu target: conv_transpose needs spatial dims");
  // The window maps input positions to (cropped) output positions.
  auto win = windowDecl(ctx.op, x.drop_front(2), w.drop_front(2), o.drop_front(2),
                        conv.getStrides(), conv.getDilations(), conv.getPads());
  if (failed(win))
    return failure();
  int64_t group = conv.getGroup();
  Type et = elementOf(conv.getInput());
  std::string t = storageType(et);
  std::string bias = conv.getBias() ? ctx.in[2] : "(const " + t + " *)nullptr";
  std::string dims = str(x[0]) + ", " + str(x[1]) + ", " + str(o[1]) + ", " + str(group);
  ctx.body += *win;
  std::string fn = isBlasFloat(et) ? "sluice_conv_transpose_gemm" : "sluice_conv_transpose_direct";
  ctx.include(isBlasFloat(et) ? "sluice_gen/cpu_nn_blas.h" : "sluice_gen/cpu_nn.h");
  ctx.body += "  if (" + fn + "(args->num_threads, win, " + dims + ", " + ctx.in[0] + ", " +
              ctx.in[1] + ", " + bias + ", " + ctx.out[0] + "))\n    " +
              ctx.fail("\"out of memory\"") + "\n";
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
  ctx.body += *win;
  ctx.body += "  sluice_pool(args->num_threads, win, " + str(x[0] * x[1]) + ", " + str(kind) +
              ", " + (pool.getCountIncludePad() ? "true" : "false") + ", " +
              str(pool.getP()) + ".0, " + (pool.getStorageOrder() == 1 ? "true" : "false") +
              ", " + str(x.size() - 2) + ", " + ctx.in[0] + ", " + ctx.out[0] + ", " +
              (withIndices ? ctx.out[1] : "(int64_t *)nullptr") + ");\n";
  return success();
}

} // namespace

void registerCpuNNEmitters(CpuOpRegistry &registry) {
  registry.add(ConvOp::getOperationName(), emitConv);
  registry.add(ConvIntegerOp::getOperationName(), emitConvInteger);
  registry.add(ConvTransposeOp::getOperationName(), emitConvTranspose);
  registry.add(PoolOp::getOperationName(), emitPool);
}

} // namespace sluice::codegen
