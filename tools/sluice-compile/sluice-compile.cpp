//===- sluice-compile.cpp - ONNX model to optimized bundle ----------------===//
//
//   sluice-compile MODEL.onnx -o OUT.sluice [--target=cpu] [--shape=NAME=2x128 ...]
//                  [--stop-after=PHASE --emit=mlir] [--report=FILE.json]
//
// Runs the phases of DESIGN.md (import, simplify, fuse, plan, emit) and
// writes a bundle folder: manifest.json, model.so (built here with the system
// C++ compiler) and weights.bin.
//
//===----------------------------------------------------------------------===//

#include "codegen/bundle/Bundle.h"
#include "codegen/cpu/CpuEmitter.h"
#include "lib/onnx/Importer.h"
#include "lib/pipeline/Pipeline.h"
#include "tools/common/ToolSupport.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstring>

using namespace mlir;

namespace {

const char *kUsage = R"(usage: sluice-compile MODEL.onnx -o OUT.sluice [options]
       sluice-compile MODEL.onnx --stop-after=PHASE --emit=mlir [-o FILE] [options]

Compiles an ONNX model (binary .onnx or textual .onnxtxt) into a bundle: a
folder with manifest.json, the compiled library and weights.bin, run by
sluice-run or the runtime library (include/sluice/runtime.h).

  -o PATH               the bundle folder (default: MODEL's name + .sluice);
                        with --emit=mlir, the IR file (default: stdout)
  --target=cpu          code generation target (cpu: C++ with OpenMP and
                        OpenBLAS; the cuda target is not in this build)
  --shape=NAME=2x128    bind an input's shape (repeatable); bundles need
                        static shapes
  --bind=NAME=FILE      freeze an input to a tensor file's value (.pb/.npy):
                        it becomes a constant and leaves the bundle's
                        inputs (for shape tensors a static bundle needs)
  --fusion=MODE         kernel groups the fuse phase grows: none (one op per
                        kernel, the default), elementwise (elementwise
                        chains) or all (GEMM epilogues, row ops, attention,
                        views; see docs/architecture.md "fuse")
  --stop-after=PHASE    import | simplify | recognize | compress |
                        parallelize | fuse | plan | emit
  --emit=mlir           print the IR after the stop phase instead of a bundle
  --report=FILE.json    write kernels, library_calls, arena_bytes,
                        weights_bytes and phase timings as JSON
  --elide-weights       print weight blobs as '...' instead of hex
  --quiet               no progress lines on stderr
  -h, --help            this help

Environment: SLUICE_CXX or CXX picks the C++ compiler (default c++).
)";

[[noreturn]] void die(const std::string &message) {
  sluice::tools::die("sluice-compile", message);
}

std::string defaultBundlePath(const std::string &model) {
  llvm::SmallString<256> p(llvm::sys::path::filename(model));
  llvm::sys::path::replace_extension(p, ".sluice");
  return std::string(p);
}

} // namespace

