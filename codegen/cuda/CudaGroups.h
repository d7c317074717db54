//===- CudaGroups.h - kernel-group emitters of the cuda target -*- C++ -*-===//
//
// The cuda target emits the same five group forms as the cpu target
// (docs/architecture.md, "fuse"): elementwise (F1), GEMM with an epilogue
// (F2, cuBLASLt), row op with a prologue and an epilogue (F3, one block or
// warp per row), attention (F4, flash attention) and single ops (F5: conv
// through cuDNN, a few data movers; every other op runs as a host step
// through the cpu emitter). Views (lib/kernel/Views.h, target-neutral)
// become offsets and strides exactly as on cpu.
//
// A group emitter writes
//   - device code (`__global__` kernels, functors) into *device, at
//     namespace scope inside the kernel's own namespace, and
//   - the host statements of the step function into *host: launches on
//     `stream` and library calls, each checked (SLUICE_CUDA, SLUICE_LAUNCHED,
//     SLUICE_CUBLAS, SLUICE_CUDNN with `kernelName()`), returning nonzero on
//     failure. The step function returns 0 after them.
// The step function has `args` (const SluiceRunArgs *), `stream`
// (cudaStream_t) and `state` (SluiceCudaState *) in scope.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_CUDA_CUDAGROUPS_H
#define SLUICE_CODEGEN_CUDA_CUDAGROUPS_H

#include "codegen/common/KernelModel.h"
#include "codegen/common/WeightTransform.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <set>
#include <string>
#include <vector>

namespace sluice::codegen {

/// What an emitter decided about a group.
enum class CudaEmit {
  Done,        ///< device code and launches written
  Unsupported, ///< no cuda kernel for this form: the group runs on the host
               ///< (why in CudaGroupContext::reason); nothing was written
  Error        ///< an error was emitted on the op; compilation fails
};

struct CudaGroupContext {
  KernelOp kernel;
  /// The kernel's symbol (unique in the module): name device functions
  /// `<name>_...` or put them in *device (already inside `namespace <name>`).
  std::string name;
  std::string *device;
  std::string *host;
  /// The step's index in the run (for sluice_device_fail(state->deviceError,
  /// step) from kernels that find a bad input).
  int64_t step = 0;
  std::set<std::string> *headers;
  /// Device pointer expressions of leaves: block arguments ("in0", typed
  /// `const T *`) and non-splat dense constants ("c0": `__device__` arrays
  /// the emitter declared).
  llvm::DenseMap<mlir::Value, std::string> pointers;
  /// C++ literals (compute type) of splat or one-element constants.
  llvm::DenseMap<mlir::Value, std::string> literals;
  /// `T *` name of yield operand i.
  std::string output(unsigned i) const { return "out" + std::to_string(i); }
  /// Workspace the group needs (bytes of args->device_state's workspace;
  /// the emitter records its maximum so init can allocate it).
  int64_t *workspaceBytes = nullptr;
  /// Why a group was left to the host (Unsupported).
  std::string reason;
  /// The compile report's remarks (what an emitter decided and why).
  std::vector<std::string> *remarks = nullptr;
  /// The step's kind for the manifest: "kernel" (generated) or "library"
  /// (cuBLASLt, cuDNN); emitters of library calls set "library".
  std::string kind = "kernel";

