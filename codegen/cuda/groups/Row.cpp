//===- Row.cpp - cuda form F3: row ops with a prologue and an epilogue ----===//
//
// The cpu target's row groups (codegen/cpu/groups/Row.cpp) on the device: a
// row op (softmax / log-softmax over the last axis, layer_norm and rms_norm
// over dims [axis, rank), reduce over trailing axes) with the elementwise
// prologue computing its input and the epilogue on its first result, both
// spelled by the shared scalar emitter through the cpu target's
// epilogue::Body (per-row bases, one strided run per access).
//
// The kernel is sluice_row_run / sluice_row_reduce_run of
// sluice_gen/cuda_reduce.h around two generated lambdas: load_ (prologue of
// V consecutive elements, stores of yielded prologue values) and store_
// (scale/bias, epilogue, stores). A team of TEAM threads owns a row: 4-32
// lanes of a warp for short rows, a warp for medium ones, a block of
// 64-1024 threads for long ones. Rows up to PER vectors per lane stay in
// registers (one pass over memory); longer rows stream twice. Accesses
// contiguous along the row and aligned move as one 16-byte sluice_vec.
//
// Whatever this cannot do is left to the host (CudaEmit::Unsupported with
// the reason), never emitted wrong: the cpu emitter then runs the group.
//
// Two steps: planning (RowPlan: the row, its accesses, the vector width and
// the team; no source text) and printing (the expressions of the prologue
// and epilogue, the kernel, its launch).
//
//===----------------------------------------------------------------------===//

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/Epilogue.h"
#include "codegen/cuda/CudaGroups.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

using namespace mlir;

namespace sluice::codegen {

int64_t rowVectorWidth(int64_t len, int64_t widestBytes) {
  int64_t vector = std::max<int64_t>(1, 16 / widestBytes);
  while (vector > 1 && len % vector)
    vector /= 2;
  return vector;
}

RowLaunch planRowLaunch(int64_t vectors, int64_t vector, bool isReduce, bool isDouble) {
  RowLaunch launch;
  int64_t &team = launch.team;
  if (vectors <= 128)
    team = std::clamp<int64_t>(llvm::PowerOf2Ceil((vectors + 3) / 4), 4, 32);
  else if (vectors <= 512)
    team = 32;
  else
    team = std::clamp<int64_t>(llvm::PowerOf2Ceil((vectors + 7) / 8), 64, 1024);
  // Registers a lane may give the row: 64 values (32 at 1024 threads, whose
  // launch bounds leave 64 registers a thread); halved for f64. A team
  // widens until the row fits, up to a block of 1024.
  auto budget = [&](int64_t t) { return (t >= 1024 ? 32 : 64) / (isDouble ? 2 : 1); };
  auto perLane = [&](int64_t t) { return (vectors + t - 1) / t; };
  if (!isReduce)
    while (team < 1024 && perLane(team) * vector > budget(team))
      team *= 2;
  launch.perLane = perLane(team);
  if (isReduce || launch.perLane * vector > budget(team))
    launch.perLane = 0;
  launch.block = std::max<int64_t>(team, 128);
  launch.rowsPerBlock = launch.block / team;
  return launch;
}

namespace {

/// rowAxisOf with its problems as the reason the group runs on the host.
FailureOr<int64_t> rowAxis(Operation *op, std::string &why) {
  auto axisOr = rowAxisOf(op);
  if (auto *axis = std::get_if<int64_t>(&axisOr))
    return *axis;
  RowAxisProblem problem = std::get<RowAxisProblem>(axisOr);
  std::string axis = std::to_string(problem.axis);
  switch (problem.kind) {
  case RowAxisProblem::AxisOutOfRange:
    why = "axis " + axis + " out of range";
    break;
  case RowAxisProblem::SoftmaxNotInnermost:
    why = "softmax over axis " + axis + ", not the innermost (its rows are not contiguous)";
    break;
  case RowAxisProblem::ReduceAxesNotConstant:
    why = "reduce axes are not constant";
    break;
  case RowAxisProblem::ReduceNotTrailing:
    why = "reduce over axis " + axis +
          " followed by kept axes (not innermost, the reduced elements are not contiguous)";
    break;
  }
  return failure();
}

std::string vecType(const std::string &t, int64_t v) {
  return "sluice_vec<" + t + ", " + decimal(v) + ">";
}

/// The reason a group goes to the host, with the diagnostic the shared
/// epilogue code emitted (if any) appended.
using HostReason = llvm::function_ref<CudaEmit(const std::string &)>;

/// (yield index, access): the accesses a side stores, and from which
/// yield; for layer_norm's statistics (result number, access).
using Stores = std::vector<std::pair<unsigned, unsigned>>;

/// One side of the row op: the prologue over its input (the kernel's
/// load_), the epilogue over its result (store_) or layer_norm's
/// statistics (stats_, one value per row).
struct RowSide {
  std::optional<epilogue::Body> body;
  /// Storage type of each access (leaves: their values'; stores: the
  /// yielded values').
  std::vector<Type> types;
  Stores stores;

