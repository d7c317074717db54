//===- Importer.cpp - ONNX model to sluice dialect ------------------------===//

#include "lib/onnx/Importer.h"

#include "lib/onnx/Binder.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/CheckedSize.h"
#include "lib/support/Locations.h"
#include "lib/support/TensorFiles.h"

#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

using namespace mlir;

namespace sluice::onnx_import {

void registerImportDialects(MLIRContext &context) {
  context.loadDialect<sluice::SluiceDialect, func::FuncDialect>();
}

//===----------------------------------------------------------------------===//
// Handler registry
//===----------------------------------------------------------------------===//

static std::string registryKey(StringRef domain, StringRef opType) {
  if (domain == "ai.onnx")
    domain = "";
  return (domain + "::" + opType).str();
}

const OpRegistry &OpRegistry::get() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerElementwiseHandlers(r);
    registerMathHandlers(r);
    registerShapeHandlers(r);
    registerIndexingHandlers(r);
    registerReductionHandlers(r);
    registerControlFlowHandlers(r);
    registerSignalHandlers(r);
    registerTrainingHandlers(r);
    registerSequenceHandlers(r);
    return r;
  }();
  return registry;
}

void OpRegistry::on(StringRef opType, int sinceVersion, Handler fn,
                    StringRef domain) {
  handlers[registryKey(domain, opType)][sinceVersion] = std::move(fn);
}

const Handler *OpRegistry::lookup(StringRef domain, StringRef opType,
                                  int opset) const {
  auto it = handlers.find(registryKey(domain, opType));
  if (it == handlers.end())
    return nullptr;
  auto versions = it->second.upper_bound(opset);
  if (versions == it->second.begin())
    return nullptr;
  return &std::prev(versions)->second;
}

std::vector<std::string> OpRegistry::opTypes() const {
  std::vector<std::string> out;
  for (const auto &[key, _] : handlers)
    out.push_back(key);
  return out;
}

//===----------------------------------------------------------------------===//
// Binder
//===----------------------------------------------------------------------===//

StringRef Binder::opType() const { return node.op_type(); }

unsigned Binder::numOutputs() const { return node.output_size(); }

RankedTensorType Binder::rankedType(unsigned i) const {
  if (!hasInput(i))
    return {};
  return dyn_cast<RankedTensorType>(input(i).getType());
}

Type Binder::elementType(unsigned i) const {
  return hasInput(i) ? getElementTypeOrSelf(input(i).getType()) : Type();
}

const onnx::AttributeProto *Binder::attr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool Binder::hasAttr(StringRef name) const { return attr(name) != nullptr; }

int64_t Binder::attrInt(StringRef name, int64_t defaultValue) const {
  const auto *a = attr(name);
  return a ? a->i() : defaultValue;
}

float Binder::attrFloat(StringRef name, float defaultValue) const {
  const auto *a = attr(name);
  return a ? a->f() : defaultValue;
}

std::string Binder::attrString(StringRef name, StringRef defaultValue) const {
  const auto *a = attr(name);
  return a ? a->s() : defaultValue.str();
}

