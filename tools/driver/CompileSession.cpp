//===- CompileSession.cpp - one compile, from model to bundle -------------===//

#include "tools/driver/CompileSession.h"

#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Locations.h"
#include "sluice/version.h"
#include "tools/driver/Cache.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>

using namespace mlir;

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Collects the error diagnostics of a scope as "where: message" lines.
class ErrorCollector {
public:
  explicit ErrorCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error)
            text += describeLocation(diag.getLocation()) + ": " + diag.str() + "\n";
          return success();
        }) {}
  std::string text;

private:
  ScopedDiagnosticHandler handler;
};

/// --emit=kernels: each kernel group with the ops inside it and the ONNX
/// nodes they came from, then the passes' remarks (what did not fuse, why).
void printKernelGroups(ModuleOp module, const std::vector<std::string> &remarks,
                       llvm::raw_ostream &out) {
  int64_t kernels = 0, library = 0;
  module.walk([&](KernelOp kernel) {
    (kernel.getLibrary() ? library : kernels)++;
    out << kernel.getSymName();
    if (auto lib = kernel.getLibrary())
      out << " [library " << *lib << "]";
    std::vector<std::string> ops, nodes;
    codegen::describeKernel(kernel, ops, nodes);
    out << ": " << ops.size() << (ops.size() == 1 ? " op:" : " ops:");
    for (const std::string &op : ops)
      out << " " << llvm::StringRef(op).split('.').second;
    out << "\n";
    if (!nodes.empty()) {
      out << "    nodes:";
      for (const std::string &n : nodes)
        out << " " << n;
      out << "\n";
    }
  });
  out << kernels << " kernels + " << library << " library calls = " << kernels + library
      << " launches\n";
  if (!remarks.empty()) {
    out << "remarks (" << remarks.size() << "):\n";
    for (const std::string &r : remarks)
      out << "  " << r << "\n";
  }
}

/// Opens `path` ("" or "-": stdout) for a listing.
std::unique_ptr<llvm::raw_fd_ostream> openListing(const std::string &path, std::string &error) {
  std::error_code ec;
  auto out = std::make_unique<llvm::raw_fd_ostream>(path.empty() ? "-" : path, ec);
  if (ec) {
    error = path + ": cannot write: " + ec.message();
    return nullptr;
  }
  return out;
}

/// Writes `text` to the file `path` (--report); false with `error`.
bool writeTextFile(const std::string &path, const std::string &text, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec) {
    error = path + ": cannot write: " + ec.message();
    return false;
  }
  file << text;
  return true;
}

/// What the emit phase remarks of --quantize=fp8 on each target.
const char *fp8Remark(Target target) {
  // Form F8 is one fp8 GEMM per layer on cuda (cuBLASLt, sm_89 and newer;
  // the runtime dequantizes and multiplies in f32 on older GPUs); the cpu
  // has no fp8 arithmetic and runs it as what it means.
  return target == Target::Cuda
             ? "--quantize=fp8: fp8 GEMMs (cuBLASLt E4M3 with per-tensor scale pointers) on "
               "sm_89 and newer; on older GPUs the same launch dequantizes and multiplies in f32 "
               "(docs/quantization.md)"
             : "--quantize=fp8: fp8 emulated on cpu (activations rounded to E4M3 in the "
               "producing kernel, E4M3 weights dequantized by an elementwise kernel, f32 GEMMs; "
               "docs/quantization.md)";
}

} // namespace

CompileSession::CompileSession(CompileRequest request) : request(std::move(request)) {}
CompileSession::~CompileSession() = default;

void CompileSession::progress(const std::string &line) const {
  if (!request.quiet)
    std::fprintf(stderr, "sluice-compile: %s\n", line.c_str());
}

codegen::BundleOptions CompileSession::bundleOptions() const {
  codegen::BundleOptions bundle;
  bundle.directory = request.bundlePath();
  bundle.modelName = llvm::sys::path::stem(request.model).str();
  bundle.progress = !request.quiet;
  bundle.jobs = request.jobs;
  bundle.cudaArchitectures = request.gpuArchitectures;
  bundle.precision = choiceName(request.options.precision);
  return bundle;
}