  bool isStored(unsigned a) const {
    return llvm::any_of(stores, [&](const auto &store) { return store.second == a; });
  }
  bool isLeaf(unsigned a) const {
    return llvm::any_of(body->leafAccess, [&](const auto &leaf) { return leaf.second == a; });
  }
};

/// Form F3 on the device, decided before any source is written: the row,
/// the accesses of both sides, the vector width and the team. Filled in
/// place (the sides' bodies point at `group` and `statShape`).
struct RowPlan {
  /// The group as the shared epilogue code (epilogue::Body) sees it.
  GroupContext group;
  std::string unusedBody, unusedPrologue;
  GroupOps parts;
  Operation *rowOp = nullptr;
  Value x, y;
  bool isReduce = false;
  int64_t axis = 0, rows = 0, len = 0;
  /// The compute type of the row op's input and result (float, double,
  /// int64_t).
  std::string compute;
  Type inType, outType;
  SmallVector<int64_t> statShape;
  RowSide pro, epi, stats;
  int64_t vector = 1;
  RowLaunch launch;

  /// The value yield operand `i` stores, before its output views.
  Value yieldedRoot(unsigned i) const {
    return stripOutputViews(KernelYieldOp(parts.yield).getValues()[i]);
  }

  /// Whether access `a` of `side` moves as one sluice_vec: contiguous along
  /// the row and every base a multiple of the vector width.
  bool vectorized(const RowSide &side, unsigned a) const {
    const epilogue::Body &body = *side.body;
    if (vector == 1 || body.inner[a] != 1 || body.accesses[a].offset % vector)
      return false;
    for (int64_t d = 0; d < body.split; ++d)
      if (body.space[d] != 1 && body.accesses[a].strides[d] % vector)
        return false;
    return true;
  }
};

//===----------------------------------------------------------------------===//
// Plan
//===----------------------------------------------------------------------===//

/// The checks that pick the row op and its axis: Done with plan.rows == 0
/// when there is nothing to compute, Unsupported with the reason.
CudaEmit checkRowGroup(CudaGroupContext &ctx, RowPlan &plan) {
  KernelOp kernel = ctx.kernel;
  plan.parts = splitGroupOps(kernel, isRowOp);
  Operation *rowOp = plan.rowOp = plan.parts.anchor;
  if (!rowOp)
    return ctx.unsupported("no row op in the group");
  for (Operation *op : llvm::concat<Operation *>(plan.parts.before, plan.parts.after))
    if (!isElementwise(op))
      return ctx.unsupported("a row group holds only views, elementwise ops and one row op (" +
                             op->getName().getStringRef().str() + " is neither)");
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    if (auto t = dyn_cast<RankedTensorType>(arg.getType()); !t || !t.hasStaticShape())
      return ctx.unsupported("dynamic shapes (group input " + std::to_string(arg.getArgNumber()) +
                             ")");
  for (Operation &inner : kernel.getBody().front())
    for (Value v : inner.getResults())
      if (auto t = dyn_cast<RankedTensorType>(v.getType()); !t || !t.hasStaticShape())
        return ctx.unsupported("dynamic shapes (" + inner.getName().getStringRef().str() + ")");
  plan.x = rowOp->getOperand(0);
  plan.y = rowOp->getResult(0);
  ArrayRef<int64_t> inShape = shapeOf(plan.x), outShape = shapeOf(plan.y);
  std::string why;
  auto axisOr = rowAxis(rowOp, why);
  if (failed(axisOr))
    return ctx.unsupported(why);
  plan.axis = *axisOr;
  plan.rows = product(inShape.take_front(plan.axis));
  plan.len = product(inShape.drop_front(plan.axis));
  if (plan.rows == 0)
    return CudaEmit::Done; // nothing to compute
  if (plan.len == 0)
    return ctx.unsupported("empty rows");
  auto fits = [](Operation *op, ArrayRef<int64_t> space) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    return succeeded(broadcastStridesTo(shape, contiguousStrides(shape), space));
  };
  for (Operation *op : plan.parts.before)
    if (!fits(op, inShape))
      return ctx.unsupported("a prologue op (" + op->getName().getStringRef().str() +
                             ") without the row op's input shape");
  for (Operation *op : plan.parts.after)
    if (!fits(op, outShape))
      return ctx.unsupported("an epilogue op (" + op->getName().getStringRef().str() +
                             ") without the row op's result shape");
  plan.isReduce = isa<ReduceOp>(rowOp);
  // layer_norm's statistics: stored when yielded, nothing else may use them.
  for (unsigned i = 1; i < rowOp->getNumResults(); ++i)
    for (Operation *user : rowOp->getResult(i).getUsers())
      if (!isa<KernelYieldOp>(user) && !isViewOp(user))
        return ctx.unsupported("layer_norm's statistics feed " +
                               user->getName().getStringRef().str() + " in the group");

