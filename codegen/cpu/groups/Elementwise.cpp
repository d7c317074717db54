//===- Elementwise.cpp - cpu form F1: elementwise groups ------------------===//
//
// One loop nest over the iteration space (the shape of the values the group
// yields, before their trailing views); every leaf is read through its
// strided view broadcast to that space, every result written through its
// output view. Dims are collapsed where all accesses are contiguous across
// them, so the innermost loop is long and unit-stride (it vectorizes).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace sluice::codegen {

LogicalResult emitElementwiseGroup(GroupContext &ctx) {
  auto planned = planElementwiseGroup(ctx.kernel, ctx.pointers, ctx.literals,
                                      [&](unsigned i) { return ctx.output(i); });
  if (failed(planned))
    return failure();
  const ElementwisePlan &plan = *planned;
  const std::vector<int64_t> &dims = plan.dims;
  const auto &accesses = plan.accesses;
  int64_t total = plan.total;
  int64_t inner = dims.back();
  int64_t outer = total / std::max<int64_t>(inner, 1);
  auto index = [&](unsigned a) {
    int64_t s = accesses[a].strides.back();
    std::string i = s == 0 ? "0" : s == 1 ? "i" : "i * " + decimal(s);
    std::string base = dims.size() > 1 ? "b" + decimal(a) : "";
    if (accesses[a].offset)
      base += (base.empty() ? "" : " + ") + decimal(accesses[a].offset);
    return base.empty() ? i : base + " + " + i;
  };

  CodeWriter w(1);
  const int64_t kParallelThreshold = 32768;
  if (dims.size() == 1) {
    // One flat loop: `parallel for simd` (or `simd` alone) makes GCC
    // vectorize it even at -O2, whose cost model refuses loops that need an
    // epilogue.
    w.line(total >= kParallelThreshold
               ? "#pragma omp parallel for simd num_threads(args->num_threads) schedule(static)"
               : "#pragma omp simd");
    auto loop = w.block("for (int64_t i = 0; i < {0}; ++i)", inner);
    auto body = plan.scalarBody(ctx.literals, index, w.indentation());
    if (failed(body))
      return failure();
    w.raw(*body);
  } else {
    if (total >= kParallelThreshold)
      w.line("#pragma omp parallel for num_threads(args->num_threads) schedule(static)");
    auto rows = w.block("for (int64_t o = 0; o < {0}; ++o)", outer);
    w.line("int64_t rest = o, c;");
    for (size_t a = 0; a < accesses.size(); ++a)
      w.line("int64_t b{0} = 0;", a);
    for (int64_t d = (int64_t)dims.size() - 2; d >= 0; --d) {
      w.line("c = rest % {0}; rest /= {0};", dims[d]);
      for (size_t a = 0; a < accesses.size(); ++a)
        if (accesses[a].strides[d])
          w.line("b{0} += c * {1};", a, accesses[a].strides[d]);
    }
    w.line("(void)rest; (void)c;");
    w.line("#pragma omp simd");
    auto loop = w.block("for (int64_t i = 0; i < {0}; ++i)", inner);
    auto body = plan.scalarBody(ctx.literals, index, w.indentation());
    if (failed(body))
      return failure();
    w.raw(*body);
  }
  *ctx.body += w.str();
  return success();
}

} // namespace sluice::codegen
