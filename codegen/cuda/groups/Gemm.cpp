//===- Gemm.cpp - cuda form F2: GEMM with an epilogue (cuBLASLt) ----------===//
//
// One matmul whose operands are views of the group's inputs, followed by
// elementwise epilogue ops (the same groups as codegen/cpu/groups/Gemm.cpp),
// as one cuBLASLt matmul (sluice_gen/cuda_blas.h) and, when needed, one
// generated elementwise kernel over its result.
//
// cuBLASLt takes the longest prefix of the epilogue it can fuse, in its own
// order D = act(alpha * A B + C + bias):
//   matmul -> [mul/div by a scalar constant: alpha]
//          -> [add of a vector over N broadcast over rows: bias]
//          -> [add of a tensor of the result's shape: C with beta = 1]
//          -> [relu | gelu {approximate = "tanh"}: the activation]
// (the two adds in either order; the activation ends the prefix). A value
// of the prefix that something else also reads ends it too: cuBLASLt writes
// only its last value. Everything after it (erf GELU, SiLU, casts, further
// outputs, transposed results) runs in the generated kernel, which reads
// cuBLASLt's D once: one extra pass over the output. The generated kernel
// moves four elements per thread through aligned vector loads and stores
// when every access is contiguous along the rows (checked again at run time
// for the pointers' alignment), one element otherwise.
//
// Operand views: an operand whose rows are contiguous, or whose columns are
// (a transpose: cuBLASLt's TRANS flag), with any batch strides (0 where a
// batch dim broadcasts); batch dims that do not collapse into one stride
// become a loop of GEMMs. Views cuBLASLt cannot read (a non-unit innermost
// stride that is not a transpose, broadcast rows) leave the group to the
// host.
//
// 2:4 GEMMs (docs/pruning.md): a matmul sluice-sparsify marked
// `sluice.sparsity_2_4` whose B is that constant 2-D f16/bf16 weight, read
// as stored, is one sluice_sparse_gemm (sluice_gen/cuda_sparse.cuh: the same
// call through cuSPARSELt when it is present at run time and faster on the
// shape, else sluice_gemm). The driver looks for cusparseLt.h and records it
// in the IR (sluice.cuda_config, cudaSparsePreamble); without it the bundle still builds, dense,
// and a remark says so, as it does for f32 (cuSPARSELt's f32 is TF32) or a weight that is not 2:4
// as stored.
//
//===----------------------------------------------------------------------===//

#include "codegen/include/sluice_gen/layout/sparse_2_4.h"

#include "codegen/cuda/CudaGroups.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/GroupContext.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/common/ScalarEmitter.h"
#include "lib/kernel/Access.h"
#include "lib/reference/Evaluator.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Path.h"

#include <optional>

using namespace mlir;

