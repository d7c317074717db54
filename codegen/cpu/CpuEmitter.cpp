//===- CpuEmitter.cpp - kernel groups to one C++ source (cpu target) ------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/Collective.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/cpu/Groups.h"
#include "codegen/common/KernelModel.h"
#include "dialects/sluice/SluicePipelineOps.h"
#include "lib/support/Locations.h"
#include "lib/reference/Evaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <map>

using namespace mlir;

namespace sluice::codegen {

const CpuOpRegistry &CpuOpRegistry::get() {
  static const CpuOpRegistry registry = [] {
    CpuOpRegistry r;
    registerCpuLinalgEmitters(r);
    registerCpuMovementEmitters(r);
    registerCpuReductionEmitters(r);
    registerCpuNNEmitters(r);
    registerCpuMiscEmitters(r);
    registerCpuMoeEmitters(r);
    // Collectives: one call through the run's communicator.
    for (StringRef name : {AllReduceOp::getOperationName(), AllGatherOp::getOperationName(),
                           ReduceScatterOp::getOperationName(), AllToAllOp::getOperationName(),
                           TransferOp::getOperationName()})
      r.add(name, [](CpuOpContext &ctx) -> LogicalResult {
        auto call = collectiveCall(ctx.op, ctx.kernelName, ctx.in[0], ctx.out[0], "0");
        if (failed(call))
          return failure();
        ctx.include("sluice_gen/comm.h");
        ctx.code.line("{0}", *call);
        return success();
      });
    return r;
  }();
  return registry;
}

bool cpuImplements(Operation *op) {
  return CpuOpRegistry::get().lookup(op->getName().getStringRef()) != nullptr;
}

namespace {

/// Form F5: one op through the op registry (CpuEmitter.h); layout-preserving
/// views on its operands and results are aliases of the buffers. Statements
/// go to `fnBody`.
LogicalResult emitSingleOp(GroupContext &gctx, Operation *inner, std::string &fnBody) {
  const CpuOpRegistry &registry = CpuOpRegistry::get();
  KernelOp kernel = gctx.kernel;
  const std::string &name = gctx.name;
  std::set<std::string> &headers = *gctx.headers;
  DenseI64ArrayAttr offsets = kernel.getArenaOffsetsAttr();
  auto yield = cast<KernelYieldOp>(kernel.getBody().front().getTerminator());
  CpuOpContext ctx;
  ctx.op = inner;
  ctx.kernelName = name;
  ctx.headers = &headers;
  for (Value operand : inner->getOperands()) {
    auto view = resolveView(operand);
    if (failed(view))
      return failure();
    if (!kernel::readsContiguously(*view, operand))
      return inner->emitOpError("cpu target: operand is a strided view; this op reads contiguous buffers");
    auto ptr = gctx.leafPointer(*view);
    if (failed(ptr))
      return failure();
    ctx.in.push_back(*ptr);
  }
  for (auto [i, result] : llvm::enumerate(inner->getResults())) {
    // The yield that carries this result (directly or through reshapes).
    std::optional<unsigned> slot = kernel::yieldSlotOf(kernel, result);
    std::string dims;
    auto type = cast<RankedTensorType>(result.getType());
    if (!type.hasStaticShape()) {
      int64_t offset = slot ? offsets[*slot] : 0;
      if (!slot || offset >= 0 || yield.getValues()[*slot] != result)
        return inner->emitOpError("cpu target: a result with data-dependent dims "
                                  "must be a graph output");
      dims = "args->output_dims[" + std::to_string(-offset - 1) + "]";
    }
    ctx.outDims.push_back(dims);
    if (slot) {
      ctx.out.push_back(gctx.output(*slot));
      continue;
    }
    // A result nobody reads (e.g. layer_norm's statistics): scratch.
    std::string scratch = "scratch" + std::to_string(i);
    fnBody += "  std::unique_ptr<" + typeOf(result) + "[]> " + scratch + "_buf(new " +
              typeOf(result) + "[" + std::to_string(std::max<int64_t>(product(type.getShape()), 1)) +
              "]);\n  " + typeOf(result) + " *" + scratch + " = " + scratch + "_buf.get();\n";
    ctx.out.push_back(scratch);
  }
  const CpuOpEmitFn *emitFn = registry.lookup(inner->getName().getStringRef());
  if (!emitFn || failed((*emitFn)(ctx)))
    return failure();
  fnBody += ctx.body;
  return success();
}

/// Runtime control flow on the cpu: buffers are host memory.
ControlFlowCode cpuControlFlow() {
  ControlFlowCode code;
  code.read = [](CodeWriter &run, const std::string &var, const std::string &ptr, bool isBool) {
    if (isBool)
      run.line("bool {0} = *(const unsigned char *)({1}) != 0;", var, ptr);
    else
      run.line("int64_t {0} = *(const int64_t *)({1});", var, ptr);
  };
  code.store = [](CodeWriter &run, const std::string &ptr, const std::string &value,
                  bool isBool) {
    if (isBool)
      run.line("*(unsigned char *)({0}) = ({1}) ? 1 : 0;", ptr, value);
    else
      run.line("*(int64_t *)({0}) = {1};", ptr, value);
  };
  code.copy = [](CodeWriter &run, const std::string &dst, const std::string &src,
                 int64_t bytes) { run.line("memcpy({0}, {1}, {2});", dst, src, bytes); };
  return code;
}

} // namespace

FailureOr<std::string> emitCpuKernel(KernelOp kernel, std::set<std::string> &headers) {
  std::string name = kernel.getSymName().str();
  Block &body = kernel.getBody().front();
  auto offsets = kernel.getArenaOffsetsAttr();
  if (!offsets || offsets.size() != (int64_t)kernel.getNumResults())
    return kernel.emitOpError("emit needs arena offsets (run the plan phase)");
  // The kernel function: pointers first, then the body.
  std::string fn, prologue, fnBody;
  fn += "static int32_t " + name + "(void *const *b, const SluiceRunArgs *args) {\n";
  int64_t slot = 0;
  for (BlockArgument arg : body.getArguments()) {
    std::string t = storageType(elementOf(arg));
    fn += "  const " + t + " *__restrict in" + std::to_string(arg.getArgNumber()) +
          " = (const " + t + " *)b[" + std::to_string(slot++) + "];\n";
  }
  auto yield = cast<KernelYieldOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    std::string t = storageType(elementOf(v));
    fn += "  " + t + " *__restrict out" + std::to_string(i) + " = (" + t + " *)b[" +
          std::to_string(slot++) + "];\n";
  }

