//===- Binder.h - per-node binder and op-handler registry -------*- C++ -*-===//
//
// One handler per ONNX op, registered with the opset version it applies from
// (torch-mlir's `on("Gemm", 13, fn)`): the importer picks the handler with the
// greatest since-version not above the model's opset. A handler reads its
// node through a Binder (inputs, attributes, one error path) and sets the
// node's outputs.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_ONNX_BINDER_H
#define SLUICE_LIB_ONNX_BINDER_H

#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Tensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class NodeProto;
class AttributeProto;
class GraphProto;
class TypeProto;
} // namespace onnx

namespace sluice::onnx_import {

class Binder;
/// Imports one node; on failure the handler has reported through
/// Binder::fail (or a diagnostic was emitted at the node's location).
using Handler = std::function<mlir::LogicalResult(Binder &)>;

class OpRegistry {
public:
  /// The registry with every family's handlers.
  static const OpRegistry &get();
  /// Registers `fn` for `opType` in `domain` from opset `sinceVersion` on.
  void on(llvm::StringRef opType, int sinceVersion, Handler fn,
          llvm::StringRef domain = "");
  /// The handler for `opType` at `opset`, or null.
  const Handler *lookup(llvm::StringRef domain, llvm::StringRef opType,
                        int opset) const;
  /// Every registered (domain, op type) pair, for coverage reports.
  std::vector<std::string> opTypes() const;

private:
  std::map<std::string, std::map<int, Handler>> handlers;
};

void registerElementwiseHandlers(OpRegistry &registry);
void registerMathHandlers(OpRegistry &registry);
void registerShapeHandlers(OpRegistry &registry);
void registerIndexingHandlers(OpRegistry &registry);
void registerReductionHandlers(OpRegistry &registry);
void registerControlFlowHandlers(OpRegistry &registry);
void registerSignalHandlers(OpRegistry &registry);
void registerTrainingHandlers(OpRegistry &registry);
void registerSequenceHandlers(OpRegistry &registry);

/// The MLIR type of an ONNX TypeProto: a tensor, a sequence of tensors, or
/// an optional tensor or sequence. Null (with `why` set) for anything else.
mlir::Type typeFromOnnx(mlir::MLIRContext &context, const onnx::TypeProto &type,
                        std::string &why);

/// Imports a subgraph (If branch, Loop body) into `block`, whose arguments
/// stand for the subgraph's inputs; the subgraph reads enclosing values by
/// name. `outputs` receives the values of the subgraph's outputs.
class SubgraphImporter {
public:
  virtual ~SubgraphImporter() = default;
  virtual mlir::LogicalResult
  importSubgraph(const onnx::GraphProto &graph, mlir::Block *block,
                 llvm::SmallVectorImpl<mlir::Value> &outputs) = 0;
};

/// Reads one node's inputs and attributes and records its outputs.
class Binder {
public:
  Binder(mlir::OpBuilder &builder, mlir::Location loc,
         const onnx::NodeProto &node, int opset,
         std::vector<mlir::Value> inputs, std::string &error)
      : b(builder), loc(loc), node(node), opsetVersion(opset),
        inputValues(std::move(inputs)), error(error) {}

  mlir::OpBuilder &b;
  mlir::Location loc;
  /// Imports the node's subgraph attributes (set by the importer).
  SubgraphImporter *subgraphs = nullptr;

  int opset() const { return opsetVersion; }
  const onnx::NodeProto &proto() const { return node; }
  llvm::StringRef opType() const;

  /// Inputs: an absent optional input (empty name) reads as a null Value.
  unsigned numInputs() const { return inputValues.size(); }
  bool hasInput(unsigned i) const { return i < inputValues.size() && inputValues[i]; }
  mlir::Value input(unsigned i) const { return hasInput(i) ? inputValues[i] : mlir::Value(); }
  unsigned numOutputs() const;
  /// The ranked type of input `i`, or null for unranked/absent.
  mlir::RankedTensorType rankedType(unsigned i) const;
  mlir::Type elementType(unsigned i) const;

  /// Attributes.
  bool hasAttr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t defaultValue) const;
  float attrFloat(llvm::StringRef name, float defaultValue) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef defaultValue) const;
  std::vector<int64_t> attrInts(llvm::StringRef name,
                                std::vector<int64_t> defaultValue = {}) const;
  std::vector<float> attrFloats(llvm::StringRef name) const;
  /// A tensor attribute (Constant's value, ConstantOfShape's value ...).
  std::optional<Tensor> attrTensor(llvm::StringRef name);
  const onnx::AttributeProto *attr(llvm::StringRef name) const;

  /// Outputs.
  void setOutput(unsigned i, mlir::Value value);
  /// Sets output 0 to `value`; fails if it is null (a create failed).
  mlir::LogicalResult output(mlir::Value value) {
    if (!value)
      return mlir::failure();
    setOutput(0, value);
    return mlir::success();
  }
  const std::vector<mlir::Value> &outputs() const { return outputValues; }

  /// Records a model error for this node; returns failure.
  mlir::LogicalResult fail(const llvm::Twine &message);

  /// Creates `OpTy` with inferred result types; on a type-inference failure
  /// (the diagnostic is emitted at the node) returns null.
  template <typename OpTy, typename... Args>
  mlir::Value create(Args &&...args) {
    mlir::Operation *op = createOp<OpTy>(std::forward<Args>(args)...);
    return op ? op->getResult(0) : mlir::Value();
  }
  template <typename OpTy, typename... Args>
  mlir::Operation *createOp(Args &&...args) {
    // A null operand means an earlier create failed: propagated, no crash.
    return buildInferred<OpTy>(b, loc, std::forward<Args>(args)...);
  }

  /// Constants built by handlers (small, dense).
  mlir::Value constI64(llvm::ArrayRef<int64_t> values);
  mlir::Value constI64Scalar(int64_t value);
  /// A rank-0 constant of `element` type holding `value`.
  mlir::Value constScalar(mlir::Type element, double value);
  /// A constant holding `tensor` (dense_resource when large).
  mlir::Value constTensor(const Tensor &tensor);
  /// Casts `value` to `element` (no-op if equal).
  mlir::Value castTo(mlir::Value value, mlir::Type element);

private:
  const onnx::NodeProto &node;
  int opsetVersion;
  std::vector<mlir::Value> inputValues;
  std::vector<mlir::Value> outputValues;
  std::string &error;
};

} // namespace sluice::onnx_import

#endif // SLUICE_LIB_ONNX_BINDER_H