namespace sluice::codegen {
namespace {

/// Bytes of the state's workspace cuBLASLt may use; a scratch result, when
/// the group needs one, lives after them.
constexpr int64_t kLtWorkspace = 32ll << 20;
/// GEMMs one group may enqueue for batch dims that do not collapse.
constexpr int64_t kMaxGemmLoop = 1024;
/// Whether relu joins the cuBLASLt epilogue. cuBLASLt's RELU maps NaN to 0
/// where sl_relu (and the evaluator) keep the NaN: fused results differ only
/// for NaN pre-activations (NaN or inf inputs), which saves a pass over the
/// output of every Linear+ReLU; false runs relu in the generated kernel.
constexpr bool kFuseRelu = true;
/// Elements per thread in the vectorized epilogue kernel.
constexpr int64_t kVector = 4;

/// How cuBLASLt reads a row-major `rows` x `cols` matrix whose elements
/// (i, j) sit at i * rowStride + j * colStride: as stored (rows contiguous,
/// leading dimension = row stride) or transposed (columns contiguous).
struct MatrixLayout {
  bool transposed;
  int64_t ld;
};
std::optional<MatrixLayout> matrixLayout(int64_t rows, int64_t cols, int64_t rowStride,
                                         int64_t colStride) {
  if ((cols == 1 || colStride == 1) && (rows == 1 || rowStride >= std::max<int64_t>(cols, 1)))
    return MatrixLayout{false, rows == 1 ? std::max<int64_t>(cols, 1) : rowStride};
  if ((rows == 1 || rowStride == 1) && (cols == 1 || colStride >= rows))
    return MatrixLayout{true, cols == 1 ? std::max<int64_t>(rows, 1) : colStride};
  return std::nullopt;
}

/// A buffer the generated epilogue kernel reads or writes, with strides
/// over the GEMM result's space.
struct EpilogueAccess {
  kernel::Access access;
  Type type;
  bool written = false;
};

/// An operand of the GEMM in the row-major frame: the access's strides are
/// over the GEMM's batch dims (before they collapse), the layout says how
/// cuBLASLt reads each matrix.
struct GemmOperand {
  kernel::Access access;
  MatrixLayout layout{false, 0};
};

/// Splits the batch dims into an outer loop (dims [0, split)) and one
/// strided batch (dims [split, rank)) over which every operand's stride is
/// uniform. Returns split and the inner strides.
int64_t collapseBatch(ArrayRef<int64_t> batch, ArrayRef<std::vector<int64_t> *> strides,
                      std::vector<int64_t> &inner) {
  size_t count = strides.size();
  std::vector<bool> first(count, true);
  std::vector<int64_t> expect(count, 0);
  inner.assign(count, 0);
  int64_t split = batch.size();
  for (int64_t d = (int64_t)batch.size() - 1; d >= 0; --d) {
    if (batch[d] == 1) {
      split = d;
      continue;
    }
    bool ok = true;
    for (size_t o = 0; o < count; ++o)
      ok &= first[o] || (*strides[o])[d] == expect[o];
    if (!ok)
      break;
    for (size_t o = 0; o < count; ++o) {
      int64_t s = (*strides[o])[d];
      if (first[o])
        inner[o] = s;
      first[o] = false;
      expect[o] = s * batch[d];
    }
    split = d;
  }
  return split;
}

/// The cuBLASLt-fused prefix of the epilogue.
struct FusedChain {
  Value end; ///< the value cuBLASLt writes (D)
  llvm::SmallPtrSet<Operation *, 8> ops;
  std::string alpha = "1.0";       ///< C++ double expression
  std::optional<StridedView> bias; ///< strides over the result's space
  std::optional<StridedView> residual;
  int epilogue = 0; ///< SLUICE_EPI_* without the bias bit
};

/// The literal of a scalar constant operand (through views), or "".
std::string scalarLiteral(CudaGroupContext &ctx, Value v) {
  if (ctx.literals.count(v))
    return ctx.literals.lookup(v);
  auto view = resolveView(v, /*emitErrors=*/false);
  if (succeeded(view) && ctx.literals.count(view->base))
    return ctx.literals.lookup(view->base);
  return "";
}

bool isYielded(KernelYieldOp yield, Value v) {
  return llvm::any_of(yield.getValues(), [&](Value y) { return y == v; });
}

/// Walks the epilogue from the matmul result, taking the ops cuBLASLt can
/// fuse (file header).
FusedChain fuseChain(CudaGroupContext &ctx, KernelYieldOp yield, Value result,
                     ArrayRef<Operation *> after, ArrayRef<int64_t> space, Type et,
                     bool allowEpilogues) {
  FusedChain chain;
  chain.end = result;
  int64_t rank = space.size();
  bool scaled = false, added = false;
  while (true) {
    Value cur = chain.end;
    if (isYielded(yield, cur) || !cur.hasOneUse())
      break;
    Operation *op = *cur.getUsers().begin();
    if (!llvm::is_contained(after, op) || op->getNumResults() != 1)
      break;
    Value res = op->getResult(0);
    if (shapeOf(res) != space || elementOf(res) != et)
      break;
    if (chain.epilogue)
      break; // the activation is cuBLASLt's last step
    if ((isa<MulOp>(op) || (isa<DivOp>(op) && op->getOperand(0) == cur)) && !scaled && !added) {
      Value other = op->getOperand(0) == cur ? op->getOperand(1) : op->getOperand(0);
      std::string lit = scalarLiteral(ctx, other);
      if (other == cur || lit.empty())
        break;
      chain.alpha = isa<DivOp>(op) ? "(1.0 / (double)(" + lit + "))" : "(double)(" + lit + ")";
      scaled = true;
    } else if (isa<AddOp>(op)) {
      Value other = op->getOperand(0) == cur ? op->getOperand(1) : op->getOperand(0);
      if (other == cur)
        break;
      auto view = resolveView(other, /*emitErrors=*/false);
      if (failed(view) || !ctx.pointers.count(view->base) || elementOf(other) != et)
        break;
      auto strides = broadcastStridesTo(shapeOf(other), view->strides, space);
      if (failed(strides))
        break;
      // A bias: stride 1 along N, 0 on every other dim.
      bool isBias = rank >= 2 && space[rank - 1] > 1 && (*strides)[rank - 1] == 1;
      for (int64_t d = 0; d + 1 < rank && isBias; ++d)
        isBias = space[d] == 1 || (*strides)[d] == 0;
      // A residual: rows contiguous along N (cuBLASLt's C is never
      // transposed), distinct rows.
      bool isResidual = false;
      if (rank >= 2) {
        auto layout = matrixLayout(space[rank - 2], space[rank - 1], (*strides)[rank - 2],
                                   (*strides)[rank - 1]);
        isResidual = layout && !layout->transposed;
      }
      if (isBias && allowEpilogues && !chain.bias) {
        chain.bias = StridedView{view->base, view->offset, *strides};
      } else if (isResidual && !chain.residual) {
        chain.residual = StridedView{view->base, view->offset, *strides};
      } else {
        break;
      }
      added = true;
    } else if (isa<ReluOp>(op) && allowEpilogues && kFuseRelu) {
      chain.epilogue = 2; // SLUICE_EPI_RELU
    } else if (auto gelu = dyn_cast<GeluOp>(op);
               gelu && allowEpilogues && gelu.getApproximate() == "tanh") {
      chain.epilogue = 4; // SLUICE_EPI_GELU
    } else {
      break;
    }
    chain.ops.insert(op);
    chain.end = res;
  }
  return chain;
}

/// The elementwise kernel(s) after cuBLASLt: the epilogue ops it did not
/// fuse and every output it did not write, over the GEMM result's space.
/// Planned (accesses, stores) by the caller, then printed.
class EpilogueKernel {
public:
  EpilogueKernel(CudaGroupContext &ctx, ArrayRef<int64_t> space) : ctx(ctx), space(space) {}

  std::vector<EpilogueAccess> accesses;
  llvm::MapVector<Value, unsigned> leafAccess;
  /// Accesses whose loads give a computed value (the GEMM's D).
  std::vector<std::pair<unsigned, Value>> dLeaves;
  /// (access, value): what each element stores where.
  std::vector<std::pair<unsigned, Value>> stores;

