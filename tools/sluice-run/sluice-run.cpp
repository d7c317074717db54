//===- sluice-run.cpp - run, check and time a model -----------------------===//
//
//   sluice-run (OUT.sluice | MODEL.onnx --reference) [INPUT ...]
//              [--expect OUTPUT ...] [--rtol=1e-3 --atol=1e-7 | --max-rel-l2=X]
//              [--iters=N --warmup=W] [--save-outputs=DIR] [--random-inputs]
//              [--shape=NAME=2x128] [--trace=FILE.json] [--threads=N]
//              [--profile[=K|all]] [--json=FILE]
//              [--report=FILE.json]
//              [--device=N] [--no-cuda-graph] [--ranks=N]
//
// A bundle written by sluice-compile runs through the runtime's API only
// (include/sluice/runtime.hpp, no MLIR); MODEL.onnx --reference runs on the
// reference evaluator.
//
// A multi-rank bundle (sluice-compile --tp=N) runs as N processes: with
// --ranks=N sluice-run starts them itself through mpirun (Launch.h); under
// mpirun or srun each process is one rank, found from the launcher's
// environment. Rank 0 reads the inputs and sends them to the others, prints
// the outputs and checks them; every rank reports its own failure.
//
// Inputs and expected outputs are ONNX TensorProto .pb or NumPy .npy files
// (SequenceProto / OptionalProto .pb where the model takes or makes those),
// positional in the graph's order or NAME=FILE. Exits 0 only when every
// expected output matches within tolerance (|got - want| <= atol + rtol*|want|,
// the ONNX backend tests' rule), 1 on a mismatch, 2 on any other error.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/Json.h"
#include "lib/support/Locations.h"
#include "lib/support/TensorFiles.h"
#include "tools/common/ToolSupport.h"
#include "tools/driver/Pipeline.h"
#include "tools/sluice-run/Launch.h"
#include "tools/sluice-run/Profile.h"

#include "sluice/runtime.hpp"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

using namespace mlir;
using sluice::jsonText;

namespace {

const char *kUsage = R"(usage: sluice-run OUT.sluice [INPUT ...] [options]
       sluice-run (MODEL.onnx | FILE.mlir) --reference [INPUT ...] [options]

Runs a bundle written by sluice-compile (a folder; cpu or cuda target) or a
model on the reference evaluator, checks and times it.

  INPUT                 .pb (ONNX TensorProto) or .npy file, in the graph's
                        input order, or NAME=FILE; a sequence is an ONNX
                        SequenceProto .pb (a bundle's also element by
                        element, NAME.0=FILE ...: see manifest "sequences")
  --expect OUTPUT ...   expected outputs (.pb/.npy, positional or NAME=FILE);
                        exit 0 only if all match within tolerance
  --rtol=R --atol=A     tolerances (default 1e-3 and 1e-7, as the ONNX
                        backend tests): |got - want| <= A + R * |want|
  --max-rel-l2=X        float outputs match when their relative L2 error
                        ||got - want|| / ||want|| is at most X (instead of
                        --rtol/--atol; for half-precision bundles, whose
                        elements differ by more than a per-element rule
                        allows while the whole output agrees)
  --random-inputs       generate inputs that are not given (needs static
                        shapes, see --shape)
  --shape=NAME=2x128    bind an input's shape (repeatable; --reference only,
                        a bundle's shapes are fixed when it is compiled)
  --variant=N           bundles of shape variants (sluice-compile --shapes):
                        the variant whose shapes --random-inputs makes
                        (default 0, the first); inputs given as files run
                        the variant of their shapes (a shape the bundle
                        lacks fails with the list of those it has)
  --iters=N --warmup=W  time N runs after W warm-up runs; print median, p90
  --json=FILE           with --iters: write the timed runs' latency (mean,
                        min, median, p90, p99, max, throughput), on cuda
                        the host-to-device / compute / device-to-host split
                        and with --profile the per-step profile, as JSON
  --profile[=K|all]     bundles, with --iters=N: after the timed runs, run
                        N more traced runs and print the K slowest steps
                        (default 20; all: every step) with their time per
                        run, share, calls per run and ONNX nodes, and the
                        time summed by op
  --save-outputs=DIR    write each output as DIR/<name>.npy (a sequence as
                        DIR/<name>_0.npy, <name>_1.npy ...)
  --trace=FILE.json     bundles: write a Chrome trace (Perfetto,
                        chrome://tracing) of one run, an event per kernel
                        and library call
  --report=FILE.json    bundles: write the run's profile: "expert_load",
                        per moe op the tokens each expert and each rank
                        received in the first run (the one checked) and
                        the imbalance, max over mean (docs/parallel.md)
  --contexts=N          bundles: also run the model on N threads at once,
                        each with its own context, for --iters runs (or
                        one), check every thread's outputs against the
                        first run's and print the throughput
  --threads=N           bundles: OpenMP threads per run (default:
                        SLUICE_NUM_THREADS, else the hardware's threads
                        shared by the contexts (--contexts) and ranks on
                        this host; on cuda, those of host steps)
  --device=N            cuda bundles: run on GPU N (default: the
                        SLUICE_DEVICE environment variable, else 0)
  --ranks=N             multi-rank bundles (sluice-compile --tp=N): start
                        the N ranks through mpirun (which must be on PATH,
                        or SLUICE_MPIRUN); under mpirun -np N or srun -n N
                        each process runs its rank without it. Rank 0 reads
                        the inputs, prints and checks the outputs; a cuda
                        rank runs on the GPU of its local rank
  --no-cuda-graph       cuda bundles: run every kernel eagerly instead of
                        capturing a run into a CUDA graph and replaying it
                        (the default for bundles with static output shapes;
                        the first run is always eager, --trace runs too)
  --reference           run MODEL.onnx on the reference evaluator (or a
                        FILE.mlir that sluice-compile --emit=mlir or
                        sluice-opt wrote, kernel groups included, as it is)
  -h, --help            this help

Exit status: 0 all outputs match (or nothing to check), 1 mismatch, 2 error
(of any rank).

Environment: SLUICE_COMM_TIMEOUT (seconds a rank waits for another before
it fails naming it; default 10), SLUICE_MPIRUN (the mpirun --ranks uses),
SLUICE_DEVICE (cuda, single-rank: the GPU).
)";

/// How outputs are compared: per element (|got - want| <= atol + rtol *
/// |want|), or, for float outputs when maxRelL2 >= 0, by the relative L2
/// error of the whole output.
struct Tolerance {
  double rtol = 1e-3, atol = 1e-7;
  double maxRelL2 = -1;
};

struct Options {
  std::string model;
  bool reference = false;
  std::vector<std::string> inputs, expects;
  Tolerance tolerance;
  bool randomInputs = false;
  int iters = 0, warmup = 0;
  std::string saveOutputs;
  std::map<std::string, std::vector<int64_t>> shapes;
  bool bundle = false; ///< OUT.sluice: run through the runtime
  std::string trace;
  std::string report; ///< --report: the expert-load profile
  std::string json;   ///< --json: latency statistics (and the profile)
  bool profile = false;
  int profileTop = 20; ///< --profile=K: rows shown; 0 for all
  int threads = 0; ///< 0: the runtime's default
  int contexts = 1; ///< bundles: contexts running at once on their own threads
  int device = -1;  ///< cuda bundles: -1 for SLUICE_DEVICE or 0
  bool noCudaGraph = false;
  int ranks = 0;    ///< --ranks=N (0: not given)
  int variant = -1; ///< --variant=N (-1: not given)
  /// The command line after the program name, as --ranks passes it on.
  std::vector<std::string> arguments;
};

/// This process's rank of a multi-rank job, once it joined (null in a
/// single-rank run): die() then names the rank, and before the ranks agreed
/// to run it tells the others, who stop instead of waiting for it.
struct RankJob {
  sluice::rt::Communicator comm;
  int32_t rank = 0;
  bool agreed = false;
};
RankJob *job = nullptr;

