//===- AutoPlan.cpp - choose tp/sp/pp for a model and a cluster -----------===//
//
// For each tensor-parallel width the module is cloned and run through the
// tp plan and the partitioner (the same passes the bundle goes through), and
// the rank program's top-level ops are read once into a flat schedule: each
// op's flops, activation bytes and weight bytes, each collective's bytes,
// each value's live range. Pipeline cuts and micro-batches are then only
// arithmetic over that schedule, so enumerating pp and M costs no IR work.
//
//===----------------------------------------------------------------------===//

#include "passes/parallel/AutoPlan.h"

#include "passes/Passes.h"
#include "passes/parallel/Sharding.h"

#include "dialects/sluice/KernelForms.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;

namespace sluice::parallel {

//===----------------------------------------------------------------------===//
// The cluster file
//===----------------------------------------------------------------------===//

bool readClusterFile(const std::string &path, ClusterModel &cluster, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = path + ": cannot read the cluster file: " + buffer.getError().message();
    return false;
  }
  auto parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed) {
    error = path + ": not JSON: " + llvm::toString(parsed.takeError());
    return false;
  }
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = path + ": the cluster file must be a JSON object (docs/parallel.md)";
    return false;
  }
  // One message per problem, each naming the field by its dotted path.
  auto bad = [&](const std::string &field, const std::string &what) {
    error = path + ": cluster field '" + field + "' " + what +
            " (docs/parallel.md, \"The cluster file\")";
    return false;
  };
  auto section = [&](const char *name, const llvm::json::Object *&out) {
    const llvm::json::Value *v = root->get(name);
    if (!v)
      return bad(name, "is missing");
    if (!(out = v->getAsObject()))
      return bad(name, "must be an object");
    return true;
  };
  auto number = [&](const llvm::json::Object *object, const std::string &prefix, const char *name,
                    double &out, bool required = true) {
    std::string field = prefix.empty() ? name : prefix + "." + name;
    const llvm::json::Value *v = object->get(name);
    if (!v) {
      if (required)
        return bad(field, "is missing");
      return true;
    }
    std::optional<double> d = v->getAsNumber();
    if (!d || !std::isfinite(*d) || *d <= 0)
      return bad(field, "must be a positive number");
    out = *d;
    return true;
  };
  auto count = [&](const char *name, int64_t &out) {
    const llvm::json::Value *v = root->get(name);
    if (!v)
      return bad(name, "is missing");
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i < 1)
      return bad(name, "must be a positive integer");
    out = *i;
    return true;
  };
  ClusterModel c;
  const llvm::json::Object *device = nullptr, *intra = nullptr, *inter = nullptr;
  double launch = c.device.launchSeconds;
  if (!section("device", device) ||
      !number(device, "device", "flops_per_second", c.device.flopsPerSecond) ||
      !number(device, "device", "memory_bytes_per_second", c.device.bytesPerSecond) ||
      !number(device, "device", "memory_bytes", c.device.memoryBytes) ||
      !number(device, "device", "launch_seconds", launch, /*required=*/false) ||
      !count("devices_per_node", c.devicesPerNode) || !count("nodes", c.nodes) ||
      !section("intra_node", intra) ||
      !number(intra, "intra_node", "bytes_per_second", c.intraNode.bytesPerSecond) ||
      !number(intra, "intra_node", "latency_seconds", c.intraNode.latencySeconds) ||
      !section("inter_node", inter) ||
      !number(inter, "inter_node", "bytes_per_second", c.interNode.bytesPerSecond) ||
      !number(inter, "inter_node", "latency_seconds", c.interNode.latencySeconds))
    return false;
  c.device.launchSeconds = launch;
  cluster = c;
  return true;
}

bool parseByteSize(llvm::StringRef text, int64_t &bytes) {
  text = text.trim();
  static const std::pair<const char *, double> kSuffixes[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0}};
  double scale = 1;
  for (auto [suffix, factor] : kSuffixes)
    if (text.ends_with(suffix)) {
      text = text.drop_back(strlen(suffix));
      scale = factor;
      break;
    }
  double value;
  if (text.empty() || text.getAsDouble(value) || !std::isfinite(value) || value <= 0)
    return false;
  double total = value * scale;
  if (total < 1 || total > 9.0e18)
    return false;
  bytes = (int64_t)std::llround(total);
  return true;
}

