//===- ModelFacts.cpp - what every target reads off a planned module ------===//

#include "codegen/common/ModelFacts.h"
#include "dialects/sluice/SluicePipelineOps.h"

#include "codegen/common/Compute.h"
#include "codegen/common/Format.h"
#include "codegen/common/KernelModel.h"
#include "codegen/common/ScalarEmitter.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/Locations.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace mlir;

namespace sluice::codegen {

std::optional<std::vector<int64_t>> upperBoundShape(Operation *op, unsigned index) {
  auto staticShape = [](Value v) -> std::optional<std::vector<int64_t>> {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !type.hasStaticShape())
      return std::nullopt;
    return std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
  };
  auto count = [](const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  };
  if (auto nonZero = dyn_cast<NonZeroOp>(op)) {
    auto in = staticShape(nonZero.getInput());
    if (!in)
      return std::nullopt;
    return std::vector<int64_t>{(int64_t)in->size(), count(*in)};
  }
  if (auto compress = dyn_cast<CompressOp>(op)) {
    auto in = staticShape(compress.getInput());
    if (!in)
      return std::nullopt;
    if (!compress.getAxis())
      return std::vector<int64_t>{count(*in)};
    int64_t axis = (int64_t)*compress.getAxis();
    if (axis < 0)
      axis += (int64_t)in->size();
    return *in; // the selected dim is at most the input's
  }
  if (auto unique = dyn_cast<UniqueOp>(op)) {
    auto in = staticShape(unique.getInput());
    if (!in)
      return std::nullopt;
    int64_t slices = count(*in);
    std::vector<int64_t> values = {slices};
    if (unique.getAxis()) {
      int64_t axis = *unique.getAxis();
      if (axis < 0)
        axis += (int64_t)in->size();
      slices = (*in)[axis];
      values = *in;
    }
    switch (index) {
    case 0: return values;
    case 2: return std::vector<int64_t>{unique.getAxis() ? slices : count(*in)};
    default: return std::vector<int64_t>{slices};
    }
  }
  if (auto nms = dyn_cast<NonMaxSuppressionOp>(op)) {
    auto scores = staticShape(nms.getScores());
    if (!scores || scores->size() != 3)
      return std::nullopt;
    int64_t boxes = (*scores)[2];
    if (Value max = nms.getMaxOutputBoxesPerClass())
      if (auto values = getConstantIntValues(max); values && values->size() == 1)
        boxes = std::min(boxes, std::max<int64_t>((*values)[0], 0));
    return std::vector<int64_t>{(*scores)[0] * (*scores)[1] * boxes, 3};
  }
  return std::nullopt;
}

int64_t product(ArrayRef<int64_t> dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i)
    p *= dims[i];
  return p;
}

FailureOr<int64_t> axisOf(Operation *op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return op->emitOpError("cpu target: axis ") << axis << " out of range for rank " << rank;
  return axis < 0 ? axis + rank : axis;
}

AxisSplit splitAt(ArrayRef<int64_t> shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < (int64_t)shape.size(); ++i)
    (i < axis ? s.outer : i == axis ? s.extent : s.inner) *= shape[i];
  return s;
}

std::string typeOf(Value value) { return storageType(elementOf(value)); }

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}
Type elementOf(Value value) {
  return cast<ShapedType>(value.getType()).getElementType();
}

std::string numpyDtype(Type t) {
  if (t.isF32()) return "float32";
  if (t.isF64()) return "float64";
  if (t.isF16()) return "float16";
  if (t.isBF16()) return "bfloat16";
  // ml_dtypes' name (NumPy itself has no float8).
  if (isa<Float8E4M3FNType>(t)) return "float8_e4m3fn";
  if (t.isInteger(1)) return "bool";
  if (auto i = dyn_cast<IntegerType>(t))
    return std::string(i.isUnsigned() ? "uint" : "int") + std::to_string(i.getWidth());
  return "";
}

namespace {

/// The (first) ONNX node an op came from, or "".
std::string nodeName(Location loc) {
  auto names = onnxNodeNames(loc);
  return names.empty() ? "" : names.front();
}

} // namespace

void describeKernel(Operation *kernel, std::vector<std::string> &ops,
                    std::vector<std::string> &nodes) {
  for (Operation &inner : cast<KernelOp>(kernel).getBody().front().without_terminator()) {
    if (isa<ConstantOp>(inner))
      continue;
    ops.push_back(inner.getName().getStringRef().str());
    for (std::string &node : onnxNodeNames(inner.getLoc()))
      if (llvm::find(nodes, node) == nodes.end())
        nodes.push_back(std::move(node));
  }
}

