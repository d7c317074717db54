//===- Targets.h - code generation targets behind one interface -*- C++ -*-===//
//
// What the compile session asks of a target: emit a planned module into
// generated source, write that source's bundle, print the source, and add
// the target's keys to the report. One implementation per target (cpu,
// cuda); a bundle of shape variants is one more writer over several cpu
// programs (CpuVariantsWriter).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_TARGETS_H
#define SLUICE_TOOLS_DRIVER_TARGETS_H

#include "codegen/bundle/Bundle.h"
#include "tools/driver/Choices.h"
#include "tools/driver/Report.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <vector>

namespace sluice {

class TargetBackend {
public:
  virtual ~TargetBackend() = default;
  /// Emits the planned `module`; errors are diagnostics on its ops.
  virtual mlir::LogicalResult emit(mlir::ModuleOp module) = 0;
  /// Remarks of the emitted program (steps left to the host ...).
  virtual std::vector<std::string> remarks() const = 0;
  /// Writes and builds the bundle; false with `error`.
  virtual bool writeBundle(const codegen::BundleOptions &options, std::string &error,
                           double *seconds) = 0;
  /// --emit=source: the generated source as one text.
  virtual void printSource(llvm::raw_ostream &out) const = 0;
  /// The report's figures of the emitted program.
  virtual CompileReport::Program reportProgram() const = 0;
  /// One progress line after the bundle is written ("" for none).
  virtual std::string bundleNote() const { return ""; }
};

/// The backend of `target`.
std::unique_ptr<TargetBackend> makeTargetBackend(Target target);

/// A cpu bundle of shape variants: each variant emitted from its own
/// planned module with its own entry, the weights shared in one file.
class CpuVariantsWriter {
public:
  /// Emits variant number `index` (in order, from 0).
  mlir::LogicalResult emit(mlir::ModuleOp module, size_t index);
  bool writeBundle(const codegen::BundleOptions &options, std::string &error, double *seconds);
  CompileReport::Variants reportVariants() const;
  size_t size() const { return models.size(); }
  const codegen::SharedWeights &weights() const { return shared; }

private:
  codegen::SharedWeights shared;
  std::vector<codegen::CpuModel> models;
};

} // namespace sluice

#endif // SLUICE_TOOLS_DRIVER_TARGETS_H