//===----------------------------------------------------------------------===//
// The schedule of one rank program
//===----------------------------------------------------------------------===//

namespace {

/// One top-level op of a rank program.
struct Step {
  double flops = 0, activationBytes = 0, weightBytes = 0;
  bool fp32Gemm = false;
  /// A collective: its name and the whole tensor's bytes (ring model).
  std::string collective;
  double collectiveBytes = 0;
};

/// A rank program of one (tp, sp) as the plan needs it.
struct Schedule {
  std::vector<Step> steps;
  /// Weight bytes each step is the first user of.
  std::vector<double> weightsAt;
  /// Activation bytes crossing a cut before step i (defined before, used at
  /// or after), and live while step i runs; size steps + 1.
  std::vector<double> crossing, live;
  /// The steps that hold an attention (one per layer).
  std::vector<size_t> attentions;
};

bool isWeight(Value v) {
  Operation *def = v.getDefiningOp();
  return def && isa<ConstantOp, ShardConstantOp>(def);
}

Schedule readSchedule(func::FuncOp func) {
  Schedule s;
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, size_t> index;
  for (Operation &op : body)
    index[&op] = index.size();
  size_t n = index.size();
  s.steps.resize(n);
  s.weightsAt.assign(n + 1, 0);
  std::vector<double> crossDiff(n + 2, 0), liveDiff(n + 2, 0);
  // A value lives from its definition to its last (top-level) user; an
  // output to the end.
  auto lastUse = [&](Value v) -> std::optional<size_t> {
    std::optional<size_t> last;
    for (Operation *user : v.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (top && (!last || index[top] > *last))
        last = index[top];
    }
    return last;
  };
  auto addLive = [&](Value v, size_t def, bool argument) {
    double bytes = tensorBytes(v.getType());
    std::optional<size_t> last = lastUse(v);
    if (!bytes || !last)
      return;
    // A cut before step p is crossed when def < p <= last.
    crossDiff[argument ? 0 : def + 1] += bytes;
    crossDiff[*last + 1] -= bytes;
    liveDiff[argument ? 0 : def] += bytes;
    liveDiff[*last + 1] -= bytes;
  };
  for (BlockArgument arg : body.getArguments())
    addLive(arg, 0, /*argument=*/true);
  for (Operation &op : body) {
    size_t i = index[&op];
    Step &step = s.steps[i];
    if (isa<ConstantOp, ShardConstantOp>(op)) {
      std::optional<size_t> first;
      for (Operation *user : op.getResult(0).getUsers())
        if (Operation *top = body.findAncestorOpInBlock(*user))
          first = first ? std::min(*first, index[top]) : index[top];
      if (first)
        s.weightsAt[*first] += tensorBytes(op.getResult(0).getType());
      continue;
    }
    if (kernel::isCollective(&op)) {
      step.collective = op.getName().stripDialect().str();
      for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
        step.collectiveBytes = std::max(step.collectiveBytes, tensorBytes(v.getType()));
    } else {
      OpCost cost = costOf(&op);
      for (Value v : op.getOperands())
        if (isWeight(v))
          step.weightBytes += tensorBytes(v.getType());
      step.flops = cost.flops;
      step.activationBytes = std::max(0.0, cost.bytes - step.weightBytes);
      if (isa<MatMulOp, AttentionOp, ConvOp>(op) && op.getNumResults() == 1)
        if (auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType()))
          step.fp32Gemm = type.getElementType().isF32();
      if (isa<AttentionOp>(op))
        s.attentions.push_back(i);
    }
    for (Value r : op.getResults())
      addLive(r, i, /*argument=*/false);
  }
  s.crossing.assign(n + 1, 0);
  s.live.assign(n + 1, 0);
  double cross = 0, alive = 0;
  for (size_t i = 0; i <= n; ++i) {
    cross += crossDiff[i];
    alive += liveDiff[i];
    s.crossing[i] = cross;
    s.live[i] = alive;
  }
  return s;
}

