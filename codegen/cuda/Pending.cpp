// TEMPORARY (removed when the helpers' emitters merge this session).
#include "codegen/cuda/CudaGroups.h"
namespace sluice::codegen {
CudaEmit emitCudaGemmGroup(CudaGroupContext &ctx) { return ctx.unsupported("pending"); }
CudaEmit emitCudaRowGroup(CudaGroupContext &ctx) { return ctx.unsupported("pending"); }
CudaEmit emitCudaAttentionGroup(CudaGroupContext &ctx) { return ctx.unsupported("pending"); }
CudaEmit emitCudaConv(CudaGroupContext &ctx, mlir::Operation *) { return ctx.unsupported("pending"); }
}