  // Leaves: block arguments and every dense constant of the body (an
  // array, and a literal when it is a splat).
  GroupContext gctx;
  gctx.kernel = kernel;
  gctx.name = name;
  gctx.body = &fnBody;
  gctx.prologue = &prologue;
  gctx.headers = &headers;
  for (BlockArgument arg : body.getArguments())
    gctx.pointers[arg] = "in" + std::to_string(arg.getArgNumber());
  int constants = 0;
  for (Operation &inner : body.without_terminator()) {
    auto constant = dyn_cast<ConstantOp>(inner);
    if (!constant)
      continue;
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense)
      return inner.emitOpError("cpu target: constant in a kernel must be dense");
    std::string cname = "c" + std::to_string(constants++);
    Type et = dense.getElementType();
    prologue += "static const " + storageType(et) + " " + cname + "[] = {";
    for (int64_t i = 0; i < dense.getNumElements(); ++i)
      prologue += (i ? ", " : "") + storeExpr(et, literal(dense, i));
    if (dense.getNumElements() == 0)
      prologue += storeExpr(et, "0");
    prologue += "};\n";
    gctx.pointers[constant] = cname;
    if (dense.isSplat() || dense.getNumElements() == 1)
      gctx.literals[constant] = literal(dense, 0);
  }

  // The form the fuse phase recorded (dialects/sluice/KernelForms.h). A GEMM
  // or row op alone (with layout-preserving aliases) runs through its op
  // emitter, as `single`, `library` and `view` groups do.
  LogicalResult emitted = success();
  switch (kernel.getForm()) {
  case KernelForm::elementwise:
    emitted = emitElementwiseGroup(gctx);
    break;
  case KernelForm::attention:
    emitted = emitAttentionGroup(gctx);
    break;
  case KernelForm::gemm:
    emitted = isInt8GemmGroup(kernel)    ? emitInt8GemmGroup(gctx)
              : kernel::isLoneOp(kernel) && !keepsBlockedActivations(kernel)
                  ? emitSingleOp(gctx, kernel::anchorOf(kernel), fnBody)
              : isConvGroup(kernel) ? emitConvGroup(gctx)
                                         : emitGemmGroup(gctx);
    break;
  case KernelForm::row:
    emitted = kernel::isLoneOp(kernel) ? emitSingleOp(gctx, kernel::anchorOf(kernel), fnBody)
                                       : emitRowGroup(gctx);
    break;
  case KernelForm::library:
    emitted = isConvGroup(kernel) && keepsBlockedActivations(kernel)
                  ? emitConvGroup(gctx)
                  : emitSingleOp(gctx, kernel::anchorOf(kernel), fnBody);
    break;
  case KernelForm::single:
  case KernelForm::view:
  case KernelForm::collective:
    emitted = emitSingleOp(gctx, kernel::anchorOf(kernel), fnBody);
    break;
  }
  if (failed(emitted))
    return failure();
  // Make every in-body constant array and pointer used, whatever the body reads.
  fn += "  (void)args;\n";
  for (BlockArgument arg : body.getArguments())
    fn += "  (void)in" + std::to_string(arg.getArgNumber()) + ";\n";
  std::string code = prologue.empty() ? "" : "namespace " + name + "_data {\n" + prologue + "}\n";
  if (!prologue.empty())
    fn += "  using namespace " + name + "_data;\n";
  code += fn + fnBody + "  return 0;\n}\n\n";
  return code;

}

