//===- Elementwise.cpp - cuda form F1: elementwise groups -----------------===//
//
// The plan is the cpu target's (planElementwiseGroup: one iteration space,
// strided accesses over collapsed dims); the spelling is a grid-stride loop
// in which each thread computes VEC consecutive elements of the innermost
// dim. Accesses contiguous along it are read and written as one vector
// (sluice_vec: 16 bytes for the widest element type), the rest (broadcasts,
// transposed reads) element by element. Index arithmetic is 32-bit when the
// space and every access fit.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/common/GroupContext.h"
#include "codegen/cuda/CudaGroups.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// The cpu target's plan as the device runs it: element types, which
/// accesses move as vectors, the vector width and the index type.
struct CudaElementwisePlan {
  ElementwisePlan plan;
  std::vector<Type> types;
  std::vector<bool> isOutput, vectorized;
  int64_t vec = 1;
  /// 32-bit indices when every offset reachable fits.
  bool narrowIndex = true;

  int64_t vectors() const { return plan.total / vec; }
  std::string indexType() const { return narrowIndex ? "int32_t" : "int64_t"; }
};

CudaElementwisePlan planCudaElementwise(ElementwisePlan plan) {
  CudaElementwisePlan p;
  size_t numAccesses = plan.accesses.size();
  const std::vector<int64_t> &dims = plan.dims;
  int64_t inner = dims.back();
  // Element types of the accesses.
  p.types.resize(numAccesses);
  p.isOutput.assign(numAccesses, false);
  for (auto &[value, a] : plan.leafAccess)
    p.types[a] = elementOf(value);
  for (auto [i, a] : llvm::enumerate(plan.outAccess)) {
    p.types[a] = elementOf(plan.yield.getValues()[i]);
    p.isOutput[a] = true;
  }

  // Vector width: 16 bytes of the widest contiguous access.
  int64_t widest = 1;
  for (size_t a = 0; a < numAccesses; ++a)
    if (plan.accesses[a].strides.back() == 1)
      widest = std::max(widest, storageBytes(p.types[a]));
  p.vec = std::max<int64_t>(1, 16 / widest);
  auto fits = [&](int64_t v) {
    if (inner % v)
      return false;
    for (size_t a = 0; a < numAccesses; ++a)
      if (plan.accesses[a].strides.back() == 1 && plan.accesses[a].offset % v)
        return false;
    return true;
  };
  while (p.vec > 1 && !fits(p.vec))
    p.vec /= 2;
  p.vectorized.assign(numAccesses, false);
  if (p.vec > 1)
    for (size_t a = 0; a < numAccesses; ++a)
      p.vectorized[a] = plan.accesses[a].strides.back() == 1;

  int64_t reach = plan.total;
  for (const auto &access : plan.accesses) {
    int64_t span = access.offset;
    for (size_t d = 0; d < dims.size(); ++d)
      span += (dims[d] - 1) * std::abs(access.strides[d]);
    reach = std::max(reach, span + 1);
  }
  p.narrowIndex = reach < (int64_t(1) << 31) - 1024;
  p.plan = std::move(plan);
  return p;
}

/// The thread's first element `i0` and, over several dims, each access's
/// base b<a> of the row it lies in.
void writeBases(CodeWriter &k, const CudaElementwisePlan &p) {
  const std::vector<int64_t> &dims = p.plan.dims;
  const std::string idx = p.indexType();
  size_t numAccesses = p.plan.accesses.size();
  if (dims.size() == 1) {
    k.line("const {0} i0 = e;", idx);
    return;
  }
  k.line("{0} rest = e / {1}, c;", idx, dims.back());
  for (size_t a = 0; a < numAccesses; ++a)
    k.line("{0} b{1} = 0;", idx, a);
  for (int64_t d = (int64_t)dims.size() - 2; d >= 0; --d) {
    k.line("c = rest % {0}; rest /= {0};", dims[d]);
    for (size_t a = 0; a < numAccesses; ++a)
      if (p.plan.accesses[a].strides[d])
        k.line("b{0} += c * {1};", a, p.plan.accesses[a].strides[d]);
  }
  k.line("(void)rest; (void)c;");
  k.line("const {0} i0 = e % {1};", idx, dims.back());
}

