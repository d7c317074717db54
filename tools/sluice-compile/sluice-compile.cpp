//===- sluice-compile.cpp - ONNX model to optimized bundle ----------------===//
//
//   sluice-compile MODEL.onnx --stop-after=PHASE --emit=mlir [-o FILE]
//                  [--shape=NAME=2x128 ...] [--report=FILE.json]
//
// This build implements the import and simplify phases; later phases (and
// bundles) arrive with the cpu end-to-end work.
//
//===----------------------------------------------------------------------===//

#include "lib/pipeline/Pipeline.h"
#include "tools/common/ToolSupport.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstring>

using namespace mlir;

namespace {

const char *kUsage = R"(usage: sluice-compile MODEL.onnx --stop-after=PHASE --emit=mlir [options]

Compiles an ONNX model (binary .onnx or textual .onnxtxt).

  --stop-after=PHASE    import | simplify (later phases are not in this build)
  --emit=mlir           print the IR after the stop phase
  -o FILE               write the output to FILE (default: stdout)
  --shape=NAME=2x128    bind an input's shape (repeatable)
  --report=FILE.json    write phase timings as JSON
  --elide-weights       print weight blobs as '...' instead of hex
  -h, --help            this help
)";

[[noreturn]] void die(const std::string &message) {
  sluice::tools::die("sluice-compile", message);
}

} // namespace

int main(int argc, char **argv) {
  std::string model, output = "-", emit, report, stop;
  bool elide = false;
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
    } else if (arg == "--elide-weights") {
      elide = true;
    } else if (args.is("--shape")) {
      std::string error;
      if (!sluice::parseShapeOption(args.flagValue("--shape"), options.inputShapes, error))
        die(error);
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
  if (stop.empty() || emit != "mlir")
    die("this build compiles up to the simplify phase only: pass "
        "--stop-after=import|simplify --emit=mlir");
  auto phase = sluice::parsePhase(stop);
  if (!phase)
    die("unknown phase '" + stop +
        "' (phases: import simplify recognize compress parallelize fuse plan emit)");

  MLIRContext context;
  std::string error;
  std::vector<sluice::PhaseTiming> timings;
  auto module = sluice::compileModel(context, model, options, *phase, error, &timings);
  if (!module)
    die(error);

  std::error_code ec;
  llvm::raw_fd_ostream out(output, ec);
  if (ec)
    die(output + ": cannot write: " + ec.message());
  OpPrintingFlags flags;
  if (elide)
    flags.elideLargeResourceString(64);
  module->print(out, flags);

  if (!report.empty()) {
    llvm::raw_fd_ostream json(report, ec);
    if (ec)
      die(report + ": cannot write: " + ec.message());
    json << "{\n  \"model\": \"" << model << "\",\n  \"phases\": [";
    for (size_t i = 0; i < timings.size(); ++i)
      json << (i ? ", " : "") << "{\"name\": \"" << timings[i].name
           << "\", \"ms\": " << timings[i].milliseconds << "}";
    json << "]\n}\n";
  }
  return 0;
}
