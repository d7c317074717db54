//===- CompileFlags.cpp - sluice-compile's flag table and checks ----------===//

#include "tools/driver/CompileFlags.h"

#include "codegen/cpu/CpuEmitter.h"
#include "passes/Passes.h"
#include "tools/driver/Cache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace sluice {

std::string CompileRequest::bundlePath() const {
  if (!output.empty())
    return output;
  llvm::SmallString<256> p(llvm::sys::path::filename(model));
  llvm::sys::path::replace_extension(p, ".sluice");
  return std::string(p);
}

Phase CompileRequest::stopPhase() const {
  if (stopAfter)
    return *stopAfter;
  return emit == Emit::Kernels ? Phase::Plan : Phase::Emit;
}

namespace {

using Errors = std::vector<std::string>;

/// A count from 1 to 4096 (--tp, --pp, --micro-batches, --ep, --devices,
/// --jobs); 0 with an error otherwise.
int64_t parseCount(const char *flag, const char *what, const std::string &value, Errors &errors) {
  char *end = nullptr;
  long long n = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end || n < 1 || n > 4096) {
    errors.push_back(std::string("bad ") + flag + " '" + value + "' (expected " + what +
                     ", 1 to 4096)");
    return 0;
  }
  return n;
}

/// A number, or nothing when `text` is not one.
std::optional<double> parseNumber(const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end)
    return std::nullopt;
  return value;
}

/// One of `E`'s names, or an error "unknown FLAG 'VALUE' (CHOICES)".
template <typename E>
void parseChoiceFlag(const char *flag, const std::string &value, const char *choices, E &slot,
                     Errors &errors) {
  if (auto parsed = parseChoice<E>(value))
    slot = *parsed;
  else
    errors.push_back(std::string("unknown ") + flag + " '" + value + "' (" + choices + ")");
}

/// `--prune=heads=F,ffn=F,channels=F` (any subset, any order).
void parsePrune(const std::string &text, CompilerOptions &options, Errors &errors) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(text).split(parts, ',', -1, false);
  if (parts.empty())
    errors.push_back("bad --prune '" + text + "' (expected heads=F,ffn=F,channels=F, F in [0, 1))");
  for (llvm::StringRef part : parts) {
    auto [kind, value] = part.trim().split('=');
    double *slot = kind == "heads"      ? &options.pruneHeads
                   : kind == "ffn"      ? &options.pruneFfn
                   : kind == "channels" ? &options.pruneChannels
                                        : nullptr;
    if (!slot) {
      errors.push_back("unknown --prune kind '" + kind.str() +
                       "' (heads: attention heads, ffn: MLP hidden units, channels: conv "
                       "output channels)");
      continue;
    }
    std::optional<double> fraction = parseNumber(value.str());
    if (!fraction || !(*fraction >= 0 && *fraction < 1)) {
      errors.push_back("bad --prune fraction '" + value.str() + "' for " + kind.str() +
                       " (expected a fraction in [0, 1), e.g. " + kind.str() + "=0.25)");
      continue;
    }
    *slot = *fraction;
  }
}

/// The instruction set of this host's -march=native bundles.
CpuIsa hostCpuIsa() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f"))
    return CpuIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return CpuIsa::Avx2;
#endif
  return CpuIsa::Generic;
}

/// How a flag takes its value.
enum class Arity {
  Switch,   // `--flag` only
  Value,    // `--flag=V` or `--flag V`
  Optional, // `--flag` or `--flag=V`
};

using Handler = void (*)(CompileRequest &, const std::string &value, Errors &);

struct Flag {
  const char *name;
  Arity arity;
  Handler apply;
};

