//===- Importer.h - ONNX model to sluice dialect ----------------*- C++ -*-===//
//
// Loads a binary ModelProto or textual ONNX (.onnxtxt, via libonnx's parser)
// and builds `func.func @main` of sluice ops. Initializers and Constant nodes
// become `sluice.constant`s; large ones are dense_resource blobs that alias
// the parsed model or memory-mapped external data (never copied into
// attributes). External data paths are confined to the model's folder.
// Every op's location names its node (lib/support/Locations.h).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_ONNX_IMPORTER_H
#define SLUICE_LIB_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace sluice::onnx_import {

/// Lowest and highest default-domain opsets the importer accepts.
constexpr int kMinOpset = 1;
constexpr int kMaxOpset = 22;
/// Limits on what a model declares, so that hostile files end in one error:
/// tensor rank (graph inputs, outputs, value infos, initializers) and the
/// nesting of subgraphs (If branches, Loop and Scan bodies).
constexpr int kMaxRank = 32;
constexpr size_t kMaxSubgraphDepth = 16;

struct ImportOptions {
  /// Shapes that replace an input's declared (possibly symbolic) dims.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Those of `inputShapes` that sluice-compile's --shapes gave (a shape
  /// variant's), named so in messages.
  std::set<std::string> variedInputs;
  /// Planning mode (`sluice-compile --emit=plan`): an initializer whose
  /// external data file is absent becomes a shape-only constant (a
  /// dense_resource without a blob: never read, never allocated) instead of
  /// an error. `main` then carries `sluice.weights_absent` (the count) and
  /// `sluice.weights_absent_bytes`. Such a module can be planned, not run.
  bool absentWeightsAsShapes = false;
};

/// `main`'s attributes in planning mode (see ImportOptions).
constexpr const char *kWeightsAbsentAttr = "sluice.weights_absent";
constexpr const char *kWeightsAbsentBytesAttr = "sluice.weights_absent_bytes";

/// Imports the model at `path`. On failure returns null and sets `error` to
/// one line per problem, each naming the file and, for node errors, the node
/// (name, op type, opset). An unsupported model lists all unsupported ops.
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &context,
                                              const std::string &path,
                                              const ImportOptions &options,
                                              std::string &error);

/// Registers the dialects the importer produces.
void registerImportDialects(mlir::MLIRContext &context);

} // namespace sluice::onnx_import

#endif // SLUICE_LIB_ONNX_IMPORTER_H