[[noreturn]] void die(const std::string &message) {
  if (!job)
    sluice::tools::die("sluice-run", message);
  std::string text = message;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  std::fprintf(stderr, "sluice-run: error: rank %d: %s\n", (int)job->rank,
               text.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  if (!job->agreed) {
    // The others are on their way to the same agreement: let them stop
    // cleanly. Past it, they may wait in a collective for this rank; the
    // launcher ends them when this process exits unfinished.
    bool allOk = false;
    if (job->comm.agree(false, allOk))
      (void)job->comm.free();
  }
  std::exit(2);
}

double parseNumber(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end)
    die("bad value '" + value + "' for " + flag);
  return v;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  o.arguments.assign(argv + 1, argv + argc);
  bool inExpect = false;
  sluice::tools::ArgReader args("sluice-run", argc, argv);
  while (args.next()) {
    const std::string &arg = args.arg();
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--reference") {
      o.reference = true;
    } else if (arg == "--expect") {
      inExpect = true;
    } else if (arg == "--random-inputs") {
      o.randomInputs = true;
    } else if (args.is("--rtol")) {
      o.tolerance.rtol = parseNumber("--rtol", args.flagValue("--rtol"));
    } else if (args.is("--atol")) {
      o.tolerance.atol = parseNumber("--atol", args.flagValue("--atol"));
    } else if (args.is("--max-rel-l2")) {
      o.tolerance.maxRelL2 = parseNumber("--max-rel-l2", args.flagValue("--max-rel-l2"));
      if (!(o.tolerance.maxRelL2 >= 0))
        die("--max-rel-l2 must be a number >= 0");
    } else if (args.is("--iters")) {
      o.iters = (int)parseNumber("--iters", args.flagValue("--iters"));
    } else if (args.is("--warmup")) {
      o.warmup = (int)parseNumber("--warmup", args.flagValue("--warmup"));
    } else if (args.is("--save-outputs")) {
      o.saveOutputs = args.flagValue("--save-outputs");
    } else if (args.is("--trace")) {
      o.trace = args.flagValue("--trace");
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (args.is("--profile")) {
      std::string value = args.flagValue("--profile");
      o.profile = true;
      if (value == "all") {
        o.profileTop = 0;
      } else {
        double top = parseNumber("--profile", value);
        if (top < 1 || top != (int)top)
          die("--profile takes a number of steps (1, 2, ...) or 'all', got '" +
              value + "'");
        o.profileTop = (int)top;
      }
    } else if (args.is("--json")) {
      o.json = args.flagValue("--json");
    } else if (args.is("--report")) {
      o.report = args.flagValue("--report");
    } else if (args.is("--contexts")) {
      o.contexts = (int)parseNumber("--contexts", args.flagValue("--contexts"));
      if (o.contexts < 1)
        die("--contexts must be at least 1");
    } else if (args.is("--variant")) {
      std::string value = args.flagValue("--variant");
      double variant = parseNumber("--variant", value);
      if (variant < 0 || variant != (int)variant)
        die("--variant takes a shape variant's index (0, 1, ...), got '" + value + "'");
      o.variant = (int)variant;
    } else if (args.is("--threads")) {
      o.threads = (int)parseNumber("--threads", args.flagValue("--threads"));
      if (o.threads < 1)
        die("--threads must be at least 1");
    } else if (args.is("--device")) {
      std::string value = args.flagValue("--device");
      double device = parseNumber("--device", value);
      if (device < 0 || device != (int)device)
        die("--device takes a GPU index (0, 1, ...), got '" + value + "'");
      o.device = (int)device;
    } else if (arg == "--no-cuda-graph") {
      o.noCudaGraph = true;
    } else if (args.is("--ranks")) {
      std::string value = args.flagValue("--ranks");
      double ranks = parseNumber("--ranks", value);
      if (ranks < 1 || ranks != (int)ranks)
        die("--ranks takes a number of ranks (1, 2, ...), got '" + value + "'");
      o.ranks = (int)ranks;
    } else if (args.is("--shape")) {
      std::string error;
      if (!sluice::parseShapeOption(args.flagValue("--shape"), o.shapes, error))
        die(error);
    } else if (arg.rfind("--", 0) == 0) {
      die("unknown option '" + arg + "' (see --help)");
    } else if (o.model.empty()) {
      o.model = arg;
    } else if (inExpect) {
      o.expects.push_back(arg);
    } else {
      o.inputs.push_back(arg);
    }
  }
  if (o.model.empty())
    die("no model given (see --help)");
  // Both describe the timed runs: without them there is nothing to average.
  if ((o.profile || !o.json.empty()) && o.iters < 1)
    die(std::string(o.profile ? "--profile" : "--json") +
        " needs --iters=N (N >= 1): it reports over the timed runs");
  if (!o.reference) {
    // A bundle is a folder; OUT.sluice is taken as one even when missing,
    // so that the runtime reports what is wrong with it.
    std::error_code ec;
    o.bundle = std::filesystem::is_directory(o.model, ec) ||
               llvm::sys::path::extension(o.model) == ".sluice";
    if (!o.bundle) {
      if (llvm::sys::path::extension(o.model) == ".onnx" ||
          llvm::sys::path::extension(o.model) == ".onnxtxt")
        die(o.model + ": ONNX models run on the reference evaluator: add "
                      "--reference (or compile a bundle with sluice-compile)");
      die(o.model + ": not a bundle folder (OUT.sluice) or an ONNX model "
                    "with --reference");
    }
    if (!o.shapes.empty())
      die("--shape applies to --reference; a bundle's shapes are fixed when "
          "it is compiled");
  } else if (!o.trace.empty() || o.threads || o.ranks || o.profile || o.variant >= 0) {
    die(std::string(!o.trace.empty() ? "--trace"
                    : o.threads      ? "--threads"
                    : o.ranks        ? "--ranks"
                    : o.profile      ? "--profile"
                                     : "--variant") +
        " applies to bundles, not --reference");
  } else if (o.device >= 0 || o.noCudaGraph) {
    die(std::string(o.device >= 0 ? "--device" : "--no-cuda-graph") +
        " applies to cuda bundles, not --reference");
  }
  return o;
}

/// Splits NAME=FILE (a name may not contain '/'; a path may contain '=').
std::pair<std::string, std::string> splitNamed(const std::string &arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || arg.find('/') < eq)
    return {"", arg};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

/// The kind of runtime value a graph input or output of `type` carries.
sluice::RuntimeValue::Kind kindOf(Type type) {
  if (isa<sluice::SequenceType>(type))
    return sluice::RuntimeValue::Kind::Sequence;
  if (isa<sluice::OptionalType>(type))
    return sluice::RuntimeValue::Kind::Optional;
  return sluice::RuntimeValue::Kind::Tensor;
}

/// Runs `run` --warmup times, then --iters timed times; the latency
/// statistics in milliseconds.
template <typename Run>
sluice::tools::LatencyStats timeRuns(const Options &options, Run &&run) {
  for (int i = 0; i < options.warmup; ++i)
    run();
  std::vector<double> times;
  for (int i = 0; i < options.iters; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  return sluice::tools::latencyStats(std::move(times));
}

/// The slot of `names` an INPUT/OUTPUT argument fills: by `name` when given
/// (NAME=FILE), else the next position. `owner` is "model" or "bundle".
size_t slotOf(const std::string &name, const std::string &file,
              const std::vector<std::string> &names, size_t &position,
              const char *what, const char *owner) {
  if (name.empty()) {
    size_t index = position++;
    if (index >= names.size())
      die(file + ": more " + what + "s given than the " + owner + " has (" +
          std::to_string(names.size()) + ")");
    return index;
  }
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end())
    die(file + ": the " + owner + " has no " + what + " named '" + name + "'");
  return it - names.begin();
}

/// Reads values given positionally or by name into slots of `names`; each
/// file is read as the kind its slot's type says (tensor, sequence, optional).
std::vector<std::optional<sluice::RuntimeValue>>
readValues(const std::vector<std::string> &args,
           const std::vector<std::string> &names, TypeRange types,
           const char *what) {
  std::vector<std::optional<sluice::RuntimeValue>> slots(names.size());
  size_t position = 0;
  for (const std::string &arg : args) {
    auto [name, file] = splitNamed(arg);
    size_t index = slotOf(name, file, names, position, what, "model");
    sluice::RuntimeValue value;
    std::string error;
    if (!sluice::readValueFile(file, kindOf(types[index]), value, error))
      die(error);
    slots[index] = std::move(value);
  }
  return slots;
}

/// ONNX 1.12's backend data stores bfloat16 tensors as uint16 bit patterns:
/// read those as bfloat16 where the model says bfloat16.
void reinterpretBf16(std::optional<sluice::RuntimeValue> &value, Type expected) {
  if (!value || !value->isTensor())
    return;
  sluice::Tensor &tensor = value->tensor();
  if (expected.isBF16() && tensor.dtype() == sluice::DType::U16)
    tensor = sluice::Tensor::alias(sluice::DType::BF16, tensor.shape(),
                                   tensor.rawData(),
                                   std::make_shared<sluice::Tensor>(tensor));
}

std::vector<std::string> namesOf(func::FuncOp func, const char *attr) {
  std::vector<std::string> names;
  if (auto array = func->getAttrOfType<ArrayAttr>(attr))
    for (Attribute a : array)
      names.push_back(cast<StringAttr>(a).str());
  return names;
}

sluice::Tensor randomTensor(sluice::DType dtype, const std::vector<int64_t> &shape,
                            std::mt19937 &rng) {
  sluice::Tensor t(dtype, shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 9);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (sluice::isFloatDType(dtype))
      t.setDouble(i, real(rng));
    else
      t.setInt(i, dtype == sluice::DType::Bool ? integer(rng) % 2 : integer(rng));
  }
  return t;
}