// clang-format off
const Flag kFlags[] = {
  {"-h", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) { r.help = true; }},
  {"--help", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) { r.help = true; }},
  {"-o", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &) { r.output = v; }},
  {"--stop-after", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (auto phase = parsePhase(v))
       r.stopAfter = *phase;
     else
       e.push_back("unknown phase '" + v +
                   "' (phases: import simplify recognize compress parallelize fuse plan emit)");
   }},
  {"--emit", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     auto emit = parseChoice<Emit>(v);
     if (!emit || *emit == Emit::Bundle)
       e.push_back("unknown --emit '" + v + "' (supported: mlir, kernels, source, plan)");
     else
       r.emit = *emit;
   }},
  {"--report", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &) {
     r.reportPath = v;
   }},
  {"--target", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (auto target = parseChoice<Target>(v))
       r.options.target = *target;
     else
       e.push_back("unknown target '" + v + "' (targets: cpu, cuda)");
   }},
  {"--gpu-arch", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &) {
     llvm::SmallVector<llvm::StringRef> parts;
     llvm::StringRef(v).split(parts, ',', -1, false);
     for (llvm::StringRef part : parts)
       r.gpuArchitectures.push_back(part.trim().str());
   }},
  {"--tp", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (int64_t n = parseCount("--tp", "a rank count", v, e))
       r.options.tp = n;
     r.tpGiven = true;
   }},
  {"--sp", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) {
     r.options.sp = r.spGiven = true;
   }},
  {"--pp", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (int64_t n = parseCount("--pp", "a count", v, e))
       r.options.pp = n;
   }},
  {"--micro-batches", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (int64_t n = parseCount("--micro-batches", "a count", v, e))
       r.options.microBatches = n;
   }},
  {"--ep", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (int64_t n = parseCount("--ep", "a rank count", v, e))
       r.options.ep = n;
   }},
  {"--jobs", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     r.jobs = (int)parseCount("--jobs", "a number of translation units", v, e);
   }},
  {"--devices", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     r.options.devices = parseCount("--devices", "a device count", v, e);
   }},
  {"--auto", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) {
     r.options.autoPlan = true;
   }},
  {"--device-memory", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (!parallel::parseByteSize(v, r.options.deviceMemory))
       e.push_back("bad --device-memory '" + v +
                   "' (expected bytes per device: 80GB, 80GiB, 512MB, or a number of bytes)");
   }},
  {"--cluster", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &) {
     r.clusterFile = v;
   }},
  {"--objective", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     parseChoiceFlag("--objective", v, "latency, throughput", r.options.objective, e);
   }},
  {"--fusion", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     parseChoiceFlag("--fusion", v, "none, elementwise, all", r.options.fusion, e);
   }},
  {"--precision", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     auto canonical = parsePrecision(v);
     auto precision = canonical ? parseChoice<Precision>(*canonical) : std::nullopt;
     if (precision)
       r.options.precision = *precision;
     else
       e.push_back("unknown --precision '" + v +
                   "' (fp32, fp16, bf16; aliases float32, float16, half, bfloat16)");
   }},
  {"--quantize", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     auto mode = parseChoice<Quantize>(v);
     if (!mode || *mode == Quantize::None)
       e.push_back("unknown --quantize '" + v + "' (int8, fp8, w8a16, w4a16)");
     else
       r.options.quantize = *mode;
   }},
  {"--prune", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     parsePrune(v, r.options, e);
   }},
  {"--sparsity", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     auto pattern = parseChoice<Sparsity>(v);
     if (!pattern || *pattern == Sparsity::None)
       e.push_back("unknown --sparsity '" + v +
                   "' (supported: 2:4, two of every four weights along K)");
     else
       r.options.sparsity = *pattern;
   }},
  {"--calibration", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &) {
     r.options.calibration = v;
     r.calibrationGiven = true;
   }},
  {"--calibration-method", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     parseChoiceFlag("--calibration-method", v, "minmax, percentile, entropy",
                     r.options.calibrationMethod, e);
     r.methodGiven = true;
   }},
  {"--smooth-quant", Arity::Optional, [](CompileRequest &r, const std::string &v, Errors &e) {
     std::optional<double> alpha = parseNumber(v);
     if (!alpha || !(*alpha >= 0 && *alpha <= 1))
       e.push_back("bad --smooth-quant '" + v + "' (expected ALPHA in [0, 1], e.g. 0.5)");
     else
       r.options.smoothQuant = *alpha;
   }},
  {"--accuracy-budget", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     std::optional<double> budget = parseNumber(v);
     if (!budget || !(*budget >= 0) || !std::isfinite(*budget))
       e.push_back("bad --accuracy-budget '" + v +
                   "' (expected an error >= 0: 0.05 relative L2, or 0.01 of the rows for "
                   "top1-agreement)");
     else
       r.options.accuracyBudget = *budget;
     r.budgetGiven = true;
   }},
  {"--accuracy-metric", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (auto metric = parseChoice<AccuracyMetric>(v))
       r.options.accuracyMetric = *metric;
     else
       e.push_back("bad --accuracy-metric '" + v + "' (expected rel-l2, top1-agreement or auto)");
     r.metricGiven = true;
   }},
  {"--quantization-cache", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &) {
     r.quantizationCache = v;
   }},
  {"--no-recognize", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) {
     r.options.recognize = false;
   }},
  {"--cache-dir", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (v.empty())
       e.push_back("--cache-dir needs a folder (--no-cache turns the cache off)");
     r.cacheDir = v;
   }},
  {"--no-cache", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) {
     r.noCache = true;
   }},
  {"--elide-weights", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) {
     r.elideWeights = true;
   }},
  {"--quiet", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) {
     r.quiet = true;
   }},
  {"--precompile-headers", Arity::Switch, [](CompileRequest &r, const std::string &, Errors &) {
     r.precompileHeaders = true;
   }},
  {"--shape", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     std::string error;
     if (!parseShapeOption(v, r.options, error))
       e.push_back(error);
   }},
  {"--shapes", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     std::string error;
     if (!parseShapesOption(v, r.shapeVariants, error))
       e.push_back(error);
   }},
  {"--cpu-isa", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     r.cpuIsaGiven = true;
     if (v == "native")
       r.options.cpuIsa = hostCpuIsa();
     else
       parseChoiceFlag("--cpu-isa", v, "native, avx512, avx2, generic", r.options.cpuIsa, e);
   }},
  {"--cpu-conv", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     r.cpuConvGiven = true;
     parseChoiceFlag("--cpu-conv", v, "onednn, onednn-nchw, im2col", r.options.cpuConv, e);
   }},
  {"--cpu-packed-weights", Arity::Optional, [](CompileRequest &r, const std::string &v, Errors &e) {
     r.cpuPackedWeightsGiven = true;
     if (v != "0" && v != "1")
       e.push_back("bad --cpu-packed-weights '" + v + "' (expected 0 or 1)");
     r.options.cpuPackedWeights = v == "1";
   }},
  {"--cusparselt-dir", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     if (v.empty())
       e.push_back("--cusparselt-dir needs a folder with include/cusparseLt.h and lib/ (none: "
                   "2:4 GEMMs run dense)");
     r.cusparseltDir = v;
   }},
  {"--bind", Arity::Value, [](CompileRequest &r, const std::string &v, Errors &e) {
     auto eq = v.find('=');
     if (eq == std::string::npos || eq == 0)
       e.push_back("bad --bind '" + v + "' (expected NAME=FILE.pb|.npy)");
     else
       r.options.boundInputs[v.substr(0, eq)] = v.substr(eq + 1);
   }},
};
// clang-format on

