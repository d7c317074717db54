//===- CpuEmitter.cpp - kernel groups to one C++ source (cpu target) ------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/ScalarEmitter.h"
#include "dialects/sluice/SluiceOps.h"
#include "lib/onnx/Importer.h"
#include "lib/reference/Evaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
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

std::string cArray(ArrayRef<int64_t> values) {
  if (values.empty())
    return "{0}";
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]) + "LL";
  return s + "}";
}

std::string cStaticArray(const std::string &name, ArrayRef<int64_t> values) {
  return "static const int64_t " + name + "[] = " + cArray(values) + ";\n";
}

std::string cString(StringRef text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      s += '\\';
    if ((unsigned char)c < 0x20)
      s += ' ';
    else
      s += c;
  }
  return s + "\"";
}

std::string cInt(int64_t value) { return std::to_string(value) + "LL"; }

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

/// The ONNX node an op came from (its name), or "".
std::string nodeName(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return name.getName().str();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// Emits an elementwise group: one loop over the output's elements, every
/// leaf (kernel input or constant array) indexed through its broadcast
/// strides. Dims are collapsed where all leaves are contiguous across them,
/// so the innermost loop is long and unit-stride (it vectorizes).
LogicalResult emitElementwiseGroup(KernelOp kernel, std::string &body,
                                   std::string &prologue, const std::string &name) {
  Block &block = kernel.getBody().front();
  auto yield = cast<KernelYieldOp>(block.getTerminator());
  ArrayRef<int64_t> outShape = shapeOf(yield.getValues()[0]);
  int64_t rank = outShape.size();
  int64_t total = 1;
  for (int64_t d : outShape)
    total *= d;

  // Leaves: block arguments and non-splat constants, each with a pointer
  // name and strides over the output's dims.
  llvm::MapVector<Value, std::string> leafNames;
  llvm::DenseMap<Value, std::string> scalars; // splat constants
  for (BlockArgument arg : block.getArguments())
    leafNames[arg] = "in" + std::to_string(arg.getArgNumber());
  int constants = 0;
  for (Operation &op : block.without_terminator()) {
    auto constant = dyn_cast<ConstantOp>(op);
    if (!constant)
      continue;
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense)
      return op.emitOpError("cpu target: constant in a kernel must be dense");
    if (dense.isSplat() || dense.getNumElements() == 1) {
      scalars[constant] = literal(dense, 0);
      continue;
    }
    std::string cname = "c" + std::to_string(constants++);
    Type et = dense.getElementType();
    prologue += "static const " + storageType(et) + " " + cname + "[] = {";
    for (int64_t i = 0; i < dense.getNumElements(); ++i)
      prologue += (i ? ", " : "") + storeExpr(et, literal(dense, i));
    prologue += "};\n";
    leafNames[constant] = cname;
  }
  std::vector<Value> leaves;
  std::vector<std::vector<int64_t>> strides;
  for (auto &[value, leafName] : leafNames) {
    if (value.use_empty())
      continue;
    ArrayRef<int64_t> shape = shapeOf(value);
    std::vector<int64_t> s(rank, 0);
    int64_t stride = 1;
    for (int64_t d = (int64_t)shape.size() - 1; d >= 0; --d) {
      int64_t od = d + rank - (int64_t)shape.size();
      if (od < 0)
        return kernel.emitOpError("cpu target: operand rank exceeds result rank");
      s[od] = shape[d] == 1 ? 0 : stride;
      stride *= shape[d];
    }
    leaves.push_back(value);
    strides.push_back(std::move(s));
  }
  // Collapse: drop unit dims, merge contiguous neighbours.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(leaves.size());
  for (int64_t d = 0; d < rank; ++d) {
    if (outShape[d] == 1)
      continue;
    bool merge = !dims.empty();
    for (size_t l = 0; l < leaves.size() && merge; ++l)
      merge = st[l].back() == strides[l][d] * outShape[d];
    if (merge) {
      dims.back() *= outShape[d];
      for (size_t l = 0; l < leaves.size(); ++l)
        st[l].back() = strides[l][d];
    } else {
      dims.push_back(outShape[d]);
      for (size_t l = 0; l < leaves.size(); ++l)
        st[l].push_back(strides[l][d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto &s : st)
      s.push_back(0);
  }
  int64_t inner = dims.back();
  int64_t outer = total / std::max<int64_t>(inner, 1);

  // The scalar body: one local per op.
  std::string scalarBody;
  llvm::DenseMap<Value, std::string> expr;
  for (size_t l = 0; l < leaves.size(); ++l) {
    std::string index = "i * " + std::to_string(st[l].back());
    if (dims.size() > 1)
      index = "b" + std::to_string(l) + " + " + index;
    expr[leaves[l]] = loadExpr(elementOf(leaves[l]), leafNames[leaves[l]] + "[" + index + "]");
  }
  for (auto &[v, s] : scalars)
    expr[v] = s;
  int locals = 0;
  for (Operation &op : block.without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    std::vector<std::string> operands;
    for (Value operand : op.getOperands())
      operands.push_back(expr.lookup(operand));
    auto e = emitScalar(&op, operands);
    if (failed(e))
      return failure();
    std::string local = "v" + std::to_string(locals++);
    scalarBody += "      const " + computeType(elementOf(op.getResult(0))) + " " +
                  local + " = " + *e + ";\n";
    expr[op.getResult(0)] = local;
  }
  for (auto [index, value] : llvm::enumerate(yield.getValues()))
    scalarBody += "      out" + std::to_string(index) + "[o * " + std::to_string(inner) +
                  " + i] = " + storeExpr(elementOf(value), expr.lookup(value)) + ";\n";

  const int64_t kParallelThreshold = 32768;
  std::string parallel = total >= kParallelThreshold
                             ? "  #pragma omp parallel for num_threads(args->num_threads) schedule(static)\n"
                             : "";
  if (dims.size() == 1) {
    // One flat loop: `parallel for simd` (or `simd` alone) makes GCC
    // vectorize it even at -O2, whose cost model refuses loops that need an
    // epilogue.
    std::string pragma = total >= kParallelThreshold
                             ? "  #pragma omp parallel for simd num_threads(args->num_threads) schedule(static)\n"
                             : "  #pragma omp simd\n";
    body += pragma + "  for (int64_t i = 0; i < " + std::to_string(inner) + "; ++i) {\n" +
            "    const int64_t o = 0; (void)o;\n" + scalarBody + "  }\n";
    return success();
  }
  body += parallel + "  for (int64_t o = 0; o < " + std::to_string(outer) + "; ++o) {\n";
  body += "    int64_t rest = o, c;\n";
  for (size_t l = 0; l < leaves.size(); ++l)
    body += "    int64_t b" + std::to_string(l) + " = 0;\n";
  for (int64_t d = (int64_t)dims.size() - 2; d >= 0; --d) {
    body += "    c = rest % " + std::to_string(dims[d]) + "; rest /= " +
            std::to_string(dims[d]) + ";\n";
    for (size_t l = 0; l < leaves.size(); ++l)
      if (st[l][d])
        body += "    b" + std::to_string(l) + " += c * " + std::to_string(st[l][d]) + ";\n";
  }
  body += "    (void)rest; (void)c;\n";
  body += "    #pragma omp simd\n";
  body += "    for (int64_t i = 0; i < " + std::to_string(inner) + "; ++i) {\n" +
          scalarBody + "    }\n  }\n";
  return success();
}

} // namespace

FailureOr<CpuModel> emitCpuModel(ModuleOp module) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError("no function 'main' to emit");
  CpuModel model;
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
  llvm::DenseMap<Value, int64_t> weightOffset;
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
    weightOffset[constant] = offset;
  }

  // Unsupported ops, all of them, before emitting anything.
  const CpuOpRegistry &registry = CpuOpRegistry::get();
  llvm::MapVector<StringRef, std::string> unsupported;
  for (Operation &op : block) {
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      continue;
    for (Operation &inner : kernel.getBody().front().without_terminator()) {
      if (isa<ConstantOp>(inner) || isElementwise(&inner) ||
          registry.lookup(inner.getName().getStringRef()))
        continue;
      if (!unsupported.count(inner.getName().getStringRef()))
      {
        std::string where = onnx_import::describeLocation(inner.getLoc());
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
    return module.emitError() << "unsupported ops on target cpu ("
                              << unsupported.size() << "): " << list;
  }

  std::set<std::string> headers{"sluice_gen/cpu.h"};
  std::string kernels, run;
  // Where each value lives at run time, as a C++ pointer expression.
  llvm::DenseMap<Value, std::string> where;
  for (auto [i, arg] : llvm::enumerate(block.getArguments()))
    where[arg] = "(void *)args->inputs[" + std::to_string(i) + "]";
  for (auto &[value, offset] : weightOffset)
    where[value] = "(void *)(args->weights + " + std::to_string(offset) + ")";

  int64_t step = 0;
  for (Operation &op : block) {
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel)
      continue;
    std::string name = kernel.getSymName().str();
    Block &body = kernel.getBody().front();
    auto offsets = kernel->getAttrOfType<DenseI64ArrayAttr>("arena_offsets");
    if (!offsets || offsets.size() != (int64_t)kernel.getNumResults())
      return kernel.emitOpError("emit needs arena offsets (run the plan phase)");
    for (auto [i, result] : llvm::enumerate(kernel.getResults())) {
      int64_t offset = offsets[i];
      where[result] = offset >= 0
                          ? "(void *)(args->arena + " + std::to_string(offset) + ")"
                          : "args->outputs[" + std::to_string(-offset - 1) + "]";
    }

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

    SmallVector<Operation *> computeOps;
    for (Operation &inner : body.without_terminator())
      if (!isa<ConstantOp>(inner))
        computeOps.push_back(&inner);
    bool allElementwise = llvm::all_of(computeOps, isElementwise);
    if (allElementwise && !computeOps.empty()) {
      if (failed(emitElementwiseGroup(kernel, fnBody, prologue, name)))
        return failure();
    } else if (computeOps.size() == 1) {
      Operation *inner = computeOps.front();
      CpuOpContext ctx;
      ctx.op = inner;
      ctx.kernelName = name;
      ctx.headers = &headers;
      int constants = 0;
      for (Value operand : inner->getOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(operand)) {
          ctx.in.push_back("in" + std::to_string(arg.getArgNumber()));
          continue;
        }
        auto constant = operand.getDefiningOp<ConstantOp>();
        auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                              : DenseElementsAttr();
        if (!dense)
          return inner->emitOpError("cpu target: operand is neither an input nor a constant");
        std::string cname = "c" + std::to_string(constants++);
        Type et = dense.getElementType();
        prologue += "static const " + storageType(et) + " " + cname + "[] = {";
        for (int64_t i = 0; i < dense.getNumElements(); ++i)
          prologue += (i ? ", " : "") + storeExpr(et, literal(dense, i));
        if (dense.getNumElements() == 0)
          prologue += storeExpr(et, "0");
        prologue += "};\n";
        ctx.in.push_back(cname);
      }
      for (auto [i, result] : llvm::enumerate(inner->getResults())) {
        // Results are yielded in order by construction (one op per group).
        ctx.out.push_back("out" + std::to_string(i));
        std::string dims;
        if (!cast<RankedTensorType>(result.getType()).hasStaticShape()) {
          int64_t offset = offsets[i];
          if (offset >= 0)
            return inner->emitOpError("cpu target: a result with data-dependent dims "
                                      "must be a graph output");
          dims = "args->output_dims[" + std::to_string(-offset - 1) + "]";
        }
        ctx.outDims.push_back(dims);
      }
      if (inner->getNumResults() != yield.getNumOperands() ||
          llvm::any_of(llvm::enumerate(yield.getValues()), [&](auto p) {
            return p.value() != inner->getResult(p.index());
          }))
        return kernel.emitOpError("cpu target: a group's op must yield its results in order");
      const CpuOpEmitFn *emitFn = registry.lookup(inner->getName().getStringRef());
      if (!emitFn || failed((*emitFn)(ctx)))
        return failure();
      fnBody += ctx.body;
    } else {
      return kernel.emitOpError("cpu target: groups of several ops must be elementwise");
    }
    // Make every in-body constant array and pointer used, whatever the body reads.
    fn += "  (void)args;\n";
    for (BlockArgument arg : body.getArguments())
      fn += "  (void)in" + std::to_string(arg.getArgNumber()) + ";\n";
    kernels += prologue.empty() ? "" : "namespace " + name + "_data {\n" + prologue + "}\n";
    if (!prologue.empty())
      fn += "  using namespace " + name + "_data;\n";
    kernels += fn + fnBody + "  return 0;\n}\n\n";

    // The step in the run function.
    run += "  {\n    void *const b[] = {";
    bool first = true;
    for (Value input : kernel.getInputs()) {
      if (!where.count(input))
        return kernel.emitOpError("cpu target: an input has no buffer");
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

    bool library = kernel.getLibrary().has_value();
    model.steps.push_back({name, library ? "library" : "kernel",
                           computeOps.empty() ? "" : computeOps.front()->getName().getStringRef().str(),
                           computeOps.empty() ? "" : nodeName(computeOps.front()->getLoc())});
    (library ? model.libraryCalls : model.kernels)++;
    if (library && (kernel.getLibrary() == "gemm" || kernel.getLibrary() == "conv"))
      model.usesBlas = true;
    ++step;
  }

  // Outputs not written in place: copies at the end.
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    std::string out = "args->outputs[" + std::to_string(index) + "]";
    if (!where.count(value))
      return func.emitError("cpu target: an output has no buffer");
    if (where[value] == out)
      continue;
    if (!cast<RankedTensorType>(value.getType()).hasStaticShape())
      return func.emitError("cpu target: output ")
             << index << " has data-dependent dims and is returned twice";
    int64_t bytes = 1;
    for (int64_t d : shapeOf(value))
      bytes *= d;
    bytes *= storageBytes(elementOf(value));
    run += "  memcpy(" + out + ", " + where[value] + ", " + std::to_string(bytes) + ");\n";
  }

  std::string source;
  source += "// Generated by sluice-compile (cpu target). Do not edit.\n";
  for (const std::string &h : headers)
    source += "#include \"" + h + "\"\n";
  source += "\n" + kernels;
  source += "extern \"C\" int32_t sluice_model_abi_version(void) { return SLUICE_BUNDLE_ABI_VERSION; }\n\n";
  source += "extern \"C\" int32_t sluice_model_run(const SluiceRunArgs *args) {\n";
  source += run + "  return 0;\n}\n";
  model.source = std::move(source);
  return model;
}

} // namespace sluice::codegen