CpuTargetConfig cpuTargetConfig(Operation *op) {
  CpuTargetConfig config;
  if (!cpuHasOnednn())
    config.conv = "im2col";
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  auto dict = module ? module->getAttrOfType<DictionaryAttr>("sluice.cpu_config") : nullptr;
  if (!dict)
    return config;
  if (auto isa = dict.getAs<StringAttr>("isa"))
    config.isa = isa.str();
  if (auto conv = dict.getAs<StringAttr>("conv"))
    config.conv = conv.str();
  if (auto packed = dict.getAs<BoolAttr>("packed_weights"))
    config.packedWeights = packed.getValue();
  return config;
}

const char *cpuGemmPathName(const CpuTargetConfig &config) {
  if (config.isa == "avx512")
    return "avx512";
  // AVX2 + FMA: OpenBLAS, except one-row GEMMs (sluice_sgemm::preferred).
  if (config.isa == "avx2")
    return "openblas+avx2";
  return "openblas";
}

int64_t cpuSgemmPanelWidth(const CpuTargetConfig &config) {
  std::string path = cpuGemmPathName(config);
  return path == "avx512" ? 32 : path == "openblas+avx2" ? 16 : 0;
}

/// Whether a kernel's code keeps state of its own across runs: a static it
/// declares that is not const (a oneDNN convolution's primitives and
/// reordered weights, cpu_nn_dnnl.h). The kernel functions themselves
/// (`static int32_t k3_conv(`) and constant tables are not state.
bool keepsState(llvm::StringRef code) {
  for (size_t at = code.find("static "); at != llvm::StringRef::npos;
       at = code.find("static ", at + 1)) {
    if (at > 0 && !llvm::isSpace(code[at - 1]))
      continue;
    llvm::StringRef rest = code.substr(at + 7).ltrim();
    if (!rest.starts_with("const ") && !rest.starts_with("constexpr ") &&
        !rest.starts_with("int32_t "))
      return true;
  }
  return false;
}