/// Compares one output; prints its errors; returns true on a match.
bool compareOutput(const std::string &name, const sluice::Tensor &got,
                   const sluice::Tensor &want, const Tolerance &tolerance) {
  const double rtol = tolerance.rtol, atol = tolerance.atol;
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    std::printf("output '%s': got %s, expected %s: MISMATCH\n", name.c_str(),
                got.describe().c_str(), want.describe().c_str());
    return false;
  }
  if (got.dtype() == sluice::DType::String) {
    // Text has no tolerance: elements match exactly or not at all.
    int64_t bad = 0;
    for (int64_t i = 0; i < got.numElements(); ++i)
      bad += got.getString(i) != want.getString(i);
    std::printf("output '%s' %s: %s\n", name.c_str(), got.describe().c_str(),
                bad ? "MISMATCH" : "ok");
    if (bad)
      std::printf("  %lld of %lld strings differ\n", (long long)bad,
                  (long long)got.numElements());
    return bad == 0;
  }
  double maxAbs = 0, maxRel = 0;
  // Sums of squares for the relative L2 error (elements that match as NaN
  // or as same-signed infinities count as equal).
  double diffSquares = 0, wantSquares = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    if (std::isnan(g) && std::isnan(w))
      continue;
    if (std::isinf(g) && std::isinf(w) && (g > 0) == (w > 0))
      continue;
    double diff = std::fabs(g - w);
    if (std::isnan(diff))
      diff = INFINITY;
    maxAbs = std::max(maxAbs, diff);
    if (w != 0)
      maxRel = std::max(maxRel, diff / std::fabs(w));
    if (!(diff <= atol + rtol * std::fabs(w)))
      ++bad;
    diffSquares += diff * diff;
    wantSquares += w * w;
  }
  if (tolerance.maxRelL2 >= 0 && sluice::isFloatDType(got.dtype())) {
    double relL2 = diffSquares == 0 ? 0.0
                   : wantSquares == 0 ? INFINITY
                                      : std::sqrt(diffSquares / wantSquares);
    bool match = relL2 <= tolerance.maxRelL2;
    std::printf("output '%s' %s: max abs err %.3g, max rel err %.3g, rel L2 err %.3g: %s\n",
                name.c_str(), got.describe().c_str(), maxAbs, maxRel, relL2,
                match ? "ok" : "MISMATCH");
    if (!match)
      std::printf("  relative L2 error %.3g above --max-rel-l2 %.3g\n", relL2,
                  tolerance.maxRelL2);
    return match;
  }
  std::printf("output '%s' %s: max abs err %.3g, max rel err %.3g: %s\n",
              name.c_str(), got.describe().c_str(), maxAbs, maxRel,
              bad ? "MISMATCH" : "ok");
  if (bad)
    std::printf("  %lld of %lld elements outside atol %.3g + rtol %.3g\n",
                (long long)bad, (long long)got.numElements(), atol, rtol);
  return bad == 0;
}

/// Compares one output of any kind: a sequence element by element (each
/// printed as NAME[i]), an optional by presence and then its value.
bool compareValue(const std::string &name, const sluice::RuntimeValue &got,
                  const sluice::RuntimeValue &want, const Tolerance &tolerance) {
  if (got.kind() != want.kind()) {
    std::printf("output '%s': got %s, expected %s: MISMATCH\n", name.c_str(),
                got.describe().c_str(), want.describe().c_str());
    return false;
  }
  if (got.isTensor())
    return compareOutput(name, got.tensor(), want.tensor(), tolerance);
  if (got.isOptional()) {
    if (got.hasValue() != want.hasValue()) {
      std::printf("output '%s': got %s, expected %s: MISMATCH\n", name.c_str(),
                  got.describe().c_str(), want.describe().c_str());
      return false;
    }
    if (!got.hasValue()) {
      std::printf("output '%s' optional(none): ok\n", name.c_str());
      return true;
    }
    return compareValue(name, got.value(), want.value(), tolerance);
  }
  if (got.elements().size() != want.elements().size()) {
    std::printf("output '%s': got a sequence of %zu elements, expected %zu: MISMATCH\n",
                name.c_str(), got.elements().size(), want.elements().size());
    return false;
  }
  bool match = true;
  for (size_t i = 0; i < got.elements().size(); ++i)
    match &= compareOutput(name + "[" + std::to_string(i) + "]", got.elements()[i],
                           want.elements()[i], tolerance);
  if (got.elements().empty())
    std::printf("output '%s' empty sequence: ok\n", name.c_str());
  return match;
}

std::string safeFileName(const std::string &name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.') ? c : '_';
  return s.empty() ? "output" : s;
}

//===----------------------------------------------------------------------===//
// Bundle mode: everything below goes through the runtime's API
// (sluice/runtime.hpp) and the tensor files, never MLIR.
//===----------------------------------------------------------------------===//

/// NumPy's dtype names, as bundle manifests use them.
const std::pair<const char *, sluice::DType> kNumpyDTypes[] = {
    {"float32", sluice::DType::F32}, {"float64", sluice::DType::F64},
    {"float16", sluice::DType::F16}, {"bfloat16", sluice::DType::BF16},
    {"int8", sluice::DType::I8},     {"int16", sluice::DType::I16},
    {"int32", sluice::DType::I32},   {"int64", sluice::DType::I64},
    {"uint8", sluice::DType::U8},    {"uint16", sluice::DType::U16},
    {"uint32", sluice::DType::U32},  {"uint64", sluice::DType::U64},
    {"bool", sluice::DType::Bool},   {"float8_e4m3fn", sluice::DType::F8E4M3}};

std::optional<sluice::DType> dtypeFromNumpy(const std::string &name) {
  for (const auto &entry : kNumpyDTypes)
    if (name == entry.first)
      return entry.second;
  return std::nullopt;
}

std::string numpyName(sluice::DType dtype) {
  for (const auto &entry : kNumpyDTypes)
    if (dtype == entry.second)
      return entry.first;
  return sluice::dtypeName(dtype);
}

/// A tensor read for one slot, and the file it came from (for messages).
struct GivenTensor {
  std::string file;
  sluice::Tensor tensor;
};

/// A bundle's inputs or outputs as the graph has them: each tensor, and each
/// sequence (the manifest's "sequences") as one entry standing for its
/// element tensors, at its first element's place; an empty sequence, which
/// has no tensor, comes last.
struct GraphEntry {
  std::string name;
  bool sequence = false;
  std::vector<size_t> tensors; ///< indexes into the bundle's tensors
  /// An ONNX optional (the manifest's "optionals"), which the bundle has
  /// present (its value is the tensor or sequence above) or absent (no
  /// tensors).
  bool optional = false;
  bool present = true;
};

/// `names` (the bundle's "inputs" or "outputs", `key`) with the sequences
/// of the manifest of `bundle` folded in.
std::vector<GraphEntry> graphEntries(const std::string &bundle, const char *key,
                                     const std::vector<std::string> &names) {
  std::string path = bundle + "/manifest.json";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    die(path + ": cannot read: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> root = llvm::json::parse((*buffer)->getBuffer());
  if (!root)
    die(path + ": " + llvm::toString(root.takeError()));
  std::vector<GraphEntry> entries;
  std::vector<GraphEntry> empty;
  std::vector<bool> inSequence(names.size(), false);
  const llvm::json::Object *sequences = root->getAsObject()->getObject("sequences");
  const llvm::json::Array *list = sequences ? sequences->getArray(key) : nullptr;
  std::vector<GraphEntry> found;
  for (const llvm::json::Value &item : list ? *list : llvm::json::Array()) {
    const llvm::json::Object *sequence = item.getAsObject();
    auto name = sequence ? sequence->getString("name") : std::nullopt;
    const llvm::json::Array *elements = sequence ? sequence->getArray("elements") : nullptr;
    if (!name || !elements)
      die(path + ": a \"sequences\" entry needs \"name\" and \"elements\"");
    GraphEntry entry{name->str(), true, {}};
    for (const llvm::json::Value &element : *elements) {
      auto elementName = element.getAsString();
      auto it =
          elementName ? std::find(names.begin(), names.end(), elementName->str()) : names.end();
      if (it == names.end())
        die(path + ": sequence '" + entry.name + "' names an element that is not among the " + key);
      entry.tensors.push_back(it - names.begin());
      inSequence[it - names.begin()] = true;
    }
    if (entry.tensors.empty())
      empty.push_back(entry);
    else
      found.push_back(entry);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (!inSequence[i]) {
      entries.push_back({names[i], false, {i}});
      continue;
    }
    for (const GraphEntry &entry : found)
      if (entry.tensors.front() == i)
        entries.push_back(entry);
  }
  entries.insert(entries.end(), empty.begin(), empty.end());
  // Optionals: a present one is the entry of its name, an absent one an
  // entry without tensors at the end.
  const llvm::json::Object *optionals = root->getAsObject()->getObject("optionals");
  const llvm::json::Array *optionalList = optionals ? optionals->getArray(key) : nullptr;
  for (const llvm::json::Value &item : optionalList ? *optionalList : llvm::json::Array()) {
    const llvm::json::Object *optional = item.getAsObject();
    auto name = optional ? optional->getString("name") : std::nullopt;
    auto present = optional ? optional->getBoolean("present") : std::nullopt;
    if (!name || !present)
      die(path + ": an \"optionals\" entry needs \"name\" and \"present\"");
    if (!*present) {
      GraphEntry entry{name->str(), false, {}};
      entry.optional = true;
      entry.present = false;
      entries.push_back(entry);
      continue;
    }
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const GraphEntry &e) { return e.name == *name; });
    if (it == entries.end())
      die(path + ": optional '" + name->str() + "' is present but not among the " + key);
    it->optional = true;
  }
  return entries;
}

/// The value of `entry` (a sequence or an optional) from the bundle's
/// tensors `tensors`.
sluice::RuntimeValue wholeValue(const GraphEntry &entry, const std::vector<sluice::Tensor> &tensors) {
  sluice::RuntimeValue inner;
  if (entry.sequence) {
    std::vector<sluice::Tensor> elements;
    for (size_t i : entry.tensors)
      elements.push_back(tensors[i]);
    inner = sluice::RuntimeValue::sequence(std::move(elements));
  } else if (!entry.tensors.empty()) {
    inner = sluice::RuntimeValue(tensors[entry.tensors.front()]);
  }
  if (!entry.optional)
    return inner;
  return entry.present ? sluice::RuntimeValue::optional(std::move(inner))
                       : sluice::RuntimeValue::none();
}