  /// Registers `operand` of an epilogue op as a leaf unless it is computed
  /// in the group or a literal; false (with the reason) for views the
  /// kernel cannot read.
  bool addLeaf(Value operand, std::string &why) {
    if (leafAccess.count(operand) || ctx.literals.count(operand))
      return true;
    if (Operation *def = operand.getDefiningOp(); def && !isa<ConstantOp>(def) && !isViewOp(def))
      return true; // computed in the group
    auto view = resolveView(operand, /*emitErrors=*/false);
    if (failed(view)) {
      why = "an epilogue operand is a view without strides";
      return false;
    }
    if (ctx.literals.count(view->base))
      return true;
    if (Operation *def = view->base.getDefiningOp(); def && !isa<ConstantOp>(def)) {
      if (shapeOf(view->base) == shapeOf(operand) && view->isContiguous(shapeOf(operand)))
        return true;
      why = "an epilogue reads a strided view of a value computed in the group";
      return false;
    }
    if (!ctx.pointers.count(view->base)) {
      why = "an epilogue operand is not a leaf of the group";
      return false;
    }
    auto strides = broadcastStridesTo(shapeOf(operand), view->strides, space);
    if (failed(strides)) {
      why = "an epilogue operand does not broadcast to the GEMM result";
      return false;
    }
    leafAccess[operand] = accesses.size();
    accesses.push_back(
        {{ctx.pointers.lookup(view->base), view->offset, *strides}, elementOf(operand), false});
    return true;
  }

  /// Whether the four-wide kernel applies: the trailing dim splits into
  /// groups of four and every access moves along it with stride 1 (from a
  /// group-aligned start) or 0.
  bool vectorizable() const {
    if (space.empty() || space.back() % kVector != 0)
      return false;
    int64_t rank = space.size();
    for (const EpilogueAccess &e : accesses) {
      const kernel::Access &a = e.access;
      int64_t last = a.strides[rank - 1];
      if (last == 0 && !e.written)
        continue;
      if (last != 1 || a.offset % kVector != 0)
        return false;
      for (int64_t d = 0; d + 1 < rank; ++d)
        if (space[d] != 1 && a.strides[d] % kVector != 0)
          return false;
    }
    return true;
  }

  /// The kernels `epilogue` (and `epilogue_vec` when vectorizable) into
  /// `device`, their launch into `host`; `ops` run per element.
  LogicalResult print(ArrayRef<Operation *> ops, CodeWriter &device, CodeWriter &host) {
    std::string params, argsList;
    for (auto [i, e] : llvm::enumerate(accesses)) {
      std::string T = storageType(e.type);
      params += std::string(i ? ", " : "") + (e.written ? "" : "const ") + T + " *p" + decimal(i);
      argsList += std::string(i ? ", " : "") + "(" + (e.written ? "" : "const ") + T + " *)(" +
                  e.access.pointer + ")";
    }
    if (failed(writeScalarKernel(device, ops, params)))
      return failure();
    bool vec = vectorizable();
    if (vec && failed(writeVectorKernel(device, ops, params)))
      return failure();
    writeLaunch(host, argsList, vec);
    return success();
  }

private:
  bool isContiguous(const kernel::Access &a) const {
    std::vector<int64_t> contiguous = contiguousStrides(space);
    for (size_t d = 0; d < space.size(); ++d)
      if (space[d] != 1 && a.strides[d] != contiguous[d])
        return false;
    return true;
  }

  /// Coordinates of flat element `i` and each access's element index x<a>.
  void writeIndices(CodeWriter &w) const {
    int64_t rank = space.size();
    bool needCoords =
        llvm::any_of(accesses, [&](const EpilogueAccess &e) { return !isContiguous(e.access); });
    if (needCoords) {
      w.line("int64_t rest = i;");
      for (int64_t d = rank - 1; d >= 0; --d) {
        bool used = llvm::any_of(accesses, [&](const EpilogueAccess &e) {
          return !isContiguous(e.access) && e.access.strides[d] != 0;
        });
        if (space[d] == 1 || !used) {
          if (d > 0 && space[d] != 1)
            w.line("rest /= {0};", space[d]);
          continue;
        }
        w.line("const int64_t q{0} = rest % {1}; rest /= {1};", d, space[d]);
      }
    }
    for (auto [i, e] : llvm::enumerate(accesses)) {
      const kernel::Access &a = e.access;
      std::string index = decimal(a.offset);
      if (isContiguous(a)) {
        index += " + i";
      } else {
        for (int64_t d = 0; d < rank; ++d)
          if (space[d] != 1 && a.strides[d] != 0)
            index += " + q" + decimal(d) + " * " + decimal(a.strides[d]);
      }
      w.line("const int64_t x{0} = {1};", i, index);
    }
  }

  std::string lookup(Value v) const {
    if (expr.count(v))
      return expr.lookup(v);
    if (ctx.literals.count(v))
      return ctx.literals.lookup(v);
    auto view = resolveView(v, /*emitErrors=*/false);
    if (succeeded(view) && ctx.literals.count(view->base))
      return ctx.literals.lookup(view->base);
    if (succeeded(view) && expr.count(view->base))
      return expr.lookup(view->base);
    return "";
  }

  /// The ops over leaves read as `leafExpr(access)`, then the stores into
  /// `storeTarget(access)`.
  LogicalResult writeBody(CodeWriter &w, ArrayRef<Operation *> ops,
                          llvm::function_ref<std::string(unsigned)> leafExpr,
                          llvm::function_ref<std::string(unsigned)> storeTarget) {
    expr.clear();
    for (auto &[value, a] : leafAccess)
      expr[value] = loadExpr(elementOf(value), leafExpr(a));
    for (auto &[a, value] : dLeaves)
      expr[value] = loadExpr(elementOf(value), leafExpr(a));
    int locals = 0;
    for (Operation *op : ops) {
      std::vector<std::string> operands;
      for (Value operand : op->getOperands()) {
        operands.push_back(lookup(operand));
        if (operands.back().empty())
          return op->emitOpError("cuda target: an operand of this epilogue op has no value");
      }
      auto e = emitScalar(op, operands);
      if (failed(e))
        return failure();
      std::string local = "v" + decimal(locals++);
      w.line("const {0} {1} = {2};", computeType(elementOf(op->getResult(0))), local, *e);
      expr[op->getResult(0)] = local;
    }
    for (auto &[a, value] : stores) {
      std::string v = lookup(value);
      if (v.empty())
        return ctx.kernel.emitOpError("cuda target: a result of the GEMM group has no value");
      w.line("{0} = {1};", storeTarget(a), storeExpr(accesses[a].type, v));
    }
    return success();
  }

