//===- CudaEmitter.cpp - kernel groups to CUDA C++ (cuda target) ----------===//
//
// One step function per kernel group, each enqueueing its work on the run's
// stream. The form of a group (as on cpu: elementwise, GEMM + epilogue, row
// op, attention, single op) picks its emitter (CudaGroups.h); a group no cuda
// emitter takes becomes a host step: the cpu emitter's function for it runs
// in a host function on the stream between a device-to-host copy of its
// inputs and a host-to-device copy of its results, so models with rare ops
// still compile and run (and the report names every such step).
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaEmitter.h"

#include "codegen/common/ScalarEmitter.h"
#include "codegen/cpu/Groups.h"
#include "codegen/common/KernelModel.h"
#include "codegen/cuda/CudaGroups.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/Locations.h"

#include "llvm/Support/Format.h"

using namespace mlir;

namespace sluice::codegen {

const std::vector<std::string> &cudaArchitectures() {
  static const std::vector<std::string> archs = {"sm_80", "sm_90", "compute_90"};
  return archs;
}

std::string cudaStorageType(Type t) {
  if (t.isF16())
    return "__half";
  if (t.isBF16())
    return "__nv_bfloat16";
  return storageType(t);
}

FailureOr<std::string> CudaGroupContext::leafPointer(const StridedView &view) const {
  auto it = pointers.find(view.base);
  if (it == pointers.end())
    return KernelOp(kernel).emitOpError(
        "cuda target: a view in this group does not start at an input or constant");
  if (view.offset == 0)
    return it->second;
  return "(" + it->second + " + " + std::to_string(view.offset) + ")";
}

namespace {

int64_t roundUp64(int64_t v) { return (v + 63) / 64 * 64; }

int64_t bytesOf(Value v, ArrayRef<int64_t> shape) {
  return product(shape) * storageBytes(elementOf(v));
}

/// "<op> (node '<name>')" for remarks.
std::string describeOp(Operation *op) {
  if (!op)
    return "empty group";
  std::string s = op->getName().getStringRef().str();
  auto names = onnxNodeNames(op->getLoc());
  if (!names.empty())
    s += " (node '" + names.front() + "')";
  return s;
}

/// Dispatches a group to its cuda emitter by the form the fuse phase
/// recorded (dialects/sluice/KernelForms.h). A lone GEMM or row op is a
/// group of its form; a `view` group (one data-moving view with
/// layout-preserving aliases) is that view's single-op kernel, as on cpu.
CudaEmit emitGroup(CudaGroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  switch (kernel.getForm()) {
  case KernelForm::elementwise:
    return emitCudaElementwiseGroup(ctx);
  case KernelForm::attention:
    return emitCudaAttentionGroup(ctx);
  case KernelForm::gemm:
    return emitCudaGemmGroup(ctx);
  case KernelForm::row:
    return emitCudaRowGroup(ctx);
  case KernelForm::library:
  case KernelForm::single:
  case KernelForm::view:
    return emitCudaSingleOp(ctx, kernel::anchorOf(kernel));
  }
  llvm_unreachable("unknown kernel form");
}

/// Bytes of a kernel result's buffer: its static size, or the bound of a
/// data-dependent graph output.
int64_t resultBytes(const ModelFacts &facts, Value result, int64_t offset) {
  auto type = cast<RankedTensorType>(result.getType());
  if (type.hasStaticShape())
    return bytesOf(result, type.getShape());
  if (offset < 0 && (size_t)(-offset - 1) < facts.outputs.size())
    return bytesOf(result, facts.outputs[-offset - 1].maxShape);
  return 0;
}

} // namespace

FailureOr<CudaModel> emitCudaModel(ModuleOp module) {
  CudaModel model;
  if (failed(collectModelFacts(module, model, "cuda")))
    return failure();
  Block &block = model.func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());

  std::set<std::string> headers{"sluice_gen/cuda.h"};
  std::set<std::string> hostHeaders{"sluice_gen/cpu.h"};
  std::string device, steps, run, hostCode, hostDecls, symbolInit;
  int64_t symbols = 0;

  llvm::DenseMap<Value, std::string> where;
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    where[arg] = "(void *)args->inputs[" + std::to_string(i) + "]";
  for (auto &[value, offset] : model.weightOffset)
    where[value] = "(void *)(args->weights + " + std::to_string(offset) + ")";