/// What the INPUT or --expect arguments of a bundle run gave: each tensor
/// (a sequence's elements included), and each sequence given whole.
struct GivenValues {
  std::vector<std::optional<GivenTensor>> tensors; ///< per bundle tensor
  /// Per graph entry: a sequence read from a SequenceProto .pb.
  std::vector<std::optional<std::pair<std::string, sluice::RuntimeValue>>> sequences;
};

/// Reads files given positionally (in the graph's order, `entries`) or as
/// NAME=FILE, NAME a graph name or a sequence element's (x.0). A sequence
/// is an ONNX SequenceProto .pb; its elements fill their tensors' slots
/// when it has as many as the bundle (`exactLength`: else an error).
GivenValues readBundleValues(const std::vector<std::string> &args,
                             const std::vector<std::string> &names,
                             const std::vector<GraphEntry> &entries, const char *what,
                             bool exactLength) {
  GivenValues given;
  given.tensors.resize(names.size());
  given.sequences.resize(entries.size());
  std::vector<std::string> graphNames;
  for (const GraphEntry &entry : entries)
    graphNames.push_back(entry.name);
  size_t position = 0;
  for (const std::string &arg : args) {
    auto [name, file] = splitNamed(arg);
    std::string error;
    auto element = std::find(names.begin(), names.end(), name);
    if (!name.empty() &&
        std::find(graphNames.begin(), graphNames.end(), name) == graphNames.end() &&
        element != names.end()) {
      // One element of a sequence, by its tensor's name.
      GivenTensor tensor{file, {}};
      if (!sluice::readTensorFile(file, tensor.tensor, error))
        die(error);
      given.tensors[element - names.begin()] = std::move(tensor);
      continue;
    }
    const GraphEntry &entry = entries[slotOf(name, file, graphNames, position, what, "bundle")];
    if (entry.optional) {
      // An ONNX OptionalProto .pb: its presence must be the bundle's.
      sluice::RuntimeValue value;
      if (!sluice::readValueFile(file, sluice::RuntimeValue::Kind::Optional, value, error))
        die(error);
      if (value.hasValue() != entry.present) {
        if (exactLength)
          die(file + ": " + what + " '" + entry.name + "' is " +
              (value.hasValue() ? "present" : "absent") + ", the bundle was compiled with it " +
              (entry.present ? "present" : "absent") + " (sluice-compile --shape=" + entry.name +
              "=" + (entry.present ? "none" : "<its shape>") + ")");
      } else if (value.hasValue()) {
        const sluice::RuntimeValue &inner = value.value();
        if (!entry.sequence && inner.isTensor()) {
          given.tensors[entry.tensors.front()] = GivenTensor{file, inner.tensor()};
        } else if (entry.sequence && inner.isSequence() &&
                   inner.elements().size() == entry.tensors.size()) {
          for (size_t k = 0; k < entry.tensors.size(); ++k)
            given.tensors[entry.tensors[k]] = GivenTensor{file, inner.elements()[k]};
        } else if (exactLength) {
          die(file + ": " + what + " '" + entry.name + "' holds " + inner.describe() +
              ", which the bundle does not take");
        }
      }
      given.sequences[&entry - entries.data()] = std::make_pair(file, std::move(value));
      continue;
    }
    if (!entry.sequence) {
      GivenTensor tensor{file, {}};
      if (!sluice::readTensorFile(file, tensor.tensor, error))
        die(error);
      given.tensors[entry.tensors.front()] = std::move(tensor);
      continue;
    }
    sluice::RuntimeValue value;
    if (!sluice::readValueFile(file, sluice::RuntimeValue::Kind::Sequence, value, error))
      die(error);
    size_t length = value.elements().size();
    if (length != entry.tensors.size()) {
      if (exactLength)
        die(file + ": " + what + " '" + entry.name + "' is a sequence of " +
            std::to_string(length) + " elements, the bundle takes " +
            std::to_string(entry.tensors.size()) + " (sluice-compile --shape=" + entry.name +
            "=... gives one shape per element)");
    } else {
      for (size_t k = 0; k < length; ++k)
        given.tensors[entry.tensors[k]] = GivenTensor{file, value.elements()[k]};
    }
    given.sequences[&entry - entries.data()] = std::make_pair(file, std::move(value));
  }
  return given;
}

/// ONNX 1.12's backend data stores bfloat16 as uint16 bit patterns.
void reinterpretBf16(sluice::Tensor &tensor, sluice::DType expected) {
  if (expected == sluice::DType::BF16 && tensor.dtype() == sluice::DType::U16)
    tensor = sluice::Tensor::alias(sluice::DType::BF16, tensor.shape(),
                                   tensor.rawData(),
                                   std::make_shared<sluice::Tensor>(tensor));
}

/// Writes the context's last (traced) run as Chrome trace JSON: one event
/// for the whole run, one per kernel or library call.
void writeTrace(const std::string &path, const std::string &bundle,
                const sluice::rt::Context &context,
                const std::vector<sluice::rt::KernelInfo> &kernels) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec)
    die(path + ": cannot write the trace: " + ec.message());
  // Compact: a trace holds an event per step and run, and is read by tools.
  llvm::json::OStream json(file);
  auto event = [&](const std::string &name, const std::string &category, double ts, double dur,
                   llvm::function_ref<void()> args) {
    json.object([&] {
      json.attribute("name", jsonText(name));
      json.attribute("cat", jsonText(category));
      json.attribute("ph", "X");
      json.attributeBegin("ts");
      sluice::writeJsonFixed3(json, ts);
      json.attributeEnd();
      json.attributeBegin("dur");
      sluice::writeJsonFixed3(json, dur);
      json.attributeEnd();
      json.attribute("pid", 0);
      json.attribute("tid", 0);
      json.attributeObject("args", args);
    });
  };
  json.object([&] {
    json.attributeArray("traceEvents", [&] {
      event("run", "run", 0, context.runMicroseconds(),
            [&] { json.attribute("bundle", jsonText(bundle)); });
      for (const SluiceTraceEvent &e : context.trace()) {
        const sluice::rt::KernelInfo *kernel =
            e.step >= 0 && (size_t)e.step < kernels.size() ? &kernels[e.step] : nullptr;
        event(kernel ? kernel->name : "step " + std::to_string(e.step),
              kernel ? kernel->kind : "kernel", // kernel, library or host
              e.begin_us, e.end_us - e.begin_us, [&] {
                json.attribute("node", jsonText(kernel ? kernel->node : ""));
                json.attribute("op", jsonText(kernel ? kernel->op : ""));
              });
      }
    });
    json.attribute("displayTimeUnit", "ms");
  });
  file << "\n";
  file.close();
  if (std::error_code writeError = file.error()) {
    file.clear_error(); // raw_fd_ostream aborts on an error left unchecked
    die(path + ": cannot write the trace: " + writeError.message());
  }
}

/// The --report file: per moe op, the tokens each expert received, their
/// sums over each rank's block of experts_per_rank experts (rank r holds
/// experts [r * experts_per_rank, (r + 1) * experts_per_rank)), and the
/// imbalance max / mean over the ranks, or over the experts when one rank
/// holds them all ("imbalance_over" says which; 1 when nothing was routed).
void writeReport(const std::string &path, const std::string &bundle,
                 const std::vector<sluice::rt::MoeInfo> &moe,
                 const std::vector<std::vector<int64_t>> &load) {
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (ec)
    die(path + ": cannot write the report: " + ec.message());
  llvm::json::OStream json(file, /*IndentSize=*/2);
  auto imbalance = [](const std::vector<int64_t> &counts) {
    int64_t most = 0, sum = 0;
    for (int64_t c : counts) {
      most = std::max(most, c);
      sum += c;
    }
    return sum ? double(most) * double(counts.size()) / double(sum) : 1.0;
  };
  json.object([&] {
    json.attribute("bundle", jsonText(bundle));
    json.attribute("runs", 1);
    json.attributeArray("expert_load", [&] {
      for (size_t i = 0; i < moe.size(); ++i)
        json.object([&] {
          const sluice::rt::MoeInfo &op = moe[i];
          int64_t perRank = std::max<int64_t>(op.expertsPerRank, 1);
          std::vector<int64_t> ranks((op.experts + perRank - 1) / perRank, 0);
          for (int64_t e = 0; e < op.experts; ++e)
            ranks[e / perRank] += load[i][e];
          json.attribute("node", jsonText(op.node));
          json.attribute("gating", jsonText(op.gating));
          json.attribute("experts", op.experts);
          json.attribute("top_k", op.topK);
          json.attribute("experts_per_rank", op.expertsPerRank);
          json.attributeArray("tokens_per_expert", [&] {
            for (int64_t c : load[i])
              json.value(c);
          });
          json.attributeArray("tokens_per_rank", [&] {
            for (int64_t c : ranks)
              json.value(c);
          });
          bool overRanks = ranks.size() > 1;
          json.attribute("imbalance", imbalance(overRanks ? ranks : load[i]));
          json.attribute("imbalance_over", overRanks ? "ranks" : "experts");
        });
    });
  });
  file << "\n";
  file.close();
  if (std::error_code writeError = file.error()) {
    file.clear_error();
    die(path + ": cannot write the report: " + writeError.message());
  }
}