  plan.inType = elementOf(plan.x);
  plan.outType = elementOf(plan.y);
  const std::string &C = plan.compute = computeType(plan.inType);
  if (!plan.isReduce && C != "float" && C != "double")
    return ctx.unsupported("row op on " + C + " elements");
  if (C != "float" && C != "double" && C != "int64_t")
    return ctx.unsupported("reduce of " + C + " elements");
  if (computeType(plan.outType) != C)
    return ctx.unsupported("a row op whose result type computes in another type than its input");
  return CudaEmit::Done;
}

/// The accesses of both sides (leaves, then stores; layer_norm's
/// statistics apart) and their storage types.
CudaEmit planRowAccesses(CudaGroupContext &ctx, RowPlan &plan, HostReason failedWith) {
  GroupContext &g = plan.group;
  g.kernel = ctx.kernel;
  g.name = ctx.name;
  g.body = &plan.unusedBody;
  g.prologue = &plan.unusedPrologue;
  g.headers = ctx.headers;
  g.pointers = ctx.pointers;
  g.literals = ctx.literals;

  Operation *rowOp = plan.rowOp;
  ArrayRef<int64_t> inShape = shapeOf(plan.x), outShape = shapeOf(plan.y);
  epilogue::Body &pro = plan.pro.body.emplace(g, inShape, plan.axis);
  int64_t outSplit = plan.isReduce ? (int64_t)outShape.size() : plan.axis;
  epilogue::Body &epi = plan.epi.body.emplace(g, outShape, outSplit);
  epi.prefix = "e";
  for (Operation *op : plan.parts.before)
    for (Value operand : op->getOperands())
      if (failed(pro.addLeaf(operand)))
        return failedWith("prologue operand");
  if (failed(pro.addLeaf(plan.x)))
    return failedWith("row op input");
  for (Value operand : rowOp->getOperands().drop_front())
    if (isa<LayerNormOp, RmsNormOp>(rowOp) && failed(epi.addLeaf(operand)))
      return failedWith("scale or bias");
  for (Operation *op : plan.parts.after)
    for (Value operand : op->getOperands())
      if (operand != plan.y && failed(epi.addLeaf(operand)))
        return failedWith("epilogue operand");

  // Results: prologue values, the row op's result / epilogue values, or
  // layer_norm's mean and inv_std_dev (one per row).
  plan.statShape.assign(inShape.begin(), inShape.end());
  for (int64_t d = plan.axis; d < (int64_t)plan.statShape.size(); ++d)
    plan.statShape[d] = 1;
  epilogue::Body &st = plan.stats.body.emplace(g, plan.statShape, (int64_t)plan.statShape.size());
  st.prefix = "s";
  KernelYieldOp yield = plan.parts.yield;
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    Value root = stripOutputViews(v);
    Operation *def = root.getDefiningOp();
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return failedWith("result " + std::to_string(i) + " is not a view of its value");
    if (def == rowOp && root != plan.y) {
      unsigned r = cast<OpResult>(root).getResultNumber();
      if (shapeOf(root) != ArrayRef<int64_t>(plan.statShape))
        return ctx.unsupported("layer_norm statistics of an unexpected shape");
      plan.stats.stores.push_back({r, (unsigned)st.accesses.size()});
      if (failed(st.addAccess({ctx.output(i), 0, view->strides}, "a statistics result")))
        return failedWith("statistics result");
      continue;
    }
    RowYield where = kernel::rowYieldOf(plan.parts, plan.x, plan.y, root);
    if (where == RowYield::Neither)
      return ctx.unsupported("a yielded value that is neither a prologue value, the row op's "
                             "result nor an epilogue value");
    if (where == RowYield::WrongShape)
      return ctx.unsupported("a yielded value of another shape than the row op's input or "
                             "result");
    bool inPro = where == RowYield::Prologue;
    RowSide &side = inPro ? plan.pro : plan.epi;
    side.stores.push_back({(unsigned)i, (unsigned)side.body->accesses.size()});
    if (failed(side.body->addAccess({ctx.output(i), 0, view->strides}, "a result")))
      return failedWith("result");
  }