Operation *stepOp(KernelOp kernel) {
  Operation *firstCompute = nullptr, *firstView = nullptr;
  for (Operation &inner : kernel.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(inner))
      continue;
    if (isViewOp(&inner)) {
      firstView = firstView ? firstView : &inner;
      continue;
    }
    if (!isElementwise(&inner) && !kernel::isWeightPrologue(&inner))
      return &inner;
    firstCompute = firstCompute ? firstCompute : &inner;
  }
  return firstCompute ? firstCompute : firstView;
}

StepInfo describeStep(KernelOp kernel, llvm::StringRef kind) {
  Operation *named = stepOp(kernel);
  StepInfo info{kernel.getSymName().str(),
                kind.str(),
                named ? named->getName().getStringRef().str() : "",
                named ? nodeName(named->getLoc()) : "",
                computeOf(kernel),
                {},
                {}};
  describeKernel(kernel, info.ops, info.nodes);
  return info;
}

namespace {

/// The grid and the pipeline stage of every kernel and value: a transfer's
/// result is its receiving stage's; another kernel runs on the stage of its
/// ops (sluice.stage, set by sluice-pipeline), else of its inputs (ops the
/// fuse phase made, from a decomposed composite), else on every rank.
LogicalResult collectStages(func::FuncOp func, ModelFacts &model) {
  if (auto tp = func->getAttrOfType<IntegerAttr>("sluice.tp"))
    model.tp = std::max<int64_t>(tp.getInt(), 1);
  if (auto pp = func->getAttrOfType<IntegerAttr>("sluice.pp"))
    model.pp = std::max<int64_t>(pp.getInt(), 1);
  if (auto micro = func->getAttrOfType<IntegerAttr>("sluice.micro_batches"))
    model.microBatches = std::max<int64_t>(micro.getInt(), 1);
  if (auto ep = func->getAttrOfType<IntegerAttr>("sluice.ep"))
    model.ep = std::max<int64_t>(ep.getInt(), 1);
  model.worldSize = model.tp * model.pp * model.ep;
  if (model.pp == 1)
    return success();
  Block &block = func.getBody().front();
  for (Operation &op : block)
    if (auto stage = op.getAttrOfType<IntegerAttr>("sluice.stage");
        stage && isa<ConstantOp, ShardConstantOp>(op))
      model.valueStage[op.getResult(0)] = stage.getInt();
  for (KernelOp kernel : block.getOps<KernelOp>()) {
    int64_t stage = -1;
    TransferOp transfer;
    bool mixed = false;
    kernel.getBody().walk([&](Operation *inner) {
      if (auto t = dyn_cast<TransferOp>(inner))
        transfer = t;
      if (auto s = inner->getAttrOfType<IntegerAttr>("sluice.stage")) {
        mixed |= stage >= 0 && stage != s.getInt();
        stage = std::max(stage, s.getInt());
      }
    });
    if (mixed)
      return kernel.emitOpError("groups ops of different pipeline stages");
    if (transfer) {
      model.kernelStage[kernel] = -1;
      for (Value result : kernel.getResults())
        model.valueStage[result] = transfer.getTo();
      continue;
    }
    if (stage < 0)
      for (Value input : kernel.getInputs())
        stage = std::max(stage, model.stageOf(input));
    model.kernelStage[kernel] = stage;
    for (Value result : kernel.getResults())
      model.valueStage[result] = stage;
  }
  return success();
}

/// Weights: every top-level constant and shard constant, 64-byte aligned,
/// at the same offset in every rank's file of a pipeline stage (a staged
/// weight only in its stage's files; an unstaged one in all, at one offset).
LogicalResult collectWeights(func::FuncOp func, ModelFacts &model,
                             WeightTransformQuery transforms) {
  model.sequenceParallel = func->hasAttr("sluice.sp");
  if (auto layers = func->getAttrOfType<IntegerAttr>("sluice.layers"))
    model.layers = layers.getInt();
  int64_t ranks = model.worldSize;
  std::vector<std::vector<unsigned char>> files(ranks);
  for (Operation &op : func.getBody().front()) {
    auto constant = dyn_cast<ConstantOp>(op);
    auto shard = dyn_cast<ShardConstantOp>(op);
    if (!constant && !shard)
      continue;
    if (shard && getElementTypeOrSelf(shard->getResult(0).getType()).isInteger(4))
      return shard.emitOpError("4-bit weights cannot be split across ranks");
    // A shard splits over the tensor-parallel ranks, or over the expert
    // ranks of a pure expert-parallel program (rank r: block r).
    int64_t parts = model.ep > 1 ? model.ep : model.tp;
    if (shard && (int64_t)shard.getParts() != parts)
      return shard.emitOpError() << "is split into " << shard.getParts()
                                 << " parts in a program for " << parts
                                 << (model.ep > 1 ? " expert-parallel" : " tensor-parallel")
                                 << " ranks";
    auto tensor = tensorFromAttr(constant ? constant.getValue() : shard.getValue());
    if (failed(tensor))
      return op.emitOpError("cannot read this constant's value");
    if (model.sharedWeights && constant && ranks == 1) {
      // A shape variant's constant: stored once in the variants' file.
      std::vector<unsigned char> bytes;
      if (std::optional<WeightTransform> transform = storedTransform(constant, transforms)) {
        bytes = transform->apply(*tensor);
      } else if (isNibbleDType(tensor->dtype())) {
        bytes = packNibbles(tensor->rawData(), tensor->numElements());
      } else {
        const auto *from = static_cast<const unsigned char *>(tensor->rawData());
        bytes.assign(from, from + tensor->byteSize());
      }
      model.weightOffset[op.getResult(0)] = model.sharedWeights->add(bytes);
      continue;
    }
    int64_t stage = model.stageOf(op.getResult(0));
    auto holds = [&](int64_t r) { return stage < 0 || r / model.tp == stage; };
    size_t end = 0;
    for (int64_t r = 0; r < ranks; ++r)
      if (holds(r))
        end = std::max(end, files[r].size());
    size_t offset = (end + 63) / 64 * 64;
    for (int64_t r = 0; r < ranks; ++r) {
      if (!holds(r))
        continue;
      std::vector<unsigned char> &file = files[r];
      file.resize(offset);
      if (constant) {
        // Stored in the layout its kernels read (the same in every rank's
        // file: a constant is replicated).
        if (std::optional<WeightTransform> transform = storedTransform(constant, transforms)) {
          std::vector<unsigned char> bytes = transform->apply(*tensor);
          file.insert(file.end(), bytes.begin(), bytes.end());
          continue;
        }
        if (isNibbleDType(tensor->dtype())) {
          // 4-bit weights: two per byte, low nibble first (as ONNX stores them).
          std::vector<uint8_t> packed = packNibbles(tensor->rawData(), tensor->numElements());
          file.insert(file.end(), packed.begin(), packed.end());
          continue;
        }
        const auto *from = static_cast<const unsigned char *>(tensor->rawData());
        file.insert(file.end(), from, from + tensor->byteSize());
      } else {
        SmallVector<std::pair<int64_t, int64_t>> blocks = shard.blocksOf(r % parts);
        Tensor block = tensor->takeAlong(shard.getAxis(), {blocks.begin(), blocks.end()});
        const auto *from = static_cast<const unsigned char *>(block.rawData());
        file.insert(file.end(), from, from + block.byteSize());
      }
    }
    model.weightOffset[op.getResult(0)] = offset;
  }
  if (ranks == 1)
    model.weights = std::move(files[0]);
  else
    model.rankWeights = std::move(files);
  return success();
}

/// The collectives one run of one rank calls, by op, with the ring
/// algorithm's bytes sent per rank.
void collectCollectives(func::FuncOp func, ModelFacts &model) {
  llvm::MapVector<StringRef, CollectiveInfo> byOp;
  func.walk([&](Operation *op) {
    if (!kernel::isCollective(op) || !op->getParentOfType<KernelOp>())
      return;
    if (isa<TransferOp>(op)) {
      auto type = cast<RankedTensorType>(op->getOperand(0).getType());
      int64_t bytes = product(type.getShape()) * storageBytes(type.getElementType());
      for (const char *name : {"send", "recv"}) {
        CollectiveInfo &info = byOp[name];
        info.op = name;
        info.count += model.microBatches;
        info.bytes += bytes * model.microBatches;
      }
      model.collectiveMaxBytes = std::max(model.collectiveMaxBytes, bytes);
      return;
    }
    auto groupSize = op->getAttrOfType<IntegerAttr>("group_size");
    int64_t w = groupSize ? groupSize.getInt() : 1;
    auto bytesOf = [](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      return product(type.getShape()) * storageBytes(type.getElementType());
    };
    int64_t in = bytesOf(op->getOperand(0)), out = bytesOf(op->getResult(0));
    // S: the whole tensor, which an all_reduce's buffers hold, a
    // reduce_scatter's input, an all_gather's output.
    int64_t whole = std::max(in, out);
    int64_t sent = isa<AllReduceOp>(op) ? 2 * (w - 1) * whole / w : (w - 1) * whole / w;
    CollectiveInfo &info = byOp[op->getName().stripDialect()];
    info.op = op->getName().stripDialect().str();
    info.count += model.microBatches;
    info.bytes += sent * model.microBatches;
    model.collectiveMaxBytes = std::max(model.collectiveMaxBytes, whole);
  });
  // A pipeline's outputs, from the stage that computed them to every rank.
  Block &block = func.getBody().front();
  for (Value v : block.getTerminator()->getOperands()) {
    if (model.pp == 1 || model.stageOf(v) < 0)
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    int64_t bytes =
        product(type.getShape()) * storageBytes(type.getElementType()) * model.microBatches;
    CollectiveInfo &info = byOp["broadcast"];
    info.op = "broadcast";
    ++info.count;
    info.bytes += bytes;
    model.collectiveMaxBytes = std::max(model.collectiveMaxBytes, bytes);
  }
  for (auto &[name, info] : byOp)
    model.collectives.push_back(info);
}

/// A pipeline bundle's boundary: every micro-batch's inputs and outputs
/// (dim 0 times M; an output whose dim 0 is not the micro-batch's is an
/// error), and outputs the stages can broadcast (static shapes).
LogicalResult pipelineBoundary(func::FuncOp func, ModelFacts &model) {
  if (model.microBatches > 1) {
    // The bundle's boundary holds every micro-batch: dim 0 times M.
    for (TensorInfo &t : model.inputs)
      t.shape[0] *= model.microBatches;
    for (TensorInfo &t : model.outputs) {
      int64_t batch = model.inputs.empty() ? 0 : model.inputs[0].shape[0] / model.microBatches;
      if (t.shape.empty() || t.shape[0] != batch || !t.maxShape.empty())
        return func.emitError() << "--micro-batches=" << model.microBatches << ": output '"
                                << t.name << "' does not follow the batch (its dim 0 is "
                                << (t.shape.empty() ? 0 : t.shape[0]) << " for a micro-batch of "
                                << batch << ")";
      t.shape[0] *= model.microBatches;
    }
  }
  if (model.pp > 1)
    for (const TensorInfo &t : model.outputs)
      if (!t.maxShape.empty())
        return func.emitError() << "--pp: output '" << t.name
                                << "' has data-dependent dims, which a pipeline bundle cannot "
                                   "broadcast yet";
  return success();
}

} // namespace

