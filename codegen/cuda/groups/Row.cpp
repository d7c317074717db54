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
//===----------------------------------------------------------------------===//

#include "codegen/cpu/groups/Epilogue.h"
#include "codegen/cuda/CudaGroups.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace sluice::codegen {

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
  return "sluice_vec<" + t + ", " + std::to_string(v) + ">";
}

} // namespace

CudaEmit emitCudaRowGroup(CudaGroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  GroupOps parts = splitGroupOps(kernel, isRowOp);
  KernelYieldOp yield = parts.yield;
  Operation *rowOp = parts.anchor;
  if (!rowOp)
    return ctx.unsupported("no row op in the group");
  for (Operation *op : llvm::concat<Operation *>(parts.before, parts.after))
    if (!isElementwise(op))
      return ctx.unsupported("a row group holds only views, elementwise ops and one row op (" +
                             op->getName().getStringRef().str() + " is neither)");
  SmallVector<Operation *> &prologueOps = parts.before, &epilogueOps = parts.after;
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    if (auto t = dyn_cast<RankedTensorType>(arg.getType()); !t || !t.hasStaticShape())
      return ctx.unsupported("dynamic shapes (group input " + std::to_string(arg.getArgNumber()) +
                             ")");
  for (Operation &inner : kernel.getBody().front())
    for (Value v : inner.getResults())
      if (auto t = dyn_cast<RankedTensorType>(v.getType()); !t || !t.hasStaticShape())
        return ctx.unsupported("dynamic shapes (" + inner.getName().getStringRef().str() + ")");
  Value x = rowOp->getOperand(0), y = rowOp->getResult(0);
  ArrayRef<int64_t> inShape = shapeOf(x), outShape = shapeOf(y);
  std::string why;
  auto axisOr = rowAxis(rowOp, why);
  if (failed(axisOr))
    return ctx.unsupported(why);
  int64_t axis = *axisOr;
  int64_t rows = product(inShape.take_front(axis)), len = product(inShape.drop_front(axis));
  if (rows == 0)
    return CudaEmit::Done; // nothing to compute
  if (len == 0)
    return ctx.unsupported("empty rows");
  auto fits = [](Operation *op, ArrayRef<int64_t> space) {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    return succeeded(broadcastStridesTo(shape, contiguousStrides(shape), space));
  };
  for (Operation *op : prologueOps)
    if (!fits(op, inShape))
      return ctx.unsupported("a prologue op (" + op->getName().getStringRef().str() +
                             ") without the row op's input shape");
  for (Operation *op : epilogueOps)
    if (!fits(op, outShape))
      return ctx.unsupported("an epilogue op (" + op->getName().getStringRef().str() +
                             ") without the row op's result shape");
  const bool isReduce = isa<ReduceOp>(rowOp);
  // layer_norm's statistics: stored when yielded, nothing else may use them.
  for (unsigned i = 1; i < rowOp->getNumResults(); ++i)
    for (Operation *user : rowOp->getResult(i).getUsers())
      if (!isa<KernelYieldOp>(user) && !isViewOp(user))
        return ctx.unsupported("layer_norm's statistics feed " +
                               user->getName().getStringRef().str() + " in the group");

  Type inT = elementOf(x), outT = elementOf(y);
  const std::string C = computeType(inT);
  if (!isReduce && C != "float" && C != "double")
    return ctx.unsupported("row op on " + C + " elements");
  if (C != "float" && C != "double" && C != "int64_t")
    return ctx.unsupported("reduce of " + C + " elements");
  if (computeType(outT) != C)
    return ctx.unsupported("a row op whose result type computes in another type than its input");

  // Errors of the shared epilogue code become the host step's reason: the
  // cpu emitter reports them itself if the group cannot run there either.
  std::string diagnostic;
  ScopedDiagnosticHandler handler(kernel->getContext(), [&](Diagnostic &d) {
    if (diagnostic.empty())
      diagnostic = d.str();
    return success();
  });
  auto failedWith = [&](const std::string &what) {
    return ctx.unsupported(what + (diagnostic.empty() ? "" : ": " + diagnostic));
  };

  std::string unusedBody, unusedPrologue;
  GroupContext g;
  g.kernel = kernel;
  g.name = ctx.name;
  g.body = &unusedBody;
  g.prologue = &unusedPrologue;
  g.headers = ctx.headers;
  g.pointers = ctx.pointers;
  g.literals = ctx.literals;

  epilogue::Body pro(g, inShape, axis);
  int64_t outSplit = isReduce ? (int64_t)outShape.size() : axis;
  epilogue::Body epi(g, outShape, outSplit);
  epi.prefix = "e";
  for (Operation *op : prologueOps)
    for (Value operand : op->getOperands())
      if (failed(pro.addLeaf(operand)))
        return failedWith("prologue operand");
  if (failed(pro.addLeaf(x)))
    return failedWith("row op input");
  for (Value operand : rowOp->getOperands().drop_front())
    if (isa<LayerNormOp, RmsNormOp>(rowOp) && failed(epi.addLeaf(operand)))
      return failedWith("scale or bias");
  for (Operation *op : epilogueOps)
    for (Value operand : op->getOperands())
      if (operand != y && failed(epi.addLeaf(operand)))
        return failedWith("epilogue operand");

  // Results: prologue values, the row op's result / epilogue values, or
  // layer_norm's mean and inv_std_dev (one per row).
  SmallVector<int64_t> statShape(inShape.begin(), inShape.end());
  for (int64_t d = axis; d < (int64_t)statShape.size(); ++d)
    statShape[d] = 1;
  epilogue::Body st(g, statShape, (int64_t)statShape.size());
  st.prefix = "s";
  std::vector<std::pair<unsigned, unsigned>> proStores, epiStores; // (yield, access)
  std::vector<std::pair<unsigned, unsigned>> statStores;           // (result, access)
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    Value root = stripOutputViews(v);
    Operation *def = root.getDefiningOp();
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return failedWith("result " + std::to_string(i) + " is not a view of its value");
    if (def == rowOp && root != y) {
      unsigned r = cast<OpResult>(root).getResultNumber();
      if (shapeOf(root) != ArrayRef<int64_t>(statShape))
        return ctx.unsupported("layer_norm statistics of an unexpected shape");
      statStores.push_back({r, (unsigned)st.accesses.size()});
      if (failed(st.addAccess({ctx.output(i), 0, view->strides}, "a statistics result")))
        return failedWith("statistics result");
      continue;
    }
    bool inPro = def && llvm::is_contained(prologueOps, def);
    bool inEpi = root == y || (def && llvm::is_contained(epilogueOps, def));
    if (!inPro && !inEpi)
      return ctx.unsupported("a yielded value that is neither a prologue value, the row op's "
                             "result nor an epilogue value");
    if (shapeOf(root) != (inPro ? inShape : outShape))
      return ctx.unsupported("a yielded value of another shape than the row op's input or "
                             "result");
    epilogue::Body &body = inPro ? pro : epi;
    (inPro ? proStores : epiStores).push_back({(unsigned)i, (unsigned)body.accesses.size()});
    if (failed(body.addAccess({ctx.output(i), 0, view->strides}, "a result")))
      return failedWith("result");
  }
  pro.bindLeaves();
  epi.bindLeaves();

  // Storage types of every access (leaves by their values, results by the
  // yielded values).
  auto accessTypes = [&](const epilogue::Body &body,
                         const std::vector<std::pair<unsigned, unsigned>> &stores) {
    std::vector<Type> types(body.accesses.size());
    for (auto &[value, a] : body.leafAccess)
      types[a] = elementOf(value);
    for (auto [i, a] : stores)
      types[a] = elementOf(yield.getValues()[i]);
    return types;
  };
  std::vector<Type> proTypes = accessTypes(pro, proStores), epiTypes = accessTypes(epi, epiStores);

  // Vector width: 16 bytes of the widest access contiguous along the row,
  // halved until it divides the row; an access whose bases are not all
  // multiples of it moves element by element.
  int64_t widest = storageBytes(inT);
  for (auto [a, t] : llvm::enumerate(proTypes))
    if (pro.inner[a] == 1)
      widest = std::max(widest, storageBytes(t));
  if (!isReduce)
    for (auto [a, t] : llvm::enumerate(epiTypes))
      if (epi.inner[a] == 1)
        widest = std::max(widest, storageBytes(t));
  int64_t V = std::max<int64_t>(1, 16 / widest);
  while (V > 1 && len % V)
    V /= 2;
  auto vectorized = [&](const epilogue::Body &body, unsigned a) {
    if (V == 1 || body.inner[a] != 1 || body.accesses[a].offset % V)
      return false;
    for (int64_t d = 0; d < body.split; ++d)
      if (body.space[d] != 1 && body.accesses[a].strides[d] % V)
        return false;
    return true;
  };
  const std::string VS = std::to_string(V);
  auto vecName = [](const epilogue::Body &body, const char *kind, unsigned a) {
    return std::string(kind) + body.prefix + std::to_string(a) + "_";
  };
  // Vectorized leaves read their element from the loaded vector.
  auto useVectors = [&](epilogue::Body &body, const std::vector<Type> &types) {
    for (auto &[value, a] : body.leafAccess)
      if (vectorized(body, a))
        body.expr[value] = loadExpr(types[a], vecName(body, "l", a) + ".v[k_]");
  };
  useVectors(pro, proTypes);
  if (!isReduce)
    useVectors(epi, epiTypes);

  int locals = 0;
  auto proCode = pro.emitOps(prologueOps, "      ", locals);
  if (failed(proCode))
    return failedWith("prologue");
  std::string xExpr = pro.lookup(x);
  if (xExpr.empty())
    return ctx.unsupported("the row op's input has no value in its group");

  // The row op's value per element (y0_[k_]: from sluice_row_run, before
  // scale and bias).
  std::string yExpr, kind, eps = "(" + C + ")0";
  auto param = [&](Value v) { return epi.lookup(v); };
  if (auto sm = dyn_cast<SoftmaxOp>(rowOp)) {
    kind = sm.getLog() ? "SLUICE_ROW_LOG_SOFTMAX" : "SLUICE_ROW_SOFTMAX";
    yExpr = "y0_[k_]";
  } else if (auto ln = dyn_cast<LayerNormOp>(rowOp)) {
    kind = "SLUICE_ROW_LAYER_NORM";
    eps = "(" + C + ")" + floatDigits(ln.getEpsilon());
    yExpr = "y0_[k_] * (" + C + ")" + param(ln.getScale());
    if (ln.getBias())
      yExpr += " + (" + C + ")" + param(ln.getBias());
  } else if (auto rn = dyn_cast<RmsNormOp>(rowOp)) {
    kind = "SLUICE_ROW_RMS_NORM";
    eps = "(" + C + ")" + floatDigits(rn.getEpsilon());
    yExpr = "y0_[k_] * (" + C + ")" + param(rn.getScale());
  } else {
    kind = std::to_string((int)cast<ReduceOp>(rowOp).getKind());
    yExpr = "y0_";
  }
  epi.expr[y] = "y_";
  auto epiCode = epi.emitOps(epilogueOps, "      ", locals);
  if (failed(epiCode))
    return failedWith("epilogue");

  // Team: sub-warp for short rows, a warp for medium ones, a block for long
  // ones; rows up to `budget` values per lane stay in registers.
  const int64_t vectors = len / V;
  int64_t team;
  if (vectors <= 128)
    team = std::clamp<int64_t>(llvm::PowerOf2Ceil((vectors + 3) / 4), 4, 32);
  else if (vectors <= 512)
    team = 32;
  else
    team = std::clamp<int64_t>(llvm::PowerOf2Ceil((vectors + 7) / 8), 64, 1024);
  // Registers a lane may give the row: 64 values (32 at 1024 threads, whose
  // launch bounds leave 64 registers a thread); halved for f64. A team
  // widens until the row fits, up to a block of 1024.
  auto budget = [&](int64_t t) { return (t >= 1024 ? 32 : 64) / (C == "double" ? 2 : 1); };
  auto perLane = [&](int64_t t) { return (vectors + t - 1) / t; };
  if (!isReduce)
    while (team < 1024 && perLane(team) * V > budget(team))
      team *= 2;
  int64_t per = perLane(team);
  if (isReduce || per * V > budget(team))
    per = 0;
  const int64_t block = std::max<int64_t>(team, 128), rowsPerBlock = block / team;

  // Kernel parameters: every pointer an access reads or writes.
  std::vector<std::string> params, argsList;
  std::set<std::string> seen;
  auto addParams = [&](const epilogue::Body &body, const std::vector<Type> &types,
                       const std::vector<std::pair<unsigned, unsigned>> &stores) {
    std::set<unsigned> outputs;
    for (auto [i, a] : stores)
      outputs.insert(a);
    for (auto [a, access] : llvm::enumerate(body.accesses)) {
      if (!seen.insert(access.pointer).second)
        continue;
      std::string t = storageType(types[a]);
      params.push_back(outputs.count(a) ? t + " *__restrict__ " + access.pointer
                                        : "const " + t + " *__restrict__ " + access.pointer);
      argsList.push_back(access.pointer);
    }
  };
  addParams(pro, proTypes, proStores);
  addParams(epi, epiTypes, epiStores);
  for (auto [r, a] : statStores) {
    const std::string &p = st.accesses[a].pointer;
    if (seen.insert(p).second) {
      params.push_back("float *__restrict__ " + p);
      argsList.push_back(p);
    }
  }

  // Loads and stores of V consecutive elements at j0 of a row.
  auto vectorLoads = [&](const epilogue::Body &body, const std::vector<Type> &types,
                         const std::vector<std::pair<unsigned, unsigned>> &stores) {
    std::set<unsigned> outputs;
    for (auto [i, a] : stores)
      outputs.insert(a);
    std::string s;
    for (unsigned a = 0; a < body.accesses.size(); ++a) {
      if (!vectorized(body, a))
        continue;
      std::string vt = vecType(storageType(types[a]), V);
      if (outputs.count(a))
        s += "    " + vt + " " + vecName(body, "w", a) + ";\n";
      else if (llvm::any_of(body.leafAccess, [&](auto &entry) { return entry.second == a; }))
        s += "    const " + vt + " " + vecName(body, "l", a) + " = *(const " + vt + " *)(" +
             body.accesses[a].pointer + " + " + body.prefix + std::to_string(a) + " + j0);\n";
    }
    return s;
  };
  auto elementStores = [&](const epilogue::Body &body, const std::vector<Type> &types,
                           const std::vector<std::pair<unsigned, unsigned>> &stores,
                           const std::string &indent) {
    std::string s;
    for (auto [i, a] : stores) {
      std::string value =
          storeExpr(types[a], body.lookup(stripOutputViews(yield.getValues()[i])));
      if (vectorized(body, a))
        s += indent + vecName(body, "w", a) + ".v[k_] = " + value + ";\n";
      else
        s += indent + ctx.output(i) + "[" + body.index(a) + "] = " + value + ";\n";
    }
    return s;
  };
  auto vectorStores = [&](const epilogue::Body &body, const std::vector<Type> &types,
                          const std::vector<std::pair<unsigned, unsigned>> &stores,
                          const std::string &indent) {
    std::string s;
    for (auto [i, a] : stores)
      if (vectorized(body, a))
        s += indent + "*(" + vecType(storageType(types[a]), V) + " *)(" + ctx.output(i) + " + " +
             body.prefix + std::to_string(a) + " + j0) = " + vecName(body, "w", a) + ";\n";
    return s;
  };

  std::string k;
  k += "// " + rowOp->getName().getStringRef().str() + ": " + std::to_string(rows) + " rows of " +
       std::to_string(len) + ", team " + std::to_string(team) +
       (team < 32 ? " (sub-warp)" : team == 32 ? " (warp)" : " (block)") + ", " + VS +
       " per vector, " +
       (per ? std::to_string(per) + " vectors per lane in registers" : std::string("streamed")) +
       "\n";
  k += "__global__ void __launch_bounds__(" + std::to_string(block) + ") row(";
  for (size_t p = 0; p < params.size(); ++p)
    k += (p ? ", " : "") + params[p];
  k += ") {\n";
  // load_
  k += "  auto load_ = [&](int64_t row, int64_t j0, " + C + " (&x_)[" + VS +
       "], bool first_) {\n";
  k += "    (void)first_;\n";
  k += pro.rowBases("row", "    ");
  k += vectorLoads(pro, proTypes, proStores);
  k += "    #pragma unroll\n    for (int k_ = 0; k_ < " + VS + "; ++k_) {\n";
  k += "      const int64_t j = j0 + k_;\n      (void)j;\n";
  k += *proCode;
  k += "      x_[k_] = (" + C + ")" + xExpr + ";\n";
  if (!proStores.empty())
    k += "      if (first_) {\n" + elementStores(pro, proTypes, proStores, "        ") +
         "      }\n";
  k += "    }\n";
  std::string proVectorStores = vectorStores(pro, proTypes, proStores, "      ");
  if (!proVectorStores.empty())
    k += "    if (first_) {\n" + proVectorStores + "    }\n";
  k += "  };\n";
  // store_
  const std::string outC = computeType(outT);
  if (isReduce) {
    k += "  auto store_ = [&](int64_t row, " + C + " y0_) {\n";
    k += epi.rowBases("row", "    ");
    k += "    const int64_t j = 0;\n    (void)j;\n";
    k += "    const " + outC + " y_ = " + yExpr + ";\n";
    k += *epiCode;
    for (auto [i, a] : epiStores)
      k += "    " + ctx.output(i) + "[" + epi.index(a) + "] = " +
           storeExpr(epiTypes[a], epi.lookup(stripOutputViews(yield.getValues()[i]))) + ";\n";
    k += "  };\n";
    k += "  sluice_row_reduce_run<" + kind + ", " + std::to_string(team) + ", " + VS + ", " + C +
         ">(" + cInt(rows) + ", " + cInt(len) + ", load_, store_);\n";
  } else {
    k += "  auto store_ = [&](int64_t row, int64_t j0, const " + C + " (&y0_)[" + VS + "]) {\n";
    k += epi.rowBases("row", "    ");
    k += vectorLoads(epi, epiTypes, epiStores);
    k += "    #pragma unroll\n    for (int k_ = 0; k_ < " + VS + "; ++k_) {\n";
    k += "      const int64_t j = j0 + k_;\n      (void)j;\n";
    k += "      const " + outC + " y_ = " + yExpr + ";\n";
    k += *epiCode;
    k += elementStores(epi, epiTypes, epiStores, "      ");
    k += "    }\n";
    k += vectorStores(epi, epiTypes, epiStores, "    ");
    k += "  };\n";
    k += "  auto stats_ = [&](int64_t row, " + C + " mean_, " + C + " inv_) {\n";
    k += "    (void)row; (void)mean_; (void)inv_;\n";
    if (!statStores.empty()) {
      k += st.rowBases("row", "    ");
      for (auto [r, a] : statStores)
        k += "    " + st.accesses[a].pointer + "[" + st.index(a) + "] = (float)" +
             (r == 1 ? "mean_" : "inv_") + ";\n";
    }
    k += "  };\n";
    k += "  sluice_row_run<" + kind + ", " + std::to_string(team) + ", " + VS + ", " +
         std::to_string(per) + ", " + C + ">(" + cInt(rows) + ", " + cInt(len) + ", " + eps +
         ", load_, store_, stats_);\n";
  }
  k += "}\n";

  ctx.include("sluice_gen/cuda_reduce.h");
  *ctx.device += k;
  std::string launch = "  row<<<sluice_grid(" + cInt(rows) + ", " + std::to_string(rowsPerBlock) +
                       "), " + std::to_string(block) + ", 0, stream>>>(";
  for (size_t p = 0; p < argsList.size(); ++p)
    launch += (p ? ", " : "") + argsList[p];
  launch += ");\n  SLUICE_LAUNCHED(" + ctx.kernelName() + ");\n";
  *ctx.host += launch;
  return CudaEmit::Done;
}

} // namespace sluice::codegen
