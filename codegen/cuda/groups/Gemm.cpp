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
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaGroups.h"

#include "codegen/common/ScalarEmitter.h"
#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

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

std::string str(int64_t v) { return std::to_string(v); }

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

/// A buffer the generated epilogue kernel reads or writes:
/// `pointer[offset + sum(coord[d] * strides[d])]` over the result's space.
struct Access {
  std::string pointer;
  int64_t offset = 0;
  std::vector<int64_t> strides;
  Type type;
  bool written = false;
};

/// The GEMM of the group in the row-major frame, before batch collapsing.
struct Operand {
  std::string pointer;
  int64_t offset = 0;
  std::vector<int64_t> batchStrides; // over the GEMM's batch dims
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

/// Generates the elementwise epilogue kernel(s) and their launch.
class EpilogueKernel {
public:
  EpilogueKernel(CudaGroupContext &ctx, ArrayRef<int64_t> space) : ctx(ctx), space(space) {}

  std::vector<Access> accesses;
  llvm::MapVector<Value, unsigned> leafAccess;
  llvm::DenseMap<Value, std::string> expr;

  /// Registers `operand` of an epilogue op as a leaf unless it is computed
  /// in the group or a literal; Unsupported (false) for views the kernel
  /// cannot read.
  bool addLeaf(Value operand, std::string &why) {
    if (leafAccess.count(operand) || expr.count(operand) || ctx.literals.count(operand))
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
        {ctx.pointers.lookup(view->base), view->offset, *strides, elementOf(operand), false});
    return true;
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

  /// Whether the four-wide kernel applies: the trailing dim splits into
  /// groups of four and every access moves along it with stride 1 (from a
  /// group-aligned start) or 0.
  bool vectorizable() const {
    if (space.empty() || space.back() % kVector != 0)
      return false;
    int64_t rank = space.size();
    for (const Access &a : accesses) {
      int64_t last = a.strides[rank - 1];
      if (last == 0 && !a.written)
        continue;
      if (last != 1 || a.offset % kVector != 0)
        return false;
      for (int64_t d = 0; d + 1 < rank; ++d)
        if (space[d] != 1 && a.strides[d] % kVector != 0)
          return false;
    }
    return true;
  }

  /// The kernel body for element (or first element of a group of four)
  /// `i`, and the launch; `ops`/`stores` are filled by the caller through
  /// emitOps with the leaves' expressions bound.
  LogicalResult emit(ArrayRef<Operation *> ops, ArrayRef<std::pair<unsigned, Value>> stores,
                     std::string &device, std::string &host) {
    int64_t rank = space.size();
    int64_t total = product(space);
    std::vector<int64_t> contiguous = contiguousStrides(space);
    auto isContig = [&](const Access &a) {
      for (int64_t d = 0; d < rank; ++d)
        if (space[d] != 1 && a.strides[d] != contiguous[d])
          return false;
      return true;
    };
    // Parameters: one pointer per access.
    std::string params, argsList;
    for (auto [i, a] : llvm::enumerate(accesses)) {
      std::string T = storageType(a.type);
      params += std::string(i ? ", " : "") + (a.written ? "" : "const ") + T + " *p" + str(i);
      argsList += std::string(i ? ", " : "") + "(" + (a.written ? "" : "const ") + T + " *)(" +
                  a.pointer + ")";
    }
    // Coordinates of flat element `i` and each access's element index.
    auto indices = [&](const std::string &indent) {
      std::string s;
      bool needCoords = llvm::any_of(accesses, [&](const Access &a) { return !isContig(a); });
      if (needCoords) {
        s += indent + "int64_t rest = i;\n";
        for (int64_t d = rank - 1; d >= 0; --d) {
          bool used = llvm::any_of(
              accesses, [&](const Access &a) { return !isContig(a) && a.strides[d] != 0; });
          if (space[d] == 1 || !used) {
            if (d > 0 && space[d] != 1)
              s += indent + "rest /= " + str(space[d]) + ";\n";
            continue;
          }
          s += indent + "const int64_t q" + str(d) + " = rest % " + str(space[d]) +
               "; rest /= " + str(space[d]) + ";\n";
        }
      }
      for (auto [i, a] : llvm::enumerate(accesses)) {
        std::string e = str(a.offset);
        if (isContig(a)) {
          e += " + i";
        } else {
          for (int64_t d = 0; d < rank; ++d)
            if (space[d] != 1 && a.strides[d] != 0)
              e += " + q" + str(d) + " * " + str(a.strides[d]);
        }
        s += indent + "const int64_t x" + str(i) + " = " + e + ";\n";
      }
      return s;
    };
    // The ops over leaves bound to `leafExpr(access)`.
    auto body =
        [&](const std::string &indent, const std::function<std::string(unsigned)> &leafExpr,
            const std::function<std::string(unsigned)> &storeTarget) -> FailureOr<std::string> {
      std::string s;
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
        std::string local = "v" + str(locals++);
        s += indent + "const " + computeType(elementOf(op->getResult(0))) + " " + local + " = " +
             *e + ";\n";
        expr[op->getResult(0)] = local;
      }
      for (auto &[a, value] : stores) {
        std::string v = lookup(value);
        if (v.empty())
          return ctx.kernel.emitOpError("cuda target: a result of the GEMM group has no value");
        s += indent + storeTarget(a) + " = " + storeExpr(accesses[a].type, v) + ";\n";
      }
      return s;
    };