FailureOr<CpuModel> emitCpuModel(ModuleOp module, SharedWeights *sharedWeights,
                                 llvm::StringRef entry) {
  CpuBundleEmissionScope cpuBundle;
  CpuTargetConfig config = cpuTargetConfig(module);
  CpuModel model;
  model.sharedWeights = sharedWeights;
  model.entry = entry.str();
  model.gemmPath = cpuGemmPathName(config);
  model.convPath = cpuConvPathName(config);
  if (failed(collectModelFacts(module, model, "cpu", cpuImplements, cpuBundleWeightTransform)))
    return failure();
  func::FuncOp func = model.func;
  Block &block = func.getBody().front();
  CpuConvLayoutScope convLayouts(block);
  model.convBlockedActivations = (int64_t)convLayouts.blockedActivations();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  std::set<std::string> headers{"sluice_gen/cpu.h"};
  CodeWriter run(1);
  RunBuffers buffers(model);
  // A kernel's code with its name replaced -> the first kernel of that code.
  std::map<std::string, std::string> firstOfCode;

  FailureOr<int64_t> steps =
      buffers.writeSteps(block, run, "cpu", [&](KernelOp kernel, ArrayRef<int64_t>, int64_t) {
        auto code = emitCpuKernel(kernel, headers);
        if (failed(code))
          return failure();
        std::string name = kernel.getSymName().str();
        // Kernels alike but for their names (the layers of a transformer)
        // are defined once, the later ones forwarding to the first: the
        // build compiles each distinct kernel once.
        // A kernel that keeps state of its own across runs is never shared:
        // two convolutions on one oneDNN object would reorder each other's
        // weights under a concurrent run.
        auto [first, fresh] =
            keepsState(*code)
                ? std::make_pair(firstOfCode.end(), true)
                : firstOfCode.try_emplace(llvm::join(llvm::split(*code, name), "\x01"), name);
        if (fresh)
          model.kernelSources.push_back({name, *code, ""});
        else
          model.kernelSources.push_back(
              {name,
               llvm::formatv("static int32_t {0}(void *const *b, const SluiceRunArgs *args) {{\n"
                             "  return sluice_forward(args, {1}(b, args), \"{1}\", \"{0}\");\n}\n\n",
                             name, first->second)
                   .str(),
               first->second});
        bool library = kernel.getLibrary().has_value();
        model.steps.push_back(describeStep(kernel, library ? "library" : "kernel"));
        if (hasConvPostOps(kernel) && std::string(cpuConvPathName(config)) == "onednn")
          ++model.convPostOps;
        if (readsPackedWeight(kernel))
          ++model.gemmPackedWeights;
        (library ? model.libraryCalls : model.kernels)++;
        if (library && (kernel.getLibrary() == "gemm" || kernel.getLibrary() == "conv"))
          model.usesBlas = true;
        return success();
      },
      cpuControlFlow());
  if (failed(steps))
    return failure();
  // The MoE kernel's expert GEMMs call the BLAS glue (cpu_moe.h).
  if (headers.count("sluice_gen/cpu_moe.h"))
    model.usesBlas = true;
  if (headers.count("sluice_gen/cpu_nn_dnnl.h"))
    model.usesDnnl = true;

  // Outputs not written in place: copies at the end.
  auto copies = buffers.outputCopies(ret, "cpu");
  if (failed(copies))
    return failure();
  for (const RunBuffers::OutputCopy &copy : *copies) {
    std::string guard = buffers.stageGuard(model.stageOf(copy.value));
    if (!guard.empty())
      run.line("if ({0})", guard);
    run.line("{0}memcpy({1}, {2}, {3});", guard.empty() ? "" : "  ", copy.out, copy.from,
             product(shapeOf(copy.value)) * storageBytes(elementOf(copy.value)));
  }

  CodeWriter prelude;
  prelude.line("// Generated by sluice-compile (cpu target). Do not edit.");
  for (const std::string &h : headers)
    prelude.line("#include \"{0}\"", h);
  model.prelude = prelude.str();
  CodeWriter abi;
  abi.line("extern \"C\" int32_t sluice_model_abi_version(void) {{ return "
           "SLUICE_BUNDLE_ABI_VERSION; }");
  model.abi = abi.str();
  CodeWriter source;
  if (model.pp > 1) {
    // A pipeline bundle: the steps are one micro-batch of this rank's stage.
    {
      auto fn = source.block("static int32_t {0}(const SluiceRunArgs *args)", kStageRunFunction);
      source.raw(run.str());
      source.line("return 0;");
    }
    source.blank();
    auto fn = source.block("extern \"C\" int32_t {0}(const SluiceRunArgs *args)", entry);
    writePipelinedRun(source, model, "0");
    source.line("return 0;");
  } else {
    auto fn = source.block("extern \"C\" int32_t {0}(const SluiceRunArgs *args)", entry);
    source.raw(run.str());
    source.line("return 0;");
  }
  model.run = source.str();
  // The whole model as one translation unit (--emit=source, model.cpp);
  // the scratch exports once, after the includes that define them (they let
  // the runtime free the threads' scratch with the model).
  model.source = model.prelude + "\n";
  for (const CpuKernelSource &k : model.kernelSources)
    model.source += k.code;
  model.source += model.abi + "SLUICE_SCRATCH_EXPORTS\n\n" + model.run;
  return model;
}

} // namespace sluice::codegen
