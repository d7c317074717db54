//===- Linalg.cpp - evaluators for contractions, conv, normalization ------===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

/// NumPy matmul with double accumulation (exact for integers up to 2^53).
LogicalResult evalMatMul(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  Tensor a = *operands[0], b = *operands[1];
  bool aVector = a.rank() == 1, bVector = b.rank() == 1;
  if (aVector)
    a = a.reshaped({1, a.dim(0)});
  if (bVector)
    b = b.reshaped({b.dim(0), 1});
  int64_t m = a.dim(a.rank() - 2), k = a.dim(a.rank() - 1);
  int64_t n = b.dim(b.rank() - 1);
  if (b.dim(b.rank() - 2) != k)
    return op->emitOpError("contraction dims differ: ")
           << a.describe() << " x " << b.describe();
  std::vector<int64_t> aBatch(a.shape().begin(), a.shape().end() - 2);
  std::vector<int64_t> bBatch(b.shape().begin(), b.shape().end() - 2);
  auto batch = broadcastShapes(op, {aBatch, bBatch});
  if (failed(batch))
    return failure();
  std::vector<int64_t> outShape = *batch;
  outShape.push_back(m);
  outShape.push_back(n);
  Tensor out(resultDType(op), outShape);
  std::vector<double> av = a.toDoubleVector(), bv = b.toDoubleVector();
  std::vector<double> acc(m * n);
  bool isFloat = isFloatDType(out.dtype());
  forEachBroadcast(*batch, {aBatch, bBatch},
                   [&](int64_t i, const std::vector<int64_t> &idx) {
                     const double *ap = av.data() + idx[0] * m * k;
                     const double *bp = bv.data() + idx[1] * k * n;
                     std::fill(acc.begin(), acc.end(), 0.0);
                     for (int64_t r = 0; r < m; ++r)
                       for (int64_t c = 0; c < k; ++c) {
                         double x = ap[r * k + c];
                         for (int64_t j = 0; j < n; ++j)
                           acc[r * n + j] += x * bp[c * n + j];
                       }
                     for (int64_t j = 0; j < m * n; ++j) {
                       if (isFloat)
                         out.setDouble(i * m * n + j, acc[j]);
                       else
                         out.setInt(i * m * n + j, (int64_t)acc[j]);
                     }
                   });
  std::vector<int64_t> finalShape = *batch;
  if (!aVector)
    finalShape.push_back(m);
  if (!bVector)
    finalShape.push_back(n);
  results.push_back(out.reshaped(finalShape));
  return success();
}

} // namespace

void registerLinalgEvaluators(EvalRegistry &r) {
  r.add(MatMulOp::getOperationName(), evalMatMul);
}

} // namespace sluice
