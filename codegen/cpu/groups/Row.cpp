//===- Row.cpp - cpu form F3: row ops with a prologue and an epilogue -----===//
//
// A row op (softmax / log-softmax over the last axis, layer_norm and
// rms_norm over dims [axis, rank), reduce over trailing axes) with an
// elementwise prologue computing its input and an elementwise epilogue on
// its first result. One loop over rows (OpenMP-parallel when large); per
// row:
//   1. the prologue fills a thread-local row buffer in the compute type
//      (and stores any prologue value the group yields);
//   2. a row function of sluice_gen/cpu_reduce.h (sluice_row_*) computes
//      the row's statistics (max and 1/sum, mean and 1/stddev, ...);
//   3. one pass computes the row op's value per element from the buffer,
//      applies the epilogue and stores the results through their views.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Epilogue.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"

#include "dialects/sluice/SluiceTypes.h"

using namespace mlir;

namespace sluice::codegen {

namespace {

/// rowAxisOf with its problems as op errors.
FailureOr<int64_t> rowAxis(Operation *op) {
  auto axisOr = rowAxisOf(op);
  if (auto *axis = std::get_if<int64_t>(&axisOr))
    return *axis;
  RowAxisProblem problem = std::get<RowAxisProblem>(axisOr);
  switch (problem.kind) {
  case RowAxisProblem::AxisOutOfRange:
    return op->emitOpError("cpu target: axis ")
           << problem.axis << " out of range for rank " << shapeOf(op->getOperand(0)).size();
  case RowAxisProblem::SoftmaxNotInnermost:
    return op->emitOpError("cpu target: a fused softmax must be over the last axis");
  case RowAxisProblem::ReduceAxesNotConstant:
    return op->emitOpError("cpu target: reduce axes must be constant");
  case RowAxisProblem::ReduceNotTrailing:
    return op->emitOpError("cpu target: a fused reduce must be over trailing axes");
  }
  llvm_unreachable("unknown row axis problem");
}

/// Form F3 on the cpu, decided before any source is written: the row op,
/// its axis and the accesses of its prologue (over its input) and epilogue
/// (over its result; for a reduce, one element per row). Filled in place
/// (the bodies point at the group).
struct CpuRowPlan {
  GroupOps parts;
  Operation *rowOp = nullptr;
  Value x, y;
  int64_t axis = 0, rows = 0, len = 0;
  Type inType, outType;
  std::string compute; ///< the row op's compute type
  std::optional<epilogue::Body> pro, epi;
  /// (yield index, access) of the values each side stores.
  std::vector<std::pair<unsigned, unsigned>> proStores, epiStores;

  /// The value yield operand `i` stores, before its output views.
  Value yieldedRoot(unsigned i) const {
    return stripOutputViews(KernelYieldOp(parts.yield).getValues()[i]);
  }
  Type yieldedType(unsigned i) const {
    return elementOf(KernelYieldOp(parts.yield).getValues()[i]);
  }
};

/// The row op, its axis and its element types, checked against what the
/// row templates take.
LogicalResult checkRowGroup(GroupContext &ctx, CpuRowPlan &p) {
  KernelOp kernel = ctx.kernel;
  p.parts = splitGroupOps(kernel, isRowOp);
  for (Operation *op : llvm::concat<Operation *>(p.parts.before, p.parts.after))
    if (!isElementwise(op))
      return op->emitOpError(
          "cpu target: a row group holds only views, elementwise ops and one row op");
  Operation *rowOp = p.rowOp = p.parts.anchor;
  if (!rowOp)
    return kernel.emitOpError("cpu target: no row op in a row group");
  p.x = rowOp->getOperand(0);
  p.y = rowOp->getResult(0);
  ArrayRef<int64_t> inShape = shapeOf(p.x), outShape = shapeOf(p.y);
  auto axisOr = rowAxis(rowOp);
  if (failed(axisOr))
    return failure();
  p.axis = *axisOr;
  p.rows = product(inShape.take_front(p.axis));
  p.len = product(inShape.drop_front(p.axis));
  // Prologue (epilogue) values have the row op's input (result) shape or
  // one that broadcasts to it (recomputed per element).
  auto fits = [](Operation *op, ArrayRef<int64_t> space) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    return succeeded(broadcastStridesTo(shape, contiguousStrides(shape), space));
  };
  for (Operation *op : p.parts.before)
    if (!fits(op, inShape))
      return op->emitOpError("cpu target: a row group's prologue ops must have the row op's "
                             "input shape");
  for (Operation *op : p.parts.after)
    if (!fits(op, outShape))
      return op->emitOpError("cpu target: a row group's epilogue ops must have the row op's "
                             "result shape");
  for (unsigned i = 1; i < rowOp->getNumResults(); ++i)
    if (!rowOp->getResult(i).use_empty())
      return rowOp->emitOpError("cpu target: a fused row op's statistics results are used");

