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

#include "codegen/common/ScalarEmitter.h"
#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"
#include "codegen/cuda/CudaGroups.h"

using namespace mlir;

namespace sluice::codegen {

CudaEmit emitCudaElementwiseGroup(CudaGroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  auto planned = planElementwiseGroup(kernel, ctx.pointers, ctx.literals,
                                      [&](unsigned i) { return ctx.output(i); });
  if (failed(planned))
    return CudaEmit::Error;
  ElementwisePlan plan = std::move(*planned);
  const std::vector<int64_t> &dims = plan.dims;
  size_t numAccesses = plan.accesses.size();
  int64_t inner = dims.back();
  if (plan.total == 0)
    return CudaEmit::Done; // nothing to compute

  // Element types of the accesses.
  std::vector<Type> types(numAccesses);
  std::vector<bool> isOutput(numAccesses, false);
  for (auto &[value, a] : plan.leafAccess)
    types[a] = elementOf(value);
  for (auto [i, a] : llvm::enumerate(plan.outAccess)) {
    types[a] = elementOf(plan.yield.getValues()[i]);
    isOutput[a] = true;
  }

  // Vector width: 16 bytes of the widest contiguous access.
  int64_t widest = 1;
  for (size_t a = 0; a < numAccesses; ++a)
    if (plan.accesses[a].strides.back() == 1)
      widest = std::max(widest, storageBytes(types[a]));
  int64_t vec = std::max<int64_t>(1, 16 / widest);
  auto fits = [&](int64_t v) {
    if (inner % v)
      return false;
    for (size_t a = 0; a < numAccesses; ++a)
      if (plan.accesses[a].strides.back() == 1 && plan.accesses[a].offset % v)
        return false;
    return true;
  };
  while (vec > 1 && !fits(vec))
    vec /= 2;

  // 32-bit indices when every offset reachable fits.
  int64_t reach = plan.total;
  for (const auto &access : plan.accesses) {
    int64_t span = access.offset;
    for (size_t d = 0; d < dims.size(); ++d)
      span += (dims[d] - 1) * std::abs(access.strides[d]);
    reach = std::max(reach, span + 1);
  }
  std::string idx = reach < (int64_t(1) << 31) - 1024 ? "int32_t" : "int64_t";

  // Kernel parameters: every access whose pointer is a block argument or
  // an output (constants are read through their own pointers too).
  std::vector<std::string> params, argsList;
  std::set<std::string> seen;
  for (size_t a = 0; a < numAccesses; ++a) {
    const std::string &p = plan.accesses[a].pointer;
    if (!seen.insert(p).second)
      continue;
    std::string t = storageType(types[a]);
    params.push_back(isOutput[a] ? t + " *__restrict__ " + p
                                 : "const " + t + " *__restrict__ " + p);
    argsList.push_back(p);
  }

  // Element j of the thread's vector: index of access a.
  auto scalarIndex = [&](unsigned a) {
    const auto &access = plan.accesses[a];
    int64_t s = access.strides.back();
    std::string i = s == 0 ? "0" : s == 1 ? "i" : "i * " + std::to_string(s);
    std::string base = dims.size() > 1 ? "b" + std::to_string(a) : "";
    if (access.offset)
      base += (base.empty() ? "" : " + ") + std::to_string(access.offset);
    return base.empty() ? i : base + " + " + i;
  };
  // Vectorized accesses read into / write from registers r<a>[j].
  std::vector<bool> vectorized(numAccesses, false);
  ElementwisePlan registers = plan;
  if (vec > 1)
    for (size_t a = 0; a < numAccesses; ++a)
      if (plan.accesses[a].strides.back() == 1) {
        vectorized[a] = true;
        registers.accesses[a].pointer = "r" + std::to_string(a);
      }
  auto index = [&](unsigned a) {
    return vectorized[a] ? std::string("j") : scalarIndex(a);
  };
  auto body = registers.scalarBody(ctx.literals, index, "      ");
  if (failed(body))
    return CudaEmit::Error;

  std::string k;
  k += "__global__ void __launch_bounds__(256) elementwise(";
  for (size_t p = 0; p < params.size(); ++p)
    k += (p ? ", " : "") + params[p];
  k += ") {\n";
  int64_t vectors = plan.total / vec;
  k += "  for (" + idx + " t = blockIdx.x * blockDim.x + threadIdx.x; t < " +
       std::to_string(vectors) + "; t += gridDim.x * blockDim.x) {\n";
  k += "    const " + idx + " e = t * " + std::to_string(vec) + ";\n";
  if (dims.size() > 1) {
    k += "    " + idx + " rest = e / " + std::to_string(inner) + ", c;\n";
    for (size_t a = 0; a < numAccesses; ++a)
      k += "    " + idx + " b" + std::to_string(a) + " = 0;\n";
    for (int64_t d = (int64_t)dims.size() - 2; d >= 0; --d) {
      k += "    c = rest % " + std::to_string(dims[d]) + "; rest /= " + std::to_string(dims[d]) +
           ";\n";
      for (size_t a = 0; a < numAccesses; ++a)
        if (plan.accesses[a].strides[d])
          k += "    b" + std::to_string(a) + " += c * " +
               std::to_string(plan.accesses[a].strides[d]) + ";\n";
    }
    k += "    (void)rest; (void)c;\n";
    k += "    const " + idx + " i0 = e % " + std::to_string(inner) + ";\n";
  } else {
    k += "    const " + idx + " i0 = e;\n";
  }
  std::string vt = std::to_string(vec);
  for (size_t a = 0; a < numAccesses; ++a) {
    if (!vectorized[a])
      continue;
    std::string t = storageType(types[a]);
    std::string r = "r" + std::to_string(a);
    std::string at = "(" + (dims.size() > 1 ? "b" + std::to_string(a) + " + " : std::string()) +
                     (plan.accesses[a].offset ? std::to_string(plan.accesses[a].offset) + " + "
                                              : std::string()) +
                     "i0)";
    k += "    " + t + " " + r + "[" + vt + "];\n";
    if (!isOutput[a])
      k += "    *(sluice_vec<" + t + ", " + vt + "> *)" + r + " = *(const sluice_vec<" + t + ", " +
           vt + "> *)(" + plan.accesses[a].pointer + " + " + at + ");\n";
  }
  k += "    #pragma unroll\n";
  k += "    for (int j = 0; j < " + vt + "; ++j) {\n";
  k += "      const " + idx + " i = i0 + j;\n      (void)i;\n";
  k += *body;
  k += "    }\n";
  for (size_t a = 0; a < numAccesses; ++a) {
    if (!vectorized[a] || !isOutput[a])
      continue;
    std::string t = storageType(types[a]);
    std::string at = "(" + (dims.size() > 1 ? "b" + std::to_string(a) + " + " : std::string()) +
                     "i0)";
    k += "    *(sluice_vec<" + t + ", " + vt + "> *)(" + plan.accesses[a].pointer + " + " + at +
         ") = *(const sluice_vec<" + t + ", " + vt + "> *)r" + std::to_string(a) + ";\n";
  }
  k += "  }\n}\n";
  *ctx.device += k;

  std::string launch = "  elementwise<<<sluice_grid(" + std::to_string(vectors) +
                       ", 256), 256, 0, stream>>>(";
  for (size_t p = 0; p < argsList.size(); ++p)
    launch += (p ? ", " : "") + argsList[p];
  launch += ");\n  SLUICE_LAUNCHED(" + ctx.kernelName() + ");\n";
  *ctx.host += launch;
  return CudaEmit::Done;
}

} // namespace sluice::codegen