const Flag *findFlag(llvm::StringRef name) {
  for (const Flag &flag : kFlags)
    if (name == flag.name)
      return &flag;
  return nullptr;
}

} // namespace

void parseCompileFlags(int argc, char **argv, CompileRequest &request, Errors &errors) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.empty() || arg[0] != '-') {
      if (request.model.empty())
        request.model = arg;
      else
        errors.push_back("more than one model given");
      continue;
    }
    auto [name, inlineValue] = llvm::StringRef(arg).split('=');
    bool hasValue = arg.find('=') != std::string::npos;
    const Flag *flag = findFlag(name);
    if (!flag || (flag->arity == Arity::Switch && hasValue)) {
      errors.push_back("unknown option '" + arg + "' (see --help)");
      continue;
    }
    std::string value = inlineValue.str();
    if (flag->arity == Arity::Optional && !hasValue) // the flag alone
      value = name == "--smooth-quant" ? "0.5" : "1";
    if (flag->arity == Arity::Value && !hasValue) {
      if (i + 1 >= argc) {
        errors.push_back(std::string("missing value for ") + flag->name);
        continue;
      }
      value = argv[++i];
    }
    flag->apply(request, value, errors);
  }
  request.keyFlags = cache::keyFlags(argc, argv, request.model);
}