std::vector<int64_t> ModelFacts::weightsBytesPerRank() const {
  if (worldSize == 1)
    return {(int64_t)weights.size()};
  std::vector<int64_t> bytes;
  for (const auto &file : rankWeights)
    bytes.push_back((int64_t)file.size());
  return bytes;
}

int64_t SharedWeights::add(llvm::ArrayRef<unsigned char> block) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : block) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  unsharedBytes = (unsharedBytes + 63) / 64 * 64 + (int64_t)block.size();
  auto [begin, end] = stored.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    auto [offset, size] = it->second;
    if (size == block.size() &&
        (size == 0 || std::memcmp(bytes.data() + offset, block.data(), size) == 0))
      return (int64_t)offset;
  }
  size_t offset = (bytes.size() + 63) / 64 * 64;
  bytes.resize(offset);
  bytes.insert(bytes.end(), block.begin(), block.end());
  stored.insert({hash, {offset, block.size()}});
  return (int64_t)offset;
}

LogicalResult collectModelFacts(ModuleOp module, ModelFacts &model, llvm::StringRef target,
                                function_ref<bool(Operation *)> implemented,
                                WeightTransformQuery transforms) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError("no function 'main' to emit");
  auto arenaAttr = func->getAttrOfType<IntegerAttr>("sluice.arena_bytes");
  if (!arenaAttr)
    return func.emitError("emit needs a planned function (run the plan phase)");
  model.arenaBytes = arenaAttr.getInt();

  auto names = [&](const char *attr, size_t count, const char *prefix) {
    std::vector<std::string> result;
    auto array = func->getAttrOfType<ArrayAttr>(attr);
    for (size_t i = 0; i < count; ++i) {
      auto s = array && i < array.size() ? dyn_cast<StringAttr>(array[i]) : StringAttr();
      result.push_back(s ? s.str() : prefix + std::to_string(i));
    }
    return result;
  };
  model.func = func;
  // Walk order, as kernel::moeLoadOffset counts.
  func.walk([&](MoeOp op) {
    std::vector<std::string> nodes = onnxNodeNames(op.getLoc());
    model.moe.push_back({nodes.empty() ? "" : nodes.front(), op.getGating().str(),
                         int64_t(op.getExperts()), int64_t(op.getTopK()),
                         cast<ShapedType>(op.getW1().getType()).getDimSize(0)});
  });
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  auto inputNames = names("sluice.input_names", block.getNumArguments(), "input");
  auto outputNames = names("sluice.output_names", ret.getNumOperands(), "output");

  bool bad = false;
  auto boundary = [&](Value v, const std::string &name, std::vector<TensorInfo> &into) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    // An output with data-dependent dims, straight from the op that bounds them.
    if (type && !type.hasStaticShape() && &into == &model.outputs && !numpyDtype(type.getElementType()).empty())
      if (auto kernel = v.getDefiningOp<KernelOp>()) {
        auto result = cast<OpResult>(v);
        Value inner = kernel.getBody().front().getTerminator()->getOperand(result.getResultNumber());
        auto bound = inner.getDefiningOp()
                         ? upperBoundShape(inner.getDefiningOp(), cast<OpResult>(inner).getResultNumber())
                         : std::nullopt;
        if (bound) {
          into.push_back({name, numpyDtype(type.getElementType()),
                          std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
                          *bound});
          for (int64_t &d : into.back().shape)
            if (ShapedType::isDynamic(d))
              d = -1;
          return;
        }
      }
    if (!type || !type.hasStaticShape() || numpyDtype(type.getElementType()).empty()) {
      emitError(v.getLoc()) << "cpu target: '" << name << "' has type " << v.getType()
                            << "; bundles need static shapes of numeric types "
                               "(give input shapes with --shape; freeze shape-tensor inputs "
                               "with --bind)";
      bad = true;
      return;
    }
    into.push_back({name, numpyDtype(type.getElementType()),
                    std::vector<int64_t>(type.getShape().begin(), type.getShape().end()), {}});
  };
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    boundary(arg, inputNames[i], model.inputs);
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    boundary(v, outputNames[i], model.outputs);
  if (bad)
    return failure();

  if (failed(collectStages(func, model)) || failed(collectWeights(func, model, transforms)))
    return failure();
  collectCollectives(func, model);
  if (failed(pipelineBoundary(func, model)))
    return failure();

  // Unsupported ops, all of them, before emitting anything.
  llvm::MapVector<StringRef, std::string> unsupported;
  // Kernels of if branches and loop bodies included.
  SmallVector<KernelOp> allKernels;
  func.walk([&](KernelOp kernel) {
    allKernels.push_back(kernel);
    return WalkResult::skip();
  });
  for (KernelOp kernel : allKernels) {
    for (Operation &inner : kernel.getBody().front().without_terminator()) {
      // Attention has no single-op emitter: its groups are form F4.
      if (isa<ConstantOp, AttentionOp>(inner) || isElementwise(&inner) ||
          implemented(&inner))
        continue;
      if (!unsupported.count(inner.getName().getStringRef()))
      {
        std::string where = describeLocation(inner.getLoc());
        size_t node = where.find("node '");
        unsupported[inner.getName().getStringRef()] =
            node == std::string::npos ? where : where.substr(node);
      }
    }
  }
  if (!unsupported.empty()) {
    std::string list;
    for (auto &[name, where] : unsupported)
      list += (list.empty() ? "" : ", ") + name.str() + " (" + where + ")";
    return module.emitError() << "unsupported ops on target " << target << " ("
                              << unsupported.size() << "): " << list;
  }

  return success();
}