  for (RowSide *side : {&plan.pro, &plan.epi}) {
    side->types.assign(side->body->accesses.size(), Type());
    for (auto &[value, a] : side->body->leafAccess)
      side->types[a] = elementOf(value);
    for (auto [i, a] : side->stores)
      side->types[a] = elementOf(yield.getValues()[i]);
  }
  return CudaEmit::Done;
}

/// The vector width (16 bytes of the widest access contiguous along the
/// row) and the team.
void planRowVectors(RowPlan &plan) {
  int64_t widest = storageBytes(plan.inType);
  for (const RowSide *side : {&plan.pro, &plan.epi}) {
    if (side == &plan.epi && plan.isReduce)
      continue; // one value per row
    for (auto [a, t] : llvm::enumerate(side->types))
      if (side->body->inner[a] == 1)
        widest = std::max(widest, storageBytes(t));
  }
  plan.vector = rowVectorWidth(plan.len, widest);
  plan.launch =
      planRowLaunch(plan.len / plan.vector, plan.vector, plan.isReduce, plan.compute == "double");
}

//===----------------------------------------------------------------------===//
// Print
//===----------------------------------------------------------------------===//

/// The C++ expressions of a planned row group: the prologue's and
/// epilogue's statements and the values the kernel's lambdas combine.
struct RowExprs {
  std::string prologue, epilogue; ///< one `const T vN = ...;` per op
  std::string x;                  ///< the row op's input element
  std::string y;                  ///< its value per element, from y0_
  std::string kind;               ///< the SLUICE_ROW_* (or reduce kind)
  std::string eps;
};

std::string vecName(const RowSide &side, const char *kind, unsigned a) {
  return std::string(kind) + side.body->prefix + std::to_string(a) + "_";
}

