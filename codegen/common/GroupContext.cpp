//===- GroupContext.cpp - what a kernel-group emitter sees ----------------===//

#include "codegen/common/GroupContext.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/common/ScalarEmitter.h"

using namespace mlir;

namespace sluice::codegen {

FailureOr<std::string> GroupContext::leafPointer(const StridedView &view) const {
  auto it = pointers.find(view.base);
  if (it == pointers.end())
    return KernelOp(kernel).emitOpError("cpu target: a view in this group does not start at an input or constant");
  if (view.offset == 0)
    return it->second;
  return "(" + it->second + " + " + std::to_string(view.offset) + ")";
}

FailureOr<ElementwisePlan>
planElementwiseGroup(KernelOp kernel, const llvm::DenseMap<Value, std::string> &pointers,
                     const llvm::DenseMap<Value, std::string> &literals,
                     function_ref<std::string(unsigned)> outputName) {
  ElementwisePlan plan;
  Block &block = kernel.getBody().front();
  auto yield = cast<KernelYieldOp>(block.getTerminator());
  plan.yield = yield;
  // The iteration space: the roots' shape.
  for (Value v : yield.getValues())
    plan.roots.push_back(stripOutputViews(v));
  ArrayRef<int64_t> space = shapeOf(plan.roots.front());
  for (Value r : plan.roots)
    if (shapeOf(r) != space)
      return kernel.emitOpError("an elementwise group's results differ in shape");
  int64_t rank = space.size();
  plan.total = product(space);

  // Accesses: leaves (block args, constant arrays, through views) and
  // outputs, each with strides over the iteration space.
  std::vector<ElementwisePlan::Access> accesses;
  for (Operation &op : block.without_terminator())
    if (!isa<ConstantOp>(op) && !isViewOp(&op))
      plan.computeOps.push_back(&op);
  auto addLeaf = [&](Value operand) -> LogicalResult {
    if (plan.leafAccess.count(operand) || literals.count(operand))
      return success();
    if (Operation *def = operand.getDefiningOp(); def && !isa<ConstantOp>(def) && !isViewOp(def))
      return success(); // computed in the group
    auto view = resolveView(operand);
    if (failed(view))
      return failure();
    if (literals.count(view->base))
      return success(); // a view of a splat reads as the literal
    if (!pointers.count(view->base))
      return kernel.emitOpError("a view of a computed value inside an elementwise group");
    auto strides = broadcastStridesTo(shapeOf(operand), view->strides, space);
    if (failed(strides))
      return kernel.emitOpError("an operand does not broadcast to the group's shape");
    plan.leafAccess[operand] = accesses.size();
    accesses.push_back({pointers.lookup(view->base), view->offset, *strides});
    return success();
  };
  for (Operation *op : plan.computeOps)
    for (Value operand : op->getOperands())
      if (failed(addLeaf(operand)))
        return failure();
  // Results that are leaves themselves (a group that only moves data).
  for (Value r : plan.roots)
    if (failed(addLeaf(r)))
      return failure();
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    auto view = resolveOutputView(plan.roots[i], v);
    if (failed(view))
      return kernel.emitOpError("result ") << i << " is not a view of the group's space";
    plan.outAccess.push_back(accesses.size());
    accesses.push_back({outputName(i), 0, view->strides});
  }

  // Collapse: drop unit dims, merge neighbours contiguous for every access.
  std::vector<std::vector<int64_t>> st(accesses.size());
  for (int64_t d = 0; d < rank; ++d) {
    if (space[d] == 1)
      continue;
    bool merge = !plan.dims.empty();
    for (size_t a = 0; a < accesses.size() && merge; ++a)
      merge = st[a].back() == accesses[a].strides[d] * space[d];
    if (merge) {
      plan.dims.back() *= space[d];
      for (size_t a = 0; a < accesses.size(); ++a)
        st[a].back() = accesses[a].strides[d];
    } else {
      plan.dims.push_back(space[d]);
      for (size_t a = 0; a < accesses.size(); ++a)
        st[a].push_back(accesses[a].strides[d]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (auto &s : st)
      s.push_back(0);
  }
  for (size_t a = 0; a < accesses.size(); ++a)
    accesses[a].strides = std::move(st[a]);
  plan.accesses = std::move(accesses);
  return plan;
}

FailureOr<std::string>
ElementwisePlan::scalarBody(const llvm::DenseMap<Value, std::string> &literals,
                            function_ref<std::string(unsigned)> index,
                            const std::string &indent) const {
  std::string body;
  llvm::DenseMap<Value, std::string> expr;
  for (auto &[value, a] : leafAccess)
    expr[value] = loadExpr(elementOf(value), accesses[a].pointer + "[" + index(a) + "]");
  for (auto &[v, lit] : literals)
    expr[v] = lit;
  // A view of a splat constant reads as the literal.
  auto lookup = [&](Value v) -> std::string {
    if (expr.count(v))
      return expr.lookup(v);
    auto view = resolveView(v);
    if (succeeded(view) && literals.count(view->base))
      return literals.lookup(view->base);
    return "";
  };
  int locals = 0;
  for (Operation *op : computeOps) {
    std::vector<std::string> operands;
    for (Value operand : op->getOperands())
      operands.push_back(lookup(operand));
    auto e = emitScalar(op, operands);
    if (failed(e))
      return failure();
    std::string local = "v" + std::to_string(locals++);
    body += indent + "const " + computeType(elementOf(op->getResult(0))) + " " + local +
            " = " + *e + ";\n";
    expr[op->getResult(0)] = local;
  }
  for (auto [i, value] : llvm::enumerate(KernelYieldOp(yield).getValues()))
    body += indent + accesses[outAccess[i]].pointer + "[" + index(outAccess[i]) +
            "] = " + storeExpr(elementOf(value), lookup(roots[i])) + ";\n";
  return body;
}

} // namespace sluice::codegen