namespace {

/// The cpu target options the command line left out, from the environment
/// (docs/tools.md) and the host; and whether oneDNN can do what is asked.
void applyCpuDefaults(CompileRequest &r, Errors &errors) {
  CompilerOptions &o = r.options;
  if (!r.cpuIsaGiven)
    o.cpuIsa = hostCpuIsa();
  if (const char *conv = std::getenv("SLUICE_CPU_CONV"); conv && *conv && !r.cpuConvGiven) {
    if (auto value = parseChoice<CpuConv>(conv))
      o.cpuConv = *value;
    else
      errors.push_back(std::string("SLUICE_CPU_CONV='") + conv +
                       "': expected onednn, onednn-nchw or im2col");
  } else if (!r.cpuConvGiven && !codegen::cpuHasOnednn()) {
    o.cpuConv = CpuConv::Im2col;
  }
  if (o.cpuConv != CpuConv::Im2col && !codegen::cpuHasOnednn())
    errors.push_back(std::string(r.cpuConvGiven ? "--cpu-conv=" : "SLUICE_CPU_CONV=") +
                     choiceName(o.cpuConv) +
                     ": this sluice-compile was built without oneDNN (libdnnl-dev); cpu "
                     "convolutions use im2col");
  if (const char *packed = std::getenv("SLUICE_CPU_PACKED_WEIGHTS");
      packed && *packed && !r.cpuPackedWeightsGiven) {
    std::string value = packed;
    if (value != "0" && value != "1")
      errors.push_back("SLUICE_CPU_PACKED_WEIGHTS='" + value + "': expected 0 or 1");
    o.cpuPackedWeights = value == "1";
  }
}

/// cusparseLt.h and the library folder of a cuSPARSELt tree `base`
/// (include/, lib/), or false.
bool cusparseLtIn(const std::string &base, CompilerOptions &o) {
  if (!llvm::sys::fs::exists(base + "/include/cusparseLt.h"))
    return false;
  o.cusparseltHeader = base + "/include/cusparseLt.h";
  o.cusparseltLibDir = base + "/lib";
  return true;
}

/// The nvidia-cusparselt package under a Python environment `venv`
/// (lib/python3.X/site-packages/nvidia/cu13 for the cu13 wheels,
/// nvidia/cusparselt for older ones).
bool cusparseLtInVenv(const std::string &venv, CompilerOptions &o) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(venv + "/lib", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!llvm::sys::path::filename(it->path()).starts_with("python3"))
      continue;
    for (const char *folder : {"cu13", "cusparselt"})
      if (cusparseLtIn(it->path() + "/site-packages/nvidia/" + folder, o))
        return true;
  }
  return false;
}

/// cuda: where cuSPARSELt is (--cusparselt-dir, else $SLUICE_CUSPARSELT_DIR,
/// a folder with include/cusparseLt.h and lib/, any other value such as
/// "none" finding nothing; else the active $VIRTUAL_ENV; else the source
/// tree's .venv, where scripts/setup.sh installs nvidia-cusparselt-cu13).
void findCusparseLt(const CompileRequest &r, CompilerOptions &o) {
  std::string dir = r.cusparseltDir;
  if (const char *env = std::getenv("SLUICE_CUSPARSELT_DIR"); dir.empty() && env && *env)
    dir = env;
  if (!dir.empty()) {
    cusparseLtIn(dir, o);
    return;
  }
  if (const char *venv = std::getenv("VIRTUAL_ENV"); venv && *venv)
    if (cusparseLtInVenv(venv, o))
      return;
  // SLUICE_SOURCE_INCLUDE_DIRS starts with <source>/codegen/include.
  llvm::StringRef first = llvm::StringRef(SLUICE_SOURCE_INCLUDE_DIRS).split(':').first;
  if (first.consume_back("/codegen/include"))
    cusparseLtInVenv(first.str() + "/.venv", o);
}