    // The scalar kernel: one element per thread and step.
    std::string &d = device;
    d += "__global__ void __launch_bounds__(256) epilogue(" + params + ") {\n";
    d += "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < " + str(total) +
         "; i += (int64_t)gridDim.x * blockDim.x) {\n";
    d += indices("    ");
    auto scalar = body(
        "    ", [](unsigned a) { return "p" + str(a) + "[x" + str(a) + "]"; },
        [](unsigned a) { return "p" + str(a) + "[x" + str(a) + "]"; });
    if (failed(scalar))
      return failure();
    d += *scalar + "  }\n}\n";

    bool vec = vectorizable();
    if (vec) {
      // Four elements per thread and step: vector loads of the contiguous
      // accesses, one scalar load of the broadcast ones.
      d += "__global__ void __launch_bounds__(256) epilogue_vec(" + params + ") {\n";
      d += "  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < " +
           str(total / kVector) + "; g += (int64_t)gridDim.x * blockDim.x) {\n";
      d += "    const int64_t i = g * " + str(kVector) + ";\n";
      d += indices("    ");
      for (auto [i, a] : llvm::enumerate(accesses)) {
        std::string T = storageType(a.type);
        std::string vt = "sluice_vec<" + T + ", " + str(kVector) + ">";
        if (a.written)
          d += "    " + vt + " w" + str(i) + ";\n";
        else if (a.strides[rank - 1] == 1)
          d += "    const " + vt + " r" + str(i) + " = *reinterpret_cast<const " + vt + " *>(p" +
               str(i) + " + x" + str(i) + ");\n";
        else
          d += "    const " + T + " r" + str(i) + " = p" + str(i) + "[x" + str(i) + "];\n";
      }
      d += "    #pragma unroll\n    for (int u = 0; u < " + str(kVector) + "; ++u) {\n";
      auto lanes = body(
          "      ",
          [&](unsigned a) {
            return accesses[a].strides[rank - 1] == 1 ? "r" + str(a) + ".v[u]" : "r" + str(a);
          },
          [](unsigned a) { return "w" + str(a) + ".v[u]"; });
      if (failed(lanes))
        return failure();
      d += *lanes + "    }\n";
      for (auto [i, a] : llvm::enumerate(accesses))
        if (a.written)
          d += "    *reinterpret_cast<sluice_vec<" + storageType(a.type) + ", " + str(kVector) +
               "> *>(p" + str(i) + " + x" + str(i) + ") = w" + str(i) + ";\n";
      d += "  }\n}\n";
    }

    // The launch: the vector kernel when every contiguous pointer is
    // aligned to its group of four.
    std::string &h = host;
    h += "  {\n";
    if (vec) {
      h += "    bool vec = true;\n";
      for (const Access &a : accesses)
        if (a.strides[rank - 1] == 1 || a.written)
          h += "    vec = vec && ((uintptr_t)((" + a.pointer + ") + " + str(a.offset) + ") % (" +
               str(kVector) + " * sizeof(" + storageType(a.type) + "))) == 0;\n";
      h += "    if (vec)\n      epilogue_vec<<<sluice_grid(" + str(total) + ", 256, " +
           str(kVector) + "), 256, 0, stream>>>(" + argsList + ");\n    else\n  ";
    }
    h += "    epilogue<<<sluice_grid(" + str(total) + ", 256), 256, 0, stream>>>(" + argsList +
         ");\n";
    h += "    SLUICE_LAUNCHED(" + ctx.kernelName() + ");\n  }\n";
    return success();
  }

