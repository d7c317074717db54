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

#include "codegen/cpu/groups/Epilogue.h"

#include "dialects/sluice/SluiceTypes.h"

using namespace mlir;

namespace sluice::codegen {

bool isRowOp(Operation *op) { return isa<SoftmaxOp, LayerNormOp, RmsNormOp, ReduceOp>(op); }

std::variant<int64_t, RowAxisProblem> rowAxisOf(Operation *op) {
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  int64_t rank = shape.size();
  auto normalize = [&](int64_t axis) -> std::variant<int64_t, RowAxisProblem> {
    if (axis < -rank || axis >= rank)
      return RowAxisProblem{RowAxisProblem::AxisOutOfRange, axis};
    return axis < 0 ? axis + rank : axis;
  };
  if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    auto axisOr = normalize(sm.getAxis());
    auto *axis = std::get_if<int64_t>(&axisOr);
    if (!axis)
      return axisOr;
    for (int64_t d = *axis + 1; d < rank; ++d)
      if (shape[d] != 1)
        return RowAxisProblem{RowAxisProblem::SoftmaxNotInnermost, *axis};
    return *axis;
  }
  if (auto ln = dyn_cast<LayerNormOp>(op))
    return normalize(ln.getAxis());
  if (auto rn = dyn_cast<RmsNormOp>(op))
    return normalize(rn.getAxis());
  auto reduce = cast<ReduceOp>(op);
  std::vector<bool> reduced(rank, false);
  if (reduce.getAxes()) {
    auto values = getConstantIntValues(reduce.getAxes());
    if (!values)
      return RowAxisProblem{RowAxisProblem::ReduceAxesNotConstant};
    for (int64_t axis : *values) {
      auto axisOr = normalize(axis);
      auto *a = std::get_if<int64_t>(&axisOr);
      if (!a)
        return axisOr;
      reduced[*a] = true;
    }
    if (values->empty())
      reduced.assign(rank, !reduce.getNoopWithEmptyAxes());
  } else {
    reduced.assign(rank, !reduce.getNoopWithEmptyAxes());
  }
  // Trailing: from some axis on, every dim of size > 1 is reduced, none before.
  int64_t first = rank;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (reduced[d] || shape[d] == 1)
      first = d;
    else
      break;
  }
  for (int64_t d = 0; d < first; ++d)
    if (reduced[d] && shape[d] != 1)
      return RowAxisProblem{RowAxisProblem::ReduceNotTrailing, d};
  return first;
}

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

} // namespace