std::vector<int64_t> Binder::attrInts(StringRef name,
                                      std::vector<int64_t> defaultValue) const {
  const auto *a = attr(name);
  if (!a)
    return defaultValue;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> Binder::attrFloats(StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

std::optional<Tensor> Binder::attrTensor(StringRef name) {
  const auto *a = attr(name);
  if (!a || !a->has_t())
    return std::nullopt;
  Tensor t;
  std::string why;
  if (!tensorFromProto(a->t(), t, why)) {
    (void)fail("attribute '" + name + "': " + why);
    return std::nullopt;
  }
  return t;
}

void Binder::setOutput(unsigned i, Value value) {
  if (outputValues.size() <= i)
    outputValues.resize(i + 1);
  outputValues[i] = value;
}

LogicalResult Binder::fail(const Twine &message) {
  error += describeLocation(loc) + ": " + message.str() + "\n";
  return failure();
}

Value Binder::constI64(ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
  return sluice::ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
}

Value Binder::constI64Scalar(int64_t value) {
  auto type = RankedTensorType::get({}, b.getI64Type());
  return sluice::ConstantOp::create(b, loc,
                                    DenseElementsAttr::get(type, ArrayRef(value)));
}

Value Binder::constScalar(Type element, double value) {
  auto dtype = dtypeFromType(element);
  Tensor t = Tensor::scalar(succeeded(dtype) ? *dtype : DType::F32, value);
  return constTensor(t);
}

Value Binder::constTensor(const Tensor &tensor) {
  // Constant attributes cannot hold strings (no MLIR elements attribute
  // does); a null value makes the node fail with this message.
  if (tensor.dtype() == DType::String) {
    (void)fail("string constants are not supported");
    return {};
  }
  auto type = RankedTensorType::get(tensor.shape(),
                                    typeFromDType(b.getContext(), tensor.dtype()));
  return sluice::ConstantOp::create(
      b, loc, attrFromTensor(b.getContext(), tensor, type));
}

Value Binder::castTo(Value value, Type element) {
  if (getElementTypeOrSelf(value.getType()) == element)
    return value;
  auto type = cast<TensorType>(value.getType()).clone(element);
  return sluice::CastOp::create(b, loc, type, value);
}

//===----------------------------------------------------------------------===//
// Model loading
//===----------------------------------------------------------------------===//

namespace {

bool isTextualModel(const std::string &path) {
  StringRef ext = llvm::sys::path::extension(path);
  return ext == ".onnxtxt" || ext == ".txt";
}

/// Reads and parses the model; the proto is shared so that weight blobs can
/// alias its raw_data for as long as the MLIR context uses them.
std::shared_ptr<onnx::ModelProto> loadModel(const std::string &path,
                                            std::string &error) {
  if (!llvm::sys::fs::exists(path)) {
    error = path + ": no such file\n";
    return nullptr;
  }
  if (llvm::sys::fs::is_directory(path)) {
    error = path + ": is a directory, expected an ONNX model file\n";
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/true);
  if (!buffer) {
    error = path + ": cannot read file: " + buffer.getError().message() + "\n";
    return nullptr;
  }
  auto model = std::make_shared<onnx::ModelProto>();
  if (isTextualModel(path)) {
    auto status = onnx::OnnxParser::Parse(*model, (*buffer)->getBufferStart());
    if (!status.IsOK()) {
      error = path + ": not a valid textual ONNX model: " +
              status.ErrorMessage() + "\n";
      return nullptr;
    }
    return model;
  }
  if (!model->ParseFromArray((*buffer)->getBufferStart(),
                             (int)(*buffer)->getBufferSize())) {
    error = path + ": not a valid ONNX model (malformed or truncated protobuf)\n";
    return nullptr;
  }
  if (!model->has_graph()) {
    error = path + ": not a valid ONNX model (no graph)\n";
    return nullptr;
  }
  return model;
}

/// Maps an ONNX element type to MLIR; null for unsupported types.
Type elementTypeFromOnnx(MLIRContext &ctx, int onnxType) {
  DType dtype;
  if (!dtypeFromOnnx(onnxType, dtype))
    return {};
  return typeFromDType(&ctx, dtype);
}

std::string onnxTypeName(int onnxType) {
  return onnx::TensorProto::DataType_Name(
      (onnx::TensorProto::DataType)onnxType);
}

} // namespace

Type typeFromOnnx(MLIRContext &ctx, const onnx::TypeProto &type,
                  std::string &why) {
  if (type.has_tensor_type()) {
    const auto &tensorType = type.tensor_type();
    Type element = elementTypeFromOnnx(ctx, tensorType.elem_type());
    if (!element) {
      why = "has unsupported element type " + onnxTypeName(tensorType.elem_type());
      return {};
    }
    if (!tensorType.has_shape())
      return UnrankedTensorType::get(element);
    SmallVector<int64_t> shape;
    if (tensorType.shape().dim_size() > kMaxRank) {
      why = "has rank " + std::to_string(tensorType.shape().dim_size()) + " (at most " +
            std::to_string(kMaxRank) + ")";
      return {};
    }
    for (const auto &dim : tensorType.shape().dim()) {
      if (dim.has_dim_value() && dim.dim_value() < 0) {
        why = "has a negative dim (" + std::to_string(dim.dim_value()) + ")";
        return {};
      }
      shape.push_back(dim.has_dim_value() ? dim.dim_value() : ShapedType::kDynamic);
    }
    return RankedTensorType::get(shape, element);
  }
  if (type.has_sequence_type()) {
    const auto &element = type.sequence_type().elem_type();
    if (!element.has_tensor_type()) {
      why = "is a sequence of non-tensors (only sequences of tensors are supported)";
      return {};
    }
    Type tensor = typeFromOnnx(ctx, element, why);
    return tensor ? SequenceType::get(&ctx, cast<TensorType>(tensor)) : Type();
  }
  if (type.has_optional_type()) {
    const auto &element = type.optional_type().elem_type();
    if (!element.has_tensor_type() && !element.has_sequence_type()) {
      why = "is an optional of neither a tensor nor a sequence";
      return {};
    }
    Type held = typeFromOnnx(ctx, element, why);
    return held ? OptionalType::get(&ctx, held) : Type();
  }
  why = "is not a tensor, sequence or optional (maps and sparse tensors are "
        "not supported)";
  return {};
}

namespace {

class GraphImporter : public SubgraphImporter {
public:
  GraphImporter(MLIRContext &ctx, const std::string &path,
                std::shared_ptr<onnx::ModelProto> model,
                const ImportOptions &options, std::string &error)
      : ctx(ctx), path(path), model(std::move(model)), options(options),
        error(error), builder(&ctx) {}

  OwningOpRef<ModuleOp> run();

private:
  LogicalResult readOpsets();
  LogicalResult checkSupported();
  void collectUnsupported(const onnx::GraphProto &graph,
                          std::vector<std::string> &unsupported,
                          llvm::StringSet<> &seen);
  LogicalResult importSubgraph(const onnx::GraphProto &graph, Block *block,
                               SmallVectorImpl<Value> &outputs) override;
  FailureOr<Type> inputType(const onnx::ValueInfoProto &input);
  LogicalResult importInitializer(const onnx::TensorProto &tensor);
  FailureOr<AsmResourceBlob> externalBlob(const onnx::TensorProto &tensor,
                                          size_t byteSize);
  bool externalDataPresent(const onnx::TensorProto &tensor) const;
  LogicalResult importNode(const onnx::NodeProto &node, int index);
  int opsetFor(StringRef domain) const;
  std::string nodeName(const onnx::NodeProto &node, int index) const {
    return node.name().empty() ? "#" + std::to_string(index) : node.name();
  }
  LogicalResult fail(const Twine &message) {
    error += path + ": " + message.str() + "\n";
    return failure();
  }

  MLIRContext &ctx;
  std::string path;
  std::shared_ptr<onnx::ModelProto> model;
  const ImportOptions &options;
  std::string &error;
  OpBuilder builder;
  /// Planning mode: the initializers whose external data is absent.
  int64_t absentWeights = 0;
  double absentBytes = 0;
  std::map<std::string, int> opsets;
  /// Values by ONNX name, innermost scope last: a subgraph sees the names
  /// of every enclosing graph, and its own names shadow them.
  std::vector<llvm::StringMap<Value>> scopes{1};
  Value lookupValue(StringRef name) const {
    for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope) {
      auto it = scope->find(name);
      if (it != scope->end())
        return it->second;
    }
    return Value();
  }
  void defineValue(StringRef name, Value value) { scopes.back()[name] = value; }
};

int GraphImporter::opsetFor(StringRef domain) const {
  auto it = opsets.find(domain == "ai.onnx" ? "" : domain.str());
  return it == opsets.end() ? -1 : it->second;
}

LogicalResult GraphImporter::readOpsets() {
  for (const auto &op : model->opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    // A version past int's range would wrap when stored (2^32 + 17 reads
    // as opset 17): refuse it here, naming the domain.
    if (op.version() < 0 || op.version() > std::numeric_limits<int>::max())
      return fail("unsupported opset " + Twine(op.version()) + " for domain " +
                  (domain.empty() ? std::string("ai.onnx") : domain));
    opsets[domain] = (int)op.version();
  }
  auto it = opsets.find("");
  if (it == opsets.end()) {
    // IR version 2 models may omit opset_import: they mean opset 1.
    if (model->opset_import_size() == 0) {
      opsets[""] = 1;
      return success();
    }
    // Only other domains: their nodes are checked (and refused) one by one.
    return success();
  }
  if (it->second < kMinOpset || it->second > kMaxOpset)
    return fail("unsupported opset " + Twine(it->second) +
                " for domain ai.onnx (supported: " + Twine(kMinOpset) +
                " to " + Twine(kMaxOpset) + ")");
  return success();
}

void GraphImporter::collectUnsupported(const onnx::GraphProto &graph,
                                       std::vector<std::string> &unsupported,
                                       llvm::StringSet<> &seen) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    // Subgraphs (If branches, Loop bodies) are checked too.
    for (const auto &attr : node.attribute()) {
      if (attr.has_g())
        collectUnsupported(attr.g(), unsupported, seen);
      for (const auto &g : attr.graphs())
        collectUnsupported(g, unsupported, seen);
    }
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    int opset = opsetFor(domain);
    std::string key = domain.empty() ? node.op_type() : domain + "." + node.op_type();
    if (opset >= 0 && OpRegistry::get().lookup(domain, node.op_type(), opset))
      continue;
    if (!seen.insert(key).second)
      continue;
    std::string why = opset < 0 ? "domain '" + (domain.empty() ? "ai.onnx" : domain) +
                                      "' not imported by the model"
                                : "opset " + std::to_string(opset);
    unsupported.push_back(key + " (node '" + nodeName(node, i) + "', " + why + ")");
  }
}