/// A multi-rank run's faults that every rank finds alike, before it joins
/// the job (from the command line, the launcher's environment and the
/// manifest): rank 0 says it (every rank, when the launcher did not say
/// which it is), all exit 2.
[[noreturn]] void dieBeforeJoining(const SluiceLaunchInfo &launch,
                                   const std::string &message) {
  if (launch.rank <= 0)
    sluice::tools::die("sluice-run", message);
  std::exit(2);
}

/// Decides how `options.model` runs: here (a single-rank bundle, or one
/// rank of a job that mpirun or srun started), or as --ranks=N processes
/// started through mpirun. Returns -1 to run here (`rankMode` set when as
/// one rank of a job), else the exit status of the launched job.
int chooseLaunch(const Options &options, const SluiceLaunchInfo &launch,
                 bool &rankMode) {
  rankMode = false;
  const std::string &bundle = options.model;
  // The manifest alone says how many ranks the bundle runs as; when it
  // cannot be read, loading the bundle below says why.
  int32_t world = 0;
  if (sluice_bundle_world_size(bundle.c_str(), &world) != SLUICE_OK)
    world = 0;
  std::string planned = "bundle '" + bundle + "' is planned for " +
                        std::to_string(world) + " ranks";
  std::string single = "bundle '" + bundle + "' is a single-rank bundle (world_size 1)";
  if (!launch.in_job) {
    if (world > 1 && options.ranks == 0)
      die(planned + ": run it with --ranks=" + std::to_string(world) +
          " (sluice-run starts the ranks through mpirun), or start them "
          "yourself: mpirun -np " + std::to_string(world) + " sluice-run " +
          bundle + " ..., srun -n " + std::to_string(world) + " sluice-run " +
          bundle + " ...");
    if (world > 1 && options.ranks != world)
      die("--ranks=" + std::to_string(options.ranks) + " does not match: " +
          planned + " (its world_size)");
    if (world == 1 && options.ranks > 1)
      die("--ranks=" + std::to_string(options.ranks) + " does not match: " +
          single + " (sluice-compile --tp=N splits a model into N ranks)");
    if (world == 0 && options.ranks > 1) {
      std::string error;
      sluice::rt::Model model;
      if (!model.load(bundle, &error))
        die(error);
    }
    if (options.ranks <= 1)
      return -1;
    if (options.device >= 0 || options.contexts > 1)
      die(std::string(options.device >= 0 ? "--device" : "--contexts") +
          " applies to single-rank runs" +
          (options.device >= 0 ? ": each rank of a multi-rank cuda bundle "
                                 "runs on the GPU of its local rank"
                               : ""));
    return sluice::tools::launchRanks(options.ranks, bundle, options.arguments);
  }
  // One process of a job: the launcher said how many there are (except
  // PMIx alone, which says it with MPI_Init).
  int32_t ranks = launch.world_size;
  if (options.ranks && ranks > 0 && options.ranks != ranks)
    dieBeforeJoining(launch, "--ranks=" + std::to_string(options.ranks) +
                                 " but this job has " + std::to_string(ranks) +
                                 " ranks (" + launch.source + ")");
  if (world == 1 && ranks == 1)
    return -1; // mpirun -np 1 on a single-rank bundle: nothing to join
  if (world == 1)
    dieBeforeJoining(launch, single + "; this job has " +
                                 std::to_string(ranks) +
                                 " ranks (run it without mpirun or srun, or "
                                 "compile it with --tp=" +
                                 std::to_string(ranks) + ")");
  if (world > 1 && ranks > 0 && ranks != world)
    dieBeforeJoining(launch, planned + "; this job has " +
                                 std::to_string(ranks) + " (mpirun -np " +
                                 std::to_string(world) + ", srun -n " +
                                 std::to_string(world) + ")");
  if (options.device >= 0)
    dieBeforeJoining(launch, "--device applies to single-rank runs: each rank "
                             "of a multi-rank cuda bundle runs on the GPU of "
                             "its local rank");
  if (options.contexts > 1)
    dieBeforeJoining(launch, "--contexts applies to single-rank runs");
  rankMode = true;
  return -1;
}

/// A rank whose peers failed before the run: they said why; stop cleanly.
[[noreturn]] void stopWithPeers() {
  std::string error;
  if (!job->comm.free(&error))
    std::fprintf(stderr, "sluice-run: error: rank %d: %s\n", (int)job->rank,
                 error.c_str());
  std::exit(2);
}

/// Every rank's agreement that it is ready; stops this one if another is
/// not.
void agreeOrStop() {
  bool allOk = false;
  std::string error;
  if (!job->comm.agree(true, allOk, nullptr, &error)) {
    job->agreed = true; // the job is broken: no second agreement
    die(error);
  }
  if (!allOk)
    stopWithPeers();
}

/// Whether this process speaks for the job: a single-rank run, or rank 0,
/// which prints, checks and writes the outputs.
bool isLeader() { return !job || job->rank == 0; }

/// Joins the multi-rank job that this process is one rank of (`job` then
/// points at the returned state). Every rank stops, cleanly, when the
/// bundle is planned for another number of ranks than the job has.
std::unique_ptr<RankJob> joinRankJob(const Options &options) {
  std::string error;
  auto rankJob = std::make_unique<RankJob>();
  SluiceLaunchInfo launch = sluice::rt::launchInfo();
  if (!rankJob->comm.init(&error))
    sluice::tools::die(
        "sluice-run",
        (launch.rank >= 0 ? "rank " + std::to_string(launch.rank) + ": " : std::string()) + error);
  job = rankJob.get();
  job->rank = job->comm.rank();
  int32_t world = 0;
  if (sluice_bundle_world_size(options.model.c_str(), &world) == SLUICE_OK &&
      world != job->comm.worldSize()) {
    // Every rank sees it: rank 0 says it, all stop cleanly.
    if (job->rank == 0)
      std::fprintf(stderr,
                   "sluice-run: error: bundle '%s' is planned for %d "
                   "rank%s; this job has %d\n",
                   options.model.c_str(), (int)world, world == 1 ? "" : "s",
                   (int)job->comm.worldSize());
    stopWithPeers();
  }
  return rankJob;
}

/// Loads the bundle (this rank's part of a multi-rank one) and checks that
/// the options for cuda bundles apply to it.
void loadBundle(const Options &options, sluice::rt::Model &model) {
  std::string error;
  if (job ? !model.loadRank(options.model, job->rank, &error)
          : !model.load(options.model, &error))
    die(error);
  bool cuda = model.target() == "cuda";
  if (!cuda && (options.device >= 0 || options.noCudaGraph))
    die(std::string(options.device >= 0 ? "--device" : "--no-cuda-graph") +
        " applies to cuda bundles; " + options.model + " is a " +
        model.target() + " bundle");
}

/// A bundle's inputs and outputs as sluice-run binds and reads them.
struct BundleBoundary {
  size_t variants = 1; ///< shape variants (1: the bundle has no others)
  /// The inputs of the shape variant that --random-inputs makes.
  std::vector<sluice::rt::TensorInfo> inputs, outputs;
  std::vector<std::string> inputNames, outputNames;
};

/// The boundary of `model`. Shape variants: --random-inputs makes
/// --variant's shapes (default the first); inputs from files run the
/// variant of their shapes.
BundleBoundary boundaryOf(const Options &options, const sluice::rt::Model &model) {
  BundleBoundary boundary;
  size_t variants = model.numVariants();
  boundary.variants = variants;
  if (options.variant >= 0 && (size_t)options.variant >= variants)
    die(options.model + ": --variant=" + std::to_string(options.variant) + ", but the bundle has " +
        std::to_string(variants) + (variants == 1 ? " shape (no --shapes variants)" : " shape variants"));
  size_t randomVariant = options.variant >= 0 ? (size_t)options.variant : 0;
  for (size_t i = 0; i < model.numInputs(); ++i) {
    boundary.inputs.push_back(variants > 1 ? model.variantInput(randomVariant, i) : model.input(i));
    boundary.inputNames.push_back(boundary.inputs.back().name);
  }
  for (size_t i = 0; i < model.numOutputs(); ++i) {
    boundary.outputs.push_back(model.output(i));
    boundary.outputNames.push_back(boundary.outputs.back().name);
  }
  return boundary;
}

/// The element type of a bundle's input or output; one that sluice-run
/// cannot read or write is an error.
sluice::DType dtypeOf(const Options &options, const sluice::rt::TensorInfo &info) {
  auto dtype = dtypeFromNumpy(info.dtype);
  if (!dtype)
    die(options.model + ": '" + info.name + "' has dtype '" + info.dtype +
        "', which sluice-run cannot read or write");
  return *dtype;
}

/// Rank 0's inputs: read from the INPUT files, or made (--random-inputs),
/// and checked against the manifest.
std::vector<sluice::Tensor> readBundleInputs(const Options &options,
                                             const BundleBoundary &boundary) {
  const std::vector<sluice::rt::TensorInfo> &inputs = boundary.inputs;
  std::vector<sluice::Tensor> bound;
  std::vector<GraphEntry> graphInputs = graphEntries(options.model, "inputs", boundary.inputNames);
  auto given = readBundleValues(options.inputs, boundary.inputNames, graphInputs, "input",
                                /*exactLength=*/true)
                   .tensors;
  std::mt19937 rng(0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const sluice::rt::TensorInfo &info = inputs[i];
    sluice::DType dtype = dtypeOf(options, info);
    if (!given[i]) {
      if (!options.randomInputs)
        die(options.model + ": input '" + info.name +
            "' not given (pass a file, or --random-inputs)");
      given[i] = GivenTensor{options.model, randomTensor(dtype, info.shape, rng)};
    }
    sluice::Tensor &t = given[i]->tensor;
    reinterpretBf16(t, dtype);
    if (t.dtype() != dtype)
      die(given[i]->file + ": input '" + info.name + "' has element type " + numpyName(t.dtype()) +
          ", the bundle expects " + info.dtype);
    // A bundle of variants checks the shape when it is declared below.
    if (t.shape() != info.shape && boundary.variants == 1)
      die(given[i]->file + ": input '" + info.name + "' has shape " +
          sluice::shapeToString(t.shape()) + ", the bundle expects " +
          sluice::shapeToString(info.shape));
    bound.push_back(t);
  }
  return bound;
}