/// The kernel `elementwise`: a grid-stride loop over vectors of `vec`
/// elements; vectorized accesses go through registers r<a>[j].
LogicalResult writeElementwiseKernel(CodeWriter &k, const CudaElementwisePlan &p,
                                     CudaGroupContext &ctx,
                                     const std::vector<std::string> &params) {
  const ElementwisePlan &plan = p.plan;
  size_t numAccesses = plan.accesses.size();
  bool multiDim = plan.dims.size() > 1;
  const std::string idx = p.indexType();
  // Element j of the thread's vector: index of access a.
  auto index = [&](unsigned a) {
    if (p.vectorized[a])
      return std::string("j");
    const auto &access = plan.accesses[a];
    int64_t s = access.strides.back();
    std::string i = s == 0 ? "0" : s == 1 ? "i" : "i * " + decimal(s);
    std::string base = multiDim ? "b" + decimal(a) : "";
    if (access.offset)
      base += (base.empty() ? "" : " + ") + decimal(access.offset);
    return base.empty() ? i : base + " + " + i;
  };
  ElementwisePlan registers = plan;
  for (size_t a = 0; a < numAccesses; ++a)
    if (p.vectorized[a])
      registers.accesses[a].pointer = "r" + decimal(a);
  auto at = [&](size_t a, bool withOffset) {
    int64_t offset = withOffset ? plan.accesses[a].offset : 0;
    return "(" + (multiDim ? "b" + decimal(a) + " + " : std::string()) +
           (offset ? decimal(offset) + " + " : std::string()) + "i0)";
  };

  auto kernel =
      k.block("__global__ void __launch_bounds__(256) elementwise({0})", llvm::join(params, ", "));
  auto loop = k.block("for ({0} t = blockIdx.x * blockDim.x + threadIdx.x; t < {1}; "
                      "t += gridDim.x * blockDim.x)",
                      idx, p.vectors());
  k.line("const {0} e = t * {1};", idx, p.vec);
  writeBases(k, p);
  for (size_t a = 0; a < numAccesses; ++a) {
    if (!p.vectorized[a])
      continue;
    std::string t = storageType(p.types[a]);
    k.line("{0} r{1}[{2}];", t, a, p.vec);
    if (!p.isOutput[a])
      k.line("*(sluice_vec<{0}, {1}> *)r{2} = *(const sluice_vec<{0}, {1}> *)({3} + {4});", t,
             p.vec, a, plan.accesses[a].pointer, at(a, true));
  }
  k.line("#pragma unroll");
  {
    auto lanes = k.block("for (int j = 0; j < {0}; ++j)", p.vec);
    k.line("const {0} i = i0 + j;", idx);
    k.line("(void)i;");
    auto body = registers.scalarBody(ctx.literals, index, k.indentation());
    if (failed(body))
      return failure();
    k.raw(*body);
  }
  for (size_t a = 0; a < numAccesses; ++a)
    if (p.vectorized[a] && p.isOutput[a])
      k.line("*(sluice_vec<{0}, {1}> *)({2} + {3}) = *(const sluice_vec<{0}, {1}> *)r{4};",
             storageType(p.types[a]), p.vec, plan.accesses[a].pointer, at(a, false), a);
  return success();
}

} // namespace

CudaEmit emitCudaElementwiseGroup(CudaGroupContext &ctx) {
  auto planned = planElementwiseGroup(ctx.kernel, ctx.pointers, ctx.literals,
                                      [&](unsigned i) { return ctx.output(i); });
  if (failed(planned))
    return CudaEmit::Error;
  if (planned->total == 0)
    return CudaEmit::Done; // nothing to compute
  CudaElementwisePlan p = planCudaElementwise(std::move(*planned));

  // Kernel parameters: every access whose pointer is a block argument or
  // an output (constants are read through their own pointers too).
  std::vector<std::string> params, argsList;
  std::set<std::string> seen;
  for (size_t a = 0; a < p.plan.accesses.size(); ++a) {
    const std::string &ptr = p.plan.accesses[a].pointer;
    if (!seen.insert(ptr).second)
      continue;
    std::string t = storageType(p.types[a]);
    params.push_back(p.isOutput[a] ? t + " *__restrict__ " + ptr
                                   : "const " + t + " *__restrict__ " + ptr);
    argsList.push_back(ptr);
  }

  CodeWriter k;
  if (failed(writeElementwiseKernel(k, p, ctx, params)))
    return CudaEmit::Error;
  *ctx.device += k.str();
  CodeWriter h(1);
  h.line("elementwise<<<sluice_grid({0}, 256), 256, 0, stream>>>({1});", p.vectors(),
         llvm::join(argsList, ", "));
  h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  *ctx.host += h.str();
  return CudaEmit::Done;
}

} // namespace sluice::codegen