LogicalResult emitRowGroup(GroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  GroupOps parts = splitGroupOps(kernel, isRowOp);
  KernelYieldOp yield = parts.yield;
  for (Operation *op : llvm::concat<Operation *>(parts.before, parts.after))
    if (!isElementwise(op))
      return op->emitOpError(
          "cpu target: a row group holds only views, elementwise ops and one row op");
  Operation *rowOp = parts.anchor;
  if (!rowOp)
    return kernel.emitOpError("cpu target: no row op in a row group");
  SmallVector<Operation *> &prologueOps = parts.before, &epilogueOps = parts.after;
  Value x = rowOp->getOperand(0), y = rowOp->getResult(0);
  ArrayRef<int64_t> inShape = shapeOf(x), outShape = shapeOf(y);
  auto axisOr = rowAxis(rowOp);
  if (failed(axisOr))
    return failure();
  int64_t axis = *axisOr;
  int64_t rows = product(inShape.take_front(axis)), len = product(inShape.drop_front(axis));
  // Prologue (epilogue) values have the row op's input (result) shape or
  // one that broadcasts to it (recomputed per element).
  auto fits = [](Operation *op, ArrayRef<int64_t> space) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    return succeeded(broadcastStridesTo(shape, contiguousStrides(shape), space));
  };
  for (Operation *op : prologueOps)
    if (!fits(op, inShape))
      return op->emitOpError("cpu target: a row group's prologue ops must have the row op's "
                             "input shape");
  for (Operation *op : epilogueOps)
    if (!fits(op, outShape))
      return op->emitOpError("cpu target: a row group's epilogue ops must have the row op's "
                             "result shape");
  for (unsigned i = 1; i < rowOp->getNumResults(); ++i)
    if (!rowOp->getResult(i).use_empty())
      return rowOp->emitOpError("cpu target: a fused row op's statistics results are used");

  Type inT = elementOf(x), outT = elementOf(y);
  std::string C = computeType(inT);
  if (C != "float" && C != "double" && !isa<ReduceOp>(rowOp))
    return rowOp->emitOpError("cpu target: fused row ops are float");
  if (C == "bool")
    return rowOp->emitOpError("cpu target: fused reduce of booleans");

  // Prologue over the input's shape; epilogue over the result's shape (for
  // a reduce: one element per row).
  epilogue::Body pro(ctx, inShape, axis);
  int64_t outSplit = isa<ReduceOp>(rowOp) ? (int64_t)outShape.size() : axis;
  epilogue::Body epi(ctx, outShape, outSplit);
  epi.prefix = "e";
  for (Operation *op : prologueOps)
    for (Value operand : op->getOperands())
      if (failed(pro.addLeaf(operand)))
        return failure();
  if (failed(pro.addLeaf(x)))
    return failure();
  // Parameters of the norms (scale, bias) broadcast over the rows.
  for (Value operand : rowOp->getOperands().drop_front())
    if (isa<LayerNormOp, RmsNormOp>(rowOp) && failed(epi.addLeaf(operand)))
      return failure();
  for (Operation *op : epilogueOps)
    for (Value operand : op->getOperands())
      if (operand != y && failed(epi.addLeaf(operand)))
        return failure();
  // Results: each yield is a prologue value (stored while the buffer is
  // filled), the row op's result or an epilogue value.
  std::vector<std::pair<unsigned, unsigned>> proStores, epiStores; // (yield, access)
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    Value root = stripOutputViews(v);
    Operation *def = root.getDefiningOp();
    bool inPro = def && llvm::is_contained(prologueOps, def);
    bool inEpi = root == y || (def && llvm::is_contained(epilogueOps, def));
    if (!inPro && !inEpi)
      return kernel.emitOpError("cpu target: a row group yields a value that is neither a "
                                "prologue value, the row op's result nor an epilogue value");
    if (shapeOf(root) != (inPro ? inShape : outShape))
      return kernel.emitOpError("cpu target: a row group yields a value of another shape than "
                                "the row op's input or result");
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return kernel.emitOpError("cpu target: result ") << i << " is not a view of its value";
    epilogue::Body &body = inPro ? pro : epi;
    (inPro ? proStores : epiStores).push_back({(unsigned)i, (unsigned)body.accesses.size()});
    if (failed(body.addAccess({ctx.output(i), 0, view->strides}, "a result")))
      return failure();
  }
  pro.bindLeaves();
  epi.bindLeaves();
  int locals = 0;
  CodeWriter proWriter(3);
  if (failed(pro.emitOps(proWriter, prologueOps, locals)))
    return failure();
  const std::string *proCode = &proWriter.str();
  std::string xExpr = pro.lookup(x);
  if (xExpr.empty())
    return rowOp->emitOpError("cpu target: the row op's input has no value in its group");

  // The row op's value per element, from buf_[j] and the row statistics.
  std::string stats, yExpr;
  auto param = [&](Value v) { return epi.lookup(v); };
  if (auto sm = dyn_cast<SoftmaxOp>(rowOp)) {
    if (sm.getLog()) {
      stats = "const " + C + " lse_ = sluice_row_logsumexp(buf_, " + cInt(len) + ");";
      yExpr = "buf_[j] - lse_";
    } else {
      stats = "const " + C + " inv_ = sluice_row_softmax_exp(buf_, " + cInt(len) + ");";
      yExpr = "buf_[j] * inv_";
    }
  } else if (auto ln = dyn_cast<LayerNormOp>(rowOp)) {
    stats = C + " mean_, inv_; sluice_row_moments(buf_, " + cInt(len) + ", (" + C + ")" +
            floatDigits(ln.getEpsilon()) + ", &mean_, &inv_);";
    yExpr = "(buf_[j] - mean_) * inv_ * (" + C + ")" + param(ln.getScale());
    if (ln.getBias())
      yExpr += " + (" + C + ")" + param(ln.getBias());
  } else if (auto rn = dyn_cast<RmsNormOp>(rowOp)) {
    stats = "const " + C + " inv_ = sluice_row_rms_inv(buf_, " + cInt(len) + ", (" + C + ")" +
            floatDigits(rn.getEpsilon()) + ");";
    yExpr = "buf_[j] * inv_ * (" + C + ")" + param(rn.getScale());
  } else {
    auto reduce = cast<ReduceOp>(rowOp);
    stats = "const " + computeType(outT) + " red_ = (" + computeType(outT) + ")sluice_row_reduce<" +
            std::to_string((int)reduce.getKind()) + ">(buf_, " + cInt(len) + ");";
    yExpr = "red_";
  }
  epi.expr[y] = "y_";
  CodeWriter epiWriter(3);
  if (failed(epi.emitOps(epiWriter, epilogueOps, locals)))
    return failure();
  const std::string *epiCode = &epiWriter.str();

  ctx.include("sluice_gen/cpu_reduce.h");
  std::string &s = *ctx.body;
  s += "  #pragma omp parallel for num_threads(args->num_threads) schedule(static) if (" +
       cInt(rows * len) + " > 16384)\n";
  s += "  for (int64_t row = 0; row < " + cInt(rows) + "; ++row) {\n";
  s += "    " + C + " *buf_ = sluice_row_buffer<" + C + ">(" + cInt(len) + ");\n";
  CodeWriter proBases(2);
  pro.rowBases(proBases, "row");
  s += proBases.str();
  s += "    #pragma omp simd\n";
  s += "    for (int64_t j = 0; j < " + cInt(len) + "; ++j) {\n";
  s += *proCode;
  s += "      buf_[j] = (" + C + ")" + xExpr + ";\n";
  for (auto [i, a] : proStores)
    s += "      " + ctx.output(i) + "[" + pro.index(a) + "] = " +
         storeExpr(elementOf(yield.getValues()[i]), pro.lookup(stripOutputViews(yield.getValues()[i]))) +
         ";\n";
  s += "    }\n";
  s += "    " + stats + "\n";
  CodeWriter epiBases(2);
  epi.rowBases(epiBases, "row");
  s += epiBases.str();
  int64_t epiLen = isa<ReduceOp>(rowOp) ? 1 : len;
  s += "    #pragma omp simd\n";
  s += "    for (int64_t j = 0; j < " + cInt(epiLen) + "; ++j) {\n";
  s += "      const " + computeType(outT) + " y_ = " + yExpr + ";\n";
  s += *epiCode;
  for (auto [i, a] : epiStores)
    s += "      " + ctx.output(i) + "[" + epi.index(a) + "] = " +
         storeExpr(elementOf(yield.getValues()[i]), epi.lookup(stripOutputViews(yield.getValues()[i]))) +
         ";\n";
  s += "    }\n  }\n";
  return success();
}

} // namespace sluice::codegen