/// Runs the tp plan and the partitioner (or, with `ep` > 1, the expert
/// split) on a clone of `module`: the rank program of a `tp`-wide (or
/// `ep`-wide) bundle, or the passes' first error.
std::optional<Schedule> rankSchedule(ModuleOp module, int64_t tp, bool sp, int64_t &layers,
                                     std::vector<std::string> &remarks, std::string &error,
                                     int64_t ep = 1) {
  OwningOpRef<ModuleOp> clone = module.clone();
  std::string first;
  {
    // The candidates' remarks are not the compile's: the plan keeps those
    // that say what stays replicated (one of each, without the op's name).
    ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && first.empty())
        first = diag.str();
      std::string text = diag.str();
      if (diag.getSeverity() == DiagnosticSeverity::Remark &&
          StringRef(text).contains("replicated")) {
        // "'sluice.attention' (node '/x') stays replicated: ..." -> the
        // reason, so that 80 layers give one line.
        size_t at = text.find(" stays replicated");
        std::string key = at == std::string::npos ? text : text.substr(at + 1);
        for (size_t node; (node = key.find(" (node '")) != std::string::npos;) {
          size_t end = key.find("')", node);
          key.erase(node, end == std::string::npos ? std::string::npos : end + 2 - node);
        }
        if (!llvm::is_contained(remarks, key))
          remarks.push_back(key);
      }
      return success();
    });
    PassManager pm(module.getContext());
    if (ep > 1) {
      ExpertParallelPassOptions experts;
      experts.ep = ep;
      pm.addNestedPass<func::FuncOp>(createExpertParallelPass(experts));
    } else {
      PlanTensorParallelPassOptions plan;
      plan.tp = tp;
      plan.sp = sp;
      pm.addNestedPass<func::FuncOp>(createPlanTensorParallelPass(plan));
      pm.addNestedPass<func::FuncOp>(createPartitionPass());
    }
    if (failed(pm.run(*clone))) {
      error = first.empty() ? (ep > 1 ? "the expert split fails" : "the tensor-parallel split fails")
                            : first;
      return std::nullopt;
    }
  }
  auto func = clone->lookupSymbol<func::FuncOp>("main");
  if (auto attr = func->getAttrOfType<IntegerAttr>(kLayersAttr))
    layers = attr.getInt();
  return readSchedule(func);
}

/// The cut points a pipeline may use: between consecutive layers, where
/// the fewest activation bytes cross (the hidden state, not a layer's
/// insides). One per layer boundary.
llvm::SmallVector<bool> layerBoundaries(const Schedule &s) {
  llvm::SmallVector<bool> can(s.steps.size(), false);
  for (size_t k = 1; k < s.attentions.size(); ++k) {
    size_t best = s.attentions[k];
    for (size_t p = s.attentions[k - 1] + 1; p <= s.attentions[k]; ++p)
      if (s.crossing[p] < s.crossing[best])
        best = p;
    can[best] = true;
  }
  return can;
}

double bytesFits(const PlanCandidate &c) {
  return c.weightsBytesPerRank + c.activationBytesPerRank;
}

/// Predicts `c` (tp, sp, pp, M set) on the schedule of its tp.
void predict(PlanCandidate &c, const Schedule &s, llvm::ArrayRef<bool> boundaries,
             const PlanRequest &request, double memory, int64_t batch) {
  const ClusterModel &cluster = request.cluster;
  double m = (double)c.microBatches;
  size_t n = s.steps.size();
  // One micro-batch: flops and activations scale with it, weights are read
  // whole each time.
  std::vector<double> compute(n, 0), comm(n, 0), total(n, 0);
  // The ranks a collective spans: the tp group, or the ep ranks.
  int64_t group = c.tp * c.ep;
  for (size_t i = 0; i < n; ++i) {
    const Step &st = s.steps[i];
    if (!st.collective.empty())
      comm[i] =
          collectiveSeconds(st.collective, st.collectiveBytes / m, group, cluster.linkFor(group));
    else
      compute[i] = predictedSeconds({st.flops / m, st.activationBytes / m + st.weightBytes},
                                    cluster.device, st.fp32Gemm);
    total[i] = compute[i] + comm[i];
  }
  std::vector<size_t> starts{0};
  if (c.pp > 1) {
    starts = balancedCut(total, c.pp, boundaries);
    if (starts.empty()) {
      c.valid = false;
      c.why = "no " + std::to_string(c.pp) + "-stage cut between layers";
      return;
    }
  }
  starts.push_back(n);
  const LinkModel &sendLink = cluster.linkFor(c.worldSize);
  double slowest = -1, slowCompute = 0, slowComm = 0;
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    double stageCompute = 0, stageComm = 0, weights = 0, peak = 0;
    for (size_t i = starts[k]; i < starts[k + 1]; ++i) {
      stageCompute += compute[i];
      stageComm += comm[i];
      weights += s.weightsAt[i];
      peak = std::max(peak, s.live[i]);
    }
    // The stage sends its last activation on to the next stage.
    if (k + 2 < starts.size())
      stageComm += collectiveSeconds("send", s.crossing[starts[k + 1]] / m, 1, sendLink);
    c.weightsBytesPerRank = std::max(c.weightsBytesPerRank, weights);
    c.activationBytesPerRank = std::max(c.activationBytesPerRank, peak / m);
    if (stageCompute + stageComm > slowest) {
      slowest = stageCompute + stageComm;
      slowCompute = stageCompute;
      slowComm = stageComm;
    }
  }
  // M micro-batches through P stages take (M + P - 1) slots of the
  // slowest stage; P - 1 of them are the fill and drain bubble.
  c.computeSeconds = m * slowCompute;
  c.commSeconds = m * slowComm;
  c.bubbleSeconds = (double)(c.pp - 1) * slowest;
  c.predictedSeconds = c.computeSeconds + c.commSeconds + c.bubbleSeconds;
  int64_t replicas = std::max<int64_t>(1, request.devices / c.worldSize);
  c.throughput = c.predictedSeconds > 0 ? (double)batch * replicas / c.predictedSeconds : 0;
  c.fits = bytesFits(c) <= memory;
}