LogicalResult GraphImporter::checkSupported() {
  // One line listing every unsupported op type, with its first node.
  std::vector<std::string> unsupported;
  llvm::StringSet<> seen;
  collectUnsupported(model->graph(), unsupported, seen);
  if (unsupported.empty())
    return success();
  std::string list;
  for (size_t i = 0; i < unsupported.size(); ++i)
    list += (i ? ", " : "") + unsupported[i];
  return fail("unsupported ops (" + Twine(unsupported.size()) + "): " + list);
}

LogicalResult GraphImporter::importSubgraph(const onnx::GraphProto &graph,
                                            Block *block,
                                            SmallVectorImpl<Value> &outputs) {
  if (graph.input_size() != (int)block->getNumArguments())
    return fail("subgraph '" + graph.name() + "' takes " +
                Twine(graph.input_size()) + " inputs, expected " +
                Twine(block->getNumArguments()));
  // Each level of If/Loop/Scan nesting is a scope: a hostile chain of
  // subgraphs must end in one error, not in the stack's end.
  if (scopes.size() > kMaxSubgraphDepth)
    return fail("subgraph '" + graph.name() + "' is nested deeper than " +
                Twine(kMaxSubgraphDepth) + " levels");
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(block);
  scopes.emplace_back();
  llvm::scope_exit popScope([&] { scopes.pop_back(); });
  for (auto [input, arg] : llvm::zip(graph.input(), block->getArguments()))
    defineValue(input.name(), arg);
  for (const auto &init : graph.initializer())
    if (failed(importInitializer(init)))
      return failure();
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), i)))
      return failure();
  for (const auto &output : graph.output()) {
    Value value = lookupValue(output.name());
    if (!value)
      return fail("subgraph output '" + output.name() + "' is never produced");
    outputs.push_back(value);
  }
  return success();
}