  /// Accesses whose loads give a computed value (the GEMM's D).
  std::vector<std::pair<unsigned, Value>> dLeaves;

private:
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

} // namespace

CudaEmit emitCudaGemmGroup(CudaGroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  GroupOps parts = splitGroupOps(kernel, [](Operation *op) { return isa<MatMulOp>(op); });
  KernelYieldOp yield = parts.yield;
  auto matmul = dyn_cast_or_null<MatMulOp>(parts.anchor);
  if (!matmul)
    return ctx.unsupported("no matmul in the GEMM group");
  if (!parts.before.empty())
    return ctx.unsupported("ops before the matmul of a GEMM group");
  for (Operation *op : parts.after)
    if (!isElementwise(op))
      return ctx.unsupported("a GEMM group's epilogue holds " + op->getName().getStringRef().str() +
                             ", not elementwise");
  Value aValue = matmul->getOperand(0), bValue = matmul->getOperand(1);
  Value result = matmul->getResult(0);
  Type et = elementOf(result);
  if (!et.isF32() && !et.isF64() && !et.isF16() && !et.isBF16())
    return ctx.unsupported("cuBLASLt GEMMs are f32, f64, f16 or bf16");
  ArrayRef<int64_t> aShape = shapeOf(aValue), bShape = shapeOf(bValue), space = shapeOf(result);
  if (aShape.empty() || bShape.empty())
    return ctx.unsupported("matmul of scalars");
  // NumPy promotion: a 1-D A is [1, K], a 1-D B is [K, 1]; the result drops
  // those unit dims, which changes no element's position.
  bool aVector = aShape.size() == 1, bVector = bShape.size() == 1;
  int64_t m = aVector ? 1 : aShape[aShape.size() - 2];
  int64_t k = aShape.back();
  int64_t n = bVector ? 1 : bShape.back();
  int64_t resultRank = space.size();
  int64_t batchRank = resultRank - (aVector ? 0 : 1) - (bVector ? 0 : 1);
  if (batchRank < 0)
    return ctx.unsupported("unexpected matmul result rank");
  std::vector<int64_t> batch(space.begin(), space.begin() + batchRank);
  int64_t batches = product(batch);
  if (k == 0)
    return ctx.unsupported("matmul with an empty contraction");
  if (product(space) == 0)
    return CudaEmit::Done; // nothing to compute
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || batches > INT32_MAX)
    return ctx.unsupported("GEMM dims beyond cuBLASLt's 32-bit limits");

  // A result-space stride vector as strides over [batch.., M, N].
  auto toGemmSpace = [&](ArrayRef<int64_t> s) {
    std::vector<int64_t> g(s.begin(), s.end());
    if (aVector && bVector)
      return std::vector<int64_t>{0, 0};
    if (aVector)
      g.insert(g.end() - 1, 0);
    if (bVector)
      g.push_back(0);
    return g;
  };

  // Operands as strided views of leaves.
  auto operand = [&](Value v, bool vector, bool isA, Operand &out) -> std::optional<std::string> {
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
                                 ArrayRef<int64_t>(strides).drop_back(2), batch);
    if (failed(bs))
      return std::string("a matmul operand's batch dims do not broadcast");
    out.pointer = ctx.pointers.lookup(view->base);
    out.offset = view->offset;
    out.batchStrides = *bs;
    out.layout = *layout;
    return std::nullopt;
  };
  Operand a, b;
  if (auto why = operand(aValue, aVector, true, a))
    return ctx.unsupported(*why);
  if (auto why = operand(bValue, bVector, false, b))
    return ctx.unsupported(*why);

  // The fused prefix (epilogues: f32/f16/bf16 matrices; f64 keeps alpha and
  // the residual).
  bool allowEpilogues = !et.isF64() && !aVector && !bVector;
  FusedChain chain;
  chain.end = result;
  if (!aVector && !bVector)
    chain = fuseChain(ctx, yield, result, parts.after, space, et, allowEpilogues);
  SmallVector<Operation *> rest;
  for (Operation *op : parts.after)
    if (!chain.ops.contains(op))
      rest.push_back(op);

  // Yields: each is D or a later epilogue value, through output views.
  SmallVector<Value> roots;
  std::vector<StridedView> outViews;
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != space ||
        (root != chain.end && !llvm::is_contained(rest, root.getDefiningOp())))
      return ctx.unsupported("a GEMM group yields a value not computed from the GEMM result");
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return ctx.unsupported("a GEMM group's result is not a view of its value");
    roots.push_back(root);
    outViews.push_back(*view);
  }

  // Where cuBLASLt writes D: an output holding D through a view it can
  // write (rows contiguous), else an output holding a later value of D's
  // type contiguously (the epilogue kernel updates it in place), else
  // scratch in the workspace after cuBLASLt's part.
  auto dLayoutOf = [&](const std::vector<int64_t> &resultStrides) -> std::optional<MatrixLayout> {
    std::vector<int64_t> g = toGemmSpace(resultStrides);
    int64_t r = g.size();
    auto l = matrixLayout(m, n, g[r - 2], g[r - 1]);
    if (!l || l->transposed)
      return std::nullopt;
    return l;
  };
  std::optional<unsigned> dSlot;
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (!dSlot && roots[i] == chain.end && elementOf(v) == et && dLayoutOf(outViews[i].strides))
      dSlot = i;
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (!dSlot && !rest.empty() && elementOf(v) == et && outViews[i].isContiguous(space))
      dSlot = i;
  std::string T = storageType(et);
  int64_t elementBytes = storageBytes(et);
  std::string dPointer;
  int64_t dOffset = 0;
  std::vector<int64_t> dStrides;
  int64_t workspace = kLtWorkspace;
  if (dSlot) {
    dPointer = ctx.output(*dSlot);
    dOffset = outViews[*dSlot].offset;
    dStrides = outViews[*dSlot].strides;
  } else {
    dPointer = "((" + T + " *)((unsigned char *)state->workspace + " + str(kLtWorkspace) + "))";
    dStrides = contiguousStrides(space);
    workspace += (product(space) * elementBytes + 255) / 256 * 256;
  }
  auto dLayout = dLayoutOf(dStrides);
  if (!dLayout)
    return ctx.unsupported("the GEMM result's layout is not writable by cuBLASLt");

  // Batch strides of C (the residual) and D over the GEMM's batch dims.
  std::vector<int64_t> dGemm = toGemmSpace(dStrides);
  Operand d{dPointer, dOffset, std::vector<int64_t>(dGemm.begin(), dGemm.begin() + batchRank),
            *dLayout};
  Operand c;
  if (chain.residual) {
    c.pointer = ctx.pointers.lookup(chain.residual->base);
    c.offset = chain.residual->offset;
    const std::vector<int64_t> &s = chain.residual->strides;
    c.batchStrides.assign(s.begin(), s.begin() + batchRank);
    c.layout = *matrixLayout(m, n, s[resultRank - 2], s[resultRank - 1]);
  }
  std::vector<std::vector<int64_t> *> strideSets = {&a.batchStrides, &b.batchStrides,
                                                    &d.batchStrides};
  if (chain.residual)
    strideSets.push_back(&c.batchStrides);
  std::vector<int64_t> inner;
  int64_t split = collapseBatch(batch, strideSets, inner);
  int64_t innerBatch = product(ArrayRef<int64_t>(batch).drop_front(split));
  int64_t outer = product(ArrayRef<int64_t>(batch).take_front(split));
  if (outer > kMaxGemmLoop)
    return ctx.unsupported("the GEMM's batch dims need more than " + str(kMaxGemmLoop) +
                           " separate GEMMs");
  int64_t strideA = inner[0], strideB = inner[1], strideD = inner[2];
  int64_t strideC = chain.residual ? inner[3] : 0;
  // A shared B and A, C, D batches one after the other: one GEMM with the
  // batches stacked along M.
  int64_t gemmM = m;
  if (innerBatch > 1 && strideB == 0 && !a.layout.transposed && strideA == m * a.layout.ld &&
      strideD == m * d.layout.ld && (!chain.residual || strideC == m * c.layout.ld)) {
    gemmM = m * innerBatch;
    innerBatch = 1;
    strideA = strideB = strideC = strideD = 0;
  }
  // Per-GEMM element offsets of the outer loop.
  std::vector<int64_t> aOff, bOff, cOff, dOff;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t restIndex = o;
    int64_t ao = a.offset, bo = b.offset, co = c.offset, dd = d.offset;
    for (int64_t dim = split - 1; dim >= 0; --dim) {
      int64_t coord = restIndex % batch[dim];
      restIndex /= batch[dim];
      ao += coord * a.batchStrides[dim];
      bo += coord * b.batchStrides[dim];
      dd += coord * d.batchStrides[dim];
      if (chain.residual)
        co += coord * c.batchStrides[dim];
    }
    aOff.push_back(ao);
    bOff.push_back(bo);
    cOff.push_back(co);
    dOff.push_back(dd);
  }
  int epilogue = chain.epilogue + (chain.bias ? 1 : 0);

  ctx.include("sluice_gen/cuda_blas.h");
  ctx.kind = "library";
  std::string &h = *ctx.host;
  h += "  {\n";
  h += "    static const SluiceGemmShape gemm = {" + gemmType(et) + ", " +
       str(a.layout.transposed) + ", " + str(b.layout.transposed) + ", " + cInt(gemmM) + ", " +
       cInt(n) + ", " + cInt(k) + ", " + cInt(a.layout.ld) + ", " + cInt(b.layout.ld) + ", " +
       cInt(chain.residual ? c.layout.ld : d.layout.ld) + ", " + cInt(d.layout.ld) + ", " +
       cInt(innerBatch) + ", " + cInt(strideA) + ", " + cInt(strideB) + ", " + cInt(strideC) +
       ", " + cInt(strideD) + ", " + str(epilogue) + ", " + str(chain.residual ? 1 : 0) + "};\n";
  h += "    " + cStaticArray("a_off", aOff) + "    " + cStaticArray("b_off", bOff) + "    " +
       cStaticArray("d_off", dOff);
  if (chain.residual)
    h += "    " + cStaticArray("c_off", cOff);
  if (!dSlot)
    h += "    if (state->workspaceBytes < (size_t)" + cInt(workspace) +
         ")\n      return "
         "sluice_fail(args, " +
         ctx.kernelName() +
         ", \"the device workspace is smaller than "
         "the bundle declared\");\n";
  std::string biasPtr = "nullptr";
  if (chain.bias)
    biasPtr = "(const void *)(" + ctx.pointers.lookup(chain.bias->base) + " + " +
              cInt(chain.bias->offset) + ")";
  std::string cPtr = chain.residual ? "(const void *)(" + c.pointer + " + c_off[o])" : "nullptr";
  h += "    for (int64_t o = 0; o < " + cInt(outer) + "; ++o)\n";
  h += "      if (int32_t status = sluice_gemm(args, state, " + ctx.kernelName() +
       ", gemm, (const void *)(" + a.pointer + " + a_off[o]), (const void *)(" + b.pointer +
       " + b_off[o]), " + cPtr + ", (void *)(" + dPointer + " + d_off[o]), " + biasPtr + ", " +
       chain.alpha + ", (size_t)" + cInt(kLtWorkspace) + ", stream))\n";
  h += "        return status;\n";
  h += "  }\n";

  // The generated epilogue: the ops after the fused prefix and every
  // output not written by cuBLASLt.
  std::vector<std::pair<unsigned, Value>> stores;
  EpilogueKernel epi(ctx, space);
  bool needKernel = !rest.empty();
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    if (!(dSlot && i == *dSlot && roots[i] == chain.end))
      needKernel = true;
  if (needKernel) {
    std::string why;
    for (Operation *op : rest)
      for (Value operand : op->getOperands()) {
        if (operand == chain.end)
          continue;
        if (!epi.addLeaf(operand, why))
          return ctx.unsupported(why);
      }
    // Leaves read through views of D or of the chain are not elementwise.
    for (auto &[value, idx] : epi.leafAccess) {
      (void)idx;
      auto view = resolveView(value, /*emitErrors=*/false);
      if (succeeded(view) && (view->base == chain.end || view->base == result))
        return ctx.unsupported("an epilogue reads the GEMM result through a view");
    }
    unsigned dAccess = epi.accesses.size();
    epi.accesses.push_back({dPointer, dOffset, dStrides, et, false});
    epi.dLeaves.push_back({dAccess, chain.end});
    for (auto [i, v] : llvm::enumerate(yield.getValues())) {
      if (dSlot && i == *dSlot && roots[i] == chain.end)
        continue;
      stores.push_back({(unsigned)epi.accesses.size(), roots[i]});
      Access out{ctx.output(i), outViews[i].offset, outViews[i].strides, elementOf(v), true};
      epi.accesses.push_back(out);
    }
    // The in-place case: D lives in an output the kernel also writes; the
    // kernel reads D through the same (non-const) pointer before it stores.
    if (failed(epi.emit(rest, stores, *ctx.device, *ctx.host)))
      return CudaEmit::Error;
  }
  if (ctx.workspaceBytes)
    *ctx.workspaceBytes = std::max(*ctx.workspaceBytes, workspace);
  return CudaEmit::Done;
}

} // namespace sluice::codegen