  int64_t step = 0;
  std::string stepNames;
  for (Operation &op : block) {
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      continue;
    std::string name = kernel.getSymName().str();
    Block &body = kernel.getBody().front();
    auto offsets = kernel.getArenaOffsetsAttr();
    if (!offsets || offsets.size() != (int64_t)kernel.getNumResults())
      return kernel.emitOpError("emit needs arena offsets (run the plan phase)");
    for (auto [i, result] : llvm::enumerate(kernel.getResults())) {
      int64_t offset = offsets[i];
      where[result] = offset >= 0
                          ? "(void *)(args->arena + " + std::to_string(offset) + ")"
                          : "args->outputs[" + std::to_string(-offset - 1) + "]";
    }

    // The step function's prologue: the stream, the state, typed pointers.
    std::string fn = "static int32_t " + name + "(void *const *b, const SluiceRunArgs *args) {\n";
    fn += "  cudaStream_t stream = (cudaStream_t)args->stream;\n";
    fn += "  SluiceCudaState *state = sluice_state(args);\n";
    fn += "  (void)stream; (void)state;\n";
    int64_t slot = 0;
    for (BlockArgument arg : body.getArguments()) {
      std::string t = storageType(elementOf(arg));
      fn += "  const " + t + " *__restrict__ in" + std::to_string(arg.getArgNumber()) +
            " = (const " + t + " *)b[" + std::to_string(slot++) + "];\n";
    }
    auto yield = cast<KernelYieldOp>(body.getTerminator());
    for (auto [i, v] : llvm::enumerate(yield.getValues())) {
      std::string t = storageType(elementOf(v));
      fn += "  " + t + " *__restrict__ out" + std::to_string(i) + " = (" + t + " *)b[" +
            std::to_string(slot++) + "];\n";
    }

    std::string groupDevice, groupHost;
    CudaGroupContext ctx;
    ctx.kernel = kernel;
    ctx.name = name;
    ctx.device = &groupDevice;
    ctx.host = &groupHost;
    ctx.headers = &headers;
    ctx.workspaceBytes = &model.workspaceBytes;
    ctx.step = step;
    for (BlockArgument arg : body.getArguments())
      ctx.pointers[arg] = "in" + std::to_string(arg.getArgNumber());
    // Constants of the body: raw bytes in a __device__ array, addressed
    // through the state's symbol table; splats also as literals.
    std::string constantDecls, constantPtrs, constantInit;
    int constants = 0;
    for (Operation &inner : body.without_terminator()) {
      auto constant = dyn_cast<ConstantOp>(inner);
      if (!constant)
        continue;
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!dense)
        return inner.emitOpError("cuda target: constant in a kernel must be dense");
      auto tensor = tensorFromAttr(dense);
      if (failed(tensor))
        return inner.emitOpError("cuda target: cannot read this constant's value");
      std::string cname = "c" + std::to_string(constants++);
      const unsigned char *bytes = (const unsigned char *)tensor->rawData();
      size_t count = tensor->byteSize();
      constantDecls += "__device__ __align__(16) const unsigned char " + cname + "_bytes[] = {";
      for (size_t i = 0; i < count; ++i)
        constantDecls += (i ? (i % 24 ? "," : ",\n    ") : "") + std::to_string(bytes[i]);
      if (count == 0)
        constantDecls += "0";
      constantDecls += "};\n";
      std::string t = storageType(dense.getElementType());
      constantPtrs += "  const " + t + " *" + cname + " = (const " + t + " *)state->symbols[" +
                      std::to_string(symbols) + "];\n  (void)" + cname + ";\n";
      constantInit += "  SLUICE_SYMBOL(" + name + "_k::" + cname + "_bytes);\n";
      ++symbols;
      ctx.pointers[constant] = cname;
      if (dense.isSplat() || dense.getNumElements() == 1)
        ctx.literals[constant] = literal(dense, 0);
    }

