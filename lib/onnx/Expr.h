//===- Expr.h - arithmetic on values for importer decompositions -*- C++ -*-===//
//
// ONNX ops defined as formulas (activations, optimizers, ...) decompose into
// elementwise sluice ops; Expr spells those formulas with scalar constants
// of one element type. Every op goes through Binder::create, so a failure
// propagates as a null Value.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_ONNX_EXPR_H
#define SLUICE_LIB_ONNX_EXPR_H

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

namespace sluice::onnx_import {

struct Expr {
  Binder &b;
  mlir::Type element;
  mlir::Value c(double v) { return b.constScalar(element, v); }
  mlir::Value add(mlir::Value x, mlir::Value y) { return b.create<AddOp>(x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return b.create<SubOp>(x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return b.create<MulOp>(x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return b.create<DivOp>(x, y); }
  mlir::Value max(mlir::Value x, mlir::Value y) { return b.create<MaxOp>(x, y); }
  mlir::Value min(mlir::Value x, mlir::Value y) { return b.create<MinOp>(x, y); }
  mlir::Value exp(mlir::Value x) { return b.create<ExpOp>(x); }
  mlir::Value sqrt(mlir::Value x) { return b.create<SqrtOp>(x); }
  mlir::Value less(mlir::Value x, mlir::Value y) { return b.create<LessOp>(x, y); }
  mlir::Value greater(mlir::Value x, mlir::Value y) { return b.create<GreaterOp>(x, y); }
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y) {
    return b.create<SelectOp>(c, x, y);
  }
  /// log(1 + exp(x)) computed stably as max(x, 0) + log(1 + exp(-|x|)).
  mlir::Value softplus(mlir::Value x) {
    mlir::Value negAbs = b.create<NegOp>(b.create<AbsOp>(x));
    return add(max(x, c(0)), b.create<LogOp>(add(c(1), exp(negAbs))));
  }
};

} // namespace sluice::onnx_import

#endif // SLUICE_LIB_ONNX_EXPR_H