  p.inType = elementOf(p.x);
  p.outType = elementOf(p.y);
  const std::string &C = p.compute = computeType(p.inType);
  if (C != "float" && C != "double" && !isa<ReduceOp>(rowOp))
    return rowOp->emitOpError("cpu target: fused row ops are float");
  if (C == "bool")
    return rowOp->emitOpError("cpu target: fused reduce of booleans");
  return success();
}

/// The leaves of both sides and the yields: each a prologue value (stored
/// while the row buffer is filled), the row op's result or an epilogue
/// value.
LogicalResult planRowAccesses(GroupContext &ctx, CpuRowPlan &p) {
  KernelOp kernel = ctx.kernel;
  Operation *rowOp = p.rowOp;
  ArrayRef<int64_t> inShape = shapeOf(p.x), outShape = shapeOf(p.y);
  epilogue::Body &pro = p.pro.emplace(ctx, inShape, p.axis);
  int64_t outSplit = isa<ReduceOp>(rowOp) ? (int64_t)outShape.size() : p.axis;
  epilogue::Body &epi = p.epi.emplace(ctx, outShape, outSplit);
  epi.prefix = "e";
  for (Operation *op : p.parts.before)
    for (Value operand : op->getOperands())
      if (failed(pro.addLeaf(operand)))
        return failure();
  if (failed(pro.addLeaf(p.x)))
    return failure();
  // Parameters of the norms (scale, bias) broadcast over the rows.
  for (Value operand : rowOp->getOperands().drop_front())
    if (isa<LayerNormOp, RmsNormOp>(rowOp) && failed(epi.addLeaf(operand)))
      return failure();
  for (Operation *op : p.parts.after)
    for (Value operand : op->getOperands())
      if (operand != p.y && failed(epi.addLeaf(operand)))
        return failure();
  for (auto [i, v] : llvm::enumerate(KernelYieldOp(p.parts.yield).getValues())) {
    Value root = stripOutputViews(v);
    RowYield side = kernel::rowYieldOf(p.parts, p.x, p.y, root);
    if (side == RowYield::Neither)
      return kernel.emitOpError("cpu target: a row group yields a value that is neither a "
                                "prologue value, the row op's result nor an epilogue value");
    if (side == RowYield::WrongShape)
      return kernel.emitOpError("cpu target: a row group yields a value of another shape than "
                                "the row op's input or result");
    bool inPro = side == RowYield::Prologue;
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return kernel.emitOpError("cpu target: result ") << i << " is not a view of its value";
    epilogue::Body &body = inPro ? pro : epi;
    (inPro ? p.proStores : p.epiStores).push_back({(unsigned)i, (unsigned)body.accesses.size()});
    if (failed(body.addAccess({ctx.output(i), 0, view->strides}, "a result")))
      return failure();
  }
  return success();
}

/// The row statistics (`stats`, a statement after the buffer is filled) and
/// the row op's value per element from buf_[j] (`y`).
void rowOpValue(const CpuRowPlan &p, std::string &stats, std::string &y) {
  const std::string &C = p.compute;
  std::string len = cInt64(p.len);
  auto param = [&](Value v) { return p.epi->lookup(v); };
  if (auto sm = dyn_cast<SoftmaxOp>(p.rowOp)) {
    if (sm.getLog()) {
      stats = "const " + C + " lse_ = sluice_row_logsumexp(buf_, " + len + ");";
      y = "buf_[j] - lse_";
    } else {
      stats = "const " + C + " inv_ = sluice_row_softmax_exp(buf_, " + len + ");";
      y = "buf_[j] * inv_";
    }
  } else if (auto ln = dyn_cast<LayerNormOp>(p.rowOp)) {
    stats = C + " mean_, inv_; sluice_row_moments(buf_, " + len + ", (" + C + ")" +
            floatDigits(ln.getEpsilon()) + ", &mean_, &inv_);";
    y = "(buf_[j] - mean_) * inv_ * (" + C + ")" + param(ln.getScale());
    if (ln.getBias())
      y += " + (" + C + ")" + param(ln.getBias());
  } else if (auto rn = dyn_cast<RmsNormOp>(p.rowOp)) {
    stats = "const " + C + " inv_ = sluice_row_rms_inv(buf_, " + len + ", (" + C + ")" +
            floatDigits(rn.getEpsilon()) + ");";
    y = "buf_[j] * inv_ * (" + C + ")" + param(rn.getScale());
  } else {
    std::string outC = computeType(p.outType);
    stats = "const " + outC + " red_ = (" + outC + ")sluice_row_reduce<" +
            decimal((int)cast<ReduceOp>(p.rowOp).getKind()) + ">(buf_, " + len + ");";
    y = "red_";
  }
}

/// One loop over rows: the prologue fills the row buffer, the statistics,
/// then the row op's value, the epilogue and the stores per element.
LogicalResult printRowGroup(GroupContext &ctx, CpuRowPlan &p) {
  epilogue::Body &pro = *p.pro, &epi = *p.epi;
  const std::string &C = p.compute;
  pro.bindLeaves();
  epi.bindLeaves();
  int locals = 0;
  CodeWriter proOps(3), epiOps(3);
  if (failed(pro.emitOps(proOps, p.parts.before, locals)))
    return failure();
  std::string xExpr = pro.lookup(p.x);
  if (xExpr.empty())
    return p.rowOp->emitOpError("cpu target: the row op's input has no value in its group");
  std::string stats, yExpr;
  rowOpValue(p, stats, yExpr);
  epi.expr[p.y] = "y_";
  if (failed(epi.emitOps(epiOps, p.parts.after, locals)))
    return failure();

  ctx.include("sluice_gen/cpu_reduce.h");
  CodeWriter w(1);
  // Parallel only above SLUICE_ROW_PARALLEL_MIN elements (cpu_reduce.h).
  w.line("#pragma omp parallel for num_threads(args->num_threads) schedule(static) if ({0} >= "
         "SLUICE_ROW_PARALLEL_MIN)",
         cInt64(p.rows * p.len));
  {
    auto rows = w.block("for (int64_t row = 0; row < {0}; ++row)", cInt64(p.rows));
    w.line("{0} *buf_ = sluice_row_buffer<{0}>({1});", C, cInt64(p.len));
    pro.rowBases(w, "row");
    w.line("#pragma omp simd");
    {
      auto fill = w.block("for (int64_t j = 0; j < {0}; ++j)", cInt64(p.len));
      w.raw(proOps.str());
      w.line("buf_[j] = ({0}){1};", C, xExpr);
      for (auto [i, a] : p.proStores)
        w.line("{0}[{1}] = {2};", ctx.output(i), pro.index(a),
               storeExpr(p.yieldedType(i), pro.lookup(p.yieldedRoot(i))));
    }
    w.line("{0}", stats);
    epi.rowBases(w, "row");
    w.line("#pragma omp simd");
    {
      int64_t epiLen = isa<ReduceOp>(p.rowOp) ? 1 : p.len;
      auto apply = w.block("for (int64_t j = 0; j < {0}; ++j)", cInt64(epiLen));
      w.line("const {0} y_ = {1};", computeType(p.outType), yExpr);
      w.raw(epiOps.str());
      for (auto [i, a] : p.epiStores)
        w.line("{0}[{1}] = {2};", ctx.output(i), epi.index(a),
               storeExpr(p.yieldedType(i), epi.lookup(p.yieldedRoot(i))));
    }
  }
  *ctx.body += w.str();
  return success();
}

} // namespace

LogicalResult emitRowGroup(GroupContext &ctx) {
  CpuRowPlan plan;
  if (failed(checkRowGroup(ctx, plan)) || failed(planRowAccesses(ctx, plan)))
    return failure();
  return printRowGroup(ctx, plan);
}

} // namespace sluice::codegen