  void include(const std::string &header) { headers->insert(header); }
  std::string kernelName() const { return "\"" + name + "\""; }
  /// The device pointer expression of a leaf view, or failure (with an
  /// error) when the view's base is not a leaf.
  mlir::FailureOr<std::string> leafPointer(const StridedView &view) const;
  CudaEmit unsupported(std::string why) {
    reason = std::move(why);
    return CudaEmit::Unsupported;
  }
};

/// How a row group (form F3) runs, decided from its row length alone: a
/// team of `team` threads owns a row (4-32 lanes of a warp for short rows, a
/// warp for medium ones, a block of 64-1024 threads for long ones), each
/// lane keeping `perLane` vectors of the row in registers (0: the row
/// streams through memory twice); a block of `block` threads takes
/// `rowsPerBlock` rows.
struct RowLaunch {
  int64_t team = 32, perLane = 0, block = 128, rowsPerBlock = 4;
};

/// The launch of rows of `vectors` vectors of `vector` elements each.
/// Reductions keep no row (they stream); f64 rows (`isDouble`) get half the
/// registers a lane gives f32 rows.
RowLaunch planRowLaunch(int64_t vectors, int64_t vector, bool isReduce, bool isDouble);

/// Elements a row group moves per vector access: 16 bytes of its widest
/// element type (among the accesses contiguous along the row), halved until
/// it divides the row length `len`.
int64_t rowVectorWidth(int64_t len, int64_t widestBytes);

CudaEmit emitCudaElementwiseGroup(CudaGroupContext &ctx);
CudaEmit emitCudaGemmGroup(CudaGroupContext &ctx);
/// The header of 2:4 GEMMs (groups/Gemm.cpp), and the defines model.cu puts
/// before it: where cusparseLt.h and the pip package's library folder are,
/// when the compiler found them (sluice_gen/cuda_sparse.cuh).
inline constexpr const char *kCudaSparseHeader = "sluice_gen/cuda_sparse.cuh";
std::string cudaSparsePreamble(mlir::ModuleOp module);
/// Form I8: a GEMM group with an int8 matmul_integer anchor as one
/// sluice_int8_gemm (cuBLASLt IMMA) with a generated epilogue functor
/// (groups/QuantGemm.cpp); Unsupported (a host step) for the rest.
CudaEmit emitCudaInt8GemmGroup(CudaGroupContext &ctx);
/// Whether `kernel` (a GEMM group) holds the Form W dequantization of its
/// matmul's B as its prologue.
bool isCudaWonlyGemmGroup(KernelOp kernel);
/// Form W: such a group as one sluice_wonly_gemm (the small-M GEMV kernel,
/// or dequantize + cuBLASLt for larger M) with a generated epilogue functor
/// (groups/QuantGemm.cpp); Unsupported (a host step) for the rest.
CudaEmit emitCudaWonlyGemmGroup(CudaGroupContext &ctx);
/// Whether `kernel` (a GEMM group) holds the Form F8 dequantizations of its
/// matmul's A and B as its prologue (sluice-fuse-groups fp8-gemm=true).
bool isCudaFp8GemmGroup(KernelOp kernel);
/// Form F8: such a group as one sluice_fp8_gemm_epi (cuBLASLt's E4M3 GEMM
/// with the per-tensor scales as its A/B scale pointers, B stored [N, K])
/// with a generated epilogue functor (groups/QuantGemm.cpp).
CudaEmit emitCudaFp8GemmGroup(CudaGroupContext &ctx);
/// How the cuda target stores kernel input `input`: packed for IMMA when it
/// is the weight of a device int8 GEMM, else as the cpu kernels of host
/// steps read it (cpuWeightTransform).
std::optional<WeightTransform> cudaWeightTransform(KernelOp kernel, unsigned input);
CudaEmit emitCudaRowGroup(CudaGroupContext &ctx);
CudaEmit emitCudaAttentionGroup(CudaGroupContext &ctx);
/// F5 single ops with a cuda implementation (conv through cuDNN, pooling,
/// data movement ...); Unsupported for the rest (host steps).
CudaEmit emitCudaSingleOp(CudaGroupContext &ctx, mlir::Operation *op);
/// sluice.moe as the device MoE kernels (ops/Moe.cpp); Unsupported (a host
/// step with the cpu kernel) where kernel::moeKernelRefusal says no.
CudaEmit emitCudaMoe(CudaGroupContext &ctx, MoeOp op);
/// Pooling and inference batch norm (ops/NN.cpp).
CudaEmit emitCudaNNOp(CudaGroupContext &ctx, mlir::Operation *op);
/// Conv and conv_transpose through cuDNN (library "conv" groups).
CudaEmit emitCudaConv(CudaGroupContext &ctx, mlir::Operation *op);

/// For F5 single ops: the device pointer of operand `index` of `op` (through
/// layout-preserving views of a leaf; contiguous), or failure with an error.
mlir::FailureOr<std::string> singleOperand(CudaGroupContext &ctx, mlir::Operation *op,
                                           unsigned index);
/// The output pointer result `index` of `op` is yielded through (directly
/// or through layout-preserving views); failure with an error when it is
/// not yielded.
mlir::FailureOr<std::string> singleResult(CudaGroupContext &ctx, mlir::Operation *op,
                                          unsigned index);

/// The CUDA type of an element type on the device: float, double, __half,
/// __nv_bfloat16, int64_t, bool ... (storage layout equals storageType's).
std::string cudaStorageType(mlir::Type elementType);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CUDA_CUDAGROUPS_H
