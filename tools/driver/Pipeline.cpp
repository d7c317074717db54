//===- Pipeline.cpp - compiler phases, options and driver -----------------===//

#include "tools/driver/Pipeline.h"

#include "dialects/sluice/SluiceOps.h"
#include "lib/onnx/Importer.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/Locations.h"
#include "lib/support/TensorFiles.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <chrono>
#include <cstdio>

using namespace mlir;

namespace sluice {

static const char *const kPhaseNames[] = {
    "import", "simplify", "recognize", "compress",
    "parallelize", "fuse", "plan", "emit"};

const char *phaseName(Phase phase) { return kPhaseNames[(int)phase]; }

void notePhase(const CompilerOptions &options, std::vector<PhaseTiming> *timings,
               Phase phase, const std::string &name, double milliseconds) {
  if (timings)
    timings->push_back({name, milliseconds});
  if (!options.phaseProgress)
    return;
  // Flushed at once: a long compile shows where it is as it goes.
  std::fprintf(stderr, "sluice-compile: [%d/%d] %s %.2f s\n", (int)phase + 1,
               (int)Phase::Emit + 1, name.c_str(), milliseconds / 1000.0);
  std::fflush(stderr);
}

std::optional<Phase> parsePhase(StringRef name) {
  for (int i = 0; i <= (int)Phase::Emit; ++i)
    if (name == kPhaseNames[i])
      return (Phase)i;
  return std::nullopt;
}

void buildSimplifyPipeline(OpPassManager &pm, const CompilerOptions &options) {
  // Shapes first: folding the exporters' Shape->Gather->Concat chains is what
  // makes Reshape targets constant, which canonicalization then relies on.
  // Tensor inputs got their --shape at import; sequence inputs get their
  // element shapes here (each becomes its element tensors).
  SpecializeShapesPassOptions specialize;
  for (const auto &[name, shapes] : options.sequenceShapes)
    specialize.shapes.push_back(sequenceShapeSpec(name, shapes));
  for (const std::string &name : options.absentInputs)
    specialize.shapes.push_back(name + "=none");
  pm.addNestedPass<func::FuncOp>(sluice::createSpecializeShapesPass(specialize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // CSE can merge constants that only now became equal; fold what that opens.
  pm.addNestedPass<func::FuncOp>(sluice::createFoldConstantsPass());
  // Static ifs, loops, scans and sequences: resolved once shapes and
  // constants are known, before anything matches patterns across them.
  pm.addNestedPass<func::FuncOp>(sluice::createResolveControlFlowPass());
  pm.addPass(createCanonicalizerPass());
}

void buildRecognizePipeline(OpPassManager &pm, const CompilerOptions &options) {
  if (!options.recognize)
    return;
  // Norms and activations first: they shrink the chains the attention
  // matcher walks past (a LayerNorm feeding Q/K/V is one op by then).
  // Canonicalization then drops the constants and mask computations the
  // rewritten chains no longer read.
  pm.addNestedPass<func::FuncOp>(sluice::createRecognizeNormsPass());
  pm.addNestedPass<func::FuncOp>(sluice::createRecognizeActivationsPass());
  pm.addNestedPass<func::FuncOp>(sluice::createRecognizeAttentionPass());
  // After the activations (an expert's GELU is one op by then), before the
  // batched-Linear rewrite (which would take a dense expert's MatMul).
  pm.addNestedPass<func::FuncOp>(sluice::createRecognizeMoePass());
  // Last: HF Conv1D's flatten -> Gemm -> unflatten as one batched Linear, so
  // that GELU and the residual add join the GEMM's epilogue.
  pm.addNestedPass<func::FuncOp>(sluice::createRecognizeLinearPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

std::string modulePrecision(ModuleOp module) {
  if (auto func = module.lookupSymbol<func::FuncOp>("main"))
    if (auto precision = func->getAttrOfType<StringAttr>("sluice.precision"))
      return precision.str();
  return "fp32";
}

/// sluice-quantize's options from the driver's (--quantize and friends).
static QuantizePassOptions quantizeOptions(const CompilerOptions &options,
                                           const std::string &mode) {
  QuantizePassOptions quantize;
  quantize.mode = mode;
  quantize.calibration = options.calibration;
  quantize.method = choiceName(options.calibrationMethod);
  quantize.metric = choiceName(options.accuracyMetric);
  quantize.budget = options.accuracyBudget;
  quantize.smoothQuant = options.smoothQuant;
  quantize.cache = options.quantizationCache;
  quantize.progress = options.progress;
  return quantize;
}

/// The compress phase with --precision and --quantize as the passes spell
/// them: sluice-opt's pipeline passes names the driver did not check, which
/// the passes then report.
static void buildCompressPipeline(OpPassManager &pm, const CompilerOptions &options,
                                  const std::string &precisionName,
                                  const std::string &quantizeName) {
  // Pruning before quantization (docs/pruning.md): the calibration ranges
  // and the int8 guard then see the pruned model, and the pruned GEMMs are
  // the ones quantized. Structured pruning first, so that 2:4 picks its
  // weights among the units that stay.
  if (options.pruneHeads > 0 || options.pruneFfn > 0 || options.pruneChannels > 0) {
    PrunePassOptions prune;
    prune.heads = options.pruneHeads;
    prune.ffn = options.pruneFfn;
    prune.channels = options.pruneChannels;
    prune.calibration = options.calibration;
    prune.metric = choiceName(options.accuracyMetric);
    prune.budget = options.accuracyBudget;
    prune.progress = options.progress;
    pm.addPass(sluice::createPrunePass(prune));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (options.sparsity != Sparsity::None) {
    SparsifyPassOptions sparsify;
    sparsify.pattern = passOptionName(options.sparsity);
    sparsify.calibration = options.calibration;
    sparsify.metric = choiceName(options.accuracyMetric);
    sparsify.budget = options.accuracyBudget;
    sparsify.progress = options.progress;
    pm.addPass(sluice::createSparsifyPass(sparsify));
  }
  // Explicit quantization first: a QDQ model's GEMMs become integer ops on
  // the int8 weights (simplify left them unfolded), then whatever
  // dequantized weight is left folds to float.
  pm.addNestedPass<func::FuncOp>(sluice::createFoldQdqPass());
  FoldConstantsPassOptions fold;
  fold.foldDequantize = true;
  pm.addNestedPass<func::FuncOp>(sluice::createFoldConstantsPass(fold));
  // Calibrated int8 / fp8 on the f32 graph, before any precision conversion
  // (which then narrows what stays float).
  if (quantizeName == "int8" || quantizeName == "fp8") {
    pm.addPass(sluice::createQuantizePass(quantizeOptions(options, quantizeName)));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // After recognize: the composites (norms, softmax inside attention) are
  // single ops by then, which the conversion keeps in half with fp32
  // statistics; their decomposed chains would hold exp/pow/reduce-sum ops
  // that stay fp32. Before fuse: groups form on the converted types.
  if (precisionName != "fp32") {
    ConvertPrecisionPassOptions precision;
    precision.precision = precisionName;
    pm.addNestedPass<func::FuncOp>(sluice::createConvertPrecisionPass(precision));
  }
  // Weight-only quantization after the precision: an fp16 model's weights
  // dequantize to f16 directly (no cast in the GEMM's prologue).
  if (quantizeName == "w8a16" || quantizeName == "w4a16") {
    // sluice-quantize in a weight-only mode: sluice-quantize-weights'
    // rewrite, under the accuracy guard when calibration data is given.
    pm.addPass(sluice::createQuantizePass(quantizeOptions(options, quantizeName)));
  }
}

void buildCompressPipeline(OpPassManager &pm, const CompilerOptions &options) {
  buildCompressPipeline(pm, options, choiceName(options.precision),
                        passOptionName(options.quantize));
}

void buildParallelizePipeline(OpPassManager &pm, const CompilerOptions &options) {
  // After compress: the split weights are the converted ones. Before fuse:
  // collectives become library calls like GEMMs, and groups form on the
  // per-rank shapes.
  // Always: at --ep=1 it only lists the MoE layers for the report.
  ExpertParallelPassOptions experts;
  experts.ep = options.ep;
  pm.addNestedPass<func::FuncOp>(sluice::createExpertParallelPass(experts));
  if (options.tp > 1) {
    PlanTensorParallelPassOptions plan;
    plan.tp = options.tp;
    plan.sp = options.sp;
    pm.addNestedPass<func::FuncOp>(sluice::createPlanTensorParallelPass(plan));
    pm.addNestedPass<func::FuncOp>(sluice::createPartitionPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  // Stages last: they cut the per-rank program, whose costs are what one
  // rank runs. No cleanup after it: CSE would merge the per-stage copies
  // of a weight back into one.
  if (options.pp > 1) {
    PipelinePassOptions pipeline;
    pipeline.pp = options.pp;
    pipeline.microBatches = options.microBatches;
    pm.addNestedPass<func::FuncOp>(sluice::createPipelinePass(pipeline));
  }
}

std::vector<std::string> compositesToDecompose(Target target) {
  // The composites each target's code generator has kernels for; the rest
  // are decomposed back to primitive ops at the start of the fuse phase.
  static const char *const kAll[] = {"sluice.gelu", "sluice.silu",
                                     "sluice.layer_norm", "sluice.rms_norm",
                                     "sluice.attention", "sluice.moe"};
  std::vector<std::string> implemented;
  // cpu and cuda: every composite (on cuda, forms without a kernel run as
  // host steps through the cpu emitter).
  if (target == Target::Cpu || target == Target::Cuda)
    implemented = {"sluice.gelu", "sluice.silu", "sluice.layer_norm", "sluice.rms_norm",
                   "sluice.attention"};
  std::vector<std::string> decompose;
  for (const char *name : kAll)
    if (!llvm::is_contained(implemented, name))
      decompose.push_back(name);
  return decompose;
}

void buildFusePipeline(OpPassManager &pm, const CompilerOptions &options) {
  // First: the bundle's boundary becomes tensors (a returned sequence its
  // elements). Not in simplify, which the reference evaluator also runs and
  // whose sequence outputs stay sequences there.
  pm.addNestedPass<func::FuncOp>(sluice::createFlattenSequenceIOPass());
  std::vector<std::string> decompose = compositesToDecompose(options.target);
  if (!decompose.empty()) {
    DecomposeCompositesPassOptions decomposeOptions;
    decomposeOptions.ops.assign(decompose.begin(), decompose.end());
    // cpu and cuda run sluice.moe with the MoE kernel where it applies
    // (static f32, lib/kernel/Moe.h); the others take the dense form.
    decomposeOptions.keepMoeKernels =
        options.target == Target::Cpu || options.target == Target::Cuda;
    pm.addNestedPass<func::FuncOp>(sluice::createDecomposeCompositesPass(decomposeOptions));
  }
  if (options.fusion == Fusion::All)
    pm.addNestedPass<func::FuncOp>(sluice::createFuseHorizontalGemmsPass());
  if (options.fusion != Fusion::None) {
    FuseGroupsPassOptions groups;
    groups.mode = choiceName(options.fusion);
    // The cuda target runs Form F8 as one fp8 GEMM (cuBLASLt); the cpu
    // emulates it with the dequantizations in the producers' kernels.
    groups.fp8Gemm = options.target == Target::Cuda;
    groups.convEpilogue = options.target == Target::Cpu;
    pm.addNestedPass<func::FuncOp>(sluice::createFuseGroupsPass(groups));
  }
  pm.addNestedPass<func::FuncOp>(sluice::createFormKernelsPass());
}

void buildPlanPipeline(OpPassManager &pm, const CompilerOptions &options) {
  pm.addNestedPass<func::FuncOp>(sluice::createPlanBuffersPass());
  ConfigureTargetPassOptions configure;
  configure.isa = choiceName(options.cpuIsa);
  configure.conv = choiceName(options.cpuConv);
  configure.packedWeights = options.cpuPackedWeights;
  configure.cusparseltHeader = options.cusparseltHeader;
  configure.cusparseltLibDir = options.cusparseltLibDir;
  pm.addPass(sluice::createConfigureTargetPass(configure));
}

namespace {
struct CompressPipelineOptions : public PassPipelineOptions<CompressPipelineOptions> {
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("fp32 (no change), fp16 or bf16"),
                                llvm::cl::init("fp32")};
  Option<std::string> quantize{*this, "quantize",
                               llvm::cl::desc("weight-only quantization: w8a16 or w4a16"),
                               llvm::cl::init("")};
};
struct ParallelizePipelineOptions : public PassPipelineOptions<ParallelizePipelineOptions> {
  Option<int64_t> tp{*this, "tp", llvm::cl::desc("tensor-parallel ranks"), llvm::cl::init(1)};
  Option<bool> sp{*this, "sp", llvm::cl::desc("sequence parallelism"), llvm::cl::init(false)};
  Option<int64_t> pp{*this, "pp", llvm::cl::desc("pipeline stages"), llvm::cl::init(1)};
  Option<int64_t> microBatches{*this, "micro-batches", llvm::cl::desc("micro-batches"),
                               llvm::cl::init(1)};
  Option<int64_t> ep{*this, "ep", llvm::cl::desc("expert-parallel ranks"), llvm::cl::init(1)};
};
} // namespace

void registerPipelines() {
  PassPipelineRegistration<CompressPipelineOptions>(
      "sluice-compress-pipeline", "The compress phase: --precision conversion",
      [](OpPassManager &pm, const CompressPipelineOptions &pipelineOptions) {
        // Unknown names reach the passes, which report them.
        buildCompressPipeline(pm, CompilerOptions(),
                              sluice::parsePrecision(pipelineOptions.precision)
                                  .value_or(std::string(pipelineOptions.precision)),
                              pipelineOptions.quantize);
      });
  PassPipelineRegistration<>(
      "sluice-fuse-pipeline", "The fuse phase: kernel groups and library calls",
      [](OpPassManager &pm) { buildFusePipeline(pm, CompilerOptions()); });
  PassPipelineRegistration<ParallelizePipelineOptions>(
      "sluice-parallelize-pipeline",
      "The parallelize phase: tensor (and sequence), expert and pipeline parallel split",
      [](OpPassManager &pm, const ParallelizePipelineOptions &pipelineOptions) {
        CompilerOptions options;
        options.tp = pipelineOptions.tp;
        options.sp = pipelineOptions.sp;
        options.pp = pipelineOptions.pp;
        options.microBatches = pipelineOptions.microBatches;
        options.ep = pipelineOptions.ep;
        buildParallelizePipeline(pm, options);
      });
  PassPipelineRegistration<>(
      "sluice-plan-pipeline", "The plan phase: arena offsets by liveness",
      [](OpPassManager &pm) { buildPlanPipeline(pm, CompilerOptions()); });
  PassPipelineRegistration<>(
      "sluice-recognize-pipeline",
      "The recognize phase: norms, activations and attention as composite ops",
      [](OpPassManager &pm) { buildRecognizePipeline(pm, CompilerOptions()); });
  PassPipelineRegistration<>(
      "sluice-simplify-pipeline",
      "The simplify phase: shape propagation, folding, canonicalization, CSE",
      [](OpPassManager &pm) { buildSimplifyPipeline(pm, CompilerOptions()); });
}

bool parseShapeOption(StringRef text,
                      std::map<std::string, std::vector<int64_t>> &shapes,
                      std::string &error) {
  auto [name, dims] = text.rsplit('=');
  auto parsed = sluice::parseShape(dims);
  if (name.empty() || !text.contains('=') || failed(parsed)) {
    error = "bad --shape '" + text.str() + "' (expected NAME=2x128)";
    return false;
  }
  shapes[name.str()] = *parsed;
  return true;
}

bool parseShapeOption(StringRef text, CompilerOptions &options, std::string &error) {
  auto [name, dims] = text.rsplit('=');
  // "none": an optional input compiled absent.
  if (dims.trim() == "none" && !name.empty()) {
    options.absentInputs.insert(name.str());
    options.inputShapes.erase(name.str());
    options.sequenceShapes.erase(name.str());
    return true;
  }
  options.absentInputs.erase(name.str());
  // One shape is a tensor's, or a one-element sequence's (the import tells
  // which); a list or "empty" can only be a sequence's.
  if (!dims.contains(',') && dims.trim() != "empty") {
    if (!parseShapeOption(text, options.inputShapes, error))
      return false;
    options.sequenceShapes.erase(name.str());
    return true;
  }
  auto parsed = sluice::parseShapeList(dims);
  if (name.empty() || !text.contains('=') || failed(parsed)) {
    error = "bad --shape '" + text.str() +
            "' (expected NAME=2x128, or a sequence's element shapes NAME=2x128,3x128 or "
            "NAME=empty)";
    return false;
  }
  options.sequenceShapes[name.str()] = *parsed;
  options.inputShapes.erase(name.str());
  return true;
}

bool parseShapesOption(StringRef text, ShapeVariants &variants, std::string &error) {
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/true);
  for (StringRef item : items) {
    auto [name, dims] = item.trim().rsplit('=');
    auto parsed = sluice::parseShape(dims);
    if (name.empty() || !item.contains('=') || dims.trim().empty() || failed(parsed)) {
      error = "bad --shapes item '" + item.str() + "' in '" + text.str() +
              "' (expected comma-separated NAME=DIMS items, e.g. --shapes=x=1x128,x=8x128)";
      return false;
    }
    variants[name.str()].push_back(*parsed);
  }
  return true;
}

static std::string dimsText(const std::vector<int64_t> &dims) {
  std::string text;
  for (int64_t d : dims)
    text += (text.empty() ? "" : "x") + std::to_string(d);
  return text.empty() ? "scalar" : text;
}

std::string describeShapeVariants(const ShapeVariants &variants) {
  std::string text;
  for (const auto &[name, shapes] : variants) {
    text += (text.empty() ? "" : "; ") + name + ":";
    for (size_t i = 0; i < shapes.size(); ++i)
      text += (i ? " | " : " ") + dimsText(shapes[i]);
  }
  return text;
}

bool shapeVariants(const ShapeVariants &variants, const CompilerOptions &options,
                   std::vector<std::map<std::string, std::vector<int64_t>>> &result,
                   std::string &error) {
  result.clear();
  size_t count = 0;
  std::string first;
  for (const auto &[name, shapes] : variants) {
    if (options.inputShapes.count(name) || options.sequenceShapes.count(name) ||
        options.absentInputs.count(name)) {
      error = "input '" + name + "' is given both --shape (fixed across variants) and " +
              "--shapes (one shape per variant): give it one of them";
      return false;
    }
    if (count == 0) {
      count = shapes.size();
      first = name;
    } else if (shapes.size() != count) {
      error = "--shapes lists " + std::to_string(count) + " shapes for '" + first + "' and " +
              std::to_string(shapes.size()) + " for '" + name +
              "': every input it lists needs one shape per variant (" +
              describeShapeVariants(variants) + ")";
      return false;
    }
  }
  if (count < 2) {
    error = "--shapes needs at least two shapes per input (one shape is --shape=" + first +
            "=DIMS)";
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    std::map<std::string, std::vector<int64_t>> shapes = options.inputShapes;
    for (const auto &[name, list] : variants)
      shapes[name] = list[i];
    for (size_t j = 0; j < result.size(); ++j)
      if (result[j] == shapes) {
        std::string which;
        for (const auto &[name, list] : variants)
          which += (which.empty() ? "" : ", ") + name + "=" + dimsText(list[i]);
        error = "--shapes lists the variant " + which + " twice (variants " +
                std::to_string(j) + " and " + std::to_string(i) + ")";
        return false;
      }
    result.push_back(std::move(shapes));
  }
  return true;
}

std::string sequenceShapeSpec(const std::string &name,
                              const std::vector<std::vector<int64_t>> &shapes) {
  std::string text;
  for (const auto &dims : shapes) {
    std::string shape;
    for (int64_t d : dims)
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
    text += (text.empty() ? "" : ",") + (shape.empty() ? "scalar" : shape);
  }
  return name + "=" + (shapes.empty() ? "empty" : text);
}

parallel::PlanRequest CompilerOptions::planRequest() const {
  parallel::PlanRequest request;
  request.devices = devices;
  request.deviceMemory = deviceMemory;
  request.objective = choiceName(objective);
  request.cluster = cluster;
  // Every kind of plan compiles: tensor (and sequence), pipeline (the
  // driver re-imports at the micro-batch's shapes, compileModel) and expert.
  request.pipelineCompiles = true;
  request.expertsCompile = true;
  return request;
}

/// The automatic plan, between compress and parallelize: plans `module`,
/// hands the result to `options.planResult` and returns the chosen
/// candidate (compileModel applies it).
static FailureOr<parallel::PlanCandidate> runAutoPlan(ModuleOp module,
                                                      const CompilerOptions &options,
                                                      std::string &error,
                                                      std::vector<PhaseTiming> *timings) {
  auto start = std::chrono::steady_clock::now();
  parallel::PlanRequest request = options.planRequest();
  parallel::PlanResult plan = parallel::planParallel(module, request);
  if (auto func = module.lookupSymbol<func::FuncOp>("main")) {
    if (auto n = func->getAttrOfType<IntegerAttr>(onnx_import::kWeightsAbsentAttr))
      plan.absentWeights = n.getInt();
    if (auto b = func->getAttrOfType<IntegerAttr>(onnx_import::kWeightsAbsentBytesAttr))
      plan.absentBytes = (double)b.getInt();
  }
  if (options.planResult)
    *options.planResult = plan;
  // The plan is part of the compress phase's end (it reads its program).
  notePhase(options, timings, Phase::Compress, "auto-plan",
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
  if (plan.chosen < 0) {
    error += "--devices=" + std::to_string(options.devices) + ": " + plan.error + "\n";
    return failure();
  }
  const parallel::PlanCandidate &chosen = plan.candidates[plan.chosen];
  if (options.remarks)
    options.remarks->push_back("auto plan: " + chosen.describe() + ": " + plan.reason);
  return chosen;
}

LogicalResult runPhases(ModuleOp module, const CompilerOptions &options,
                        Phase after, Phase stopAfter, std::string &error,
                        std::vector<PhaseTiming> *timings) {
  MLIRContext &context = *module.getContext();
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      error += describeLocation(diag.getLocation()) + ": " +
               diag.str() + "\n";
    if (diag.getSeverity() == DiagnosticSeverity::Remark && options.remarks)
      options.remarks->push_back(describeLocation(diag.getLocation()) + ": " +
                                 diag.str());
    if (diag.getSeverity() == DiagnosticSeverity::Warning) {
      std::string line = describeLocation(diag.getLocation()) + ": " + diag.str();
      llvm::errs() << "sluice-compile: warning: " << line << "\n";
      if (options.warnings)
        options.warnings->push_back(line);
    }
    return success();
  });
  struct Step {
    Phase phase;
    void (*build)(OpPassManager &, const CompilerOptions &);
  };
  // emit is the caller's (it writes files).
  const Step steps[] = {{Phase::Simplify, buildSimplifyPipeline},
                        {Phase::Recognize, buildRecognizePipeline},
                        {Phase::Compress, buildCompressPipeline},
                        {Phase::Parallelize, buildParallelizePipeline},
                        {Phase::Fuse, buildFusePipeline},
                        {Phase::Plan, buildPlanPipeline}};
  for (const Step &step : steps) {
    if (after >= step.phase || stopAfter < step.phase)
      continue;
    auto start = std::chrono::steady_clock::now();
    PassManager pm(&context);
    step.build(pm, options);
    if (failed(pm.run(module))) {
      if (error.empty())
        error = std::string(phaseName(step.phase)) + " phase failed\n";
      return failure();
    }
    notePhase(options, timings, step.phase, phaseName(step.phase),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  }
  return success();
}

/// Replaces each bound input by a constant holding its file's tensor and
/// drops it from `main`'s arguments and input names.
static LogicalResult bindInputs(ModuleOp module,
                                const std::map<std::string, std::string> &bound,
                                const std::string &modelPath, std::string &error) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return failure();
  auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
  for (const auto &[name, file] : bound) {
    std::optional<unsigned> index;
    for (unsigned i = 0; names && i < names.size(); ++i)
      if (auto s = dyn_cast<StringAttr>(names[i]); s && s.getValue() == name)
        index = i;
    if (!index) {
      error += modelPath + ": --bind names '" + name + "', which is not a model input\n";
      return failure();
    }
    Tensor tensor;
    std::string readError;
    if (!readTensorFile(file, tensor, readError)) {
      error += readError + "\n";
      return failure();
    }
    if (tensor.dtype() == DType::String) {
      error += file + ": --bind of input '" + name +
               "': string tensors cannot become constants\n";
      return failure();
    }
    BlockArgument arg = func.getArgument(*index);
    auto argType = cast<TensorType>(arg.getType());
    auto dtype = dtypeFromType(argType.getElementType());
    if (failed(dtype) || *dtype != tensor.dtype()) {
      error += file + ": --bind of input '" + name + "': element type differs from the model's\n";
      return failure();
    }
    auto type = RankedTensorType::get(tensor.shape(), argType.getElementType());
    if (argType.hasRank() && !areCompatibleResultTypes(TypeRange{type}, TypeRange{argType})) {
      error += file + ": --bind of input '" + name + "': shape differs from the model's\n";
      return failure();
    }
    OpBuilder builder(func.getBody());
    builder.setInsertionPointToStart(&func.getBody().front());
    auto constant = sluice::ConstantOp::create(
        builder, arg.getLoc(), attrFromTensor(module.getContext(), tensor, type));
    arg.replaceAllUsesWith(constant);
    if (failed(func.eraseArgument(*index)))
      return failure();
    SmallVector<Attribute> remaining(names.begin(), names.end());
    remaining.erase(remaining.begin() + *index);
    names = ArrayAttr::get(module.getContext(), remaining);
    func->setAttr("sluice.input_names", names);
  }
  return success();
}

/// The input shapes of one micro-batch of `module`'s imported `main`: dim 0
/// of every input divided by `micro`. Fails naming the input whose shape is
/// not static or whose dim 0 `micro` does not divide.
static LogicalResult microBatchShapes(ModuleOp module, int64_t micro,
                                      std::map<std::string, std::vector<int64_t>> &shapes,
                                      std::string &error) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto name = names && i < names.size() ? dyn_cast<StringAttr>(names[i]) : StringAttr();
    std::string input = name ? name.str() : "input" + std::to_string(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape() || type.getRank() == 0) {
      error += "--micro-batches=" + std::to_string(micro) + " splits dim 0 of every input: " +
               "input '" + input + "' needs a static shape with a batch dim (--shape=" + input +
               "=DIMS)\n";
      return failure();
    }
    if (type.getDimSize(0) % micro != 0) {
      error += "--micro-batches=" + std::to_string(micro) + " does not divide dim 0 (" +
               std::to_string(type.getDimSize(0)) + ") of input '" + input + "'\n";
      return failure();
    }
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    shape[0] /= micro;
    shapes[input] = shape;
  }
  return success();
}

/// compileModel without the automatic plan's second import.
static OwningOpRef<ModuleOp> compileOnce(MLIRContext &context, const std::string &modelPath,
                                         const CompilerOptions &options, Phase stopAfter,
                                         std::string &error, std::vector<PhaseTiming> *timings) {
  auto start = std::chrono::steady_clock::now();
  // A .mlir file (what --emit=mlir or sluice-opt wrote) continues from the
  // phase it is in: after fuse when it holds kernel groups, after plan when
  // they carry arena offsets, after import otherwise.
  Phase loadedAfter = Phase::Import;
  OwningOpRef<ModuleOp> module;
  if (llvm::StringRef(modelPath).ends_with(".mlir")) {
    context.loadDialect<SluiceDialect, func::FuncDialect>();
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        error += modelPath + ": " + diag.str() + "\n";
      return success();
    });
    if (options.microBatches > 1) {
      // The ONNX import is where dim 0 is divided; a parsed program keeps
      // the shapes it has.
      error = modelPath + ": --micro-batches compiles the program at the micro-batch's shapes, "
                          "which the ONNX import sets: give the .onnx model\n";
      return nullptr;
    }
    module = parseSourceFile<ModuleOp>(modelPath, &context);
    if (!module) {
      if (error.empty())
        error = modelPath + ": cannot read or parse this MLIR file\n";
      return nullptr;
    }
    if (!module->lookupSymbol<func::FuncOp>("main")) {
      error = modelPath + ": no function 'main'\n";
      return nullptr;
    }
    module->walk([&](KernelOp kernel) {
      Phase p = kernel.getArenaOffsetsAttr() ? Phase::Plan : Phase::Fuse;
      if (p > loadedAfter)
        loadedAfter = p;
    });
    // The precision is chosen in the compress phase (which records it on
    // the function); a module past it keeps the one it has.
    std::string recorded = modulePrecision(*module);
    std::string asked = choiceName(options.precision);
    if (options.precision != Precision::Fp32 && asked != recorded &&
        loadedAfter > Phase::Compress) {
      error = modelPath + ": --precision=" + asked +
              " converts the graph in the compress phase, and this file is past it (it "
              "holds kernel groups, in " +
              recorded + "); give --precision when compiling the earlier phase\n";
      return nullptr;
    }
  } else {
    onnx_import::ImportOptions importOptions;
    importOptions.inputShapes = options.inputShapes;
    importOptions.variedInputs = options.variedInputs;
    importOptions.absentWeightsAsShapes = options.planOnly;
    module = onnx_import::importModel(context, modelPath, importOptions, error);
    if (module && options.microBatches > 1) {
      // The program runs one micro-batch: import again with dim 0 of every
      // input divided by M (the bundle's boundary keeps the whole batch).
      if (failed(microBatchShapes(*module, options.microBatches, importOptions.inputShapes,
                                  error)))
        return nullptr;
      module = onnx_import::importModel(context, modelPath, importOptions, error);
    }
  }
  if (!module)
    return nullptr;
  // A one-shape --shape on a sequence input binds a one-element sequence:
  // the import left that input as it is, the simplify phase flattens it.
  CompilerOptions withSequences;
  const CompilerOptions *phaseOptions = &options;
  if (auto func = module->lookupSymbol<func::FuncOp>("main");
      func && !options.inputShapes.empty()) {
    auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      auto name = names && i < names.size() ? dyn_cast<StringAttr>(names[i]) : StringAttr();
      auto shape = name ? options.inputShapes.find(name.str()) : options.inputShapes.end();
      if (!isa<SequenceType, OptionalType>(arg.getType()) || shape == options.inputShapes.end())
        continue;
      if (phaseOptions == &options) {
        withSequences = options;
        phaseOptions = &withSequences;
      }
      withSequences.sequenceShapes[shape->first] = {shape->second};
    }
  }
  notePhase(options, timings, Phase::Import, "import",
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
  if (!options.boundInputs.empty() &&
      failed(bindInputs(*module, options.boundInputs, modelPath, error)))
    return nullptr;
  if (failed(runPhases(*module, *phaseOptions, loadedAfter, stopAfter, error, timings)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> compileModel(MLIRContext &context, const std::string &modelPath,
                                   const CompilerOptions &options, Phase stopAfter,
                                   std::string &error, std::vector<PhaseTiming> *timings) {
  // The plan (--devices) runs on the whole batch's program after compress:
  // for --emit=plan, then stops; for --auto, a plan that streams
  // micro-batches needs the program at the micro-batch's shapes, which the
  // import sets, so that one is compiled again from the import; any other
  // continues from compress with the chosen grid.
  bool plans = options.devices > 0 &&
               (options.planOnly || (options.autoPlan && stopAfter >= Phase::Parallelize));
  if (!plans)
    return compileOnce(context, modelPath, options, stopAfter, error, timings);
  OwningOpRef<ModuleOp> module = compileOnce(
      context, modelPath, options, std::min(stopAfter, Phase::Compress), error, timings);
  if (!module)
    return nullptr;
  if (module->walk([](KernelOp) { return WalkResult::interrupt(); }).wasInterrupted()) {
    error = modelPath + ": --devices plans the program before the fuse phase, and this file is "
                        "past it: give the .onnx model or an earlier phase's .mlir\n";
    return nullptr;
  }
  FailureOr<parallel::PlanCandidate> chosen = runAutoPlan(*module, options, error, timings);
  if (failed(chosen))
    return nullptr;
  if (options.planOnly)
    return module;
  CompilerOptions fixed = options;
  fixed.devices = 0;
  fixed.autoPlan = false;
  fixed.tp = chosen->tp;
  fixed.sp = chosen->sp;
  fixed.pp = chosen->pp;
  fixed.microBatches = chosen->microBatches;
  fixed.ep = chosen->ep;
  if (fixed.microBatches > 1)
    return compileOnce(context, modelPath, fixed, stopAfter, error, timings);
  if (failed(runPhases(*module, fixed, Phase::Compress, stopAfter, error, timings)))
    return nullptr;
  return module;
}

} // namespace sluice