  /// One element per thread and step.
  LogicalResult writeScalarKernel(CodeWriter &w, ArrayRef<Operation *> ops,
                                  const std::string &params) {
    auto kernel = w.block("__global__ void __launch_bounds__(256) epilogue({0})", params);
    auto loop = w.block("for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
                        "i < {0}; i += (int64_t)gridDim.x * blockDim.x)",
                        product(space));
    writeIndices(w);
    auto element = [](unsigned a) { return "p" + decimal(a) + "[x" + decimal(a) + "]"; };
    return writeBody(w, ops, element, element);
  }

  /// Four elements per thread and step: vector loads of the contiguous
  /// accesses, one scalar load of the broadcast ones.
  LogicalResult writeVectorKernel(CodeWriter &w, ArrayRef<Operation *> ops,
                                  const std::string &params) {
    int64_t rank = space.size();
    auto kernel = w.block("__global__ void __launch_bounds__(256) epilogue_vec({0})", params);
    auto loop = w.block("for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; "
                        "g < {0}; g += (int64_t)gridDim.x * blockDim.x)",
                        product(space) / kVector);
    w.line("const int64_t i = g * {0};", kVector);
    writeIndices(w);
    for (auto [i, e] : llvm::enumerate(accesses)) {
      std::string T = storageType(e.type);
      std::string vt = "sluice_vec<" + T + ", " + decimal(kVector) + ">";
      if (e.written)
        w.line("{0} w{1};", vt, i);
      else if (e.access.strides[rank - 1] == 1)
        w.line("const {0} r{1} = *reinterpret_cast<const {0} *>(p{1} + x{1});", vt, i);
      else
        w.line("const {0} r{1} = p{1}[x{1}];", T, i);
    }
    w.line("#pragma unroll");
    {
      auto lanes = w.block("for (int u = 0; u < {0}; ++u)", kVector);
      auto load = [&](unsigned a) {
        return accesses[a].access.strides[rank - 1] == 1 ? "r" + decimal(a) + ".v[u]"
                                                         : "r" + decimal(a);
      };
      auto store = [](unsigned a) { return "w" + decimal(a) + ".v[u]"; };
      if (failed(writeBody(w, ops, load, store)))
        return failure();
    }
    for (auto [i, e] : llvm::enumerate(accesses))
      if (e.written)
        w.line("*reinterpret_cast<sluice_vec<{0}, {1}> *>(p{2} + x{2}) = w{2};",
               storageType(e.type), kVector, i);
    return success();
  }

  /// The launch: the vector kernel when every contiguous pointer is aligned
  /// to its group of four (checked at run time).
  void writeLaunch(CodeWriter &h, const std::string &argsList, bool vec) const {
    int64_t rank = space.size(), total = product(space);
    auto launch = h.block("");
    std::string scalar =
        "epilogue<<<sluice_grid(" + decimal(total) + ", 256), 256, 0, stream>>>(" + argsList + ");";
    if (vec) {
      h.line("bool vec = true;");
      for (const EpilogueAccess &e : accesses)
        if (e.access.strides[rank - 1] == 1 || e.written)
          h.line("vec = vec && ((uintptr_t)(({0}) + {1}) % ({2} * sizeof({3}))) == 0;",
                 e.access.pointer, e.access.offset, kVector, storageType(e.type));
      h.line("if (vec)");
      {
        auto then = h.indented();
        h.line("epilogue_vec<<<sluice_grid({0}, 256, {1}), 256, 0, stream>>>({2});", total, kVector,
               argsList);
      }
      h.line("else");
      auto otherwise = h.indented();
      h.line("{0}", scalar);
    } else {
      h.line("{0}", scalar);
    }
    h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  }

  llvm::DenseMap<Value, std::string> expr;
  CudaGroupContext &ctx;
  ArrayRef<int64_t> space;
};

std::string gemmType(Type et) {
  if (et.isF64())
    return "SLUICE_GEMM_F64";
  if (et.isF16())
    return "SLUICE_GEMM_F16";
  if (et.isBF16())
    return "SLUICE_GEMM_BF16";
  return "SLUICE_GEMM_F32";
}

/// Form F2 on the device, decided before any source is written: the GEMM in
/// cuBLASLt's terms (operands and their layouts, the batch loop and
/// strides), the prefix of the epilogue cuBLASLt fuses, where D lives, and
/// the generated kernel for the rest.
struct GemmPlan {
  GroupOps parts;
  MatMulOp matmul;
  Value result;
  Type et;
  ArrayRef<int64_t> space; ///< the matmul result's shape
  /// NumPy promotion: a 1-D A is [1, K], a 1-D B is [K, 1]; the result
  /// drops those unit dims, which changes no element's position.
  bool aVector = false, bVector = false;
  int64_t m = 0, n = 0, k = 0, batchRank = 0;
  std::vector<int64_t> batch;
  GemmOperand a, b, c, d;
  FusedChain chain;
  /// Epilogue ops after the fused prefix (the generated kernel's).
  SmallVector<Operation *> rest;
  /// Each yield's value before its output views, and those views.
  SmallVector<Value> roots;
  std::vector<StridedView> outViews;
  /// The output cuBLASLt writes D into; none: scratch after cuBLASLt's
  /// part of the workspace.
  std::optional<unsigned> dSlot;
  std::vector<int64_t> dStrides; ///< D over the result's space
  int64_t workspace = kLtWorkspace;
  /// `outer` GEMMs (element offsets per GEMM), each a strided batch of
  /// `innerBatch` GEMMs of `gemmM` rows.
  int64_t outer = 1, innerBatch = 1, gemmM = 0;
  int64_t strideA = 0, strideB = 0, strideC = 0, strideD = 0;
  std::vector<int64_t> aOff, bOff, cOff, dOff;
  int epilogue = 0; ///< SLUICE_EPI_*
  /// A 2:4 GEMM through sluice_sparse_gemm (planSparse).
  bool sparse = false;

