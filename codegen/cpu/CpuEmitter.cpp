//===- CpuEmitter.cpp - kernel groups to one C++ source (cpu target) ------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/ScalarEmitter.h"
#include "codegen/cpu/Groups.h"
#include "codegen/common/KernelModel.h"
#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Locations.h"
#include "lib/reference/Evaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

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
    return r;
  }();
  return registry;
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
    if (!isElementwise(&inner))
      return &inner;
    firstCompute = firstCompute ? firstCompute : &inner;
  }
  return firstCompute ? firstCompute : firstView;
}

StepInfo describeStep(KernelOp kernel, llvm::StringRef kind) {
  Operation *named = stepOp(kernel);
  StepInfo info{kernel.getSymName().str(), kind.str(),
                named ? named->getName().getStringRef().str() : "",
                named ? nodeName(named->getLoc()) : "", {}, {}};
  describeKernel(kernel, info.ops, info.nodes);
  return info;
}

LogicalResult collectModelFacts(ModuleOp module, ModelFacts &model, llvm::StringRef target) {
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

  // Weights: every top-level constant, 64-byte aligned in weights.bin.
  for (Operation &op : block) {
    auto constant = dyn_cast<ConstantOp>(op);
    if (!constant)
      continue;
    auto tensor = tensorFromAttr(constant.getValue());
    if (failed(tensor))
      return constant.emitOpError("cpu target: cannot read this constant's value");
    size_t offset = (model.weights.size() + 63) / 64 * 64;
    size_t bytes = tensor->numElements() * dtypeSize(tensor->dtype());
    model.weights.resize(offset + bytes);
    if (bytes)
      std::memcpy(model.weights.data() + offset, tensor->rawData(), bytes);
    model.weightOffset[constant] = offset;
  }

  // Unsupported ops, all of them, before emitting anything.
  const CpuOpRegistry &registry = CpuOpRegistry::get();
  llvm::MapVector<StringRef, std::string> unsupported;
  for (Operation &op : block) {
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      continue;
    for (Operation &inner : kernel.getBody().front().without_terminator()) {
      // Attention has no single-op emitter: its groups are form F4.
      if (isa<ConstantOp, AttentionOp>(inner) || isElementwise(&inner) ||
          registry.lookup(inner.getName().getStringRef()))
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

RunBuffers::RunBuffers(const ModelFacts &facts) {
  func::FuncOp func = facts.func;
  Block &block = func.getBody().front();
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    where[arg] = "(void *)args->inputs[" + decimal(i) + "]";
  for (auto &[value, offset] : facts.weightOffset)
    where[value] = "(void *)(args->weights + " + decimal(offset) + ")";
}

void RunBuffers::addResults(KernelOp kernel, ArrayRef<int64_t> offsets) {
  for (auto [i, result] : llvm::enumerate(kernel.getResults())) {
    int64_t offset = offsets[i];
    where[result] = offset >= 0 ? "(void *)(args->arena + " + decimal(offset) + ")"
                                : "args->outputs[" + decimal(-offset - 1) + "]";
  }
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
  auto block = run.block("");
  run.line("void *const b[] = {{{0}};", buffers.empty() ? "nullptr" : llvm::join(buffers, ", "));
  run.line("SLUICE_STEP({0}, {1}(b, args));", step, kernel.getSymName());
  return success();
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
    StridedView dense = *view;
    dense.offset = 0;
    if (view->base != operand && !dense.isContiguous(shapeOf(operand)))
      return inner->emitOpError("cpu target: operand is a strided view; this op reads contiguous buffers");
    auto ptr = gctx.leafPointer(*view);
    if (failed(ptr))
      return failure();
    ctx.in.push_back(*ptr);
  }
  for (auto [i, result] : llvm::enumerate(inner->getResults())) {
    // The yield that carries this result (directly or through reshapes).
    std::optional<unsigned> slot;
    for (auto [y, v] : llvm::enumerate(yield.getValues())) {
      Value root = v;
      while (root != result && root.getDefiningOp() &&
             isLayoutPreserving(root.getDefiningOp()))
        root = root.getDefiningOp()->getOperand(0);
      if (!slot && root == result)
        slot = y;
    }
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
    emitted = kernel::isLoneOp(kernel) ? emitSingleOp(gctx, kernel::anchorOf(kernel), fnBody)
                                       : emitGemmGroup(gctx);
    break;
  case KernelForm::row:
    emitted = kernel::isLoneOp(kernel) ? emitSingleOp(gctx, kernel::anchorOf(kernel), fnBody)
                                       : emitRowGroup(gctx);
    break;
  case KernelForm::library:
  case KernelForm::single:
  case KernelForm::view:
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

FailureOr<CpuModel> emitCpuModel(ModuleOp module) {
  CpuModel model;
  if (failed(collectModelFacts(module, model, "cpu")))
    return failure();
  func::FuncOp func = model.func;
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  std::set<std::string> headers{"sluice_gen/cpu.h"};
  std::string kernels;
  CodeWriter run(1);
  RunBuffers buffers(model);

  int64_t step = 0;
  for (Operation &op : block) {
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      continue;
    auto offsets = kernel.getArenaOffsetsAttr();
    if (!offsets || offsets.size() != (int64_t)kernel.getNumResults())
      return kernel.emitOpError("emit needs arena offsets (run the plan phase)");
    buffers.addResults(kernel, offsets.asArrayRef());
    auto code = emitCpuKernel(kernel, headers);
    if (failed(code))
      return failure();
    kernels += *code;
    if (failed(buffers.writeStep(run, kernel, step, "cpu")))
      return failure();

    bool library = kernel.getLibrary().has_value();
    model.steps.push_back(describeStep(kernel, library ? "library" : "kernel"));
    (library ? model.libraryCalls : model.kernels)++;
    if (library && (kernel.getLibrary() == "gemm" || kernel.getLibrary() == "conv"))
      model.usesBlas = true;
    ++step;
  }

  // Outputs not written in place: copies at the end.
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    std::string out = "args->outputs[" + decimal(index) + "]";
    std::string where = buffers.lookup(value);
    if (where.empty())
      return func.emitError("cpu target: an output has no buffer");
    if (where == out)
      continue;
    if (!cast<RankedTensorType>(value.getType()).hasStaticShape())
      return func.emitError("cpu target: output ")
             << index << " has data-dependent dims and is returned twice";
    run.line("memcpy({0}, {1}, {2});", out, where,
             product(shapeOf(value)) * storageBytes(elementOf(value)));
  }

  CodeWriter source;
  source.line("// Generated by sluice-compile (cpu target). Do not edit.");
  for (const std::string &h : headers)
    source.line("#include \"{0}\"", h);
  source.blank().raw(kernels);
  source.line("extern \"C\" int32_t sluice_model_abi_version(void) {{ return "
              "SLUICE_BUNDLE_ABI_VERSION; }");
  source.blank();
  {
    auto fn = source.block("extern \"C\" int32_t sluice_model_run(const SluiceRunArgs *args)");
    source.raw(run.str());
    source.line("return 0;");
  }
  model.source = source.str();
  return model;
}

} // namespace sluice::codegen
