//===- Indexing.cpp - ONNX gathers, scatters, index-driven ops ------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

LogicalResult gatherHandler(Binder &b) {
  return b.output(b.create<GatherOp>(b.input(0), b.input(1), b.attrInt("axis", 0)));
}

} // namespace

void registerIndexingHandlers(OpRegistry &r) { r.on("Gather", 1, gatherHandler); }

} // namespace sluice::onnx_import