  /// A result-space stride vector as strides over [batch.., M, N].
  std::vector<int64_t> toGemmSpace(ArrayRef<int64_t> s) const {
    std::vector<int64_t> g(s.begin(), s.end());
    if (aVector && bVector)
      return std::vector<int64_t>{0, 0};
    if (aVector)
      g.insert(g.end() - 1, 0);
    if (bVector)
      g.push_back(0);
    return g;
  }
  /// How cuBLASLt writes D through `resultStrides`: rows contiguous, or
  /// none.
  std::optional<MatrixLayout> dLayoutOf(ArrayRef<int64_t> resultStrides) const {
    std::vector<int64_t> g = toGemmSpace(resultStrides);
    int64_t r = g.size();
    auto l = matrixLayout(m, n, g[r - 2], g[r - 1]);
    if (!l || l->transposed)
      return std::nullopt;
    return l;
  }
  /// Whether yield `i` is D as cuBLASLt wrote it.
  bool writtenByGemm(unsigned i) const { return dSlot && i == *dSlot && roots[i] == chain.end; }
};

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

/// The matmul, its element type and its sizes (Done with an empty space
/// when there is nothing to compute).
CudaEmit planGemmShape(CudaGroupContext &ctx, GemmPlan &p) {
  p.parts = splitGroupOps(ctx.kernel, [](Operation *op) { return isa<MatMulOp>(op); });
  p.matmul = dyn_cast_or_null<MatMulOp>(p.parts.anchor);
  if (!p.matmul)
    return ctx.unsupported("no matmul in the GEMM group");
  if (!p.parts.before.empty())
    return ctx.unsupported("ops before the matmul of a GEMM group");
  for (Operation *op : p.parts.after)
    if (!isElementwise(op))
      return ctx.unsupported("a GEMM group's epilogue holds " + op->getName().getStringRef().str() +
                             ", not elementwise");
  Value aValue = p.matmul->getOperand(0), bValue = p.matmul->getOperand(1);
  p.result = p.matmul->getResult(0);
  p.et = elementOf(p.result);
  if (!p.et.isF32() && !p.et.isF64() && !p.et.isF16() && !p.et.isBF16())
    return ctx.unsupported("cuBLASLt GEMMs are f32, f64, f16 or bf16");
  ArrayRef<int64_t> aShape = shapeOf(aValue), bShape = shapeOf(bValue);
  p.space = shapeOf(p.result);
  if (aShape.empty() || bShape.empty())
    return ctx.unsupported("matmul of scalars");
  p.aVector = aShape.size() == 1;
  p.bVector = bShape.size() == 1;
  p.m = p.aVector ? 1 : aShape[aShape.size() - 2];
  p.k = aShape.back();
  p.n = p.bVector ? 1 : bShape.back();
  int64_t resultRank = p.space.size();
  p.batchRank = resultRank - (p.aVector ? 0 : 1) - (p.bVector ? 0 : 1);
  if (p.batchRank < 0)
    return ctx.unsupported("unexpected matmul result rank");
  p.batch.assign(p.space.begin(), p.space.begin() + p.batchRank);
  int64_t batches = product(p.batch);
  if (p.k == 0)
    return ctx.unsupported("matmul with an empty contraction");
  if (product(p.space) == 0)
    return CudaEmit::Done; // nothing to compute
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || batches > INT32_MAX)
    return ctx.unsupported("GEMM dims beyond cuBLASLt's 32-bit limits");
  return CudaEmit::Done;
}

/// Operand `v` (A or B) as a strided view of a leaf, or why cuBLASLt
/// cannot read it.
std::optional<std::string> planOperand(CudaGroupContext &ctx, const GemmPlan &p, Value v,
                                       bool vector, bool isA, GemmOperand &out) {
  auto view = resolveView(v, /*emitErrors=*/false);
  if (failed(view))
    return std::string("a matmul operand is a view without strides");
  if (!ctx.pointers.count(view->base))
    return std::string("a matmul operand is not a leaf of the group");
  ArrayRef<int64_t> shape = shapeOf(v);
  std::vector<int64_t> strides = view->strides;
  std::vector<int64_t> mshape(shape.begin(), shape.end());
  if (vector) {
    // [K] as [1, K] (A) or [K, 1] (B).
    mshape.insert(isA ? mshape.begin() : mshape.end(), 1);
    strides.insert(isA ? strides.begin() : strides.end(), 0);
  }
  int64_t r = mshape.size();
  auto layout = matrixLayout(mshape[r - 2], mshape[r - 1], strides[r - 2], strides[r - 1]);
  if (!layout)
    return std::string("a matmul operand view is neither row- nor column-contiguous");
  auto bs = broadcastStridesTo(ArrayRef<int64_t>(mshape).drop_back(2),
                               ArrayRef<int64_t>(strides).drop_back(2), p.batch);
  if (failed(bs))
    return std::string("a matmul operand's batch dims do not broadcast");
  out.access = {ctx.pointers.lookup(view->base), view->offset, *bs};
  out.layout = *layout;
  return std::nullopt;
}

/// A and B, the fused prefix, the yields and where cuBLASLt writes D: an
/// output holding D through a view it can write (rows contiguous), else an
/// output holding a later value of D's type contiguously (the epilogue
/// kernel updates it in place), else scratch in the workspace after
/// cuBLASLt's part.
CudaEmit planGemmOutputs(CudaGroupContext &ctx, GemmPlan &p) {
  if (auto why = planOperand(ctx, p, p.matmul->getOperand(0), p.aVector, true, p.a))
    return ctx.unsupported(*why);
  if (auto why = planOperand(ctx, p, p.matmul->getOperand(1), p.bVector, false, p.b))
    return ctx.unsupported(*why);

  // The fused prefix (epilogues: f32/f16/bf16 matrices; f64 keeps alpha and
  // the residual).
  bool allowEpilogues = !p.et.isF64() && !p.aVector && !p.bVector;
  p.chain.end = p.result;
  if (!p.aVector && !p.bVector)
    p.chain = fuseChain(ctx, p.parts.yield, p.result, p.parts.after, p.space, p.et, allowEpilogues);
  for (Operation *op : p.parts.after)
    if (!p.chain.ops.contains(op))
      p.rest.push_back(op);

  // Yields: each is D or a later epilogue value, through output views.
  auto yielded = KernelYieldOp(p.parts.yield).getValues();
  for (auto [i, v] : llvm::enumerate(yielded)) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != p.space ||
        (root != p.chain.end && !llvm::is_contained(p.rest, root.getDefiningOp())))
      return ctx.unsupported("a GEMM group yields a value not computed from the GEMM result");
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return ctx.unsupported("a GEMM group's result is not a view of its value");
    p.roots.push_back(root);
    p.outViews.push_back(*view);
  }

  for (auto [i, v] : llvm::enumerate(yielded))
    if (!p.dSlot && p.roots[i] == p.chain.end && elementOf(v) == p.et &&
        p.dLayoutOf(p.outViews[i].strides))
      p.dSlot = i;
  for (auto [i, v] : llvm::enumerate(yielded))
    if (!p.dSlot && !p.rest.empty() && elementOf(v) == p.et && p.outViews[i].isContiguous(p.space))
      p.dSlot = i;
  std::string dPointer;
  int64_t dOffset = 0;
  if (p.dSlot) {
    dPointer = ctx.output(*p.dSlot);
    dOffset = p.outViews[*p.dSlot].offset;
    p.dStrides = p.outViews[*p.dSlot].strides;
  } else {
    dPointer = "((" + storageType(p.et) + " *)((unsigned char *)state->workspace + " +
               decimal(kLtWorkspace) + "))";
    p.dStrides = contiguousStrides(p.space);
    p.workspace += (product(p.space) * storageBytes(p.et) + 255) / 256 * 256;
  }
  auto dLayout = p.dLayoutOf(p.dStrides);
  if (!dLayout)
    return ctx.unsupported("the GEMM result's layout is not writable by cuBLASLt");
  std::vector<int64_t> dGemm = p.toGemmSpace(p.dStrides);
  p.d.access = {dPointer, dOffset,
                std::vector<int64_t>(dGemm.begin(), dGemm.begin() + p.batchRank)};
  p.d.layout = *dLayout;
  return CudaEmit::Done;
}