/// Binds every leaf to its load (vectorized leaves read their element of
/// the loaded vector) and spells the ops of both sides.
CudaEmit bindRowExprs(RowPlan &plan, RowExprs &e, CudaGroupContext &ctx, HostReason failedWith) {
  epilogue::Body &pro = *plan.pro.body, &epi = *plan.epi.body;
  pro.bindLeaves();
  epi.bindLeaves();
  auto useVectors = [&](RowSide &side) {
    for (auto &[value, a] : side.body->leafAccess)
      if (plan.vectorized(side, a))
        side.body->expr[value] = loadExpr(side.types[a], vecName(side, "l", a) + ".v[k_]");
  };
  useVectors(plan.pro);
  if (!plan.isReduce)
    useVectors(plan.epi);

  int locals = 0;
  CodeWriter proOps(3), epiOps(3);
  if (failed(pro.emitOps(proOps, plan.parts.before, locals)))
    return failedWith("prologue");
  e.prologue = proOps.str();
  e.x = pro.lookup(plan.x);
  if (e.x.empty())
    return ctx.unsupported("the row op's input has no value in its group");

  // The row op's value per element (y0_[k_]: from sluice_row_run, before
  // scale and bias).
  const std::string &C = plan.compute;
  e.eps = "(" + C + ")0";
  auto param = [&](Value v) { return epi.lookup(v); };
  if (auto sm = dyn_cast<SoftmaxOp>(plan.rowOp)) {
    e.kind = sm.getLog() ? "SLUICE_ROW_LOG_SOFTMAX" : "SLUICE_ROW_SOFTMAX";
    e.y = "y0_[k_]";
  } else if (auto ln = dyn_cast<LayerNormOp>(plan.rowOp)) {
    e.kind = "SLUICE_ROW_LAYER_NORM";
    e.eps = "(" + C + ")" + floatDigits(ln.getEpsilon());
    e.y = "y0_[k_] * (" + C + ")" + param(ln.getScale());
    if (ln.getBias())
      e.y += " + (" + C + ")" + param(ln.getBias());
  } else if (auto rn = dyn_cast<RmsNormOp>(plan.rowOp)) {
    e.kind = "SLUICE_ROW_RMS_NORM";
    e.eps = "(" + C + ")" + floatDigits(rn.getEpsilon());
    e.y = "y0_[k_] * (" + C + ")" + param(rn.getScale());
  } else {
    e.kind = std::to_string((int)cast<ReduceOp>(plan.rowOp).getKind());
    e.y = "y0_";
  }
  epi.expr[plan.y] = "y_";
  if (failed(epi.emitOps(epiOps, plan.parts.after, locals)))
    return failedWith("epilogue");
  e.epilogue = epiOps.str();
  return CudaEmit::Done;
}

/// Loads of the vectorized accesses of V consecutive elements at j0 of a
/// row (a register vector for each vectorized store).
void writeVectorLoads(CodeWriter &w, const RowPlan &plan, const RowSide &side) {
  const epilogue::Body &body = *side.body;
  for (unsigned a = 0; a < body.accesses.size(); ++a) {
    if (!plan.vectorized(side, a))
      continue;
    std::string vt = vecType(storageType(side.types[a]), plan.vector);
    if (side.isStored(a))
      w.line("{0} {1};", vt, vecName(side, "w", a));
    else if (side.isLeaf(a))
      w.line("const {0} {1} = *(const {0} *)({2} + {3}{4} + j0);", vt, vecName(side, "l", a),
             body.accesses[a].pointer, body.prefix, a);
  }
}

/// The start of a side's per-vector code: the row bases, the vectorized
/// loads, and the unrolled loop over the V elements at j0 (`j` in scope),
/// which stays open while the returned scope lives.
CodeWriter::Scope openElementLoop(CodeWriter &w, const RowPlan &plan, const RowSide &side) {
  side.body->rowBases(w, "row");
  writeVectorLoads(w, plan, side);
  w.line("#pragma unroll");
  CodeWriter::Scope loop = w.block("for (int k_ = 0; k_ < {0}; ++k_)", plan.vector);
  w.line("const int64_t j = j0 + k_;");
  w.line("(void)j;");
  return loop;
}

/// The stores of element k_: into the register vector of a vectorized
/// access, else straight to memory.
void writeElementStores(CodeWriter &w, const RowPlan &plan, const RowSide &side,
                        CudaGroupContext &ctx) {
  const epilogue::Body &body = *side.body;
  for (auto [i, a] : side.stores) {
    std::string value = storeExpr(side.types[a], body.lookup(plan.yieldedRoot(i)));
    if (plan.vectorized(side, a))
      w.line("{0}.v[k_] = {1};", vecName(side, "w", a), value);
    else
      w.line("{0}[{1}] = {2};", ctx.output(i), body.index(a), value);
  }
}