RunBuffers::RunBuffers(const ModelFacts &facts)
    : facts(&facts), arenaBytes(facts.arenaBytes), numOutputs((int64_t)facts.outputs.size()) {
  func::FuncOp func = facts.func;
  Block &block = func.getBody().front();
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    where[arg] = "(void *)args->inputs[" + decimal(i) + "]";
  for (auto &[value, offset] : facts.weightOffset)
    where[value] = "(void *)(args->weights + " + decimal(offset) + ")";
}

FailureOr<ArrayRef<int64_t>> RunBuffers::addResults(KernelOp kernel) {
  DenseI64ArrayAttr offsets = kernel.getArenaOffsetsAttr();
  if (!offsets || offsets.size() != (int64_t)kernel.getNumResults())
    return kernel.emitOpError("emit needs arena offsets (run the plan phase)");
  for (auto [i, result] : llvm::enumerate(kernel.getResults())) {
    int64_t offset = offsets[i];
    // The offsets of a hand-written .mlir are checked, not trusted: a
    // buffer must lie inside the arena, an output index must exist.
    auto type = dyn_cast<RankedTensorType>(result.getType());
    int64_t bytes = 0;
    if (type && type.hasStaticShape() && type.getElementType().isIntOrFloat())
      bytes = type.getNumElements() * (int64_t)type.getElementType().getIntOrFloatBitWidth() / 8;
    if (offset >= 0 && (offset > arenaBytes || bytes > arenaBytes - offset))
      return kernel.emitOpError() << "result " << i << " at arena offset " << offset << " ("
                                  << bytes << " bytes) lies outside the arena of " << arenaBytes
                                  << " bytes";
    if (offset < 0 && -offset - 1 >= numOutputs)
      return kernel.emitOpError() << "result " << i << " names graph output " << -offset - 1
                                  << " of " << numOutputs;
    where[result] = offset >= 0 ? "(void *)(args->arena + " + decimal(offset) + ")"
                                : "args->outputs[" + decimal(-offset - 1) + "]";
  }
  return offsets.asArrayRef();
}