/// C (the residual), the batch dims collapsed into one strided batch and a
/// loop of at most kMaxGemmLoop GEMMs, and the loop's per-GEMM offsets.
CudaEmit planGemmBatches(CudaGroupContext &ctx, GemmPlan &p) {
  int64_t resultRank = p.space.size();
  if (p.chain.residual) {
    const std::vector<int64_t> &s = p.chain.residual->strides;
    p.c.access = {ctx.pointers.lookup(p.chain.residual->base), p.chain.residual->offset,
                  std::vector<int64_t>(s.begin(), s.begin() + p.batchRank)};
    p.c.layout = *matrixLayout(p.m, p.n, s[resultRank - 2], s[resultRank - 1]);
  }
  std::vector<std::vector<int64_t> *> strideSets = {&p.a.access.strides, &p.b.access.strides,
                                                    &p.d.access.strides};
  if (p.chain.residual)
    strideSets.push_back(&p.c.access.strides);
  std::vector<int64_t> inner;
  int64_t split = collapseBatch(p.batch, strideSets, inner);
  p.innerBatch = product(ArrayRef<int64_t>(p.batch).drop_front(split));
  p.outer = product(ArrayRef<int64_t>(p.batch).take_front(split));
  if (p.outer > kMaxGemmLoop)
    return ctx.unsupported("the GEMM's batch dims need more than " + decimal(kMaxGemmLoop) +
                           " separate GEMMs");
  p.strideA = inner[0];
  p.strideB = inner[1];
  p.strideD = inner[2];
  p.strideC = p.chain.residual ? inner[3] : 0;
  // A shared B and A, C, D batches one after the other: one GEMM with the
  // batches stacked along M.
  p.gemmM = p.m;
  if (p.innerBatch > 1 && p.strideB == 0 && !p.a.layout.transposed &&
      p.strideA == p.m * p.a.layout.ld && p.strideD == p.m * p.d.layout.ld &&
      (!p.chain.residual || p.strideC == p.m * p.c.layout.ld)) {
    p.gemmM = p.m * p.innerBatch;
    p.innerBatch = 1;
    p.strideA = p.strideB = p.strideC = p.strideD = 0;
  }
  // Per-GEMM element offsets of the outer loop.
  for (int64_t o = 0; o < p.outer; ++o) {
    int64_t restIndex = o;
    int64_t ao = p.a.access.offset, bo = p.b.access.offset, co = p.c.access.offset,
            dd = p.d.access.offset;
    for (int64_t dim = split - 1; dim >= 0; --dim) {
      int64_t coord = restIndex % p.batch[dim];
      restIndex /= p.batch[dim];
      ao += coord * p.a.access.strides[dim];
      bo += coord * p.b.access.strides[dim];
      dd += coord * p.d.access.strides[dim];
      if (p.chain.residual)
        co += coord * p.c.access.strides[dim];
    }
    p.aOff.push_back(ao);
    p.bOff.push_back(bo);
    p.cOff.push_back(co);
    p.dOff.push_back(dd);
  }
  p.epilogue = p.chain.epilogue + (p.chain.bias ? 1 : 0);
  return CudaEmit::Done;
}