/// The stores of the register vectors, after the loop over k_.
void writeVectorStores(CodeWriter &w, const RowPlan &plan, const RowSide &side,
                       CudaGroupContext &ctx) {
  for (auto [i, a] : side.stores)
    if (plan.vectorized(side, a))
      w.line("*({0} *)({1} + {2}{3} + j0) = {4};", vecType(storageType(side.types[a]), plan.vector),
             ctx.output(i), side.body->prefix, a, vecName(side, "w", a));
}

/// The load_ lambda: the prologue of V consecutive elements into x_, and
/// (on the first pass over the row) the stores of yielded prologue values.
void writeRowLoad(CodeWriter &w, const RowPlan &plan, const RowExprs &e, CudaGroupContext &ctx) {
  const RowSide &pro = plan.pro;
  auto load = w.blockClosedBy("};",
                              "auto load_ = [&](int64_t row, int64_t j0, {0} (&x_)[{1}], "
                              "bool first_)",
                              plan.compute, plan.vector);
  w.line("(void)first_;");
  {
    auto loop = openElementLoop(w, plan, pro);
    w.raw(e.prologue);
    w.line("x_[k_] = ({0}){1};", plan.compute, e.x);
    if (!pro.stores.empty()) {
      auto first = w.block("if (first_)");
      writeElementStores(w, plan, pro, ctx);
    }
  }
  bool anyVectorStore = llvm::any_of(
      pro.stores, [&](const auto &store) { return plan.vectorized(pro, store.second); });
  if (anyVectorStore) {
    auto first = w.block("if (first_)");
    writeVectorStores(w, plan, pro, ctx);
  }
}

/// The store_ lambda (scale and bias, the epilogue, the stores) and, for
/// the norms, stats_; then the call of the row template that runs them.
void writeRowStore(CodeWriter &w, const RowPlan &plan, const RowExprs &e, CudaGroupContext &ctx) {
  const RowSide &epi = plan.epi;
  const std::string &C = plan.compute, outC = computeType(plan.outType);
  const RowLaunch &launch = plan.launch;
  if (plan.isReduce) {
    {
      auto store = w.blockClosedBy("};", "auto store_ = [&](int64_t row, {0} y0_)", C);
      epi.body->rowBases(w, "row");
      w.line("const int64_t j = 0;");
      w.line("(void)j;");
      w.line("const {0} y_ = {1};", outC, e.y);
      w.raw(e.epilogue);
      for (auto [i, a] : epi.stores)
        w.line("{0}[{1}] = {2};", ctx.output(i), epi.body->index(a),
               storeExpr(epi.types[a], epi.body->lookup(plan.yieldedRoot(i))));
    }
    w.line("sluice_row_reduce_run<{0}, {1}, {2}, {3}>({4}, {5}, load_, store_);", e.kind,
           launch.team, plan.vector, C, cInt64(plan.rows), cInt64(plan.len));
    return;
  }
  {
    auto store = w.blockClosedBy(
        "};", "auto store_ = [&](int64_t row, int64_t j0, const {0} (&y0_)[{1}])", C, plan.vector);
    {
      auto loop = openElementLoop(w, plan, epi);
      w.line("const {0} y_ = {1};", outC, e.y);
      w.raw(e.epilogue);
      writeElementStores(w, plan, epi, ctx);
    }
    writeVectorStores(w, plan, epi, ctx);
  }
  {
    auto stats = w.blockClosedBy("};", "auto stats_ = [&](int64_t row, {0} mean_, {0} inv_)", C);
    w.line("(void)row; (void)mean_; (void)inv_;");
    if (!plan.stats.stores.empty()) {
      const epilogue::Body &st = *plan.stats.body;
      st.rowBases(w, "row");
      for (auto [r, a] : plan.stats.stores)
        w.line("{0}[{1}] = (float){2};", st.accesses[a].pointer, st.index(a),
               r == 1 ? "mean_" : "inv_");
    }
  }
  w.line("sluice_row_run<{0}, {1}, {2}, {3}, {4}>({5}, {6}, {7}, load_, store_, stats_);", e.kind,
         launch.team, plan.vector, launch.perLane, C, cInt64(plan.rows), cInt64(plan.len), e.eps);
}

