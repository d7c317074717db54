//===- Evaluator.h - the reference evaluator of sluice ops -------*- C++ -*-===//
//
// A plain interpreter of `sluice` ops on the CPU. It defines what each op
// means: the ONNX conformance suite runs through it, constant folding uses it,
// and every pass is checked against it (differential tests).
//
// Each op family registers one function per op name (see the register*
// functions below, one per file). A function reads its operand tensors and
// the op's attributes and produces result tensors; on failure it emits an
// error on the op (so the message carries the ONNX node's location).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_REFERENCE_EVALUATOR_H
#define SLUICE_LIB_REFERENCE_EVALUATOR_H

#include "lib/support/RuntimeValue.h"
#include "lib/support/Tensor.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace sluice {

/// Evaluates one op: `operands` in operand order (null for an absent optional
/// operand), results appended to `results` in result order.
using EvalFn = std::function<mlir::LogicalResult(
    mlir::Operation *op, llvm::ArrayRef<const Tensor *> operands,
    std::vector<Tensor> &results)>;

/// Evaluates one op whose operands or results may be sequences or
/// optionals (the sequence family); same contract as EvalFn otherwise.
using ValueEvalFn = std::function<mlir::LogicalResult(
    mlir::Operation *op, llvm::ArrayRef<const RuntimeValue *> operands,
    std::vector<RuntimeValue> &results)>;

class EvalRegistry {
public:
  /// The registry with every family's evaluators.
  static const EvalRegistry &get();
  void add(llvm::StringRef opName, EvalFn fn);
  void addValueFn(llvm::StringRef opName, ValueEvalFn fn);
  const EvalFn *lookup(llvm::StringRef opName) const;
  const ValueEvalFn *lookupValueFn(llvm::StringRef opName) const;
  bool contains(llvm::StringRef opName) const { return lookup(opName); }

private:
  llvm::StringMap<EvalFn> functions;
  llvm::StringMap<ValueEvalFn> valueFunctions;
};

void registerElementwiseEvaluators(EvalRegistry &registry);
void registerLinalgEvaluators(EvalRegistry &registry);
void registerShapeEvaluators(EvalRegistry &registry);
void registerIndexingEvaluators(EvalRegistry &registry);
void registerReductionEvaluators(EvalRegistry &registry);
void registerSequenceEvaluators(EvalRegistry &registry);
void registerCompositeEvaluators(EvalRegistry &registry);
void registerParallelEvaluators(EvalRegistry &registry);

/// The tensor a `sluice.constant` holds (aliases a dense_resource blob).
mlir::FailureOr<Tensor> tensorFromAttr(mlir::Attribute attr);
/// Whether a constant of `count` elements stays a dense attribute: scalars,
/// booleans and short integer vectors (shapes, axes: what folding reads).
/// Everything else is a weight and lives in a dense_resource blob.
bool keepsDenseAttr(DType dtype, int64_t count);

/// A builtin elements attribute holding `tensor` (for constant folding):
/// dense where keepsDenseAttr says so, a dense_resource blob otherwise.
mlir::ElementsAttr attrFromTensor(mlir::MLIRContext *context,
                                  const Tensor &tensor,
                                  mlir::RankedTensorType type);
/// The evaluator's element type for an MLIR element type.
mlir::FailureOr<DType> dtypeFromType(mlir::Type type);
mlir::Type typeFromDType(mlir::MLIRContext *context, DType type);

/// Evaluates one op given operand tensors (used by constant folding too).
mlir::LogicalResult evaluateOp(mlir::Operation *op,
                               llvm::ArrayRef<const Tensor *> operands,
                               std::vector<Tensor> &results);

/// Sees every tensor an op of the evaluated function produces, as soon as
/// it is computed (calibration: the compress phase's activation statistics).
using ValueObserver = std::function<void(mlir::Value value, const Tensor &tensor)>;

/// Runs `func` on `inputs`; fails (with diagnostics emitted) on a bad input or
/// an op without an evaluator. Inputs and outputs are tensors, sequences or
/// optionals as the function's types say. `observer` (optional) is called
/// with each op result that is a tensor, and with each tensor input; not
/// for partitioned programs (`sluice.tp` > 1).
mlir::FailureOr<std::vector<RuntimeValue>>
evaluate(mlir::func::FuncOp func, const std::vector<RuntimeValue> &inputs,
         const ValueObserver &observer = nullptr);

/// Runs `evaluateOne` as `world` ranks of a partitioned program, one thread
/// each, in lockstep at the collectives; rank 0's outputs (every rank's
/// are the same once the program makes its outputs whole). `evaluate` calls
/// it for a function with `sluice.tp` > 1.
mlir::FailureOr<std::vector<RuntimeValue>> evaluateRanks(
    mlir::func::FuncOp func, const std::vector<RuntimeValue> &inputs, int64_t world,
    mlir::FailureOr<std::vector<RuntimeValue>> (*evaluateOne)(
        mlir::func::FuncOp, const std::vector<RuntimeValue> &));

} // namespace sluice

#endif // SLUICE_LIB_REFERENCE_EVALUATOR_H