/// The generated epilogue's accesses: the leaves of the ops after the fused
/// prefix, D, and every output cuBLASLt does not write. False (nothing
/// needed) when cuBLASLt writes the only output.
FailureOr<bool> planGemmEpilogue(CudaGroupContext &ctx, const GemmPlan &p, EpilogueKernel &epi,
                                 std::string &why) {
  auto yielded = KernelYieldOp(p.parts.yield).getValues();
  bool needKernel = !p.rest.empty();
  for (unsigned i = 0; i < yielded.size(); ++i)
    if (!p.writtenByGemm(i))
      needKernel = true;
  if (!needKernel)
    return false;
  for (Operation *op : p.rest)
    for (Value operand : op->getOperands()) {
      if (operand == p.chain.end)
        continue;
      if (!epi.addLeaf(operand, why))
        return failure();
    }
  // Leaves read through views of D or of the chain are not elementwise.
  for (auto &[value, idx] : epi.leafAccess) {
    (void)idx;
    auto view = resolveView(value, /*emitErrors=*/false);
    if (succeeded(view) && (view->base == p.chain.end || view->base == p.result)) {
      why = "an epilogue reads the GEMM result through a view";
      return failure();
    }
  }
  // The in-place case: D lives in an output the kernel also writes; the
  // kernel reads D through the same (non-const) pointer before it stores.
  unsigned dAccess = epi.accesses.size();
  epi.accesses.push_back({{p.d.access.pointer, p.d.access.offset, p.dStrides}, p.et, false});
  epi.dLeaves.push_back({dAccess, p.chain.end});
  for (auto [i, v] : llvm::enumerate(yielded)) {
    if (p.writtenByGemm(i))
      continue;
    epi.stores.push_back({(unsigned)epi.accesses.size(), p.roots[i]});
    epi.accesses.push_back(
        {{ctx.output(i), p.outViews[i].offset, p.outViews[i].strides}, elementOf(v), true});
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Print
//===----------------------------------------------------------------------===//

/// The cuBLASLt call(s): the shape, the per-GEMM offsets, the loop.
void printGemmCall(CodeWriter &h, CudaGroupContext &ctx, const GemmPlan &p) {
  const GemmOperand &a = p.a, &b = p.b, &c = p.c, &d = p.d;
  auto call = h.block("");
  h.line("static const SluiceGemmShape gemm = {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, "
         "{10}, {11}, {12}, {13}, {14}, {15}, {16}};",
         gemmType(p.et), decimal(a.layout.transposed), decimal(b.layout.transposed),
         cInt64(p.gemmM), cInt64(p.n), cInt64(p.k), cInt64(a.layout.ld), cInt64(b.layout.ld),
         cInt64(p.chain.residual ? c.layout.ld : d.layout.ld), cInt64(d.layout.ld),
         cInt64(p.innerBatch), cInt64(p.strideA), cInt64(p.strideB), cInt64(p.strideC),
         cInt64(p.strideD), p.epilogue, p.chain.residual ? 1 : 0);
  h.line("{0}", cInt64ArrayDecl("a_off", p.aOff));
  h.line("{0}", cInt64ArrayDecl("b_off", p.bOff));
  h.line("{0}", cInt64ArrayDecl("d_off", p.dOff));
  if (p.chain.residual)
    h.line("{0}", cInt64ArrayDecl("c_off", p.cOff));
  if (!p.dSlot) {
    h.line("if (state->workspaceBytes < (size_t){0})", cInt64(p.workspace));
    auto then = h.indented();
    h.line("return sluice_fail(args, {0}, \"the device workspace is smaller than the bundle "
           "declared\");",
           ctx.kernelName());
  }
  std::string biasPtr = "nullptr";
  if (p.chain.bias)
    biasPtr = "(const void *)(" + ctx.pointers.lookup(p.chain.bias->base) + " + " +
              cInt64(p.chain.bias->offset) + ")";
  std::string cPtr =
      p.chain.residual ? "(const void *)(" + c.access.pointer + " + c_off[o])" : "nullptr";
  h.line("for (int64_t o = 0; o < {0}; ++o)", cInt64(p.outer));
  auto loop = h.indented();
  h.line("if (int32_t status = {8}(args, state, {0}, gemm, (const void *)({1} + a_off[o]), "
         "(const void *)({2} + b_off[o]), {3}, (void *)({4} + d_off[o]), {5}, {6}, (size_t){7}, "
         "stream))",
         ctx.kernelName(), a.access.pointer, b.access.pointer, cPtr, d.access.pointer, biasPtr,
         p.chain.alpha, cInt64(kLtWorkspace), p.sparse ? "sluice_sparse_gemm" : "sluice_gemm");
  auto then = h.indented();
  h.line("return status;");
}

//===----------------------------------------------------------------------===//
// 2:4 GEMMs
//===----------------------------------------------------------------------===//

/// Where the compiler found cuSPARSELt's header and library folder.
struct CusparseLtFiles {
  std::string header, libDir;
};

/// The cuSPARSELt files the module's `sluice.cuda_config` records (the
/// plan phase's sluice-configure-target, from sluice-compile's
/// --cusparselt-dir), or nullopt when it names none.
std::optional<CusparseLtFiles> cusparseLtFiles(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op) : op->getParentOfType<ModuleOp>();
  auto config = module ? module->getAttrOfType<DictionaryAttr>("sluice.cuda_config") : nullptr;
  auto header = config ? config.getAs<StringAttr>("cusparselt_header") : nullptr;
  if (!header || header.getValue().empty())
    return std::nullopt;
  auto libDir = config.getAs<StringAttr>("cusparselt_lib_dir");
  return CusparseLtFiles{header.str(), libDir ? libDir.str() : ""};
}

/// The constant a leaf view's base stands for (a kernel input defined by a
/// constant, or a constant in the body), or null.
ElementsAttr leafConstant(KernelOp kernel, Value base) {
  if (auto arg = dyn_cast<BlockArgument>(base)) {
    if (arg.getOwner() != &kernel.getBody().front())
      return nullptr;
    base = kernel.getInputs()[arg.getArgNumber()];
  }
  auto constant = base.getDefiningOp<ConstantOp>();
  return constant ? dyn_cast<ElementsAttr>(constant.getValue()) : nullptr;
}

/// Whether the group's matmul runs as a 2:4 GEMM: marked by the compress
/// phase, f16/bf16, one GEMM over a weight read as stored ([K, N], rows
/// contiguous) that is 2:4 along K. A remark says why a marked GEMM stays
/// dense.
bool planSparse(CudaGroupContext &ctx, const GemmPlan &p) {
  if (!p.matmul->hasAttr("sluice.sparsity_2_4"))
    return false;
  auto remark = [&](const std::string &what) {
    if (ctx.remarks)
      ctx.remarks->push_back(ctx.name + " (sluice.matmul): " + what);
  };
  auto dense = [&](const std::string &why) {
    remark("2:4 GEMM runs dense on cuda: " + why);
    return false;
  };
  if (!p.et.isF16() && !p.et.isBF16())
    return dense("cuSPARSELt computes f32 in TF32; compile with --precision=fp16 or bf16 for the "
                 "sparse tensor cores");
  if (p.bVector || p.aVector || p.outer != 1 || p.innerBatch != 1 || p.b.layout.transposed)
    return dense("the weight is not one [K, N] matrix read as stored");
  auto view = resolveView(p.matmul->getOperand(1), /*emitErrors=*/false);
  ElementsAttr weight = succeeded(view) ? leafConstant(ctx.kernel, view->base) : nullptr;
  auto tensor = weight ? tensorFromAttr(weight) : FailureOr<Tensor>(failure());
  if (failed(tensor) || tensor->rank() != 2 || view->offset != 0)
    return dense("the weight is not a constant");
  if (!sluice_is_2_4(tensor->rawData(), (int)dtypeSize(tensor->dtype()), tensor->dim(0),
                     tensor->dim(1), tensor->dim(1)))
    return dense("the weight is not 2:4 along K");
  if (!cusparseLtFiles(p.matmul))
    dense("cusparseLt.h was not found at compile time (pip install nvidia-cusparselt-cu13 into "
          "the environment, or give --cusparselt-dir)");
  else
    remark("2:4 GEMM through cuSPARSELt where it loads at run time and is faster than dense on "
           "the shape");
  return true;
}

} // namespace

