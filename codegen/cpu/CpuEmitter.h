//===- CpuEmitter.h - kernel groups to one C++ source (cpu target) -*- C++ -*-===//
//
// The cpu target's emit phase: a planned module (kernel groups with arena
// offsets) becomes one C++ translation unit exporting the bundle ABI
// (include/sluice/bundle_abi.h), plus the weights blob and the manifest's
// facts. Elementwise groups go through the shared scalar-expression emitter
// wrapped in OpenMP loops; every other op has an emitter function in the
// registry below (codegen/cpu/ops/), which writes the body of the kernel's
// C++ function, usually a call into the kernel templates of
// codegen/include/sluice_gen/cpu_*.h with compile-time shapes.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_CPU_CPUEMITTER_H
#define SLUICE_CODEGEN_CPU_CPUEMITTER_H

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/cpu/CpuKernel.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace sluice::codegen {

/// What an op emitter sees. The op sits in a kernel body; `in[i]` names a
/// pointer (`const T *`, T = storageType of the element type) to operand i,
/// `out[i]` a pointer (`T *`) to result i. Operands that are small constants
/// are also readable at compile time (getConstantIntValues and friends on
/// op->getOperand(i)). Emitters write statements into `body` through
/// `code`; the function returns 0 after them. An emitter that cannot handle
/// the op's form returns failure with an error on the op ("cpu target: ...").
struct CpuOpContext {
  mlir::Operation *op;
  std::vector<std::string> in, out;
  /// For a result with data-dependent dims (its type has dynamic dims): an
  /// `int64_t *` expression (the graph output's dims, rank entries) where
  /// the emitted code must store the actual extent of every dynamic dim;
  /// its buffer holds the op's upper bound (upperBoundShape). "" otherwise.
  std::vector<std::string> outDims;
  std::string kernelName;
  std::string body;
  /// Writes statements into `body`, at the function body's indent.
  CodeWriter code{body, 1};
  std::set<std::string> *headers;
  /// Adds `#include "<header>"` (e.g. "sluice_gen/cpu_movement.h").
  void include(const std::string &header) { headers->insert(header); }
  /// A statement that fails the run with `message` (a C++ string literal
  /// expression, e.g. "\"index out of range\"").
  std::string fail(const std::string &messageExpr) const {
    return "return sluice_fail(args, \"" + kernelName + "\", " + messageExpr + ");";
  }
  /// The thread count expression for OpenMP clauses and library calls.
  static constexpr const char *threads = "args->num_threads";
};

using CpuOpEmitFn = std::function<mlir::LogicalResult(CpuOpContext &)>;

class CpuOpRegistry {
public:
  static const CpuOpRegistry &get();
  void add(llvm::StringRef opName, CpuOpEmitFn fn) { fns[opName] = std::move(fn); }
  const CpuOpEmitFn *lookup(llvm::StringRef opName) const {
    auto it = fns.find(opName);
    return it == fns.end() ? nullptr : &it->second;
  }

private:
  llvm::StringMap<CpuOpEmitFn> fns;
};

// One registration function per op family (codegen/cpu/ops/*.cpp).
void registerCpuLinalgEmitters(CpuOpRegistry &registry);
void registerCpuMovementEmitters(CpuOpRegistry &registry);
void registerCpuReductionEmitters(CpuOpRegistry &registry);
void registerCpuNNEmitters(CpuOpRegistry &registry);
void registerCpuMiscEmitters(CpuOpRegistry &registry);
void registerCpuMoeEmitters(CpuOpRegistry &registry);

/// One kernel function of a cpu model: its symbol and its C++ definition
/// (`static int32_t NAME(void *const *b, const SluiceRunArgs *args)`, after
/// its constant arrays).
/// A kernel alike but for its name to an earlier one (a transformer's
/// layers) is defined once: `code` forwards to `shared`, the earlier one.
struct CpuKernelSource {
  std::string name, code;
  std::string shared; ///< the kernel whose code this one runs, or empty
};

struct CpuModel : ModelFacts {
  std::string source;              ///< the C++ translation unit
  /// `source` in parts, for a build in several translation units
  /// (codegen/bundle): source == prelude + "\n" + the kernels' code +
  /// abi + "SLUICE_SCRATCH_EXPORTS\n\n" + run.
  std::string prelude;             ///< the banner and the #includes
  std::vector<CpuKernelSource> kernelSources;
  std::string abi;                 ///< sluice_model_abi_version
  std::string run;                 ///< sluice_model_run (and a stage's function)
  /// The run function's name: sluice_model_run, or a shape variant's.
  std::string entry = "sluice_model_run";
  std::vector<StepInfo> steps;
  int64_t kernels = 0, libraryCalls = 0;
  bool usesBlas = false;
  /// Links oneDNN (-ldnnl): a convolution runs as a oneDNN primitive
  /// (sluice_gen/cpu_nn_dnnl.h).
  bool usesDnnl = false;
  /// Convolutions whose epilogue (ReLU, residual Add) runs as oneDNN
  /// post-ops (groups/Conv.cpp): the report's "cpu_conv_post_ops".
  int64_t convPostOps = 0;
  /// Activations kept in oneDNN's blocked layout between convolutions
  /// (groups/Conv.cpp): the report's "cpu_conv_blocked_activations".
  int64_t convBlockedActivations = 0;
  /// f32 GEMM groups reading their B packed at compile time
  /// (groups/Gemm.cpp): the report's "cpu_gemm_packed_weights".
  int64_t gemmPackedWeights = 0;
  /// The GEMM and convolution paths of the module's config
  /// (cpuGemmPathName, cpuConvPathName): the report's "cpu_gemm" and
  /// "cpu_conv".
  std::string gemmPath, convPath;
};

/// What a float convolution folds into its launch (a conv group's
/// epilogue, groups/Conv.cpp): out = relu?(conv + bias + residual?).
struct CpuConvPostOps {
  /// `const float *` expression of a tensor of the result's shape added
  /// to it (oneDNN's sum post-op); "" for none.
  std::string residual;
  bool relu = false;
  /// Which of src, dst and residual are kept in oneDNN's blocked layout
  /// (sluice_gen/cpu_nn_dnnl.h's SLUICE_DNNL_*_BLOCKED bits; the oneDNN
  /// path only, planned by groups/Conv.cpp).
  unsigned blockedSides = 0;
};
/// Emits the sluice.conv `ctx.op` (operands ctx.in, result ctx.out[0])
/// with `post` applied: oneDNN post-ops on the oneDNN path, a loop after
/// the im2col GEMM or direct loops otherwise (ops/NN.cpp).
mlir::LogicalResult emitConvWithPostOps(CpuOpContext &ctx, const CpuConvPostOps &post);

/// The cpu kernels' choices that the IR records (the module attribute
/// `sluice.cpu_config`, set by the plan phase's sluice-configure-target from
/// sluice-compile's --cpu-isa, --cpu-conv and --cpu-packed-weights): the
/// emitters read these, never the environment or the compiling host.
struct CpuTargetConfig {
  /// "avx512", "avx2" or "generic": the instruction set the bundle's GEMM
  /// kernels are written for.
  std::string isa = "generic";
  /// "onednn", "onednn-nchw" or "im2col": how f32 convolutions run.
  std::string conv = "onednn";
  /// f32 GEMM weights stored packed for the isa's kernel.
  bool packedWeights = false;
};
/// The config of the module holding `op` (or `op` itself, a module); a
/// module without `sluice.cpu_config` gets CpuTargetConfig's defaults, with
/// `im2col` where this compiler has no oneDNN.
CpuTargetConfig cpuTargetConfig(mlir::Operation *op);
/// Whether this compiler was built with oneDNN (libdnnl-dev): f32
/// convolutions can run through it.
bool cpuHasOnednn();

/// How f32 convolutions run under `config`: "onednn" (oneDNN primitives,
/// sluice_gen/cpu_nn_dnnl.h) or "im2col" (im2col + OpenBLAS; without
/// oneDNN, or conv=im2col). The report's "cpu_conv".
const char *cpuConvPathName(const CpuTargetConfig &config);
/// Whether oneDNN convolutions keep activations that only convolutions read
/// in oneDNN's blocked layout (groups/Conv.cpp): the oneDNN path, unless
/// conv=onednn-nchw (each convolution then reorders its NCHW src and dst
/// inside the call).
bool cpuConvKeepsBlockedLayout(const CpuTargetConfig &config);
/// How f32 GEMMs run under `config`: "avx512" (sluice_gen/cpu_gemm.h's
/// packed kernel), "openblas+avx2" (AVX2 + FMA: OpenBLAS, one-row GEMMs on
/// cpu_gemm.h's AVX2 kernel) or "openblas". The report's "cpu_gemm".
const char *cpuGemmPathName(const CpuTargetConfig &config);
/// The column-panel width of sluice_sgemm for `config` (32 with AVX-512F,
/// 16 with AVX2 + FMA; 0: none), for weights packed at compile time
/// (groups/Gemm.cpp).
int64_t cpuSgemmPanelWidth(const CpuTargetConfig &config);

/// Emits the planned function `main` of `module` (after the fuse and plan
/// phases). Fails with errors on the ops; unsupported ops are all reported
/// at once ("unsupported ops on target cpu (N): ...").
/// A shape variant of a bundle (sluice-compile --shapes) passes the
/// variants' `sharedWeights` (the weights go there, not into
/// CpuModel::weights) and its own `entry`, the run function's name
/// (sluice_v<i>_model_run).
mlir::FailureOr<CpuModel> emitCpuModel(mlir::ModuleOp module,
                                       SharedWeights *sharedWeights = nullptr,
                                       llvm::StringRef entry = "sluice_model_run");

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CPU_CPUEMITTER_H