std::string gb(double bytes) {
  if (bytes >= 1e9)
    return llvm::formatv("{0:F2} GB", bytes / 1e9).str();
  if (bytes >= 1e6)
    return llvm::formatv("{0:F2} MB", bytes / 1e6).str();
  return llvm::formatv("{0:F1} KB", bytes / 1e3).str();
}

std::string ms(double seconds) { return llvm::formatv("{0:F3}", seconds * 1e3).str(); }

/// The batch: the leading dim of main's first tensor input.
int64_t batchOf(func::FuncOp func) {
  for (Type t : func.getArgumentTypes())
    if (auto ranked = dyn_cast<RankedTensorType>(t); ranked && ranked.getRank() > 0)
      return std::max<int64_t>(1, ranked.getShape()[0]);
  return 1;
}

} // namespace

std::string PlanCandidate::describe() const {
  std::string s = "tp=" + std::to_string(tp);
  if (sp)
    s += " sp";
  if (pp > 1)
    s += " pp=" + std::to_string(pp) + " M=" + std::to_string(microBatches);
  if (ep > 1)
    s += " ep=" + std::to_string(ep);
  return s;
}

namespace {

/// Why `func` cannot be planned (an input with a dynamic dim: memory and
/// time are per shape, a dynamic dim would count as nothing), or "".
std::string dynamicInputError(func::FuncOp func) {
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
    if (auto ranked = dyn_cast<RankedTensorType>(type); ranked && !ranked.hasStaticShape()) {
      std::string name = "#" + std::to_string(i);
      if (auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names"))
        if (i < names.size())
          if (auto s = dyn_cast<StringAttr>(names[i]))
            name = "'" + s.str() + "'";
      return "the plan needs static shapes: input " + name +
             " has a dynamic dim (bind it with --shape=NAME=DIMS)";
    }
  return "";
}

/// Notes on a valid candidate what it needs beyond the device memory, or
/// `predictedOnly` when this build does not compile it.
void noteLimits(PlanCandidate &c, const char *predictedOnly) {
  if (c.valid && !c.fits)
    c.why = "needs " + gb(bytesFits(c)) + " per rank";
  else if (c.valid && !c.compiles)
    c.why = predictedOnly;
}

/// The pipeline depths and micro-batch counts over one tp/sp schedule.
void addPipelineCandidates(PlanResult &result, const Schedule &schedule, int64_t tp, bool sp,
                           const std::vector<std::string> &remarks, const PlanRequest &request) {
  int64_t batch = result.batch;
  llvm::SmallVector<bool> boundaries = layerBoundaries(schedule);
  int64_t maxStages = std::min<int64_t>(request.devices / tp, (int64_t)schedule.attentions.size());
  for (int64_t pp = 1; pp <= std::max<int64_t>(1, maxStages); ++pp) {
    // Micro-batches only pay with a pipeline; each must divide the batch.
    std::vector<int64_t> micro{1};
    for (int64_t m = 2; pp > 1 && m <= batch && m <= 4 * pp; m *= 2)
      if (batch % m == 0)
        micro.push_back(m);
    for (int64_t m : micro) {
      PlanCandidate c;
      c.tp = tp;
      c.sp = sp;
      c.pp = pp;
      c.microBatches = m;
      c.worldSize = tp * pp;
      c.compiles = pp == 1 || request.pipelineCompiles;
      c.remarks = remarks;
      predict(c, schedule, boundaries, request, result.deviceMemory, batch);
      noteLimits(c, "pp needs the pipeline part (--pp): predicted only");
      result.candidates.push_back(c);
    }
  }
}

/// The candidates at tensor-parallel width `tp` with or without sp. False
/// when the width does not split: then, without sp, one row says why.
bool addWidthCandidates(PlanResult &result, ModuleOp module, func::FuncOp func,
                        const PlanRequest &request, int64_t tp, bool sp) {
  std::optional<Schedule> schedule;
  std::vector<std::string> remarks;
  std::string why;
  int64_t layers = 0;
  if (tp == 1) {
    schedule = readSchedule(func);
    layers = (int64_t)schedule->attentions.size();
  } else {
    schedule = rankSchedule(module, tp, sp, layers, remarks, why);
  }
  if (!schedule) {
    if (!sp) {
      PlanCandidate c;
      c.tp = c.worldSize = tp;
      c.valid = false;
      c.why = why;
      result.candidates.push_back(c);
    }
    return false;
  }
  if (tp == 1)
    result.layers = layers;
  addPipelineCandidates(result, *schedule, tp, sp, remarks, request);
  return true;
}

/// Tensor parallelism at each width up to the devices, without and with sp
/// (sp only where the width splits), each with its pipelines.
void addTensorParallelCandidates(PlanResult &result, ModuleOp module, func::FuncOp func,
                                 const PlanRequest &request) {
  for (int64_t tp = 1; tp <= request.devices; ++tp)
    for (bool sp : {false, true}) {
      if (sp && tp == 1)
        continue;
      if (!addWidthCandidates(result, module, func, request, tp, sp))
        break;
    }
}

/// Expert parallelism (pure ep, the rest replicated): each count that
/// divides the experts of every MoE layer, up to the devices.
void addExpertCandidates(PlanResult &result, ModuleOp module, func::FuncOp func,
                         const PlanRequest &request) {
  std::vector<int64_t> expertCounts;
  func.walk([&](MoeOp op) { expertCounts.push_back(op.getExperts()); });
  for (int64_t ep = 2; !expertCounts.empty() && ep <= request.devices; ++ep) {
    if (llvm::any_of(expertCounts, [&](int64_t e) { return e % ep != 0; }))
      continue;
    std::vector<std::string> remarks;
    std::string why;
    int64_t layers = 0;
    std::optional<Schedule> schedule = rankSchedule(module, 1, false, layers, remarks, why, ep);
    PlanCandidate c;
    c.ep = c.worldSize = ep;
    c.compiles = request.expertsCompile;
    if (!schedule) {
      c.valid = false;
      c.why = why;
      result.candidates.push_back(c);
      continue;
    }
    predict(c, *schedule, {}, request, result.deviceMemory, result.batch);
    noteLimits(c, "ep needs expert parallelism (--ep): predicted only");
    result.candidates.push_back(c);
  }
}

/// Whether `a` beats `b`: faster, or more samples per second over all
/// devices; ties to fewer ranks.
bool betterPlan(const PlanCandidate &a, const PlanCandidate &b, bool throughput) {
  if (throughput && a.throughput != b.throughput)
    return a.throughput > b.throughput;
  if (a.predictedSeconds != b.predictedSeconds)
    return a.predictedSeconds < b.predictedSeconds;
  return a.worldSize < b.worldSize;
}

/// The choice: among what fits (and this build compiles), the best. When
/// nothing fits, the error names the plan with the smallest per-rank memory
/// that works, and the result is false.
bool chooseCandidate(PlanResult &result, const PlanRequest &request, bool throughput) {
  int smallest = -1;
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const PlanCandidate &c = result.candidates[i];
    if (!c.valid || !c.compiles)
      continue;
    if (smallest < 0 || bytesFits(c) < bytesFits(result.candidates[smallest]))
      smallest = (int)i;
    if (c.fits &&
        (result.chosen < 0 || betterPlan(c, result.candidates[result.chosen], throughput)))
      result.chosen = (int)i;
  }
  if (result.chosen >= 0)
    return true;
  if (smallest < 0) {
    result.error = "no parallel plan exists for " + std::to_string(request.devices) + " devices";
    return false;
  }
  const PlanCandidate &s = result.candidates[smallest];
  result.error = "no plan on " + std::to_string(request.devices) + " devices fits " +
                 gb(result.deviceMemory) +
                 " per rank: the smallest per-rank memory that works is " + gb(bytesFits(s)) +
                 " (" + gb(s.weightsBytesPerRank) + " weights + " + gb(s.activationBytesPerRank) +
                 " activations), with " + s.describe();
  return false;
}

/// Says why the chosen plan wins, against one device and, for one device,
/// against the best split.
void explainChoice(PlanResult &result, bool throughput) {
  double memory = result.deviceMemory;
  PlanCandidate &chosen = result.candidates[result.chosen];
  const PlanCandidate &single = result.candidates.front();
  // The best plan on more ranks, to say what splitting would have given.
  const PlanCandidate *bestSplit = nullptr;
  for (const PlanCandidate &c : result.candidates)
    if (c.valid && c.compiles && c.fits && c.worldSize > 1 &&
        (!bestSplit || betterPlan(c, *bestSplit, throughput)))
      bestSplit = &c;
  std::string measure = throughput ? "samples/s" : "ms";
  auto score = [&](const PlanCandidate &c) {
    return throughput ? llvm::formatv("{0:F1}", c.throughput).str() : ms(c.predictedSeconds);
  };
  if (chosen.worldSize == 1) {
    result.reason = "world size 1: the weights (" + gb(single.weightsBytesPerRank) +
                    ") and activations (" + gb(single.activationBytesPerRank) +
                    ") fit one device's " + gb(memory) + " and splitting does not pay";
    if (bestSplit)
      result.reason += " (the best split, " + bestSplit->describe() + ", predicts " +
                       score(*bestSplit) + " " + measure + " against " + score(chosen) + " " +
                       measure + " on one device)";
  } else if (!single.fits) {
    result.reason = "world size " + std::to_string(chosen.worldSize) +
                    ": one device does not hold the model (" + gb(bytesFits(single)) + " > " +
                    gb(memory) + "); " + chosen.describe() + " is the " +
                    (throughput ? "highest-throughput" : "fastest") + " plan that fits (" +
                    score(chosen) + " " + measure + ", " + gb(bytesFits(chosen)) + " per rank)";
  } else {
    result.reason = "world size " + std::to_string(chosen.worldSize) + ": " + chosen.describe() +
                    " predicts " + score(chosen) + " " + measure + " against " + score(single) +
                    " " + measure + " on one device";
  }
  chosen.why = "chosen";
}

} // namespace