CudaEmit emitCudaGemmGroup(CudaGroupContext &ctx) {
  GemmPlan plan;
  if (CudaEmit r = planGemmShape(ctx, plan); r != CudaEmit::Done || product(plan.space) == 0)
    return r;
  if (CudaEmit r = planGemmOutputs(ctx, plan); r != CudaEmit::Done)
    return r;
  if (CudaEmit r = planGemmBatches(ctx, plan); r != CudaEmit::Done)
    return r;
  plan.sparse = planSparse(ctx, plan);
  EpilogueKernel epi(ctx, plan.space);
  std::string why;
  FailureOr<bool> needKernel = planGemmEpilogue(ctx, plan, epi, why);
  if (failed(needKernel))
    return ctx.unsupported(why);

  CodeWriter host(1), device;
  printGemmCall(host, ctx, plan);
  if (*needKernel && failed(epi.print(plan.rest, device, host)))
    return CudaEmit::Error;
  ctx.include("sluice_gen/cuda_blas.h");
  if (plan.sparse)
    ctx.include(kCudaSparseHeader);
  ctx.kind = "library";
  *ctx.device += device.str();
  *ctx.host += host.str();
  if (ctx.workspaceBytes)
    *ctx.workspaceBytes = std::max(*ctx.workspaceBytes, plan.workspace);
  return CudaEmit::Done;
}

std::string cudaSparsePreamble(ModuleOp module) {
  std::optional<CusparseLtFiles> files = cusparseLtFiles(module);
  if (!files)
    return "// cusparseLt.h was not found at compile time: 2:4 GEMMs run dense\n";
  return "#define SLUICE_WITH_CUSPARSELT 1\n#define SLUICE_CUSPARSELT_HEADER \"" + files->header +
         "\"\n#define SLUICE_CUSPARSELT_LIBDIR \"" + files->libDir + "\"\n";
}

} // namespace sluice::codegen