    CudaEmit result = emitGroup(ctx);
    if (result == CudaEmit::Error)
      return failure();
    Operation *named = stepOp(kernel);
    if (result == CudaEmit::Done) {
      device += "namespace " + name + "_k {\n" + constantDecls + groupDevice + "} // namespace " +
                name + "_k\n\n";
      symbolInit += constantInit;
      steps += fn + constantPtrs + "  using namespace " + name + "_k;\n" + groupHost +
               "  return 0;\n}\n\n";
      model.steps.push_back(describeStep(kernel, ctx.kind));
      (ctx.kind == "library" ? model.libraryCalls : model.kernels)++;
      if (kernel.getLibrary() == "conv")
        model.usesCudnn = true;
    } else {
      // A host step: the cpu kernel between staging copies. Symbols of this
      // group's constants are not needed (the cpu code has its own arrays).
      symbols -= constants;
      auto code = emitCpuKernel(kernel, hostHeaders);
      if (failed(code))
        return failure();
      hostCode += *code + "int32_t sluice_host_" + name +
                  "(void *const *b, const SluiceRunArgs *args) { return " + name +
                  "(b, args); }\n\n";
      hostDecls += "int32_t sluice_host_" + name + "(void *const *, const SluiceRunArgs *);\n";
      if (kernel.getLibrary())
        model.hostUsesBlas = true;
      model.remarks.push_back(name + " (" + describeOp(named) + "): runs on the host: " +
                              ctx.reason);
      std::string h = fn;
      h += "  unsigned char *h = args->host_arena;\n";
      std::string buffers, copyIn, copyOut;
      int64_t at = 0;
      unsigned index = 0;
      auto kernelName = "\"" + name + "\"";
      for (Value input : kernel.getInputs()) {
        std::string b = "b[" + std::to_string(index++) + "]";
        if (auto it = model.weightOffset.find(input); it != model.weightOffset.end()) {
          buffers += "(void *)(args->host_weights + " + std::to_string(it->second) + "), ";
          continue;
        }
        auto type = cast<RankedTensorType>(input.getType());
        int64_t bytes = bytesOf(input, type.getShape());
        copyIn += "  SLUICE_CUDA(" + kernelName + ", cudaMemcpyAsync(h + " + std::to_string(at) +
                  ", " + b + ", " + std::to_string(bytes) +
                  ", cudaMemcpyDeviceToHost, stream));\n";
        buffers += "(void *)(h + " + std::to_string(at) + "), ";
        at += roundUp64(std::max<int64_t>(bytes, 1));
      }
      std::string dimsSetup;
      for (auto [i, result] : llvm::enumerate(kernel.getResults())) {
        std::string b = "b[" + std::to_string(index++) + "]";
        int64_t bytes = resultBytes(model, result, offsets[i]);
        copyOut += "  SLUICE_CUDA(" + kernelName + ", cudaMemcpyAsync(" + b + ", h + " +
                   std::to_string(at) + ", " + std::to_string(bytes) +
                   ", cudaMemcpyHostToDevice, stream));\n";
        buffers += "(void *)(h + " + std::to_string(at) + "), ";
        at += roundUp64(std::max<int64_t>(bytes, 1));
        // A graph output with data-dependent dims: the cpu kernel writes
        // them on the host; the device's copy (args->output_dims) follows.
        if (!cast<RankedTensorType>(result.getType()).hasStaticShape() && offsets[i] < 0) {
          int64_t output = -offsets[i] - 1;
          int64_t dimBytes = 8 * std::max<int64_t>(1, shapeOf(result).size());
          std::string dev = "args->output_dims[" + std::to_string(output) + "]";
          copyIn += "  SLUICE_CUDA(" + kernelName + ", cudaMemcpyAsync(h + " + std::to_string(at) +
                    ", " + dev + ", " + std::to_string(dimBytes) +
                    ", cudaMemcpyDeviceToHost, stream));\n";
          copyOut += "  SLUICE_CUDA(" + kernelName + ", cudaMemcpyAsync(" + dev + ", h + " +
                     std::to_string(at) + ", " + std::to_string(dimBytes) +
                     ", cudaMemcpyHostToDevice, stream));\n";
          dimsSetup += "    slot->outputDims[" + std::to_string(output) + "] = (int64_t *)(h + " +
                       std::to_string(at) + ");\n";
          at += roundUp64(dimBytes);
        }
      }
      model.hostArenaBytes = std::max(model.hostArenaBytes, at);
      h += copyIn;
      h += "  std::unique_ptr<SluiceHostStep> &slot = state->hostSteps[" + std::to_string(step) +
           "];\n";
      h += "  if (!slot) {\n    slot.reset(new SluiceHostStep());\n";
      h += "    slot->fn = sluice_host_" + name + ";\n    slot->kernel = " + kernelName + ";\n";
      h += "    slot->buffers = {" + buffers + "};\n    slot->args = *args;\n";
      if (!dimsSetup.empty())
        h += "    slot->outputDims.assign(" + std::to_string(model.outputs.size()) +
             ", nullptr);\n" + dimsSetup + "    slot->args.output_dims = slot->outputDims.data();\n";
      h += "  }\n  slot->args.num_threads = args->num_threads;\n";
      h += "  SLUICE_CUDA(" + kernelName +
           ", cudaLaunchHostFunc(stream, sluice_host_step_trampoline, slot.get()));\n";
      h += copyOut + "  return 0;\n}\n\n";
      steps += h;
      model.steps.push_back(describeStep(kernel, "host"));
      ++model.hostSteps;
    }