/// The kernel's parameters and the launch's arguments: every pointer an
/// access reads or writes, once.
void rowParams(const RowPlan &plan, std::vector<std::string> &params,
               std::vector<std::string> &argsList) {
  std::set<std::string> seen;
  for (const RowSide *side : {&plan.pro, &plan.epi})
    for (auto [a, access] : llvm::enumerate(side->body->accesses)) {
      if (!seen.insert(access.pointer).second)
        continue;
      std::string t = storageType(side->types[a]);
      params.push_back(side->isStored(a) ? t + " *__restrict__ " + access.pointer
                                         : "const " + t + " *__restrict__ " + access.pointer);
      argsList.push_back(access.pointer);
    }
  for (auto [r, a] : plan.stats.stores) {
    const std::string &p = plan.stats.body->accesses[a].pointer;
    if (seen.insert(p).second) {
      params.push_back("float *__restrict__ " + p);
      argsList.push_back(p);
    }
  }
}

/// The kernel `row` into ctx.device and its launch into ctx.host.
void printRowGroup(CudaGroupContext &ctx, const RowPlan &plan, const RowExprs &e) {
  std::vector<std::string> params, argsList;
  rowParams(plan, params, argsList);
  const RowLaunch &launch = plan.launch;
  CodeWriter k;
  k.line("// {0}: {1} rows of {2}, team {3}{4}, {5} per vector, {6}",
         plan.rowOp->getName().getStringRef(), plan.rows, plan.len, launch.team,
         launch.team < 32    ? " (sub-warp)"
         : launch.team == 32 ? " (warp)"
                             : " (block)",
         plan.vector,
         launch.perLane ? decimal(launch.perLane) + " vectors per lane in registers"
                        : std::string("streamed"));
  {
    auto kernel = k.block("__global__ void __launch_bounds__({0}) row({1})", launch.block,
                          llvm::join(params, ", "));
    writeRowLoad(k, plan, e, ctx);
    writeRowStore(k, plan, e, ctx);
  }
  ctx.include("sluice_gen/cuda_reduce.h");
  *ctx.device += k.str();

  CodeWriter h(1);
  h.line("row<<<sluice_grid({0}, {1}), {2}, 0, stream>>>({3});", cInt64(plan.rows),
         launch.rowsPerBlock, launch.block, llvm::join(argsList, ", "));
  h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  *ctx.host += h.str();
}

} // namespace

CudaEmit emitCudaRowGroup(CudaGroupContext &ctx) {
  // Errors of the shared epilogue code become the host step's reason: the
  // cpu emitter reports them itself if the group cannot run there either.
  std::string diagnostic;
  ScopedDiagnosticHandler handler(ctx.kernel->getContext(), [&](Diagnostic &d) {
    if (diagnostic.empty())
      diagnostic = d.str();
    return success();
  });
  auto failedWith = [&](const std::string &what) {
    return ctx.unsupported(what + (diagnostic.empty() ? "" : ": " + diagnostic));
  };

  RowPlan plan;
  CudaEmit checked = checkRowGroup(ctx, plan);
  if (checked != CudaEmit::Done || plan.rows == 0)
    return checked;
  if (CudaEmit planned = planRowAccesses(ctx, plan, failedWith); planned != CudaEmit::Done)
    return planned;
  planRowVectors(plan);
  RowExprs exprs;
  if (CudaEmit bound = bindRowExprs(plan, exprs, ctx, failedWith); bound != CudaEmit::Done)
    return bound;
  printRowGroup(ctx, plan, exprs);
  return CudaEmit::Done;
}

} // namespace sluice::codegen