/// The inputs, checked against the manifest: rank 0 reads (or makes) them,
/// the other ranks receive them once every rank is ready.
std::vector<sluice::Tensor> bundleInputs(const Options &options, const BundleBoundary &boundary) {
  if (isLeader())
    return readBundleInputs(options, boundary);
  std::vector<sluice::Tensor> bound;
  for (const sluice::rt::TensorInfo &info : boundary.inputs)
    bound.emplace_back(dtypeOf(options, info), info.shape);
  return bound;
}

/// Creates the context: a single-rank run's on --device; a rank's once
/// every rank is ready, then receives rank 0's inputs into `bound`.
void createContext(const Options &options, const sluice::rt::Model &model,
                   std::vector<sluice::Tensor> &bound, sluice::rt::Context &context) {
  std::string error;
  if (job) {
    // Every rank loaded its weights (and rank 0 its inputs) before any
    // waits on the others in a collective: a rank that could not stops the
    // others here, cleanly.
    agreeOrStop();
    if (!context.createRank(model, job->comm, &error))
      die(error);
    agreeOrStop();
    job->agreed = true;
    for (size_t i = 0; i < bound.size(); ++i)
      if (bound[i].byteSize() &&
          !job->comm.broadcast(bound[i].mutableData(), bound[i].byteSize(), 0,
                               &error))
        die(error);
  } else if (!context.create(model, &error, options.device)) {
    die(error);
  }
}

/// Binds `bound` as the context's inputs, declaring each one's shape first
/// in a bundle of shape variants; false with `error` set if one fails.
bool bindInputs(sluice::rt::Context &context, size_t variants,
                const std::vector<sluice::Tensor> &bound, std::string &error) {
  for (size_t i = 0; i < bound.size(); ++i)
    if ((variants > 1 && !context.setInputShape(i, bound[i].shape(), &error)) ||
        !context.bindInput(i, bound[i].rawData(), bound[i].byteSize(), &error))
      return false;
  return true;
}

/// The first run, whose outputs are checked. A trace or profile needs it to
/// have run the first shape variant; --variant the variant it names.
void runFirst(const Options &options, sluice::rt::Context &context) {
  std::string error;
  if (!context.run(&error))
    die(error);
  // The C API lists the first variant's kernels, which a trace's steps
  // index; another variant's steps are its own manifest list.
  if (context.variant() != 0 && (!options.trace.empty() || options.profile))
    die(std::string(options.profile ? "--profile" : "--trace") +
        " names the steps of the first shape variant's kernels, and the inputs run variant " +
        std::to_string(context.variant()) + " (not supported yet)");
  if (options.variant >= 0 && context.variant() != (size_t)options.variant)
    die(options.model + ": the inputs' shapes are those of shape variant " +
        std::to_string(context.variant()) + ", not --variant=" + std::to_string(options.variant));
}

/// --report: the expert-load profile of the first run (the one checked),
/// read before the timed runs add to the counters; rank 0 writes it.
void reportExpertLoad(const Options &options, const sluice::rt::Model &model,
                      sluice::rt::Context &context) {
  std::string error;
  std::vector<std::vector<int64_t>> expertLoad;
  std::vector<sluice::rt::MoeInfo> moe = model.moe();
  for (size_t i = 0; i < moe.size() && !options.report.empty(); ++i) {
    expertLoad.push_back(context.expertLoad(i, moe[i].experts, &error));
    if (expertLoad.back().empty())
      die(error);
  }
  if (isLeader() && !options.report.empty())
    writeReport(options.report, options.model, moe, expertLoad);
}

/// The outputs of the context's last run, copied out.
std::vector<sluice::Tensor> copyOutputs(const Options &options, const BundleBoundary &boundary,
                                        const sluice::rt::Context &context) {
  std::vector<sluice::Tensor> results;
  for (size_t i = 0; i < boundary.outputs.size(); ++i) {
    size_t bytes = 0;
    const void *data = context.output(i, &bytes);
    results.push_back(
        sluice::Tensor::copyOf(dtypeOf(options, boundary.outputs[i]), context.outputDims(i), data));
  }
  return results;
}

/// Times --iters runs after --warmup ones into `bench`. On cuda also each
/// timed run's split, read from its CUDA events (after the run, which
/// waited for them); the warm-up runs, which timeRuns runs first, do not
/// count.
void timeBundleRuns(const Options &options, sluice::rt::Context &context, bool cuda,
                    sluice::tools::BenchReport &bench) {
  std::string error;
  sluice::tools::RunSplit split;
  int runsDone = 0, splitRuns = 0;
  bench.latency = timeRuns(options, [&] {
    if (!context.run(&error))
      die(error);
    double h2d = 0, compute = 0, d2h = 0;
    if (runsDone++ >= options.warmup && cuda && context.runSplit(h2d, compute, d2h)) {
      split.hostToDevice += h2d;
      split.compute += compute;
      split.deviceToHost += d2h;
      ++splitRuns;
    }
  });
  if (cuda && splitRuns == options.iters) {
    split.hostToDevice /= splitRuns;
    split.compute /= splitRuns;
    split.deviceToHost /= splitRuns;
    bench.split = split;
  }
}

/// Prints the timed runs' latency (and on cuda whether they replayed a
/// CUDA graph, and their split). A multi-rank job's latency is rank 0's:
/// every run ends with every rank's collectives, so the ranks' latencies
/// agree.
void printLatency(const Options &options, const sluice::rt::Context &context, bool cuda,
                  int threads, const sluice::tools::BenchReport &bench) {
  double median = bench.latency.median, p90 = bench.latency.p90;
  std::string ranks =
      job ? std::to_string(job->comm.worldSize()) + " ranks (" + context.commTransport() + "), "
          : std::string();
  std::string cudaRanks = job ? ", " + ranks.substr(0, ranks.size() - 1) : std::string();
  if (!cuda) {
    std::printf("latency over %d runs (cpu target, %s%d threads%s): median "
                "%.4g ms, p90 %.4g ms\n",
                options.iters, ranks.c_str(), threads, job ? " per rank" : "", median, p90);
    return;
  }
  // Whether the timed runs replayed a CUDA graph, or why not.
  const std::string &graph = *bench.cudaGraph;
  std::printf("latency over %d runs (cuda target%s %s): median %.4g "
              "ms, p90 %.4g ms; cuda graph: %s\n",
              options.iters, cudaRanks.c_str(),
              ((job ? "rank 0 on " : "on ") + context.device()).c_str(), median, p90,
              graph.c_str());
  if (bench.split)
    std::printf("per run (CUDA events): host to device %.4g ms, compute "
                "%.4g ms, device to host %.4g ms\n",
                bench.split->hostToDevice, bench.split->compute, bench.split->deviceToHost);
}

/// --iters: times the runs into `bench`, and rank 0 prints their latency.
/// Returns what ran the steps, for the profile's heading.
std::string timeBundle(const Options &options, sluice::rt::Context &context, bool cuda, int threads,
                       sluice::tools::BenchReport &bench) {
  timeBundleRuns(options, context, cuda, bench);
  std::string targetText = cuda ? "cuda target, CUDA events, eager"
                                : "cpu target, " + std::to_string(threads) + " threads";
  if (job)
    targetText += ", rank 0 of " + std::to_string(job->comm.worldSize());
  if (cuda) {
    // Read now: the traced runs of --profile run eagerly.
    std::string reason;
    bench.cudaGraph =
        context.replayedCudaGraph(&reason) ? std::string("replayed") : "off (" + reason + ")";
  }
  if (isLeader())
    printLatency(options, context, cuda, threads, bench);
  return targetText;
}

/// --profile: --iters traced runs of their own after the timed ones, so
/// that the headline latency carries no tracing cost and, on cuda, still
/// replays a CUDA graph (traced runs are eager, each step timed by CUDA
/// events). Returns their per-step profile.
sluice::tools::StepProfile profileBundle(const Options &options, const sluice::rt::Model &model,
                                         sluice::rt::Context &context) {
  std::string error;
  std::vector<sluice::tools::StepInfo> listed;
  for (const sluice::rt::KernelInfo &k : model.kernels()) {
    listed.push_back({k.name, k.kind, k.op, "", {}});
    if (!k.node.empty())
      listed.back().nodes.push_back(k.node);
  }
  sluice::tools::StepProfile profile(sluice::tools::stepsOf(options.model, listed));
  context.enableTrace(true);
  for (int i = 0; i < options.iters; ++i) {
    if (!context.run(&error))
      die(error);
    std::vector<SluiceTraceEvent> events = context.trace();
    profile.addRun(events.data(), events.size(), context.runMicroseconds());
  }
  context.enableTrace(false);
  return profile;
}