FailureOr<Type> GraphImporter::inputType(const onnx::ValueInfoProto &input) {
  if (!input.type().has_tensor_type()) {
    // Sequences and optionals: their element shapes are runtime properties,
    // so --shape does not apply to them here. A sequence's --shape lists its
    // element shapes, which the simplify phase binds (sluice-specialize-shapes).
    std::string why;
    Type type = typeFromOnnx(ctx, input.type(), why);
    if (!type)
      return fail("input '" + input.name() + "' " + why);
    if (options.inputShapes.count(input.name()) && !isa<SequenceType, OptionalType>(type))
      return fail("--shape for input '" + input.name() +
                  "' does not apply: it is not a tensor");
    return type;
  }
  const auto &tensorType = input.type().tensor_type();
  Type element = elementTypeFromOnnx(ctx, tensorType.elem_type());
  if (!element)
    return fail("input '" + input.name() + "' has unsupported element type " +
                onnxTypeName(tensorType.elem_type()));
  auto override = options.inputShapes.find(input.name());
  if (!tensorType.has_shape()) {
    if (override != options.inputShapes.end())
      return Type(RankedTensorType::get(override->second, element));
    return Type(UnrankedTensorType::get(element));
  }
  SmallVector<int64_t> shape;
  if (tensorType.shape().dim_size() > kMaxRank)
    return fail("input '" + input.name() + "' has rank " +
                Twine(tensorType.shape().dim_size()) + " (at most " + Twine(kMaxRank) + ")");
  for (const auto &dim : tensorType.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() < 0)
      return fail("input '" + input.name() + "' has a negative dim (" +
                  Twine(dim.dim_value()) + ") at position " + Twine(shape.size()));
    shape.push_back(dim.has_dim_value() ? dim.dim_value() : ShapedType::kDynamic);
  }
  if (override != options.inputShapes.end()) {
    const auto &given = override->second;
    if (given.size() != shape.size())
      return fail("--shape for input '" + input.name() + "' has rank " +
                  Twine(given.size()) + " but the model declares rank " +
                  Twine(shape.size()));
    for (size_t i = 0; i < shape.size(); ++i)
      if (!ShapedType::isDynamic(shape[i]) && shape[i] != given[i])
        return fail("--shape for input '" + input.name() + "' sets dim " +
                    Twine(i) + " to " + Twine(given[i]) +
                    " but the model fixes it to " + Twine(shape[i]));
    shape.assign(given.begin(), given.end());
  }
  return Type(RankedTensorType::get(shape, element));
}

