//===- fuzz_onnx_import.cpp - libFuzzer target: ONNX import and verify ----===//
//
// A model file through the importer and the MLIR verifier, as
// `sluice-compile --stop-after=import` does: any bytes must import to a
// module that verifies, or fail with a message naming the file.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Importer.h"
#include "test/fuzz/FuzzFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = sluice::fuzz::writeInput(data, size, ".onnx");
  if (path.empty())
    return 0;
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  sluice::onnx_import::registerImportDialects(context);
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) {}); // quiet
  std::string error;
  sluice::onnx_import::ImportOptions options;
  auto module = sluice::onnx_import::importModel(context, path, options, error);
  if (!module) {
    if (error.empty())
      __builtin_trap();
    return 0;
  }
  (void)mlir::verify(*module);
  return 0;
}