PlanResult planParallel(ModuleOp module, const PlanRequest &request) {
  PlanResult result;
  auto func = module.lookupSymbol<func::FuncOp>("main");
  result.deviceMemory =
      request.deviceMemory > 0 ? (double)request.deviceMemory : request.cluster.device.memoryBytes;
  if (!func) {
    result.error = "no function 'main' to plan";
    return result;
  }
  result.error = dynamicInputError(func);
  if (!result.error.empty())
    return result;
  result.batch = batchOf(func);
  addTensorParallelCandidates(result, module, func, request);
  addExpertCandidates(result, module, func, request);
  bool throughput = request.objective == "throughput";
  if (chooseCandidate(result, request, throughput))
    explainChoice(result, throughput);
  return result;
}

void printPlan(const PlanResult &plan, const PlanRequest &request, llvm::raw_ostream &out) {
  const ClusterModel &c = request.cluster;
  out << "plan for " << request.devices << " devices, " << gb(plan.deviceMemory)
      << " per rank, objective " << request.objective << " (batch " << plan.batch << ", "
      << plan.layers << " layers)\n";
  if (plan.absentWeights)
    out << "weights absent: " << plan.absentWeights << " initializers (" << gb(plan.absentBytes)
        << ") in external data files that are not here; planned from their shapes\n";
  out << llvm::formatv("cluster: {0} x {1} devices, {2:F1} TFLOP/s, {3:F2} TB/s, {4}; "
                       "intra-node {5:F0} GB/s + {6:F1} us, inter-node {7:F0} GB/s + {8:F1} us\n",
                       c.nodes, c.devicesPerNode, c.device.flopsPerSecond / 1e12,
                       c.device.bytesPerSecond / 1e12, gb(c.device.memoryBytes),
                       c.intraNode.bytesPerSecond / 1e9, c.intraNode.latencySeconds * 1e6,
                       c.interNode.bytesPerSecond / 1e9, c.interNode.latencySeconds * 1e6);
  out << llvm::formatv("{0,-18} {1,5} {2,11} {3,11} {4,11} {5,10} {6,10} {7,12} {8,5}  {9}\n",
                       "candidate", "world", "weights", "activations", "compute ms", "comm ms",
                       "bubble ms", "predicted ms", "fits", "note");
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const PlanCandidate &p = plan.candidates[i];
    if (!p.valid) {
      out << llvm::formatv("{0,-18} {1,5} {2}\n", p.describe(), p.worldSize, "not valid: " + p.why);
      continue;
    }
    out << llvm::formatv("{0,-18} {1,5} {2,11} {3,11} {4,11} {5,10} {6,10} {7,12} {8,5}  {9}\n",
                         p.describe(), p.worldSize, gb(p.weightsBytesPerRank),
                         gb(p.activationBytesPerRank), ms(p.computeSeconds), ms(p.commSeconds),
                         ms(p.bubbleSeconds), ms(p.predictedSeconds), p.fits ? "yes" : "no",
                         (int)i == plan.chosen ? std::string("<- chosen") : p.why);
  }
  if (plan.chosen >= 0) {
    const PlanCandidate &chosen = plan.candidates[plan.chosen];
    out << "chosen: " << chosen.describe() << " (world size " << chosen.worldSize
        << ")\nreason: " << plan.reason << "\n";
    for (const std::string &remark : chosen.remarks)
      out << "note: " << remark << "\n";
  } else
    out << "no plan: " << plan.error << "\n";
}

