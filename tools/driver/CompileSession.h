//===- CompileSession.h - one compile, from model to bundle ------*- C++ -*-===//
//
// The compile as sluice-compile, the tests and any other front end run it:
// import and the phases up to the stop phase (Pipeline.h), the target's
// emit (Targets.h), the bundle (or the --emit listing), the compile cache
// (Cache.h) and the report (Report.h). A front end fills a CompileRequest
// (CompileFlags.h parses sluice-compile's command line into one), checks it
// and runs a session.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_COMPILESESSION_H
#define SLUICE_TOOLS_DRIVER_COMPILESESSION_H

#include "tools/driver/CompileFlags.h"
#include "tools/driver/Report.h"
#include "tools/driver/Targets.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <string>
#include <vector>

namespace sluice {

class CompileSession {
public:
  /// `request` must have passed checkCompileRequest.
  explicit CompileSession(CompileRequest request);
  ~CompileSession();

  /// Runs the compile: writes the bundle or the listing, stores the bundle
  /// in the compile cache, writes --report. False with `error` (one line
  /// per problem) when anything fails.
  bool run(std::string &error);

  /// The report of the finished compile (also without --report).
  const CompileReport &report() const { return result; }
  /// Whether the bundle came from the compile cache.
  bool cacheHit() const { return hit; }

private:
  void prepareOptions();
  bool lookupCache(std::string &error);
  bool compileVariants(std::string &error);
  bool compileOne(std::string &error);
  bool emitAndWrite(mlir::ModuleOp module, std::string &error);
  bool writeListing(mlir::ModuleOp module, std::string &error);
  void fillReport(mlir::ModuleOp module);
  bool finish(std::string &error);
  codegen::BundleOptions bundleOptions() const;
  void progress(const std::string &line) const;

  CompileRequest request;
  mlir::MLIRContext context;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::unique_ptr<TargetBackend> backend;
  CpuVariantsWriter variants;
  parallel::PlanResult plan;
  std::vector<std::string> remarks, warnings;
  std::vector<PhaseTiming> timings;
  std::string cacheDir, cacheKey, cacheRecipe;
  bool bundled = false, hit = false;
  CompileReport result;
};

/// --precompile-headers: builds the cpu precompiled header; its path in
/// `path`, or false with `error`.
bool precompileHeaders(const CompileRequest &request, std::string &path, std::string &error);

} // namespace sluice

#endif // SLUICE_TOOLS_DRIVER_COMPILESESSION_H