FailureOr<AsmResourceBlob>
GraphImporter::externalBlob(const onnx::TensorProto &tensor, size_t byteSize) {
  std::string location;
  uint64_t offset = 0, length = byteSize;
  bool hasLength = false;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" || entry.key() == "length") {
      char *end = nullptr;
      uint64_t v = std::strtoull(entry.value().c_str(), &end, 10);
      if (!end || *end)
        return fail("tensor '" + tensor.name() + "' has a bad external " +
                    entry.key() + " '" + entry.value() + "'");
      if (entry.key() == "offset")
        offset = v;
      else {
        length = v;
        hasLength = true;
      }
    }
  }
  if (location.empty())
    return fail("tensor '" + tensor.name() + "' has external data without a location");
  if (hasLength && length != byteSize)
    return fail("tensor '" + tensor.name() + "' external length " +
                Twine(length) + " does not match its shape (" +
                Twine(byteSize) + " bytes)");
  // Resolve relative to the model's folder, and refuse anything outside it
  // (absolute paths, "..", symlinks that point out).
  SmallString<256> folder(path);
  llvm::sys::path::remove_filename(folder);
  if (folder.empty())
    folder = ".";
  if (llvm::sys::path::is_absolute(location))
    return fail("external data '" + location + "' of tensor '" + tensor.name() +
                "' is an absolute path; it must lie inside the model's folder");
  SmallString<256> file(folder);
  llvm::sys::path::append(file, location);
  if (!llvm::sys::fs::exists(file))
    return fail("external data file '" + location + "' of tensor '" +
                tensor.name() + "' not found next to the model");
  SmallString<256> realFolder, realFile;
  if (llvm::sys::fs::real_path(folder, realFolder) ||
      llvm::sys::fs::real_path(file, realFile))
    return fail("cannot resolve external data '" + location + "'");
  StringRef prefix = realFolder;
  if (!StringRef(realFile).starts_with(prefix) ||
      (realFile.size() > prefix.size() &&
       !llvm::sys::path::is_separator(realFile[prefix.size()])))
    return fail("external data '" + location + "' of tensor '" + tensor.name() +
                "' escapes the model's folder");
  uint64_t fileSize = 0;
  llvm::sys::fs::file_size(realFile, fileSize);
  if (offset > fileSize || byteSize > fileSize - offset)
    return fail("external data '" + location + "' of tensor '" + tensor.name() +
                "' is truncated: needs " + Twine(offset + byteSize) +
                " bytes, file has " + Twine(fileSize));
  auto buffer = llvm::MemoryBuffer::getFileSlice(realFile, byteSize, offset);
  if (!buffer)
    return fail("cannot map external data '" + location + "': " +
                buffer.getError().message());
  std::shared_ptr<llvm::MemoryBuffer> owner = std::move(*buffer);
  ArrayRef<char> data(owner->getBufferStart(), owner->getBufferSize());
  // The blob keeps the mapping alive; the data is never copied.
  return AsmResourceBlob(
      data, /*dataAlignment=*/1,
      [owner](void *, size_t, size_t) mutable { owner.reset(); },
      /*dataIsMutable=*/false);
}