std::string RunBuffers::stageGuard(int64_t stage) const {
  if (facts->pp == 1 || stage < 0)
    return "";
  return "sluice_stage(args, " + decimal(facts->tp) + ") == " + decimal(stage);
}

LogicalResult RunBuffers::writeStep(CodeWriter &run, KernelOp kernel, int64_t step,
                                    StringRef target) const {
  std::vector<std::string> buffers;
  for (Value input : kernel.getInputs()) {
    if (!where.count(input))
      return kernel.emitOpError() << target << " target: an input has no buffer";
    buffers.push_back(where.lookup(input));
  }
  for (Value result : kernel.getResults())
    buffers.push_back(where.lookup(result));
  auto stage = facts->kernelStage.find(kernel);
  std::string guard = stageGuard(stage == facts->kernelStage.end() ? -1 : stage->second);
  auto block = run.block("{0}", guard.empty() ? "" : "if (" + guard + ")");
  run.line("void *const b[] = {{{0}};", buffers.empty() ? "nullptr" : llvm::join(buffers, ", "));
  run.line("SLUICE_STEP({0}, {1}(b, args));", step, kernel.getSymName());
  return success();
}

FailureOr<int64_t>
RunBuffers::writeSteps(Block &block, CodeWriter &run, StringRef target, EmitFn emit,
                       const ControlFlowCode &control) {
  int64_t step = 0;
  if (failed(writeBlock(block, run, target, emit, control, step)))
    return failure();
  return step;
}

