//===- Training.cpp - ai.onnx.preview.training optimizer ops --------------===//
//
// Adagrad, Momentum and Adam are closed-form update rules over their inputs;
// they decompose into elementwise ops (formulas as in the ONNX operator
// specs). Gradient, which needs automatic differentiation, is not supported.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"
#include "lib/onnx/Expr.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

constexpr const char *kTrainingDomain = "ai.onnx.preview.training";

/// T > 0 ? whenPositive : otherwise, T being the int64 step count.
Value ifStarted(Binder &b, Value t, Value whenPositive, Value otherwise) {
  Value started =
      b.create<GreaterOp>(t, b.constScalar(getElementTypeOrSelf(t.getType()), 0));
  return b.create<SelectOp>(started, whenPositive, otherwise);
}

/// Splits the inputs after (R, T) into `groups` equal groups of tensors.
FailureOr<SmallVector<SmallVector<Value>>> tensorGroups(Binder &b, unsigned groups) {
  unsigned count = b.numInputs() - 2;
  if (b.numInputs() < 2 + groups || count % groups)
    return b.fail(b.opType() + " expects R, T and " + Twine(groups) +
                  " equally long groups of tensors");
  SmallVector<SmallVector<Value>> out(groups);
  for (unsigned i = 0; i < count; ++i)
    out[i / (count / groups)].push_back(b.input(2 + i));
  return out;
}

LogicalResult adagradHandler(Binder &b) {
  auto groups = tensorGroups(b, 3);
  if (failed(groups))
    return failure();
  auto [xs, gs, hs] = std::tie((*groups)[0], (*groups)[1], (*groups)[2]);
  Expr m{b, b.elementType(2)};
  double decay = b.attrFloat("decay_factor", 0.0f);
  double epsilon = b.attrFloat("epsilon", 1e-6f);
  double norm = b.attrFloat("norm_coefficient", 0.0f);
  // r = R / (1 + T * decay_factor)
  Value t = b.castTo(b.input(1), m.element);
  Value r = m.div(b.castTo(b.input(0), m.element), m.add(m.c(1), m.mul(t, m.c(decay))));
  for (size_t i = 0; i < xs.size(); ++i) {
    Value g = m.add(m.mul(m.c(norm), xs[i]), gs[i]);
    Value h = m.add(hs[i], m.mul(g, g));
    Value x = m.sub(xs[i], m.div(m.mul(r, g), m.add(m.sqrt(h), m.c(epsilon))));
    b.setOutput(i, x);
    b.setOutput(xs.size() + i, h);
  }
  return success(llvm::all_of(b.outputs(), [](Value v) { return bool(v); }));
}

LogicalResult momentumHandler(Binder &b) {
  auto groups = tensorGroups(b, 3);
  if (failed(groups))
    return failure();
  auto [xs, gs, vs] = std::tie((*groups)[0], (*groups)[1], (*groups)[2]);
  Expr m{b, b.elementType(2)};
  double alpha = b.attrFloat("alpha", 0), beta = b.attrFloat("beta", 0);
  double norm = b.attrFloat("norm_coefficient", 0);
  std::string mode = b.attrString("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return b.fail("Momentum mode must be 'standard' or 'nesterov', got '" + mode + "'");
  Value r = b.castTo(b.input(0), m.element);
  Value betaAdjusted = ifStarted(b, b.input(1), m.c(beta), m.c(1));
  for (size_t i = 0; i < xs.size(); ++i) {
    Value g = m.add(m.mul(m.c(norm), xs[i]), gs[i]);
    Value v = m.add(m.mul(m.c(alpha), vs[i]), m.mul(betaAdjusted, g));
    Value step = mode == "standard" ? v : m.add(g, m.mul(m.c(alpha), v));
    b.setOutput(i, m.sub(xs[i], m.mul(r, step)));
    b.setOutput(xs.size() + i, v);
  }
  return success(llvm::all_of(b.outputs(), [](Value v) { return bool(v); }));
}

LogicalResult adamHandler(Binder &b) {
  auto groups = tensorGroups(b, 4);
  if (failed(groups))
    return failure();
  auto [xs, gs, vs, hs] =
      std::tie((*groups)[0], (*groups)[1], (*groups)[2], (*groups)[3]);
  Expr m{b, b.elementType(2)};
  double alpha = b.attrFloat("alpha", 0.9f), beta = b.attrFloat("beta", 0.999f);
  double epsilon = b.attrFloat("epsilon", 1e-6f);
  double norm = b.attrFloat("norm_coefficient", 0), post = b.attrFloat("norm_coefficient_post", 0);
  Value r = b.castTo(b.input(0), m.element);
  Value t = b.castTo(b.input(1), m.element);
  // Bias correction: R * sqrt(1 - beta^T) / (1 - alpha^T) once T > 0.
  Value alphaT = b.create<PowOp>(m.c(alpha), t), betaT = b.create<PowOp>(m.c(beta), t);
  Value corrected = m.div(m.mul(r, m.sqrt(m.sub(m.c(1), betaT))), m.sub(m.c(1), alphaT));
  Value rAdjusted = ifStarted(b, b.input(1), corrected, r);
  for (size_t i = 0; i < xs.size(); ++i) {
    Value g = m.add(m.mul(m.c(norm), xs[i]), gs[i]);
    Value v = m.add(m.mul(m.c(alpha), vs[i]), m.mul(m.c(1 - alpha), g));
    Value h = m.add(m.mul(m.c(beta), hs[i]), m.mul(m.c(1 - beta), m.mul(g, g)));
    Value x = m.sub(xs[i], m.mul(rAdjusted, m.div(v, m.add(m.sqrt(h), m.c(epsilon)))));
    b.setOutput(i, m.mul(m.c(1 - post), x));
    b.setOutput(xs.size() + i, v);
    b.setOutput(2 * xs.size() + i, h);
  }
  return success(llvm::all_of(b.outputs(), [](Value v) { return bool(v); }));
}

} // namespace

void registerTrainingHandlers(OpRegistry &r) {
  r.on("Adagrad", 1, adagradHandler, kTrainingDomain);
  r.on("Momentum", 1, momentumHandler, kTrainingDomain);
  r.on("Adam", 1, adamHandler, kTrainingDomain);
}

} // namespace sluice::onnx_import