/// What --quantize, --prune, --sparsity and the calibration options need of
/// each other, and what they do not combine with yet.
void checkCompression(const CompileRequest &r, Errors &errors) {
  const CompilerOptions &o = r.options;
  bool quantizes = o.quantize != Quantize::None;
  std::string mode = choiceName(o.quantize);
  if ((o.quantize == Quantize::Int8 || o.quantize == Quantize::Fp8) && !r.calibrationGiven)
    errors.push_back("--quantize=" + mode + " needs --calibration=DIR: the activations' " + mode +
                     " scales come from running sample inputs (DIR/NAME.npy per model input) "
                     "through the model");
  if (o.prunes() && !r.calibrationGiven)
    errors.push_back(std::string(o.sparsity == Sparsity::None ? "--prune" : "--sparsity") +
                     " needs --calibration=DIR: which heads, units, channels or weights matter "
                     "is measured by running sample inputs (DIR/NAME.npy per model input) "
                     "through the model");
  if (!quantizes && !o.prunes() &&
      (r.calibrationGiven || r.methodGiven || r.budgetGiven || r.metricGiven || o.smoothQuant >= 0))
    errors.push_back(std::string(r.calibrationGiven ? "--calibration"
                                 : r.methodGiven    ? "--calibration-method"
                                 : r.budgetGiven    ? "--accuracy-budget"
                                 : r.metricGiven    ? "--accuracy-metric"
                                                    : "--smooth-quant") +
                     " applies to quantization and pruning: give "
                     "--quantize=int8|fp8|w8a16|w4a16, --prune or --sparsity too");
  else if (r.methodGiven && !quantizes)
    errors.push_back(
        "--calibration-method chooses int8 and fp8 ranges: it needs --quantize=int8|fp8");
  if (o.prunes() && o.tp > 1)
    errors.push_back("--prune/--sparsity with --tp is not supported yet: prune a single-device "
                     "bundle (pruned head counts need not divide by the ranks)");
  if (o.smoothQuant >= 0 && o.quantize != Quantize::Int8 && (quantizes || o.prunes()))
    errors.push_back(
        "--smooth-quant balances int8 activations against weights: it needs --quantize=int8");
  if (quantizes && o.tp > 1)
    errors.push_back("--quantize with --tp is not supported yet: quantize a single-device bundle");
  if (o.pp > 1 && (o.prunes() || quantizes))
    errors.push_back("--prune/--sparsity/--quantize with --pp is not supported yet: compress a "
                     "single-device bundle");
  if (o.ep > 1 && (o.prunes() || quantizes))
    errors.push_back("--prune/--sparsity/--quantize with --ep is not supported yet: compress a "
                     "single-device bundle");
}

/// The parallel grid and the automatic plan's options; reads --cluster.
void checkParallel(CompileRequest &r, Errors &errors) {
  CompilerOptions &o = r.options;
  if (o.microBatches > 1 && o.pp < 2)
    errors.push_back("--micro-batches streams micro-batches through pipeline stages: give "
                     "--pp=N (N >= 2) too");
  if (o.ep > 1 && (o.tp > 1 || o.pp > 1))
    errors.push_back("--ep combines with neither --tp nor --pp yet: give one of them");
  if (o.sp && o.tp < 2)
    errors.push_back(
        "--sp splits the sequence over the tensor-parallel ranks: give --tp=N (N >= 2) too");
  bool printPlan = r.emit == Emit::Plan;
  if ((o.autoPlan || printPlan) && o.devices == 0)
    errors.push_back(std::string(o.autoPlan ? "--auto" : "--emit=plan") +
                     " plans for a number of devices: give --devices=N");
  if (o.devices > 0 && !o.autoPlan && !printPlan)
    errors.push_back("--devices=N is for the automatic plan: give --auto (compile the chosen "
                     "plan) or --emit=plan (print the table)");
  if (o.autoPlan && (r.tpGiven || r.spGiven || o.pp > 1 || o.microBatches > 1 || o.ep > 1))
    errors.push_back("--auto chooses --tp, --sp, --pp, --micro-batches and --ep itself: drop "
                     "them, or drop --auto");
  if ((o.deviceMemory > 0 || !r.clusterFile.empty() || o.objective != Objective::Latency) &&
      o.devices == 0)
    errors.push_back("--device-memory, --cluster and --objective describe the automatic plan: "
                     "give --devices=N with --auto or --emit=plan");
  if (!r.clusterFile.empty()) {
    std::string clusterError;
    if (!parallel::readClusterFile(r.clusterFile, o.cluster, clusterError))
      errors.push_back(clusterError);
  }
  int64_t clusterDevices = o.cluster.devicesPerNode * o.cluster.nodes;
  if (o.devices > clusterDevices)
    errors.push_back(
        "--devices=" + std::to_string(o.devices) + " but the cluster has " +
        std::to_string(clusterDevices) + " devices (" + std::to_string(o.cluster.nodes) + " x " +
        std::to_string(o.cluster.devicesPerNode) + "; --cluster=FILE.json describes more)");
  if (printPlan && r.stopAfter)
    errors.push_back("--emit=plan plans after the compress phase: drop --stop-after");
  if (o.autoPlan && (o.quantize != Quantize::None || o.prunes()))
    errors.push_back("--auto with --quantize, --prune or --sparsity is not supported yet (they "
                     "do not combine with --tp)");
}