bool GraphImporter::externalDataPresent(const onnx::TensorProto &tensor) const {
  for (const auto &entry : tensor.external_data())
    if (entry.key() == "location") {
      SmallString<256> file(path);
      llvm::sys::path::remove_filename(file);
      llvm::sys::path::append(file, entry.value());
      return llvm::sys::fs::exists(file);
    }
  return true; // no location: externalBlob reports it
}

LogicalResult GraphImporter::importInitializer(const onnx::TensorProto &tensor) {
  DType dtype;
  if (!dtypeFromOnnx(tensor.data_type(), dtype))
    return fail("initializer '" + tensor.name() + "' has unsupported data type " +
                onnxTypeName(tensor.data_type()));
  if (dtype == DType::String)
    return fail("initializer '" + tensor.name() +
                "': string constants are not supported");
  if (tensor.dims_size() > kMaxRank)
    return fail("initializer '" + tensor.name() + "' has rank " + Twine(tensor.dims_size()) +
                " (at most " + Twine(kMaxRank) + ")");
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return fail("initializer '" + tensor.name() + "' has a negative dim");
  // Checked before anything multiplies them: a hostile shape's product or
  // byte count would wrap and pass the size checks below.
  auto checkedCount = checkedProduct(shape);
  auto checkedBytes =
      checkedCount ? checkedTensorBytes(*checkedCount, 8 * (int64_t)dtypeSize(dtype))
                   : std::nullopt;
  if (!checkedBytes)
    return fail("initializer '" + tensor.name() + "' of shape " + shapeToString(shape) +
                " is larger than the limit of " + Twine(maxTensorBytes()) +
                " bytes (SLUICE_MAX_TENSOR_BYTES)");
  auto type = RankedTensorType::get(shape, typeFromDType(&ctx, dtype));
  size_t count = (size_t)*checkedCount, byteSize = (size_t)*checkedBytes;
  bool external = tensor.data_location() == onnx::TensorProto::EXTERNAL;
  Location loc = FileLineColLoc::get(&ctx, path, 0, 0);

  bool dense = keepsDenseAttr(dtype, count);
  // 4-bit weights come packed two per byte; they unpack (one per byte)
  // through tensorFromProto below.
  if (external && isNibbleDType(dtype))
    return fail("initializer '" + tensor.name() +
                "': 4-bit tensors in external data are not supported");
  if (external && options.absentWeightsAsShapes && !externalDataPresent(tensor)) {
    // Shape only: a resource handle with no blob. Folding and the
    // evaluator see no data (tensorFromAttr fails, so nothing folds), and
    // each weight keeps its own handle, so CSE never merges two of them.
    auto handle =
        DenseResourceElementsHandle::getManagerInterface(&ctx).insert(tensor.name());
    defineValue(tensor.name(), sluice::ConstantOp::create(
                                   builder, loc, DenseResourceElementsAttr::get(type, handle)));
    ++absentWeights;
    absentBytes += (double)byteSize;
    return success();
  }
  if (external) {
    auto blob = externalBlob(tensor, byteSize);
    if (failed(blob))
      return failure();
    ElementsAttr attr;
    if (dense) {
      Tensor t = Tensor::alias(dtype, shape, blob->getData().data(), nullptr);
      attr = attrFromTensor(&ctx, Tensor::copyOf(dtype, shape, t.rawData()), type);
    } else {
      attr = DenseResourceElementsAttr::get(type, tensor.name(), std::move(*blob));
    }
    defineValue(tensor.name(), sluice::ConstantOp::create(builder, loc, attr));
    return success();
  }
  if (tensor.has_raw_data() && !dense && !isNibbleDType(dtype)) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != byteSize)
      return fail("initializer '" + tensor.name() + "' holds " +
                  Twine(raw.size()) + " bytes for shape " +
                  shapeToString(shape) + " (" + Twine(byteSize) + " expected)");
    AsmResourceBlob blob;
    if ((uintptr_t)raw.data() % dtypeSize(dtype) == 0) {
      // Alias the parsed model's bytes; the blob keeps the model alive.
      std::shared_ptr<onnx::ModelProto> owner = model;
      blob = AsmResourceBlob(ArrayRef<char>(raw.data(), raw.size()),
                             dtypeSize(dtype),
                             [owner](void *, size_t, size_t) mutable { owner.reset(); },
                             /*dataIsMutable=*/false);
    } else {
      blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
          ArrayRef<char>(raw.data(), raw.size()), 64);
    }
    defineValue(tensor.name(),
                sluice::ConstantOp::create(
                    builder, loc,
                    DenseResourceElementsAttr::get(type, tensor.name(), std::move(blob))));
    return success();
  }
  Tensor t;
  std::string why;
  if (!tensorFromProto(tensor, t, why))
    return fail("initializer " + why);
  defineValue(tensor.name(),
              sluice::ConstantOp::create(builder, loc, attrFromTensor(&ctx, t, type)));
  return success();
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node, int index) {
  std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
  int opset = opsetFor(domain);
  Location loc = nodeLocation(ctx, path, nodeName(node, index), node.op_type(), opset);
  std::vector<Value> inputs;
  for (const std::string &name : node.input()) {
    if (name.empty()) {
      inputs.push_back(Value());
      continue;
    }
    Value value = lookupValue(name);
    if (!value) {
      error += describeLocation(loc) + ": input '" + name +
               "' is not produced by any earlier node, input or initializer\n";
      return failure();
    }
    inputs.push_back(value);
  }
  // The inputs its ONNX schema requires are there: handlers index them
  // without checking (a Pow with one input dereferenced a null value; the
  // onnx_import fuzz target found it). Optional ones they check themselves.
  if (const onnx::OpSchema *schema =
          onnx::OpSchemaRegistry::Schema(node.op_type(), opset, domain)) {
    if (node.input_size() < schema->min_input()) {
      error += describeLocation(loc) + ": " + node.op_type() + " needs at least " +
               std::to_string(schema->min_input()) + " inputs, got " +
               std::to_string(node.input_size()) + "\n";
      return failure();
    }
    const auto &formal = schema->inputs();
    for (int i = 0; i < node.input_size() && i < (int)formal.size(); ++i)
      if (node.input(i).empty() &&
          formal[i].GetOption() == onnx::OpSchema::FormalParameterOption::Single) {
        error += describeLocation(loc) + ": input " + std::to_string(i) + " ('" +
                 formal[i].GetName() + "') of " + node.op_type() + " is required\n";
        return failure();
      }
  }
  const Handler *handler = OpRegistry::get().lookup(domain, node.op_type(), opset);
  Binder binder(builder, loc, node, opset, std::move(inputs), error);
  binder.subgraphs = this;
  if (failed((*handler)(binder))) {
    if (error.empty())
      error += describeLocation(loc) + ": cannot import node\n";
    return failure();
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    if (i >= (int)binder.outputs().size() || !binder.outputs()[i])
      return binder.fail("output " + Twine(i) + " ('" + node.output(i) +
                         "') is not supported by the importer");
    defineValue(node.output(i), binder.outputs()[i]);
  }
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run() {
  // Errors from type inference arrive as diagnostics at node locations.
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      error += describeLocation(diag.getLocation()) + ": " + diag.str() + "\n";
    return success();
  });
  if (failed(readOpsets()) || failed(checkSupported()))
    return nullptr;
  const auto &graph = model->graph();
  Location fileLoc = FileLineColLoc::get(&ctx, path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());

  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  for (const auto &given : options.inputShapes) {
    bool found = false;
    for (const auto &input : graph.input())
      found |= input.name() == given.first;
    if (!found) {
      (void)fail(std::string(options.variedInputs.count(given.first) ? "--shapes" : "--shape") +
                 " names '" + given.first + "', which is not a model input");
      return nullptr;
    }
  }
  SmallVector<Type> argTypes;
  SmallVector<Attribute> inputNames;
  SmallVector<std::string> argNames;
  for (const auto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue; // IR < 4 lists initializers among inputs
    auto type = inputType(input);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    inputNames.push_back(builder.getStringAttr(input.name()));
  }
  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  for (auto [name, arg] : llvm::zip(argNames, body->getArguments()))
    defineValue(name, arg);
  for (const auto &init : graph.initializer())
    if (failed(importInitializer(init)))
      return nullptr;
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), i)))
      return nullptr;

  SmallVector<Value> results;
  SmallVector<Attribute> outputNames;
  for (const auto &output : graph.output()) {
    Value value = lookupValue(output.name());
    if (!value) {
      (void)fail("graph output '" + output.name() + "' is never produced");
      return nullptr;
    }
    results.push_back(value);
    outputNames.push_back(builder.getStringAttr(output.name()));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, TypeRange(results)));
  func->setAttr("sluice.input_names", builder.getArrayAttr(inputNames));
  func->setAttr("sluice.output_names", builder.getArrayAttr(outputNames));
  // The model's word on which outputs are class scores (their last axis a
  // class axis): the accuracy guards then count changed predictions.
  for (const auto &prop : model->metadata_props()) {
    if (prop.key() != "sluice.class_outputs")
      continue;
    SmallVector<Attribute> classOutputs;
    SmallVector<StringRef> names;
    StringRef(prop.value()).split(names, ',', -1, /*KeepEmpty=*/false);
    for (StringRef name : names) {
      name = name.trim();
      if (!llvm::is_contained(outputNames, builder.getStringAttr(name))) {
        (void)fail("metadata sluice.class_outputs names '" + name.str() +
                   "', which is not a graph output");
        return nullptr;
      }
      classOutputs.push_back(builder.getStringAttr(name));
    }
    func->setAttr("sluice.class_outputs", builder.getArrayAttr(classOutputs));
  }
  (*module)->setAttr("sluice.opset", builder.getI64IntegerAttr(opsetFor("")));
  if (absentWeights) {
    func->setAttr(kWeightsAbsentAttr, builder.getI64IntegerAttr(absentWeights));
    func->setAttr(kWeightsAbsentBytesAttr,
                  builder.getI64IntegerAttr((int64_t)std::llround(absentBytes)));
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importModel(MLIRContext &context, const std::string &path,
                                  const ImportOptions &options,
                                  std::string &error) {
  registerImportDialects(context);
  auto model = loadModel(path, error);
  if (!model)
    return nullptr;
  GraphImporter importer(context, path, std::move(model), options, error);
  auto module = importer.run();
  if (!module && error.empty())
    error = path + ": import failed\n";
  return module;
}

} // namespace sluice::onnx_import
