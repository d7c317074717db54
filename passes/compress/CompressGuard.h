//===- CompressGuard.h - what the calibrated compressions share -*- C++ -*-===//
//
// The pieces every calibration-guarded compression of the compress phase
// needs (quantization, structured pruning, 2:4 sparsity): the unpruned
// function's outputs on the calibration sets as the yardstick, the error of
// a candidate function's outputs against it in the metric the user chose
// (`--accuracy-metric`: relative L2, or top-1 agreement for classifiers), how a report names an op,
// the parameter and FLOP counts of a function, and scratch constants whose weight blobs are
// released once a trial evaluation is done (a guard evaluates many candidates of one model; their
// sliced or zeroed weights must not pile up in the context).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_COMPRESS_COMPRESSGUARD_H
#define SLUICE_PASSES_COMPRESS_COMPRESSGUARD_H

#include "passes/compress/Calibration.h"

#include "lib/reference/Evaluator.h"
#include "lib/support/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <optional>
#include <string>
#include <vector>

namespace sluice::compress {

/// The unpruned function's outputs on every calibration set, and how a
/// candidate's outputs are judged against them.
struct ReferenceRun {
  std::vector<quant::CalibrationSet> sets;
  std::vector<std::vector<Tensor>> outputs; ///< [set][output]
  std::vector<std::string> outputNames;     ///< `sluice.output_names`, or outputN
  quant::AccuracyMetric metric = quant::AccuracyMetric::RelL2;
  double budget = 0.05; ///< in `metric`
};

/// The errors of a candidate's outputs against the reference.
struct OutputErrors {
  std::vector<double> values; ///< per output, in the run's metric
  std::vector<double> relL2;  ///< per output, the relative L2 error
  /// The largest of `values` (0 without outputs).
  double worst() const;
  double worstRelL2() const;
  /// Whether these hurt more than `other`: by worst(), ties (candidates
  /// that change no prediction) by worstRelL2().
  bool exceeds(const OutputErrors &other) const;
};

/// Resolves the guards' `metric` and `budget` options for `func` into
/// `run`: "rel-l2", "top1-agreement" or "auto" (top1-agreement when every
/// result's last axis is a class axis: a rank-2 result, or one the model
/// names in `sluice.class_outputs`; else rel-l2), a negative budget the
/// metric's default (a budget of 1 or more allows every top-1 change).
/// Fails with a message naming the option: an unknown metric, a NaN budget,
/// top1-agreement of a scalar output.
bool resolveAccuracy(mlir::func::FuncOp func, llvm::StringRef metric, double budget,
                     ReferenceRun &run, std::string &error);

/// "0.0500" (rel-l2) / "0.0100 (2 of 200 rows)" (top1-agreement): an error
/// or budget as progress lines say it.
std::string describeBudget(const ReferenceRun &run, double value);

/// Loads `dir` (quant::loadCalibration: its checks and messages) and names
/// the outputs; the outputs themselves come from runReference.
bool loadReference(mlir::func::FuncOp func, const std::string &dir, ReferenceRun &run,
                   std::string &error);

/// Evaluates `func` on every set, keeping its outputs in `run.outputs`;
/// `observe(set, value, tensor)` (optional) sees every tensor it computes
/// (activation statistics for importance scores).
mlir::LogicalResult
runReference(mlir::func::FuncOp func, ReferenceRun &run,
             llvm::function_ref<void(size_t, mlir::Value, const Tensor &)> observe = nullptr);

/// The error of each output of `candidate` against the reference,
/// accumulated over every set (quant::ErrorSum), in the run's metric and
/// as relative L2. The sets are evaluated in parallel where the context
/// allows threads; the result does not depend on it.
mlir::LogicalResult measureErrors(mlir::func::FuncOp candidate, const ReferenceRun &run,
                                  OutputErrors &errors);

/// `errors` from sums per output (in `run`'s metric).
OutputErrors errorsOf(const ReferenceRun &run, const std::vector<quant::ErrorSum> &sums);

/// No error on every output of `run` (the unchanged model).
OutputErrors noErrors(const ReferenceRun &run);

/// The largest of `values` (0 when empty).
double maxOf(const std::vector<double> &values);

/// `value` with `digits` decimals ("inf" when not finite), for messages.
std::string fixed(double value, int digits = 4);

/// How a report names `op`: its first ONNX node, or, for IR without node
/// locations, "sluice.matmul #2" (the op's rank among the ops of its name
/// in its block, counting from 0).
std::string nodeNameOf(mlir::Operation *op);

/// The tensor of the `sluice.constant` behind `v`, if it is one.
std::optional<Tensor> constantTensor(mlir::Value v);

/// Elements of every float constant of `func`: its weights.
int64_t countParams(mlir::func::FuncOp func);

/// 2*M*N*K (times the batch) of every `sluice.matmul` plus twice the
/// multiply-accumulates of every `sluice.conv`, with static shapes (an op
/// with a dynamic dim counts 0).
int64_t countFlops(mlir::func::FuncOp func);

/// Weight blobs created for a trial evaluation, released (emptied) when
/// this goes out of scope: the trial's ops must be gone by then.
class ScratchBlobs {
public:
  ScratchBlobs() = default;
  ScratchBlobs(const ScratchBlobs &) = delete;
  ScratchBlobs &operator=(const ScratchBlobs &) = delete;
  ~ScratchBlobs();
  void add(mlir::DenseResourceElementsAttr attr) { attrs.push_back(attr); }

private:
  std::vector<mlir::DenseResourceElementsAttr> attrs;
};

/// A `sluice.constant` holding `tensor` before the builder's point; its blob
/// is recorded in `scratch` when given (a trial constant).
mlir::Value makeConstant(mlir::OpBuilder &b, mlir::Location loc, const Tensor &tensor,
                         ScratchBlobs *scratch = nullptr);

} // namespace sluice::compress

#endif // SLUICE_PASSES_COMPRESS_COMPRESSGUARD_H