/// --stop-after against --emit.
void checkStop(const CompileRequest &r, Errors &errors) {
  if (!r.stopAfter)
    return;
  std::string stop = phaseName(*r.stopAfter);
  if (r.emit == Emit::Bundle && *r.stopAfter != Phase::Emit)
    errors.push_back("--stop-after=" + stop + " needs --emit=mlir (only emit writes a bundle)");
  if (r.emit == Emit::Source && *r.stopAfter != Phase::Emit)
    errors.push_back("--emit=source writes what the emit phase generates: drop --stop-after=" +
                     stop);
  if (r.emit == Emit::Kernels && *r.stopAfter < Phase::Fuse)
    errors.push_back("--emit=kernels lists kernel groups, which the fuse phase forms: stop "
                     "after fuse, plan or emit");
}

/// --shapes: what shape variants combine with.
void checkShapeVariants(const CompileRequest &r, Errors &errors) {
  const CompilerOptions &o = r.options;
  if (o.target != Target::Cpu)
    errors.push_back("--shapes builds shape variants for the cpu target only: compile one cuda "
                     "bundle per shape with --shape");
  if (r.emit != Emit::Bundle || r.stopAfter)
    errors.push_back("--shapes writes one bundle of shape variants: drop " +
                     std::string(r.emit != Emit::Bundle ? "--emit" : "--stop-after") +
                     " (or compile one shape with --shape=NAME=DIMS)");
  if (o.tp > 1 || o.pp > 1 || o.ep > 1 || o.microBatches > 1 || o.devices > 0)
    errors.push_back("--shapes does not combine with --tp, --pp, --ep, --micro-batches or "
                     "--devices: a multi-rank bundle has one shape (compile one bundle per "
                     "shape with --shape)");
  if (o.quantize != Quantize::None || o.prunes())
    errors.push_back("--shapes does not combine with --quantize, --prune or --sparsity yet: "
                     "their calibration and accuracy guard run at one shape (compile one "
                     "bundle per shape with --shape)");
  if (llvm::StringRef(r.model).ends_with(".mlir"))
    errors.push_back(r.model + ": --shapes binds each variant's shapes at the ONNX import: give "
                               "the .onnx model");
}

} // namespace

void checkCompileRequest(CompileRequest &request, Errors &errors) {
  if (request.precompileHeaders) {
    if (!request.model.empty())
      errors.push_back("--precompile-headers takes no model");
    return;
  }
  if (request.model.empty())
    errors.push_back("no model given (see --help)");
  applyCpuDefaults(request, errors);
  if (request.options.target == Target::Cuda)
    findCusparseLt(request, request.options);
  checkCompression(request, errors);
  checkParallel(request, errors);
  checkStop(request, errors);
  if (request.shapeVariants.empty())
    return;
  checkShapeVariants(request, errors);
  std::string error;
  if (!shapeVariants(request.shapeVariants, request.options, request.variantShapes, error))
    errors.push_back(error);
  for (const auto &entry : request.shapeVariants)
    request.options.variedInputs.insert(entry.first);
}

} // namespace sluice
