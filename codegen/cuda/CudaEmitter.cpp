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

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/GroupContext.h"
#include "codegen/common/KernelModel.h"
#include "codegen/cpu/CpuKernel.h"
#include "codegen/cuda/CudaGroups.h"
#include "lib/support/Locations.h"
#include "lib/reference/Evaluator.h"

#include "llvm/ADT/StringExtras.h"
#include <map>

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

/// Whether form F1's plan covers a `view` group: one iteration space whose
/// every result is a view. The planner reports why not as errors; here that
/// only chooses the single-op path instead, so they are dropped.
bool isElementwisePlannable(CudaGroupContext &ctx) {
  mlir::ScopedDiagnosticHandler quiet(ctx.kernel.getContext(),
                                      [](Diagnostic &) { return success(); });
  return succeeded(planElementwiseGroup(ctx.kernel, ctx.pointers, ctx.literals,
                                        [&](unsigned i) { return ctx.output(i); }));
}

/// Dispatches a group to its cuda emitter by the form the fuse phase
/// recorded (dialects/sluice/KernelForms.h). A lone GEMM or row op is a
/// group of its form. A `view` group is a strided copy, which the
/// elementwise kernel does on the device when one iteration space covers it
/// (a transpose, a slice with a squeeze, ...); otherwise (DepthToSpace's
/// reshape -> transpose -> reshape, a split into unequal parts) it is the
/// view's single-op kernel, as on cpu.
CudaEmit emitGroup(CudaGroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  switch (kernel.getForm()) {
  case KernelForm::elementwise:
    return emitCudaElementwiseGroup(ctx);
  case KernelForm::attention:
    return emitCudaAttentionGroup(ctx);
  case KernelForm::gemm:
    if (Operation *anchor = kernel::anchorOf(kernel); anchor && kernel::isInt8Contraction(anchor))
      return emitCudaInt8GemmGroup(ctx);
    if (isCudaWonlyGemmGroup(kernel))
      return emitCudaWonlyGemmGroup(ctx);
    if (isCudaFp8GemmGroup(kernel))
      return emitCudaFp8GemmGroup(ctx);
    return emitCudaGemmGroup(ctx);
  case KernelForm::row:
    return emitCudaRowGroup(ctx);
  case KernelForm::view:
    if (isElementwisePlannable(ctx))
      return emitCudaElementwiseGroup(ctx);
    return emitCudaSingleOp(ctx, kernel::anchorOf(kernel));
  case KernelForm::library:
  case KernelForm::single:
  case KernelForm::collective:
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

namespace {

/// The pieces of model.cu and host.cpp, gathered over the steps.
struct CudaSources {
  std::set<std::string> headers{"sluice_gen/cuda.h"};
  std::set<std::string> hostHeaders{"sluice_gen/cpu.h"};
  /// Device code of every step (in `namespace <kernel>_k`), the step
  /// functions, the run function's statements.
  CodeWriter device, steps, run{1};
  /// host.cpp's kernels and model.cu's declarations of their entry points.
  CodeWriter hostCode, hostDecls;
  /// sluice_model_init's SLUICE_SYMBOL lines (one per device constant).
  CodeWriter symbolInit{1};
  int64_t symbols = 0;
  std::vector<std::string> stepNames;
  /// A step's device code (its name blanked) and constants -> the first
  /// step of that code, whose namespace later ones use.
  std::map<std::string, std::string> firstOfDevice;
};

/// The constants of a group body on the device: raw bytes in a __device__
/// array each, addressed through the state's symbol table (entries from
/// `firstSymbol` on).
struct DeviceConstants {
  struct Constant {
    std::string name, storageType;
    std::vector<unsigned char> bytes;
  };
  std::vector<Constant> constants;
  int64_t firstSymbol = 0;
};

/// Collects the body's constants and binds them in `ctx` (pointers; splats
/// also as literals).
LogicalResult collectDeviceConstants(KernelOp kernel, CudaGroupContext &ctx, DeviceConstants &out) {
  for (Operation &inner : kernel.getBody().front().without_terminator()) {
    auto constant = dyn_cast<ConstantOp>(inner);
    if (!constant)
      continue;
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense)
      return inner.emitOpError("cuda target: constant in a kernel must be dense");
    auto tensor = tensorFromAttr(dense);
    if (failed(tensor))
      return inner.emitOpError("cuda target: cannot read this constant's value");
    std::string name = "c" + decimal(out.constants.size());
    const unsigned char *bytes = (const unsigned char *)tensor->rawData();
    out.constants.push_back({name, storageType(dense.getElementType()),
                             std::vector<unsigned char>(bytes, bytes + tensor->byteSize())});
    ctx.pointers[constant] = name;
    if (dense.isSplat() || dense.getNumElements() == 1)
      ctx.literals[constant] = literal(dense, 0);
  }
  return success();
}

/// The step function's first statements: the stream, the state, typed
/// pointers to the inputs and results (b: inputs, then results).
void writeStepPrologue(CodeWriter &w, KernelOp kernel) {
  Block &body = kernel.getBody().front();
  w.line("cudaStream_t stream = (cudaStream_t)args->stream;");
  w.line("SluiceCudaState *state = sluice_state(args);");
  w.line("(void)stream; (void)state;");
  int64_t slot = 0;
  for (BlockArgument arg : body.getArguments())
    w.line("const {0} *__restrict__ in{1} = (const {0} *)b[{2}];", storageType(elementOf(arg)),
           arg.getArgNumber(), slot++);
  auto yield = cast<KernelYieldOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    w.line("{0} *__restrict__ out{1} = ({0} *)b[{2}];", storageType(elementOf(v)), i, slot++);
}

/// A step the cuda emitters took: its device code in `namespace <name>_k`
/// (with the constants' bytes) and its step function.
void writeDeviceStep(CudaSources &sources, KernelOp kernel, const DeviceConstants &constants,
                     const std::string &groupDevice, const std::string &groupHost) {
  std::string name = kernel.getSymName().str();
  // Device code alike but for the kernel's name (the layers of a
  // transformer) is compiled once: a later step runs the first one's
  // namespace, so nvcc builds each distinct kernel once per architecture.
  std::string key = llvm::join(llvm::split(groupDevice, name), "\x01");
  for (const DeviceConstants::Constant &c : constants.constants)
    key += '\0' + c.name + '\0' + c.storageType + '\0' +
           std::string(c.bytes.begin(), c.bytes.end());
  auto [first, fresh] = sources.firstOfDevice.try_emplace(key, name);
  std::string space = first->second + "_k";
  CodeWriter &d = sources.device;
  if (fresh) {
    d.line("namespace {0} {{", space);
    for (const DeviceConstants::Constant &c : constants.constants) {
      std::string bytes;
      for (size_t i = 0; i < c.bytes.size(); ++i)
        bytes += (i ? (i % 24 ? "," : ",\n    ") : "") + decimal(c.bytes[i]);
      d.line("__device__ __align__(16) const unsigned char {0}_bytes[] = {{{1}};", c.name,
             c.bytes.empty() ? "0" : bytes);
    }
    d.raw(groupDevice);
    d.line("} // namespace {0}", space);
    d.blank();
  }

  CodeWriter &s = sources.steps;
  {
    auto fn = s.block("static int32_t {0}(void *const *b, const SluiceRunArgs *args)", name);
    writeStepPrologue(s, kernel);
    for (auto [i, c] : llvm::enumerate(constants.constants)) {
      s.line("const {0} *{1} = (const {0} *)state->symbols[{2}];", c.storageType, c.name,
             constants.firstSymbol + (int64_t)i);
      s.line("(void){0};", c.name);
      sources.symbolInit.line("SLUICE_SYMBOL({0}::{1}_bytes);", space, c.name);
    }
    s.line("using namespace {0};", space);
    s.raw(groupHost);
    s.line("return 0;");
  }
  s.blank();
}

/// Where a host step's buffers sit in the pinned host arena (offsets in
/// bytes, each 64-aligned): its inputs (weights are read where they are),
/// its results and, for a graph output with data-dependent dims, the dims.
struct HostStaging {
  struct Copy {
    std::string device; ///< the device-side pointer expression
    int64_t at = 0, bytes = 0;
  };
  /// Before the step (device to host) and after it (host to device).
  std::vector<Copy> in, out;
  /// The step's buffer table: host-weight offsets or arena offsets.
  std::vector<std::pair<bool, int64_t>> buffers; ///< (is a weight, offset)
  /// (graph output, arena offset) of the dims the cpu kernel writes.
  std::vector<std::pair<int64_t, int64_t>> outputDims;
  int64_t bytes = 0; ///< of the host arena this step needs
};

HostStaging planHostStaging(const CudaModel &model, KernelOp kernel, ArrayRef<int64_t> offsets) {
  HostStaging st;
  int64_t &at = st.bytes;
  unsigned index = 0;
  for (Value input : kernel.getInputs()) {
    std::string b = "b[" + decimal(index++) + "]";
    if (auto it = model.weightOffset.find(input); it != model.weightOffset.end()) {
      st.buffers.push_back({true, it->second});
      continue;
    }
    int64_t bytes = bytesOf(input, cast<RankedTensorType>(input.getType()).getShape());
    st.in.push_back({b, at, bytes});
    st.buffers.push_back({false, at});
    at += roundUp64(std::max<int64_t>(bytes, 1));
  }
  for (auto [i, result] : llvm::enumerate(kernel.getResults())) {
    std::string b = "b[" + decimal(index++) + "]";
    int64_t bytes = resultBytes(model, result, offsets[i]);
    st.out.push_back({b, at, bytes});
    st.buffers.push_back({false, at});
    at += roundUp64(std::max<int64_t>(bytes, 1));
    // A graph output with data-dependent dims: the cpu kernel writes them
    // on the host; the device's copy (args->output_dims) follows.
    if (!cast<RankedTensorType>(result.getType()).hasStaticShape() && offsets[i] < 0) {
      int64_t output = -offsets[i] - 1;
      int64_t dimBytes = 8 * std::max<int64_t>(1, shapeOf(result).size());
      std::string dev = "args->output_dims[" + decimal(output) + "]";
      st.in.push_back({dev, at, dimBytes});
      st.out.push_back({dev, at, dimBytes});
      st.outputDims.push_back({output, at});
      at += roundUp64(dimBytes);
    }
  }
  return st;
}

/// A step no cuda emitter took: the cpu kernel (in host.cpp) run by a host
/// function on the stream between staging copies. Symbols of the group's
/// constants are not needed (the cpu code has its own arrays).
LogicalResult writeHostStep(CudaSources &sources, CudaModel &model, KernelOp kernel,
                            ArrayRef<int64_t> offsets, int64_t step) {
  std::string name = kernel.getSymName().str();
  auto code = emitCpuKernel(kernel, sources.hostHeaders);
  if (failed(code))
    return failure();
  sources.hostCode.raw(*code);
  sources.hostCode.line("int32_t sluice_host_{0}(void *const *b, const SluiceRunArgs *args) {{ "
                        "return {0}(b, args); }",
                        name);
  sources.hostCode.blank();
  sources.hostDecls.line("int32_t sluice_host_{0}(void *const *, const SluiceRunArgs *);", name);

  HostStaging st = planHostStaging(model, kernel, offsets);
  model.hostArenaBytes = std::max(model.hostArenaBytes, st.bytes);
  std::string kernelName = cStringLiteral(name);
  std::string buffers;
  for (auto [weight, offset] : st.buffers)
    buffers +=
        (weight ? "(void *)(args->host_weights + " : "(void *)(h + ") + decimal(offset) + "), ";
  CodeWriter &s = sources.steps;
  {
    auto fn = s.block("static int32_t {0}(void *const *b, const SluiceRunArgs *args)", name);
    writeStepPrologue(s, kernel);
    s.line("unsigned char *h = args->host_arena;");
    for (const HostStaging::Copy &c : st.in)
      s.line("SLUICE_CUDA({0}, cudaMemcpyAsync(h + {1}, {2}, {3}, cudaMemcpyDeviceToHost, "
             "stream));",
             kernelName, c.at, c.device, c.bytes);
    s.line("std::unique_ptr<SluiceHostStep> &slot = state->hostSteps[{0}];", step);
    {
      auto once = s.block("if (!slot)");
      s.line("slot.reset(new SluiceHostStep());");
      s.line("slot->fn = sluice_host_{0};", name);
      s.line("slot->kernel = {0};", kernelName);
      s.line("slot->buffers = {{{0}};", buffers);
      s.line("slot->args = *args;");
      if (!st.outputDims.empty()) {
        s.line("slot->outputDims.assign({0}, nullptr);", model.outputs.size());
        for (auto [output, at] : st.outputDims)
          s.line("slot->outputDims[{0}] = (int64_t *)(h + {1});", output, at);
        s.line("slot->args.output_dims = slot->outputDims.data();");
      }
    }
    s.line("slot->args.num_threads = args->num_threads;");
    s.line("SLUICE_CUDA({0}, cudaLaunchHostFunc(stream, sluice_host_step_trampoline, "
           "slot.get()));",
           kernelName);
    for (const HostStaging::Copy &c : st.out)
      s.line("SLUICE_CUDA({0}, cudaMemcpyAsync({1}, h + {2}, {3}, cudaMemcpyHostToDevice, "
             "stream));",
             kernelName, c.device, c.at, c.bytes);
    s.line("return 0;");
  }
  s.blank();
  return success();
}

/// One kernel group as a step: device code and a step function when a cuda
/// emitter takes it, else a host step (with a remark saying why).
LogicalResult emitCudaStep(CudaSources &sources, CudaModel &model, KernelOp kernel,
                           ArrayRef<int64_t> offsets, int64_t step) {
  std::string name = kernel.getSymName().str();
  CudaGroupContext ctx;
  std::string groupDevice, groupHost;
  ctx.kernel = kernel;
  ctx.name = name;
  ctx.device = &groupDevice;
  ctx.host = &groupHost;
  ctx.headers = &sources.headers;
  ctx.workspaceBytes = &model.workspaceBytes;
  ctx.remarks = &model.remarks;
  ctx.step = step;
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    ctx.pointers[arg] = "in" + decimal(arg.getArgNumber());
  DeviceConstants constants;
  constants.firstSymbol = sources.symbols;
  if (failed(collectDeviceConstants(kernel, ctx, constants)))
    return failure();

  CudaEmit result = emitGroup(ctx);
  if (result == CudaEmit::Error)
    return failure();
  if (result == CudaEmit::Done) {
    writeDeviceStep(sources, kernel, constants, groupDevice, groupHost);
    sources.symbols += constants.constants.size();
    model.steps.push_back(describeStep(kernel, ctx.kind));
    (ctx.kind == "library" ? model.libraryCalls : model.kernels)++;
    if (kernel.getLibrary() == "conv")
      model.usesCudnn = true;
    return success();
  }
  if (failed(writeHostStep(sources, model, kernel, offsets, step)))
    return failure();
  // Library calls and the MoE kernel's expert GEMMs (cpu_moe.h) call BLAS.
  if (kernel.getLibrary() || sources.hostHeaders.count("sluice_gen/cpu_moe.h"))
    model.hostUsesBlas = true;
  model.remarks.push_back(name + " (" + describeOp(stepOp(kernel)) +
                          "): runs on the host: " + ctx.reason);
  model.steps.push_back(describeStep(kernel, "host"));
  ++model.hostSteps;
  return success();
}

/// model.cu: the steps, then the bundle ABI's entry points (init registers
/// every device constant's address, run enqueues the steps).
std::string deviceSource(const CudaModel &model, const CudaSources &sources, int64_t steps) {
  CodeWriter w;
  w.line("// Generated by sluice-compile (cuda target). Do not edit.");
  if (model.usesCudnn)
    w.line("#define SLUICE_WITH_CUDNN 1");
  for (const std::string &h : sources.headers) {
    if (h == kCudaSparseHeader)
      w.raw(cudaSparsePreamble(model.func->getParentOfType<ModuleOp>()));
    w.line("#include \"{0}\"", h);
  }
  w.blank();
  if (!sources.hostDecls.str().empty())
    w.raw(sources.hostDecls.str()).blank();
  w.raw(sources.device.str()).raw(sources.steps.str());
  w.line("static const char *const sluice_step_names[] = {{{0}};",
         sources.stepNames.empty() ? "\"\"" : llvm::join(sources.stepNames, ", "));
  w.blank();
  w.line("extern \"C\" int32_t sluice_model_abi_version(void) {{ return "
         "SLUICE_BUNDLE_ABI_VERSION; }");
  w.blank();
  w.line("extern \"C\" int32_t sluice_model_init(void **device_state, void *stream, char *error,");
  {
    auto init = w.block("                                      size_t error_size)");
    w.line("if (sluice_cuda_init(device_state, stream, {0}ULL, {1}, error, error_size))",
           model.workspaceBytes, model.usesCudnn ? "true" : "false");
    {
      auto failed = w.indented();
      w.line("return 1;");
    }
    w.line("SluiceCudaState *state = (SluiceCudaState *)*device_state;");
    w.line("state->stepNames = sluice_step_names;");
    w.line("state->numSteps = {0};", steps);
    w.line("state->symbols.reserve({0});", sources.symbols);
    w.raw("#define SLUICE_SYMBOL(sym)                                                        \\\n"
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
          "  } while (0)\n");
    w.raw(sources.symbolInit.str());
    w.raw("#undef SLUICE_SYMBOL\n");
    w.line("return 0;");
  }
  w.blank();
  {
    auto release = w.block("extern \"C\" void sluice_model_release(void *device_state)");
    w.line("sluice_cuda_release(device_state);");
  }
  w.blank();
  w.line("extern \"C\" int32_t sluice_model_check(void *device_state, char *error,");
  {
    auto check = w.block("                                       size_t error_size)");
    w.line("return sluice_cuda_check(device_state, error, error_size);");
  }
  w.blank();
  if (model.pp > 1) {
    // A pipeline bundle: the steps are one micro-batch of this rank's stage.
    auto stage = w.block("static int32_t {0}(const SluiceRunArgs *args)", kStageRunFunction);
    w.raw(sources.run.str());
    w.line("return 0;");
  }
  if (model.pp > 1)
    w.blank();
  {
    auto run = w.block("extern \"C\" int32_t sluice_model_run(const SluiceRunArgs *args)");
    w.line("if (!args->device_state || !args->stream)");
    {
      auto refuse = w.indented();
      w.line("return sluice_fail(args, \"sluice_model_run\", \"a cuda bundle needs the device "
             "state and a stream (ABI 3)\");");
    }
    if (model.pp > 1)
      writePipelinedRun(w, model, "args->stream");
    else
      w.raw(sources.run.str());
    w.line("return 0;");
  }
  return w.str();
}

/// Runtime control flow on cuda: conditions and trip counts are read back
/// to the host (sluice_read_device), the body's scalars stored by one-thread
/// kernels, values copied device to device, all on the run's stream.
ControlFlowCode cudaControlFlow() {
  ControlFlowCode code;
  code.read = [](CodeWriter &run, const std::string &var, const std::string &ptr, bool isBool) {
    if (isBool) {
      run.line("unsigned char {0}_byte = 0;", var);
      run.line("if (sluice_read_device(args, {0}, &{1}_byte, 1))", ptr, var);
      run.line("  return 1;");
      run.line("bool {0} = {0}_byte != 0;", var);
    } else {
      run.line("int64_t {0} = 0;", var);
      run.line("if (sluice_read_device(args, {0}, &{1}, sizeof(int64_t)))", ptr, var);
      run.line("  return 1;");
    }
  };
  code.store = [](CodeWriter &run, const std::string &ptr, const std::string &value,
                  bool isBool) {
    if (isBool)
      run.line("sluice_store_u8_kernel<<<1, 1, 0, (cudaStream_t)args->stream>>>((unsigned char "
               "*)({0}), ({1}) ? 1 : 0);",
               ptr, value);
    else
      run.line("sluice_store_i64_kernel<<<1, 1, 0, (cudaStream_t)args->stream>>>((int64_t "
               "*)({0}), {1});",
               ptr, value);
    run.line("SLUICE_CUDA(\"control flow\", cudaGetLastError());");
  };
  code.copy = [](CodeWriter &run, const std::string &dst, const std::string &src,
                 int64_t bytes) {
    run.line("SLUICE_CUDA(\"control flow\", cudaMemcpyAsync({0}, {1}, {2}, "
             "cudaMemcpyDeviceToDevice, (cudaStream_t)args->stream));",
             dst, src, bytes);
  };
  return code;
}

} // namespace

FailureOr<CudaModel> emitCudaModel(ModuleOp module) {
  CudaModel model;
  // Weights stored as the kernels read them: packed for IMMA where an int8
  // GEMM runs on the device, else as the cpu kernels of host steps do.
  if (failed(collectModelFacts(module, model, "cuda", cpuImplements, cudaWeightTransform)))
    return failure();
  Block &block = model.func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  CudaSources sources;
  RunBuffers buffers(model);

  FailureOr<int64_t> steps = buffers.writeSteps(
      block, sources.run, "cuda", [&](KernelOp kernel, ArrayRef<int64_t> offsets, int64_t step) {
        if (failed(emitCudaStep(sources, model, kernel, offsets, step)))
          return failure();
        sources.stepNames.push_back(cStringLiteral(kernel.getSymName()));
        return success();
      },
      cudaControlFlow());
  if (failed(steps))
    return failure();

  // Outputs not written in place: device-to-device copies at the end.
  auto copies = buffers.outputCopies(ret, "cuda");
  if (failed(copies))
    return failure();
  for (const RunBuffers::OutputCopy &copy : *copies) {
    std::string guard = buffers.stageGuard(model.stageOf(copy.value));
    if (!guard.empty())
      sources.run.line("if ({0})", guard);
    sources.run.line("{0}SLUICE_CUDA(\"output copy\", cudaMemcpyAsync({1}, {2}, {3}, "
                     "cudaMemcpyDeviceToDevice, (cudaStream_t)args->stream));",
                     guard.empty() ? "" : "  ", copy.out, copy.from,
                     bytesOf(copy.value, shapeOf(copy.value)));
  }

  model.deviceSource = deviceSource(model, sources, *steps);
  if (model.hostSteps) {
    CodeWriter host;
    host.line("// Generated by sluice-compile (cuda target, host steps). Do not edit.");
    for (const std::string &h : sources.hostHeaders)
      host.line("#include \"{0}\"", h);
    host.blank().raw(sources.hostCode.str());
    model.hostSource = host.str();
  }
  return model;
}

} // namespace sluice::codegen