void CompileSession::prepareOptions() {
  CompilerOptions &options = request.options;
  bool bundle = request.emit == Emit::Bundle && request.stopPhase() == Phase::Emit;
  options.planOnly = request.emit == Emit::Plan;
  if (options.devices > 0)
    options.planResult = &plan;
  options.remarks = &remarks;
  options.warnings = &warnings;
  options.progress = !request.quiet;
  // Phase lines where the compile ends in a bundle (the --emit listings go
  // to stdout and stay as they were).
  options.phaseProgress = !request.quiet && bundle;
  if (options.quantize != Quantize::None && request.quantizationCache != "none") {
    if (!request.quantizationCache.empty())
      options.quantizationCache = request.quantizationCache;
    else if (bundle)
      options.quantizationCache = request.bundlePath() + ".quantization.json";
  }
  // The compile cache: bundles only (the IR, source, kernel and plan
  // listings are cheap to make and not worth a cache entry).
  if (bundle)
    cacheDir = cache::cacheDirectory(request.cacheDir, request.noCache);
}

bool CompileSession::lookupCache(std::string &error) {
  auto start = Clock::now();
  cache::KeyInputs inputs;
  inputs.cacheDir = cacheDir;
  inputs.compilerVersion = SLUICE_VERSION_STRING;
  inputs.modelPath = request.model;
  inputs.options = &request.options;
  inputs.gpuArchitectures = request.gpuArchitectures;
  inputs.clusterFile = request.clusterFile;
  inputs.flags = request.keyFlags;
  std::string keyError, cachedReport;
  // An ingredient that cannot be read (a missing model or --bind file):
  // no cache, and the compile says what is wrong.
  std::string bundlePath = request.bundlePath();
  if (!cache::computeKey(inputs, cacheKey, cacheRecipe, keyError)) {
    cacheDir.clear();
    return true;
  }
  hit = cache::restore(cacheDir, cacheKey, bundlePath, cachedReport, keyError);
  if (!hit) {
    if (!keyError.empty())
      std::fprintf(stderr, "sluice-compile: warning: %s\n", keyError.c_str());
    return true;
  }
  if (!keyError.empty()) {
    error = keyError;
    return false;
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CompileReport::CacheEntry entry{true, cacheKey, cacheDir, (int64_t)std::llround(seconds * 1e6)};
  // The report of the compile that made the entry, with this compile's
  // paths and the hit.
  if (!request.reportPath.empty() &&
      !writeTextFile(request.reportPath,
                     reportOfCacheHit(cachedReport, request.model, bundlePath, entry), error))
    return false;
  result.cache = entry;
  if (!request.quiet)
    std::fprintf(stderr, "sluice-compile: cache hit (%s): %s from %s in %.2f s\n", cacheKey.c_str(),
                 bundlePath.c_str(), cacheDir.c_str(), seconds);
  return true;
}

bool CompileSession::compileVariants(std::string &error) {
  // Shape variants: each compiled from the import with its shapes and
  // emitted with its own entry, the constants into one shared file.
  const auto &shapes = request.variantShapes;
  for (size_t v = 0; v < shapes.size(); ++v) {
    CompilerOptions variantOptions = request.options;
    variantOptions.inputShapes = shapes[v];
    std::string listed;
    for (const auto &entry : request.shapeVariants)
      listed += (listed.empty() ? "" : ", ") + entry.first + "=" + shapeToString(entry.second[v]);
    progress("shape variant " + std::to_string(v + 1) + " of " + std::to_string(shapes.size()) +
             " (" + listed + ")");
    auto module =
        compileModel(context, request.model, variantOptions, Phase::Plan, error, &timings);
    if (!module)
      return false;
    auto start = Clock::now();
    {
      ErrorCollector errors(context);
      if (failed(variants.emit(*module, v))) {
        error = errors.text.empty() ? request.model + ": emit phase failed" : errors.text;
        return false;
      }
    }
    notePhase(request.options, &timings, Phase::Emit, "emit", millisecondsSince(start));
    modules.push_back(std::move(module));
  }
  double seconds = 0;
  codegen::BundleOptions bundle = bundleOptions();
  bundle.jobs = 0;
  bundle.cudaArchitectures.clear();
  if (!variants.writeBundle(bundle, error, &seconds))
    return false;
  timings.push_back({"build", seconds * 1000.0});
  bundled = true;
  progress(std::to_string(variants.size()) +
           " shape variants share weights.bin: " + std::to_string(variants.weights().bytes.size()) +
           " bytes (" + std::to_string(variants.weights().unsharedBytes) + " as separate bundles)");
  result.variants = variants.reportVariants();
  return true;
}

bool CompileSession::emitAndWrite(ModuleOp module, std::string &error) {
  Target target = request.options.target;
  backend = makeTargetBackend(target);
  auto start = Clock::now();
  {
    ErrorCollector errors(context);
    if (failed(backend->emit(module))) {
      error = errors.text.empty() ? request.model + ": emit phase failed" : errors.text;
      return false;
    }
  }
  std::vector<std::string> emitted = backend->remarks();
  remarks.insert(remarks.end(), emitted.begin(), emitted.end());
  if (request.options.quantize == Quantize::Fp8)
    remarks.push_back(fp8Remark(target));
  notePhase(request.options, &timings, Phase::Emit, "emit", millisecondsSince(start));
  if (request.emit != Emit::Bundle)
    return true;
  double seconds = 0;
  if (!backend->writeBundle(bundleOptions(), error, &seconds))
    return false;
  timings.push_back({"build", seconds * 1000.0});
  bundled = true;
  if (std::string note = backend->bundleNote(); !note.empty())
    progress(note);
  return true;
}

bool CompileSession::writeListing(ModuleOp module, std::string &error) {
  if (request.emit != Emit::Mlir && request.emit != Emit::Source && request.emit != Emit::Kernels)
    return true;
  auto out = openListing(request.output, error);
  if (!out)
    return false;
  if (request.emit == Emit::Mlir) {
    OpPrintingFlags flags;
    if (request.elideWeights)
      flags.elideLargeResourceString(64);
    module->print(*out, flags);
  } else if (request.emit == Emit::Source) {
    backend->printSource(*out);
  } else {
    printKernelGroups(module, remarks, *out);
  }
  return true;
}

bool CompileSession::compileOne(std::string &error) {
  Phase stop = request.stopPhase();
  Phase irPhase = std::min(stop, Phase::Plan);
  if (request.emit == Emit::Plan)
    irPhase = stop = Phase::Compress;
  auto module = compileModel(context, request.model, request.options, irPhase, error, &timings);
  if (request.emit == Emit::Plan && !plan.candidates.empty()) {
    // The table also when no plan fits: it shows what each would need.
    std::string openError;
    auto out = openListing(request.output, openError);
    if (!out) {
      error = openError;
      return false;
    }
    parallel::printPlan(plan, request.options.planRequest(), *out);
  }
  if (!module)
    return false;
  // A .mlir file past the compress phase carries its precision.
  if (stop > Phase::Compress)
    request.options.precision =
        parseChoice<Precision>(modulePrecision(*module)).value_or(Precision::Fp32);
  if (stop == Phase::Emit && !emitAndWrite(*module, error))
    return false;
  if (!writeListing(*module, error))
    return false;
  if (stop == Phase::Emit)
    result.program = backend->reportProgram();
  if (auto func = module->lookupSymbol<func::FuncOp>("main"))
    for (const char *key : {"quantization", "pruning", "sparsity", "pipeline"})
      if (auto q = func->getAttrOfType<DictionaryAttr>(std::string("sluice.") + key))
        result.recorded.push_back({key, q});
  modules.push_back(std::move(module));
  return true;
}

bool CompileSession::finish(std::string &error) {
  result.model = request.model;
  result.target = choiceName(request.options.target);
  result.precision = choiceName(request.options.precision);
  if (request.options.devices > 0) {
    result.plan = &plan;
    result.planRequest = request.options.planRequest();
  }
  result.remarks = remarks;
  result.warnings = warnings;
  if (bundled)
    result.bundle = request.bundlePath();
  result.phases = timings;
  // The report, also without --report when the bundle goes into the
  // cache: a later hit with --report writes it.
  bool storing = bundled && !cacheDir.empty();
  if (storing)
    result.cache = CompileReport::CacheEntry{false, cacheKey, cacheDir, 0};
  std::string reportText = result.json();
  if (!request.reportPath.empty() && !writeTextFile(request.reportPath, reportText, error))
    return false;
  if (!storing)
    return true;
  // A bundle that cannot be stored is still a finished compile.
  std::string cacheError;
  if (!cache::store(cacheDir, cacheKey, request.bundlePath(), reportText, cacheRecipe, cacheError))
    std::fprintf(stderr, "sluice-compile: warning: not cached: %s\n", cacheError.c_str());
  else
    progress("cached as " + cacheKey + " in " + cacheDir);
  return true;
}

bool CompileSession::run(std::string &error) {
  prepareOptions();
  if (!cacheDir.empty()) {
    if (!lookupCache(error))
      return false;
    if (hit)
      return true;
  }
  bool compiled = request.variantShapes.empty() ? compileOne(error) : compileVariants(error);
  return compiled && finish(error);
}

bool precompileHeaders(const CompileRequest &request, std::string &path, std::string &error) {
  codegen::BundleOptions bundle;
  bundle.progress = !request.quiet;
  return codegen::precompileCpuHeaders(bundle, path, error);
}

} // namespace sluice