int main(int argc, char **argv) {
  std::string model, output, emit, report, stop, target = "cpu";
  bool elide = false, quiet = false;
  sluice::CompilerOptions options;
  sluice::tools::ArgReader args("sluice-compile", argc, argv);
  while (args.next()) {
    const std::string &arg = args.arg();
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (args.is("-o")) {
      output = args.flagValue("-o");
    } else if (args.is("--stop-after")) {
      stop = args.flagValue("--stop-after");
    } else if (args.is("--emit")) {
      emit = args.flagValue("--emit");
    } else if (args.is("--report")) {
      report = args.flagValue("--report");
    } else if (args.is("--target")) {
      target = args.flagValue("--target");
    } else if (args.is("--fusion")) {
      options.fusion = args.flagValue("--fusion");
      if (options.fusion != "none" && options.fusion != "elementwise" &&
          options.fusion != "all")
        die("unknown --fusion '" + options.fusion + "' (none, elementwise, all)");
    } else if (arg == "--elide-weights") {
      elide = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (args.is("--shape")) {
      std::string error;
      if (!sluice::parseShapeOption(args.flagValue("--shape"), options.inputShapes, error))
        die(error);
    } else if (args.is("--bind")) {
      std::string value = args.flagValue("--bind");
      auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0)
        die("bad --bind '" + value + "' (expected NAME=FILE.pb|.npy)");
      options.boundInputs[value.substr(0, eq)] = value.substr(eq + 1);
    } else if (arg.rfind("-", 0) == 0) {
      die("unknown option '" + arg + "' (see --help)");
    } else if (model.empty()) {
      model = arg;
    } else {
      die("more than one model given");
    }
  }
  if (model.empty())
    die("no model given (see --help)");
  if (target != "cpu")
    die("target '" + target + "' is not available in this build (targets: cpu)");
  options.target = target;
  if (!emit.empty() && emit != "mlir")
    die("unknown --emit '" + emit + "' (supported: mlir)");
  sluice::Phase stopPhase = sluice::Phase::Emit;
  if (!stop.empty()) {
    auto phase = sluice::parsePhase(stop);
    if (!phase)
      die("unknown phase '" + stop +
          "' (phases: import simplify recognize compress parallelize fuse plan emit)");
    stopPhase = *phase;
    if (emit.empty() && stopPhase != sluice::Phase::Emit)
      die("--stop-after=" + stop + " needs --emit=mlir (only emit writes a bundle)");
  }
  bool printIR = emit == "mlir";

  MLIRContext context;
  std::string error;
  std::vector<sluice::PhaseTiming> timings;
  sluice::Phase irPhase = std::min(stopPhase, sluice::Phase::Plan);
  auto module = sluice::compileModel(context, model, options, irPhase, error, &timings);
  if (!module)
    die(error);

  sluice::codegen::CpuModel cpuModel;
  bool bundled = false;
  if (stopPhase == sluice::Phase::Emit) {
    auto start = std::chrono::steady_clock::now();
    std::string emitError;
    mlir::FailureOr<sluice::codegen::CpuModel> emitted;
    {
      ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Error)
          emitError += sluice::onnx_import::describeLocation(diag.getLocation()) + ": " +
                       diag.str() + "\n";
        return success();
      });
      emitted = sluice::codegen::emitCpuModel(*module);
    }
    if (failed(emitted))
      die(emitError.empty() ? model + ": emit phase failed" : emitError);
    cpuModel = std::move(*emitted);
    timings.push_back({"emit", std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count()});
    if (!printIR) {
      sluice::codegen::BundleOptions bundle;
      bundle.directory = output.empty() ? defaultBundlePath(model) : output;
      bundle.modelName = llvm::sys::path::stem(model).str();
      bundle.progress = !quiet;
      double seconds = 0;
      if (!sluice::codegen::writeCpuBundle(cpuModel, bundle, error, &seconds))
        die(error);
      timings.push_back({"build", seconds * 1000.0});
      bundled = true;
    }
  }

  if (printIR) {
    std::error_code ec;
    llvm::raw_fd_ostream out(output.empty() ? "-" : output, ec);
    if (ec)
      die(output + ": cannot write: " + ec.message());
    OpPrintingFlags flags;
    if (elide)
      flags.elideLargeResourceString(64);
    module->print(out, flags);
  }

  if (!report.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream json(report, ec);
    if (ec)
      die(report + ": cannot write: " + ec.message());
    json << "{\n  \"model\": \"" << model << "\",\n  \"target\": \"" << target << "\"";
    if (stopPhase == sluice::Phase::Emit)
      json << ",\n  \"kernels\": " << cpuModel.kernels
           << ",\n  \"library_calls\": " << cpuModel.libraryCalls
           << ",\n  \"arena_bytes\": " << cpuModel.arenaBytes
           << ",\n  \"weights_bytes\": " << cpuModel.weights.size();
    if (bundled)
      json << ",\n  \"bundle\": \"" << (output.empty() ? defaultBundlePath(model) : output) << "\"";
    json << ",\n  \"phases\": [";
    for (size_t i = 0; i < timings.size(); ++i)
      json << (i ? ", " : "") << "{\"name\": \"" << timings[i].name
           << "\", \"ms\": " << llvm::format("%.3f", timings[i].milliseconds) << "}";
    json << "]\n}\n";
  }
  return 0;
}