LogicalResult RunBuffers::writeBlock(Block &block, CodeWriter &run, StringRef target,
                                     EmitFn emit, const ControlFlowCode &control,
                                     int64_t &step) {
  for (Operation &op : block) {
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      FailureOr<ArrayRef<int64_t>> offsets = addResults(kernel);
      if (failed(offsets) || failed(emit(kernel, *offsets, step)) ||
          failed(writeStep(run, kernel, step, target)))
        return failure();
      ++step;
      continue;
    }
    if (!isa<IfOp, LoopOp>(op))
      continue;
    if (facts->worldSize > 1)
      return op.emitOpError() << target
                              << " target: control flow in a multi-rank program is not "
                                 "supported (compile it for one rank)";
    if (auto ifOp = dyn_cast<IfOp>(op)) {
      if (failed(writeIf(ifOp, run, target, emit, control, step)))
        return failure();
    } else if (failed(writeLoop(cast<LoopOp>(op), run, target, emit, control, step))) {
      return failure();
    }
  }
  return success();
}

FailureOr<ArrayRef<int64_t>> RunBuffers::controlOffsets(Operation *op, size_t count) {
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>("sluice.arena_offsets");
  if (!offsets || offsets.size() != (int64_t)count)
    return op->emitOpError("emit needs arena offsets (run the plan phase)");
  for (int64_t offset : offsets.asArrayRef())
    if (offset < 0 || offset > arenaBytes)
      return op->emitOpError() << "arena offset " << offset << " lies outside the arena of "
                               << arenaBytes << " bytes";
  return offsets.asArrayRef();
}

/// Bytes of a static tensor value's buffer; -1 otherwise.
static int64_t valueBytes(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return -1;
  return product(type.getShape()) * storageBytes(type.getElementType());
}

/// Declares the run function's local `var` from the scalar `value`'s
/// buffer (a condition when `isBool`, else a trip count), or, when the op
/// has no such operand, as its default (true; no bound).
static LogicalResult readScalar(const RunBuffers &buffers, Operation *op, CodeWriter &run,
                                const ControlFlowCode &control, Value value,
                                const std::string &var, bool isBool, StringRef what,
                                StringRef target) {
  if (!value) {
    run.line(isBool ? "bool {0} = true;" : "const int64_t {0} = INT64_MAX;", var);
    return success();
  }
  std::string ptr = buffers.lookup(value);
  if (ptr.empty())
    return op->emitOpError() << target << " target: " << what << " has no buffer";
  control.read(run, var, ptr, isBool);
  return success();
}