void writePlanJson(llvm::json::OStream &json, const PlanResult &plan, const PlanRequest &request) {
  auto candidate = [&](const PlanCandidate &p) {
    json.object([&] {
      json.attribute("tp", p.tp);
      json.attribute("sp", p.sp);
      json.attribute("pp", p.pp);
      json.attribute("micro_batches", p.microBatches);
      json.attribute("ep", p.ep);
      json.attribute("world_size", p.worldSize);
      json.attribute("weights_bytes_per_rank", (int64_t)std::llround(p.weightsBytesPerRank));
      json.attribute("activation_bytes_per_rank", (int64_t)std::llround(p.activationBytesPerRank));
      json.attribute("compute_ms", p.computeSeconds * 1e3);
      json.attribute("comm_ms", p.commSeconds * 1e3);
      json.attribute("bubble_ms", p.bubbleSeconds * 1e3);
      json.attribute("predicted_ms", p.predictedSeconds * 1e3);
      json.attribute("throughput", p.throughput);
      json.attribute("valid", p.valid);
      json.attribute("fits", p.fits);
      json.attribute("why", p.why);
    });
  };
  const ClusterModel &c = request.cluster;
  json.attributeObject("plan", [&] {
    json.attribute("objective", request.objective);
    json.attribute("devices", request.devices);
    json.attribute("device_memory", (int64_t)std::llround(plan.deviceMemory));
    json.attribute("weights_absent", plan.absentWeights);
    json.attributeObject("cluster", [&] {
      json.attributeObject("device", [&] {
        json.attribute("flops_per_second", c.device.flopsPerSecond);
        json.attribute("memory_bytes_per_second", c.device.bytesPerSecond);
        json.attribute("memory_bytes", c.device.memoryBytes);
        json.attribute("launch_seconds", c.device.launchSeconds);
      });
      json.attribute("devices_per_node", c.devicesPerNode);
      json.attribute("nodes", c.nodes);
      for (auto [name, link] :
           {std::pair{"intra_node", &c.intraNode}, {"inter_node", &c.interNode}})
        json.attributeObject(name, [&] {
          json.attribute("bytes_per_second", link->bytesPerSecond);
          json.attribute("latency_seconds", link->latencySeconds);
        });
    });
    json.attributeArray("candidates", [&] {
      for (const PlanCandidate &p : plan.candidates)
        candidate(p);
    });
    json.attributeBegin("chosen");
    if (plan.chosen >= 0)
      candidate(plan.candidates[plan.chosen]);
    else
      json.value(nullptr);
    json.attributeEnd();
    json.attribute("reason", plan.chosen >= 0 ? plan.reason : plan.error);
  });
}

} // namespace sluice::parallel