/// Where output `name` of another context, `got`, differs from the first
/// run's `want`; "" when they agree.
std::string differenceFromFirstRun(const std::string &name, const sluice::Tensor &got,
                                   const sluice::Tensor &want) {
  for (int64_t e = 0; e < got.numElements(); ++e) {
    double a = got.getDouble(e), b = want.getDouble(e);
    if (std::fabs(a - b) > 1e-5 + 1e-5 * std::fabs(b) && !(std::isnan(a) && std::isnan(b)))
      return "output '" + name + "' differs from the first run's at element " + std::to_string(e);
  }
  return "";
}

/// One of --contexts' threads: a context of its own runs the model `runs`
/// times on the inputs `bound`. Returns why it failed, or "" when every
/// output agrees with the first run's `results`.
std::string runOwnContext(const Options &options, const sluice::rt::Model &model,
                          const BundleBoundary &boundary, const std::vector<sluice::Tensor> &bound,
                          const std::vector<sluice::Tensor> &results, int runs) {
  std::string err;
  sluice::rt::Context own;
  if (!own.create(model, &err, options.device) ||
      (options.threads && !own.setNumThreads(options.threads, &err)))
    return err;
  if (options.noCudaGraph)
    own.enableCudaGraph(false);
  if (!bindInputs(own, boundary.variants, bound, err))
    return err;
  for (int r = 0; r < runs; ++r)
    if (!own.run(&err))
      return err;
  for (size_t i = 0; i < results.size(); ++i) {
    size_t bytes = 0;
    const void *data = own.output(i, &bytes);
    sluice::Tensor got = sluice::Tensor::copyOf(results[i].dtype(), results[i].shape(), data);
    std::string difference = differenceFromFirstRun(boundary.outputNames[i], got, results[i]);
    if (!difference.empty())
      return difference;
  }
  return "";
}

/// --contexts=N: several contexts on their own threads, all running the one
/// model at once; each one's outputs are checked against the first run's.
void runContexts(const Options &options, const sluice::rt::Model &model,
                 const BundleBoundary &boundary, const std::vector<sluice::Tensor> &bound,
                 const std::vector<sluice::Tensor> &results) {
  int runs = std::max(options.iters, 1);
  std::vector<std::string> failures(options.contexts);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int c = 0; c < options.contexts; ++c)
    workers.emplace_back(
        [&, c] { failures[c] = runOwnContext(options, model, boundary, bound, results, runs); });
  for (std::thread &w : workers)
    w.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int c = 0; c < options.contexts; ++c)
    if (!failures[c].empty())
      die(options.model + ": context " + std::to_string(c) + " of " +
          std::to_string(options.contexts) + ": " + failures[c]);
  std::printf("%d contexts x %d runs at once: all outputs agree with the first run; "
              "%.1f runs/s\n",
              options.contexts, runs, options.contexts * runs / seconds);
}

/// --trace: one more run, traced, so that the timings before it carry no
/// tracing cost; rank 0 writes the trace.
void traceBundle(const Options &options, const sluice::rt::Model &model,
                 sluice::rt::Context &context) {
  std::string error;
  context.enableTrace(true);
  if (!context.run(&error))
    die(error);
  if (isLeader())
    writeTrace(options.trace, options.model, context, model.kernels());
}

/// A sequence output, from its element tensors in `results`.
sluice::RuntimeValue sequenceOf(const GraphEntry &entry,
                                const std::vector<sluice::Tensor> &results) {
  std::vector<sluice::Tensor> elements;
  for (size_t i : entry.tensors)
    elements.push_back(results[i]);
  return sluice::RuntimeValue::sequence(std::move(elements));
}

/// --save-outputs: writes the outputs as --reference saves them: NAME.npy,
/// a sequence NAME_0.npy, NAME_1.npy ...
void saveBundleOutputs(const Options &options, const std::vector<GraphEntry> &graphOutputs,
                       const std::vector<sluice::Tensor> &results) {
  std::string error;
  std::error_code ec;
  std::filesystem::create_directories(options.saveOutputs, ec);
  if (ec)
    die(options.saveOutputs + ": cannot create folder: " + ec.message());
  for (const GraphEntry &entry : graphOutputs)
    for (size_t k = 0; k < entry.tensors.size(); ++k) {
      std::string stem = options.saveOutputs + "/" + safeFileName(entry.name);
      if (entry.sequence)
        stem += "_" + std::to_string(k);
      if (!sluice::writeNpy(stem + ".npy", results[entry.tensors[k]], error))
        die(error);
    }
}

/// Compares the bundle's output tensor `i` with its expected value, or
/// prints it when none was given; false on a mismatch.
bool checkOutputTensor(const Options &options, size_t i,
                       const std::vector<std::string> &outputNames,
                       const std::vector<sluice::Tensor> &results, GivenValues &expected) {
  if (!expected.tensors[i]) {
    std::printf("output '%s' %s\n", outputNames[i].c_str(), results[i].describe().c_str());
    return true;
  }
  reinterpretBf16(expected.tensors[i]->tensor, results[i].dtype());
  return compareOutput(outputNames[i], results[i], expected.tensors[i]->tensor, options.tolerance);
}

/// Compares graph output `index`, `entry` (a tensor, a sequence or an
/// optional), with its expected value, given whole or element by element,
/// or prints it when none was given; false on a mismatch.
bool checkOutputEntry(const Options &options, size_t index, const GraphEntry &entry,
                      const std::vector<std::string> &outputNames,
                      const std::vector<sluice::Tensor> &results, GivenValues &expected) {
  if (entry.optional) {
    sluice::RuntimeValue got = wholeValue(entry, results);
    if (auto &want = expected.sequences[index])
      return compareValue(entry.name, got, want->second, options.tolerance);
    std::printf("output '%s' %s\n", entry.name.c_str(), got.describe().c_str());
    return true;
  }
  if (!entry.sequence)
    return checkOutputTensor(options, entry.tensors.front(), outputNames, results, expected);
  if (auto &want = expected.sequences[index]) {
    for (auto [k, element] : llvm::enumerate(want->second.elements()))
      if (k < entry.tensors.size())
        reinterpretBf16(element, results[entry.tensors[k]].dtype());
    return compareValue(entry.name, sequenceOf(entry, results), want->second, options.tolerance);
  }
  bool elementGiven = false;
  for (size_t i : entry.tensors)
    elementGiven |= expected.tensors[i].has_value();
  if (!elementGiven) {
    std::printf("output '%s' %s\n", entry.name.c_str(),
                sequenceOf(entry, results).describe().c_str());
    return true;
  }
  bool allMatch = true;
  for (size_t i : entry.tensors)
    allMatch &= checkOutputTensor(options, i, outputNames, results, expected);
  return allMatch;
}

/// Rank 0's outputs as the graph has them: a sequence output is saved,
/// checked and printed as one, from its element tensors. False when one
/// does not match what --expect gave.
bool checkBundleOutputs(const Options &options, const std::vector<std::string> &outputNames,
                        const std::vector<sluice::Tensor> &results) {
  std::vector<GraphEntry> graphOutputs = graphEntries(options.model, "outputs", outputNames);
  if (!options.saveOutputs.empty())
    saveBundleOutputs(options, graphOutputs, results);
  GivenValues expected = readBundleValues(options.expects, outputNames, graphOutputs, "output",
                                          /*exactLength=*/false);
  bool allMatch = true;
  for (auto [index, entry] : llvm::enumerate(graphOutputs))
    allMatch &= checkOutputEntry(options, index, entry, outputNames, results, expected);
  return allMatch;
}

/// Runs `options.model` as a bundle: load, bind, run, check, time, trace;
/// as one rank of a multi-rank job when `rankMode`.
int runBundle(const Options &options, bool rankMode) {
  std::string error;
  std::unique_ptr<RankJob> rankJob;
  if (rankMode)
    rankJob = joinRankJob(options);
  bool leader = isLeader();

  sluice::rt::Model model;
  loadBundle(options, model);
  bool cuda = model.target() == "cuda";
  BundleBoundary boundary = boundaryOf(options, model);
  std::vector<sluice::Tensor> bound = bundleInputs(options, boundary);

  sluice::rt::Context context;
  createContext(options, model, bound, context);
  if (options.noCudaGraph)
    context.enableCudaGraph(false);
  // Without --threads the runtime's default holds: SLUICE_NUM_THREADS, else
  // the host's cores shared by its contexts and ranks (docs/runtime.md).
  if (options.threads && !context.setNumThreads(options.threads, &error))
    die(error);
  int threads = context.numThreads();
  if (!bindInputs(context, boundary.variants, bound, error))
    die(error);

  runFirst(options, context);
  reportExpertLoad(options, model, context);
  std::vector<sluice::Tensor> results = copyOutputs(options, boundary, context);

  sluice::tools::BenchReport bench;
  bench.model = options.model;
  bench.target = model.target();
  bench.device = context.device();
  bench.warmup = options.warmup;
  std::string targetText; // what ran the steps, for the profile's heading
  if (options.iters > 0)
    targetText = timeBundle(options, context, cuda, threads, bench);
  std::optional<sluice::tools::StepProfile> profile;
  if (options.profile) {
    profile.emplace(profileBundle(options, model, context));
    if (leader)
      sluice::tools::printProfile(*profile, options.profileTop, targetText);
    bench.profile = &*profile;
  }
  if (leader && !options.json.empty() &&
      !sluice::tools::writeBenchJson(options.json, bench, error))
    die(error);
  if (options.contexts > 1)
    runContexts(options, model, boundary, bound, results);
  if (!options.trace.empty())
    traceBundle(options, model, context);

  // Every rank has run all its runs: leave the job (MPI finalized) before
  // rank 0's checks, so that no rank waits on a slow file system. The
  // context goes first (it holds a communicator of the job).
  if (job) {
    context = sluice::rt::Context();
    if (!job->comm.free(&error))
      die(error);
  }
  if (!leader)
    return 0;
  return checkBundleOutputs(options, boundary.outputNames, results) ? 0 : 1;
}

