// TEMPORARY (removed when the helpers' emitters merge this session).
#include "codegen/cuda/CudaGroups.h"
namespace sluice::codegen {
CudaEmit emitCudaAttentionGroup(CudaGroupContext &ctx) { return ctx.unsupported("pending"); }
}
