//===- sluice-opt.cpp - mlir-opt for the sluice dialect and its passes ----===//
//
// Replays any sluice pass or phase pipeline on a .mlir file, like mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"
#include "passes/Passes.h"
#include "tools/driver/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<sluice::SluiceDialect, mlir::func::FuncDialect>();
  mlir::registerTransformsPasses();
  sluice::registerSluicePasses();
  sluice::registerPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Sluice optimizer driver\n", registry));
}
