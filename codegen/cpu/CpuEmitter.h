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

/// The product of dims [begin, end).
int64_t product(llvm::ArrayRef<int64_t> dims, size_t begin = 0,
                size_t end = SIZE_MAX);
/// `axis` normalized against `rank`, or failure with an error on `op`.
mlir::FailureOr<int64_t> axisOf(mlir::Operation *op, int64_t axis, int64_t rank);
/// outer x extent x inner sizes of `shape` around `axis`.
struct AxisSplit {
  int64_t outer = 1, extent = 1, inner = 1;
};
AxisSplit splitAt(llvm::ArrayRef<int64_t> shape, int64_t axis);
/// storageType of a value's element type.
std::string typeOf(mlir::Value value);
/// Static shape of a value's ranked tensor type.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value value);
mlir::Type elementOf(mlir::Value value);

/// One tensor at the bundle boundary.
struct TensorInfo {
  std::string name, dtype; ///< dtype: NumPy's name (float32, bool ...)
  std::vector<int64_t> shape;    ///< -1: a data-dependent dim
  std::vector<int64_t> maxShape; ///< bounds; empty when the shape is static
};

/// The largest shape result `index` of `op` can take when its type has
/// data-dependent (dynamic) dims: NonZero, Compress, Unique and
/// NonMaxSuppression results are bounded by their inputs' sizes. None for
/// other ops.
std::optional<std::vector<int64_t>> upperBoundShape(mlir::Operation *op,
                                                    unsigned index);

/// One step of a run (a kernel or a library call), for the manifest.
struct StepInfo {
  std::string name, kind, op, node;
  /// Every op of the group (op names) and the ONNX nodes they came from.
  std::vector<std::string> ops, nodes;
};

/// The ops of a `sluice.kernel` body (full names, constants left out) and
/// the ONNX nodes they came from, in order, without repeats.
void describeKernel(mlir::Operation *kernel, std::vector<std::string> &ops,
                    std::vector<std::string> &nodes);

/// The op a step is named after: the group's anchor (its first op that is
/// not elementwise), else its first compute op, else its first view.
mlir::Operation *stepOp(KernelOp kernel);
/// The manifest entry of a kernel step of `kind` ("kernel", "library" ...).
StepInfo describeStep(KernelOp kernel, llvm::StringRef kind);

/// What every target's emitter reads off a planned module first.
struct ModelFacts {
  mlir::func::FuncOp func;
  std::vector<unsigned char> weights;  ///< weights.bin
  /// Top-level constants -> their byte offset in weights.bin (64-aligned).
  llvm::DenseMap<mlir::Value, int64_t> weightOffset;
  int64_t arenaBytes = 0;
  std::vector<TensorInfo> inputs, outputs;
};

/// Fills `facts` from the planned `main` of `module`: the boundary tensors
/// (static shapes or bounded data-dependent outputs), the weights, the
/// arena. Fails with errors on the ops, listing every op no cpu kernel
/// implements at once ("unsupported ops on target <target> (N): ...").
mlir::LogicalResult collectModelFacts(mlir::ModuleOp module, ModelFacts &facts,
                                      llvm::StringRef target);

/// Where the values of a planned `main` live while it runs, as pointer
/// expressions of the run function (`args->inputs[i]`, the weights, the
/// arena, `args->outputs[i]`), and the step calls that hand them to the
/// kernels. Both targets write their run function through it.
class RunBuffers {
public:
  /// The graph inputs and the weights of `facts`.
  explicit RunBuffers(const ModelFacts &facts);
  /// The results of `kernel`, at `offsets` (arena bytes; -1 - i: graph
  /// output i, written in place).
  void addResults(KernelOp kernel, llvm::ArrayRef<int64_t> offsets);
  /// The pointer expression of `value`; "" when it has no buffer.
  std::string lookup(mlir::Value value) const { return where.lookup(value); }
  /// Step `step` of the run function: the kernel's buffer table (inputs,
  /// then results) and `SLUICE_STEP(step, <kernel>(b, args))` in a block.
  /// Fails with an error on the kernel ("<target> target: ...") when an
  /// input has no buffer.
  mlir::LogicalResult writeStep(CodeWriter &run, KernelOp kernel, int64_t step,
                                llvm::StringRef target) const;

private:
  llvm::DenseMap<mlir::Value, std::string> where;
};

/// The C++ of one kernel group as a cpu function
/// `static int32_t <name>(void *const *b, const SluiceRunArgs *args)`
/// (b: the kernel's inputs then its results), with its constant arrays in
/// `namespace <name>_data`. Headers it needs are added to `headers`. The
/// cuda target uses it for host steps.
mlir::FailureOr<std::string> emitCpuKernel(KernelOp kernel, std::set<std::string> &headers);

struct CpuModel : ModelFacts {
  std::string source;              ///< the C++ translation unit
  std::vector<StepInfo> steps;
  int64_t kernels = 0, libraryCalls = 0;
  bool usesBlas = false;
};

/// Emits the planned function `main` of `module` (after the fuse and plan
/// phases). Fails with errors on the ops; unsupported ops are all reported
/// at once ("unsupported ops on target cpu (N): ...").
mlir::FailureOr<CpuModel> emitCpuModel(mlir::ModuleOp module);

/// NumPy's name of an element type.
std::string numpyDtype(mlir::Type elementType);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CPU_CPUEMITTER_H
