//===- NN.cpp - cuda form F5: pooling and batch norm ----------------------===//
//
// Pooling (max, average, Lp; 1 to 3 spatial dims) and inference batch norm
// as one launch each of the kernels of sluice_gen/cuda_nn.h, with the
// window geometry fixed at compile time.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/cuda/CudaGroups.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// `sluice_cuda_window{...}` for 1 to 3 spatial dims (leading dims 1).
FailureOr<std::string> windowOf(Operation *op, ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> out, ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  size_t spatial = in.size();
  if (spatial < 1 || spatial > 3 || kernel.size() != spatial || out.size() != spatial ||
      strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial)
    return failure();
  auto padded = [&](ArrayRef<int64_t> v, int64_t fill) {
    std::vector<int64_t> r(3 - spatial, fill);
    r.insert(r.end(), v.begin(), v.end());
    return cInt64List(r);
  };
  return "sluice_cuda_window{" + padded(in, 1) + ", " + padded(kernel, 1) + ", " +
         padded(out, 1) + ", " + padded(strides, 1) + ", " + padded(dilations, 1) + ", " +
         padded(pads.take_front(spatial), 0) + ", " + padded(pads.drop_front(spatial), 0) + "}";
}

CudaEmit emitPool(CudaGroupContext &ctx, PoolOp pool) {
  ArrayRef<int64_t> x = shapeOf(pool.getInput()), o = shapeOf(pool.getOutput());
  if (x.size() < 3)
    return ctx.unsupported("pool without spatial dims");
  auto win = windowOf(pool, x.drop_front(2), pool.getKernelShape(), o.drop_front(2),
                      pool.getStrides(), pool.getDilations(), pool.getPads());
  if (failed(win))
    return ctx.unsupported("pool over more than 3 spatial dims");
  int64_t total = product(o);
  if (total == 0)
    return CudaEmit::Done;
  auto in = singleOperand(ctx, pool, 0);
  auto out = singleResult(ctx, pool, 0);
  if (failed(in) || failed(out))
    return CudaEmit::Error;
  std::string indices = "(int64_t *)nullptr";
  if (pool.getReturnIndices() && pool->getNumResults() > 1 && !pool->getResult(1).use_empty()) {
    auto idx = singleResult(ctx, pool, 1);
    if (failed(idx))
      return CudaEmit::Error;
    indices = *idx;
  }
  int kind = pool.getKind() == PoolKind::max ? 0 : pool.getKind() == PoolKind::avg ? 1 : 2;
  ctx.include("sluice_gen/cuda_nn.h");
  CodeWriter h(1);
  h.line("sluice_pool_kernel<{0}, {1}><<<sluice_grid({2}, 256), 256, 0, stream>>>({3}, {4}, {5}, "
         "{6}.0, {7}, {8}, {9}, {10});",
         storageType(elementOf(pool.getInput())), kind, total, *win, cInt64(x[0] * x[1]),
         pool.getCountIncludePad() ? "true" : "false", pool.getP(),
         pool.getStorageOrder() == 1 ? "true" : "false", *in, *out, indices);
  h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  *ctx.host += h.str();
  return CudaEmit::Done;
}

CudaEmit emitBatchNorm(CudaGroupContext &ctx, BatchNormOp bn) {
  ArrayRef<int64_t> shape = shapeOf(bn.getInput());
  if (shape.size() < 2)
    return ctx.unsupported("batch_norm of rank < 2");
  int64_t channels = shape[1];
  for (Value p : {bn.getScale(), bn.getBias(), bn.getMean(), bn.getVariance()})
    if (product(shapeOf(p)) != channels || elementOf(p) != elementOf(bn.getScale()))
      return ctx.unsupported("batch_norm parameters of another size or type");
  int64_t total = product(shape);
  if (total == 0)
    return CudaEmit::Done;
  std::vector<std::string> ins;
  for (unsigned i = 0; i < 5; ++i) {
    auto p = singleOperand(ctx, bn, i);
    if (failed(p))
      return CudaEmit::Error;
    ins.push_back(*p);
  }
  auto out = singleResult(ctx, bn, 0);
  if (failed(out))
    return CudaEmit::Error;
  ctx.include("sluice_gen/cuda_nn.h");
  CodeWriter h(1);
  h.line("sluice_batch_norm_kernel<{0}, {1}><<<sluice_grid({2}, 256), 256, 0, stream>>>({3}, {4}, "
         "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12});",
         storageType(elementOf(bn.getInput())), storageType(elementOf(bn.getScale())), total,
         ins[0], ins[1], ins[2], ins[3], ins[4], *out, cInt64(shape[0]), cInt64(channels),
         cInt64(product(shape.drop_front(2))), cFloatLiteral(bn.getEpsilon()));
  h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  *ctx.host += h.str();
  return CudaEmit::Done;
}

} // namespace

CudaEmit emitCudaNNOp(CudaGroupContext &ctx, Operation *op) {
  if (auto pool = dyn_cast<PoolOp>(op))
    return emitPool(ctx, pool);
  if (auto bn = dyn_cast<BatchNormOp>(op))
    return emitBatchNorm(ctx, bn);
  return ctx.unsupported("no cuda kernel for " + op->getName().getStringRef().str());
}

} // namespace sluice::codegen
