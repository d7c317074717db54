//===- Locations.h - ONNX node locations in messages ------------*- C++ -*-===//
//
// The location the importer gives every op, and how errors and remarks name
// it. Ops keep their ONNX node through every phase (fused locations for ops
// made from several nodes), so the importer, the passes, both emitters and
// the tools all describe an op by the node a user can find in the model.
// In the support layer (docs/architecture.md, "Layers") so that codegen and
// the driver need not link the importer for it; SluiceDiagnostics links MLIR,
// SluiceSupport does not.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_SUPPORT_LOCATIONS_H
#define SLUICE_LIB_SUPPORT_LOCATIONS_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include <string>
#include <vector>

namespace sluice {

/// The location of the ops imported from one ONNX node:
/// `fused<"OpType:opset">[NameLoc(node), FileLineColLoc(file, 0, 0)]`.
mlir::Location nodeLocation(mlir::MLIRContext &context, llvm::StringRef file,
                            llvm::StringRef nodeName, llvm::StringRef opType,
                            int opset);

/// "file: node 'name' (OpType, opset N)" for a nodeLocation, "file: node
/// 'name' (and K more)" for an op fused from several nodes, or the location
/// printed plainly otherwise.
std::string describeLocation(mlir::Location loc);

/// The names of the ONNX nodes a location comes from: one for an imported
/// op, several for an op that passes fused from many (recognized
/// composites), in order, without repeats; empty for other locations.
std::vector<std::string> onnxNodeNames(mlir::Location loc);

/// "'sluice.matmul' (node 'x')": how remarks name an op, by its first ONNX
/// node (onnxNodeNames); the op's name alone where it has none. `op` must
/// not be null.
std::string describeOp(mlir::Operation *op);

/// The first of `op`'s ONNX nodes (onnxNodeNames), or its location
/// described (describeLocation) where it has none: how reports name an op.
std::string firstNodeName(mlir::Operation *op);

} // namespace sluice

#endif // SLUICE_LIB_SUPPORT_LOCATIONS_H