    stepNames += (stepNames.empty() ? "" : ", ") + cString(name);
    // The step in the run function.
    run += "  {\n    void *const b[] = {";
    bool first = true;
    for (Value input : kernel.getInputs()) {
      if (!where.count(input))
        return kernel.emitOpError("cuda target: an input has no buffer");
      run += std::string(first ? "" : ", ") + where[input];
      first = false;
    }
    for (Value result : kernel.getResults()) {
      run += std::string(first ? "" : ", ") + where[result];
      first = false;
    }
    if (first)
      run += "nullptr";
    run += "};\n    SLUICE_STEP(" + std::to_string(step) + ", " + name + "(b, args));\n  }\n";
    ++step;
  }

  // Outputs not written in place: device-to-device copies at the end.
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    std::string out = "args->outputs[" + std::to_string(index) + "]";
    if (!where.count(value))
      return model.func.emitError("cuda target: an output has no buffer");
    if (where[value] == out)
      continue;
    if (!cast<RankedTensorType>(value.getType()).hasStaticShape())
      return model.func.emitError("cuda target: output ")
             << index << " has data-dependent dims and is returned twice";
    int64_t bytes = bytesOf(value, shapeOf(value));
    run += "  SLUICE_CUDA(\"output copy\", cudaMemcpyAsync(" + out + ", " + where[value] + ", " +
           std::to_string(bytes) + ", cudaMemcpyDeviceToDevice, (cudaStream_t)args->stream));\n";
  }

  std::string source = "// Generated by sluice-compile (cuda target). Do not edit.\n";
  if (model.usesCudnn)
    source += "#define SLUICE_WITH_CUDNN 1\n";
  for (const std::string &h : headers)
    source += "#include \"" + h + "\"\n";
  source += "\n" + hostDecls + (hostDecls.empty() ? "" : "\n") + device + steps;
  source += "static const char *const sluice_step_names[] = {" +
            (stepNames.empty() ? std::string("\"\"") : stepNames) + "};\n\n";
  source += "extern \"C\" int32_t sluice_model_abi_version(void) { return SLUICE_BUNDLE_ABI_VERSION; }\n\n";
  source += "extern \"C\" int32_t sluice_model_init(void **device_state, void *stream, char *error,\n"
            "                                      size_t error_size) {\n";
  source += "  if (sluice_cuda_init(device_state, stream, " + std::to_string(model.workspaceBytes) +
            "ULL, " + (model.usesCudnn ? "true" : "false") + ", error, error_size))\n    return 1;\n";
  source += "  SluiceCudaState *state = (SluiceCudaState *)*device_state;\n";
  source += "  state->stepNames = sluice_step_names;\n  state->numSteps = " +
            std::to_string(step) + ";\n";
  source += "  state->symbols.reserve(" + std::to_string(symbols) + ");\n";
  source += "#define SLUICE_SYMBOL(sym)                                                        \\\n"
            "  do {                                                                         \\\n"
            "    void *sluice_addr = nullptr;                                               \\\n"
            "    cudaError_t sluice_err = cudaGetSymbolAddress(&sluice_addr, sym);          \\\n"
            "    if (sluice_err != cudaSuccess) {                                           \\\n"
            "      snprintf(error, error_size, \"sluice_model_init: cudaGetSymbolAddress(%s) \" \\\n"
            "               \"failed: %s\", #sym, cudaGetErrorString(sluice_err));        \\\n"
            "      sluice_cuda_release(state);                                              \\\n"
            "      *device_state = nullptr;                                                 \\\n"
            "      return 1;                                                                \\\n"
            "    }                                                                          \\\n"
            "    state->symbols.push_back(sluice_addr);                                     \\\n"
            "  } while (0)\n";
  source += symbolInit;
  source += "#undef SLUICE_SYMBOL\n  return 0;\n}\n\n";
  source += "extern \"C\" void sluice_model_release(void *device_state) {\n"
            "  sluice_cuda_release(device_state);\n}\n\n";
  source += "extern \"C\" int32_t sluice_model_check(void *device_state, char *error,\n"
            "                                       size_t error_size) {\n"
            "  return sluice_cuda_check(device_state, error, error_size);\n}\n\n";
  source += "extern \"C\" int32_t sluice_model_run(const SluiceRunArgs *args) {\n";
  source += "  if (!args->device_state || !args->stream)\n"
            "    return sluice_fail(args, \"sluice_model_run\", \"a cuda bundle needs the device "
            "state and a stream (ABI 3)\");\n";
  source += run + "  return 0;\n}\n";
  model.deviceSource = std::move(source);

  if (model.hostSteps) {
    std::string host = "// Generated by sluice-compile (cuda target, host steps). Do not edit.\n";
    for (const std::string &h : hostHeaders)
      host += "#include \"" + h + "\"\n";
    model.hostSource = host + "\n" + hostCode;
  }
  return model;
}

} // namespace sluice::codegen