LogicalResult RunBuffers::writeIf(IfOp op, CodeWriter &run, StringRef target, EmitFn emit,
                                  const ControlFlowCode &control, int64_t &step) {
  auto offsets = controlOffsets(op, op.getNumResults());
  if (failed(offsets))
    return failure();
  for (auto [result, offset] : llvm::zip(op.getResults(), *offsets))
    where[result] = "(void *)(args->arena + " + decimal(offset) + ")";
  std::string var = "cond" + decimal(controlIds++);
  auto scope = run.block("");
  if (failed(readScalar(*this, op, run, control, op.getCondition(), var, true, "the condition",
                        target)))
    return failure();
  for (unsigned branch = 0; branch < 2; ++branch) {
    auto body = run.block(branch == 0 ? "if ({0})" : "else", var);
    Block &block = op->getRegion(branch).front();
    if (failed(writeBlock(block, run, target, emit, control, step)))
      return failure();
    for (auto [result, yielded] : llvm::zip(op.getResults(), block.getTerminator()->getOperands())) {
      std::string from = lookup(yielded);
      int64_t bytes = valueBytes(yielded);
      if (from.empty() || bytes != valueBytes(result))
        return op.emitOpError() << target << " target: a branch yields " << yielded.getType()
                                << " for a result of type " << result.getType()
                                << " (branches must yield the result's static shape)";
      control.copy(run, where[result], from, bytes);
    }
  }
  return success();
}

LogicalResult RunBuffers::writeLoop(LoopOp op, CodeWriter &run, StringRef target, EmitFn emit,
                                    const ControlFlowCode &control, int64_t &step) {
  Block &body = op.getBody().front();
  size_t numCarried = op.getInitialValues().size();
  size_t numScan = op.getNumResults() - numCarried;
  auto offsets = controlOffsets(op, op.getNumResults() + 2);
  if (failed(offsets))
    return failure();
  auto arena = [](int64_t offset) { return "(void *)(args->arena + " + decimal(offset) + ")"; };
  for (auto [result, offset] : llvm::zip(op.getResults(), offsets->take_front(op.getNumResults())))
    where[result] = arena(offset);
  // The body reads its iteration number and condition from their buffers
  // and its carried values from the loop's results, which hold them.
  where[body.getArgument(0)] = arena((*offsets)[op.getNumResults()]);
  where[body.getArgument(1)] = arena((*offsets)[op.getNumResults() + 1]);
  for (size_t k = 0; k < numCarried; ++k)
    where[body.getArgument(2 + k)] = where[op.getResult(k)];
  Operation *yield = body.getTerminator();
  // A carried value yielded in another one's place (a swap) would be
  // overwritten before it is copied.
  for (size_t k = 0; k < numCarried; ++k) {
    auto arg = dyn_cast<BlockArgument>(yield->getOperand(1 + k));
    if (arg && arg.getOwner() == &body && arg.getArgNumber() >= 2 &&
        arg.getArgNumber() != 2 + k)
      return op.emitOpError() << target << " target: the body yields carried value "
                              << arg.getArgNumber() - 2 << " as carried value " << k
                              << " (a swap of loop-carried values is not supported)";
  }
  std::string id = decimal(controlIds++);
  auto scope = run.block("");
  if (failed(readScalar(*this, op, run, control, op.getMaxTripCount(), "trip" + id, false,
                        "the trip count", target)) ||
      failed(readScalar(*this, op, run, control, op.getInitialCondition(), "cond" + id, true,
                        "the condition", target)))
    return failure();
  for (size_t k = 0; k < numCarried; ++k) {
    Value initial = op.getInitialValues()[k];
    Value result = op.getResult(k);
    std::string from = lookup(initial);
    int64_t bytes = valueBytes(result);
    if (from.empty() || bytes < 0 || valueBytes(initial) != bytes)
      return op.emitOpError() << target << " target: carried value " << k << " is "
                              << initial.getType() << " on entry and " << result.getType()
                              << " after the loop (bundles need one static shape)";
    control.copy(run, where[result], from, bytes);
  }
  // Scan outputs: static [N, ...] results, one row per iteration; a loop
  // that stops before N iterations (or would run past them) is a run error.
  int64_t rows = -1;
  for (size_t j = 0; j < numScan; ++j) {
    auto type = dyn_cast<RankedTensorType>(op.getResult(numCarried + j).getType());
    if (!type || !type.hasStaticShape() || type.getRank() < 1 || (rows >= 0 && type.getDimSize(0) != rows))
      return op.emitOpError() << target << " target: scan output " << j << " has type "
                              << op.getResult(numCarried + j).getType()
                              << "; a loop's scan outputs need a static trip count";
    rows = type.getDimSize(0);
  }
  run.line("int64_t iter{0} = 0;", id);
  {
    auto loop = run.block("for (; iter{0} < trip{0} && cond{0}; ++iter{0})", id);
    if (rows >= 0) {
      run.line("if (iter{0} >= {1})", id, rows);
      run.line("  return sluice_fail(args, \"loop\", \"ran past the {0} iterations its scan outputs hold\");", rows);
    }
    control.store(run, where[body.getArgument(0)], "iter" + id, /*isBool=*/false);
    control.store(run, where[body.getArgument(1)], "true", /*isBool=*/true);
    if (failed(writeBlock(body, run, target, emit, control, step)))
      return failure();
    // The next condition: read back unless the body passes it through.
    Value next = yield->getOperand(0);
    if (next != body.getArgument(1)) {
      if (failed(readScalar(*this, op, run, control, next, "next" + id, true,
                            "the body's condition", target)))
        return failure();
      run.line("cond{0} = next{0};", id);
    }
    for (size_t k = 0; k < numCarried; ++k) {
      Value yielded = yield->getOperand(1 + k);
      std::string from = lookup(yielded);
      if (from.empty() || valueBytes(yielded) != valueBytes(op.getResult(k)))
        return op.emitOpError() << target << " target: the body yields " << yielded.getType()
                                << " for carried value " << k << " of type "
                                << op.getResult(k).getType();
      if (from != where[op.getResult(k)])
        control.copy(run, where[op.getResult(k)], from, valueBytes(yielded));
    }
    for (size_t j = 0; j < numScan; ++j) {
      Value yielded = yield->getOperand(1 + numCarried + j);
      Value result = op.getResult(numCarried + j);
      int64_t rowBytes = rows > 0 ? valueBytes(result) / rows : 0;
      std::string from = lookup(yielded);
      if (from.empty() || valueBytes(yielded) != rowBytes)
        return op.emitOpError() << target << " target: the body yields " << yielded.getType()
                                << " for scan output " << j << " of type " << result.getType();
      control.copy(run, "(void *)((unsigned char *)" + where[result] + " + iter" + id + " * " +
                            decimal(rowBytes) + ")",
                   from, rowBytes);
    }
  }
  if (rows >= 0) {
    run.line("if (iter{0} != {1})", id, rows);
    run.line("  return sluice_fail(args, \"loop\", \"stopped before the {0} iterations its scan outputs hold\");", rows);
  }
  return success();
}