/// A sequence or optional input of --reference, which must be given as a
/// file: no generation, no shape specialization (the evaluator checks
/// element types as it goes).
sluice::RuntimeValue nonTensorInput(const Options &options, const std::string &name, Type argType,
                                    const std::optional<sluice::RuntimeValue> &given) {
  if (options.shapes.count(name))
    die("--shape for input '" + name +
        "': with --reference a sequence's element shapes are its file's (a bundle's "
        "are bound with sluice-compile --shape=" +
        name + "=2x3,2x3)");
  if (!given)
    die(options.model + ": input '" + name + "' is " +
        (isa<sluice::SequenceType>(argType) ? "a sequence" : "an optional") +
        "; pass it as a .pb file (--random-inputs makes tensors only)");
  return *given;
}

/// Checks a --reference input tensor `t` against the dims that its argument
/// `type` declares (a dynamic dim takes any size).
void checkDeclaredShape(const Options &options, const std::string &name, TensorType type,
                        const sluice::Tensor &t) {
  if (!type.hasRank())
    return;
  bool ok = type.getRank() == t.rank();
  for (int64_t d = 0; ok && d < type.getRank(); ++d)
    ok = type.isDynamicDim(d) || type.getDimSize(d) == t.dim(d);
  if (ok)
    return;
  std::string declared;
  for (int64_t d = 0; d < type.getRank(); ++d)
    declared += (d ? "x" : "") +
                (type.isDynamicDim(d) ? std::string("?") : std::to_string(type.getDimSize(d)));
  die(options.model + ": input '" + name + "' expects shape [" + declared + "], got " +
      t.describe());
}

/// A --reference input tensor: the file given (or, with --random-inputs, a
/// random tensor of its static shape), checked against the argument's
/// element type and declared dims.
sluice::Tensor tensorInput(const Options &options, const std::string &name, TensorType type,
                           std::optional<sluice::RuntimeValue> &given, std::mt19937 &rng) {
  auto dtype = sluice::dtypeFromType(type.getElementType());
  reinterpretBf16(given, type.getElementType());
  if (!given) {
    if (!options.randomInputs)
      die(options.model + ": input '" + name + "' not given (pass a file, or --random-inputs)");
    if (!type.hasStaticShape())
      die(options.model + ": input '" + name +
          "' has a dynamic shape; bind it with --shape to generate it");
    given = sluice::RuntimeValue(randomTensor(
        *dtype, std::vector<int64_t>(type.getShape().begin(), type.getShape().end()), rng));
  }
  const sluice::Tensor &t = given->tensor();
  if (t.dtype() != *dtype)
    die(options.model + ": input '" + name + "' expects element type " + sluice::dtypeName(*dtype) +
        ", got " + t.describe());
  checkDeclaredShape(options, name, type, t);
  return t;
}

/// Binds the --reference inputs: checks dtypes and declared dims, then
/// specializes the arguments of `func` to the tensors' shapes.
std::vector<sluice::RuntimeValue> bindReferenceInputs(const Options &options, func::FuncOp func,
                                                      const std::vector<std::string> &inputNames) {
  auto given = readValues(options.inputs, inputNames, func.getFunctionType().getInputs(), "input");
  std::mt19937 rng(0);
  std::vector<sluice::RuntimeValue> inputs;
  for (size_t i = 0; i < inputNames.size(); ++i) {
    Type argType = func.getArgument(i).getType();
    if (!isa<TensorType>(argType)) {
      inputs.push_back(nonTensorInput(options, inputNames[i], argType, given[i]));
      continue;
    }
    auto type = cast<TensorType>(argType);
    sluice::Tensor t = tensorInput(options, inputNames[i], type, given[i], rng);
    func.getArgument(i).setType(RankedTensorType::get(t.shape(), type.getElementType()));
    inputs.push_back(t);
  }
  func.setFunctionType(FunctionType::get(
      func.getContext(), func.getBody().front().getArgumentTypes(), func.getResultTypes()));
  return inputs;
}

/// --iters on the reference evaluator: times the evaluation and prints the
/// latency (and writes it, --json).
void timeReference(const Options &options, func::FuncOp func,
                   const std::vector<sluice::RuntimeValue> &inputs) {
  std::string error;
  sluice::tools::BenchReport bench;
  bench.model = options.model;
  bench.target = "reference";
  bench.device = "cpu";
  bench.warmup = options.warmup;
  bench.latency = timeRuns(options, [&] { (void)sluice::evaluate(func, inputs); });
  std::printf("latency over %d runs (reference evaluator): median %.3f ms, p90 %.3f ms\n",
              options.iters, bench.latency.median, bench.latency.p90);
  if (!options.json.empty() && !sluice::tools::writeBenchJson(options.json, bench, error))
    die(error);
}

/// --save-outputs on the reference evaluator: DIR/NAME.npy per output, a
/// sequence's elements as NAME_0.npy, NAME_1.npy ...
void saveReferenceOutputs(const Options &options, const std::vector<std::string> &outputNames,
                          const std::vector<sluice::RuntimeValue> &outputs) {
  std::string error;
  if (auto ec = llvm::sys::fs::create_directories(options.saveOutputs))
    die(options.saveOutputs + ": cannot create folder: " + ec.message());
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string stem = options.saveOutputs + "/" + safeFileName(outputNames[i]);
    const sluice::RuntimeValue *value = &outputs[i];
    // An optional is saved as what it holds (nothing when empty).
    if (value->isOptional()) {
      if (!value->hasValue())
        continue;
      value = &value->value();
    }
    if (value->isTensor()) {
      if (!sluice::writeNpy(stem + ".npy", value->tensor(), error))
        die(error);
      continue;
    }
    // A sequence: one file per element, NAME_0.npy, NAME_1.npy ...
    for (size_t k = 0; k < value->elements().size(); ++k)
      if (!sluice::writeNpy(stem + "_" + std::to_string(k) + ".npy", value->elements()[k], error))
        die(error);
  }
}

/// Compares the reference outputs with those --expect gave, printing the
/// others; false on a mismatch.
bool checkReferenceOutputs(const Options &options, func::FuncOp func,
                           const std::vector<std::string> &outputNames,
                           const std::vector<sluice::RuntimeValue> &outputs) {
  auto expected = readValues(options.expects, outputNames, func.getResultTypes(), "output");
  bool allMatch = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    reinterpretBf16(expected[i], getElementTypeOrSelf(func.getResultTypes()[i]));
    if (!expected[i]) {
      std::printf("output '%s' %s\n", outputNames[i].c_str(), outputs[i].describe().c_str());
      continue;
    }
    allMatch &= compareValue(outputNames[i], outputs[i], *expected[i], options.tolerance);
  }
  return allMatch;
}

/// Runs `options.model` (an ONNX model, or a .mlir file as it is) on the
/// reference evaluator: bind, evaluate, time, save, check.
int runReference(const Options &options) {
  MLIRContext context;
  context.disableMultithreading();
  sluice::CompilerOptions compilerOptions;
  compilerOptions.inputShapes = options.shapes;
  std::string error;
  // A .mlir file (any phase's output, kernel groups included) runs as it is:
  // what the differential tests compare before and after a pass.
  bool mlirInput = llvm::sys::path::extension(options.model) == ".mlir";
  // compileModel parses a .mlir file as it is (no phase runs up to import).
  OwningOpRef<ModuleOp> module = sluice::compileModel(
      context, options.model, compilerOptions, sluice::Phase::Import, error);
  if (!module)
    die(error);
  auto func = module->lookupSymbol<func::FuncOp>("main");
  std::vector<std::string> inputNames = namesOf(func, "sluice.input_names");
  std::vector<std::string> outputNames = namesOf(func, "sluice.output_names");

  std::vector<sluice::RuntimeValue> inputs = bindReferenceInputs(options, func, inputNames);
  if (!mlirInput && failed(sluice::runPhases(*module, compilerOptions, sluice::Phase::Import,
                                             sluice::Phase::Simplify, error)))
    die(error);

  // Evaluate (with diagnostics rendered against ONNX nodes).
  std::string evalError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      evalError += sluice::describeLocation(diag.getLocation()) +
                   ": " + diag.str() + "\n";
    return success();
  });
  auto outputs = sluice::evaluate(func, inputs);
  if (failed(outputs))
    die(evalError.empty() ? options.model + ": evaluation failed" : evalError);

  if (options.iters > 0)
    timeReference(options, func, inputs);
  if (!options.saveOutputs.empty())
    saveReferenceOutputs(options, outputNames, *outputs);
  return checkReferenceOutputs(options, func, outputNames, *outputs) ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseArgs(argc, argv);
  if (options.bundle) {
    bool rankMode = false;
    int launched = chooseLaunch(options, sluice::rt::launchInfo(), rankMode);
    if (launched >= 0)
      return launched;
    return runBundle(options, rankMode);
  }
  return runReference(options);
}