FailureOr<std::vector<RunBuffers::OutputCopy>>
RunBuffers::outputCopies(func::ReturnOp ret, StringRef target) const {
  std::vector<OutputCopy> copies;
  auto func = ret->getParentOfType<func::FuncOp>();
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    std::string out = "args->outputs[" + decimal(index) + "]";
    std::string from = lookup(value);
    if (from.empty())
      return func.emitError() << target << " target: an output has no buffer";
    if (from == out)
      continue;
    if (!cast<RankedTensorType>(value.getType()).hasStaticShape())
      return func.emitError() << target << " target: output " << index
                             << " has data-dependent dims and is returned twice";
    copies.push_back({out, from, value});
  }
  return copies;
}

void writePipelinedRun(CodeWriter &run, const ModelFacts &facts, StringRef stream) {
  func::FuncOp func = facts.func;
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  size_t ins = block.getNumArguments(), outs = ret.getNumOperands();
  // One micro-batch's bytes of a boundary value (the program's own type).
  auto bytesOf = [](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    return product(type.getShape()) * storageBytes(type.getElementType());
  };
  run.line("const void *micro_inputs[{0}];", std::max<size_t>(ins, 1));
  run.line("void *micro_outputs[{0}];", std::max<size_t>(outs, 1));
  run.line("SluiceRunArgs micro = *args;");
  run.line("micro.inputs = micro_inputs;");
  run.line("micro.outputs = micro_outputs;");
  {
    auto loop = run.block("for (int64_t m = 0; m < {0}; ++m)", facts.microBatches);
    for (size_t i = 0; i < ins; ++i)
      run.line("micro_inputs[{0}] = (const unsigned char *)args->inputs[{0}] + m * {1};", i,
               cInt64(bytesOf(block.getArgument(i))));
    for (size_t i = 0; i < outs; ++i)
      run.line("micro_outputs[{0}] = (unsigned char *)args->outputs[{0}] + m * {1};", i,
               cInt64(bytesOf(ret.getOperand(i))));
    run.line("if ({0}(&micro))", kStageRunFunction);
    run.line("  return 1;");
  }
  // Every rank holds the outputs (docs/parallel.md, "Launch modes").
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    int64_t stage = facts.stageOf(v);
    if (stage < 0)
      continue;
    run.line("if (sluice_broadcast(args, {0}, args->outputs[{1}], {2}, SLUICE_COMM_U8, {3}, "
             "(void *){4}))",
             cStringLiteral("output " + facts.outputs[i].name), i,
             cInt64(bytesOf(v) * facts.microBatches), stage * facts.tp, stream);
    run.line("  return 1;");
  }
}

} // namespace sluice::codegen
