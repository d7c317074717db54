//===- sluice-compile.cpp - ONNX model to optimized bundle ----------------===//
//
//   sluice-compile MODEL.onnx -o OUT.sluice [--target=cpu|cuda] [--shape=NAME=2x128 ...]
//                  [--stop-after=PHASE --emit=mlir] [--report=FILE.json]
//
// Runs the phases of docs/architecture.md (import, simplify, fuse, plan, emit) and
// writes a bundle folder: manifest.json, model-<id>.so (built here with the system
// C++ compiler) and weights.bin.
//
//===----------------------------------------------------------------------===//

#include "codegen/bundle/Bundle.h"
#include "codegen/cpu/CpuEmitter.h"
#include "dialects/sluice/SluiceOps.h"
#include "lib/support/Json.h"
#include "lib/support/Locations.h"
#include "lib/support/Tensor.h"
#include "passes/Passes.h"
#include "sluice/version.h"
#include "tools/common/ToolSupport.h"
#include "tools/driver/Cache.h"
#include "tools/driver/Installed.h"
#include "tools/driver/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <algorithm>
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
  --target=cpu|cuda     code generation target (cpu: C++ with OpenMP and
                        OpenBLAS, the default; cuda: CUDA kernels, cuBLASLt
                        and cuDNN, built with nvcc; ops without a cuda
                        kernel run as host steps, listed in --report)
  --gpu-arch=LIST       cuda: the architectures to build, comma-separated
                        (default sm_80,sm_90,compute_90: machine code for
                        A100 and H100/H200, PTX for newer GPUs)
  --shape=NAME=2x128    bind an input's shape (repeatable); bundles need
                        static shapes. A sequence input takes its element
                        shapes, NAME=3x4,3x4,2x4 (scalar for rank 0, empty
                        for no elements): the bundle takes the elements as
                        inputs NAME.0, NAME.1 ... (manifest "sequences").
                        An optional input is compiled absent (NAME=none)
                        or present with its value's shape (manifest
                        "optionals")
  --shapes=NAME=DIMS,NAME=DIMS,...
                        shape variants (repeatable, cpu target): one bundle
                        with a program per listed shape, sharing one
                        weights.bin; the i-th shape of every input --shapes
                        lists forms variant i (each lists as many, at least
                        two), inputs given --shape are fixed across them;
                        e.g. --shapes=x=1x128,x=8x128,x=32x128. The runtime
                        runs the variant whose input shapes equal the
                        inputs' (manifest "variants", docs/runtime.md)
  --bind=NAME=FILE      freeze an input to a tensor file's value (.pb/.npy):
                        it becomes a constant and leaves the bundle's
                        inputs (for shape tensors a static bundle needs)
  --fusion=MODE         kernel groups the fuse phase grows: all (the
                        default: GEMM epilogues, row ops, attention, views,
                        horizontal GEMMs; see docs/architecture.md "fuse"),
                        elementwise (elementwise chains only) or none (one
                        op per kernel)
  --precision=P         fp32 (the default: the model's types), fp16 or bf16
                        (aliases float16, half, bfloat16): weights and
                        activations in half precision with fp32
                        accumulation, norms and softmax statistics in fp32;
                        inputs and outputs keep their dtypes
  --tp=N                split every transformer layer over N ranks
                        (Megatron tensor parallelism: attention by heads,
                        MLPs column- then row-parallel, the embedding and
                        LM head vocab-parallel); the bundle runs as N
                        ranks (sluice-run --ranks=N, or mpirun -np N);
                        needs static shapes (docs/parallel.md)
  --sp                  with --tp: sequence parallelism (norms and residual
                        adds split along the sequence; reduce_scatter and
                        all_gather instead of all_reduce)
  --pp=N                cut the model into N pipeline stages balanced by
                        predicted time; activations sent between stages;
                        the bundle runs as tp x N ranks (docs/parallel.md)
  --micro-batches=M     with --pp: split dim 0 of every input and output M
                        ways and stream the micro-batches through the stages
  --ep=N                expert parallelism: each mixture-of-experts layer
                        keeps E/N of its E experts per rank, the rest of
                        the model replicated; the bundle runs as N ranks
                        (docs/parallel.md, "Expert parallelism")
  --devices=N           plan for N devices (docs/parallel.md, "Automatic
                        plan"): each tp/sp/pp grid that fits, its memory
                        per rank and its predicted time
  --auto                with --devices: compile the chosen plan (its tp
                        and sp; world size 1 when the model fits one
                        device and splitting does not pay)
  --device-memory=BYTES memory per rank for the plan (80GB, 80GiB, 512MB or
                        bytes; default: the cluster's device memory)
  --cluster=FILE.json   the devices and links the plan predicts with
                        (default: one node of 8 H100 SXM, NVLink, IB)
  --objective=latency|throughput
                        what the plan minimizes: one run's time (the
                        default) or time per sample over all devices
  --quantize=MODE       int8: GEMMs and convolutions in int8 (weights per
                        output channel, activations per tensor from
                        --calibration, int32 accumulation, scales in the
                        epilogue); fp8: GEMMs in E4M3 (per-tensor
                        scales from --calibration; convolutions stay
                        f32; emulated on the cpu target); w8a16 / w4a16: weight-only int8 / int4
                        (groups of 128 along K, half scales) for
                        memory-bound GEMMs; see docs/quantization.md.
                        QDQ models need no flag: their QuantizeLinear /
                        DequantizeLinear pairs already say what is int8
  --prune=KIND=F[,...]  structured pruning (docs/pruning.md): remove the
                        fraction F (in [0, 1)) of each attention layer's
                        heads (heads=F), each MLP's hidden units (ffn=F)
                        or each convolution's output channels
                        (channels=F), chosen by importance measured on
                        --calibration; weights, GEMM shapes and FLOPs
                        shrink; the most sensitive layers are spared
                        until --accuracy-budget holds
  --sparsity=2:4        semi-structured sparsity: two of every four weights
                        along K of each GEMM kept by calibrated importance
                        (cuda: cuSPARSELt where it is present and faster;
                        cpu: dense on the pruned weights); needs
                        --calibration
  --calibration=DIR     sample inputs: DIR/NAME.npy per model input (one
                        set), or sub-folders of such sets, with the
                        compile shapes; int8, fp8, --prune and --sparsity
                        need it, weight-only uses it for the accuracy guard
  --calibration-method=M
                        minmax (the default, as ONNX Runtime's),
                        percentile (99.999) or entropy (KL divergence)
  --smooth-quant[=ALPHA]
                        int8: SmoothQuant, activation outliers of layer
                        norms migrated into the next GEMMs' weights
                        (ALPHA in [0, 1], default 0.5)
  --accuracy-metric=M   how the accuracy guard judges the outputs on the
                        calibration sets against the uncompressed model:
                        rel-l2 (relative L2 error), top1-agreement (the
                        share of rows whose argmax over the last axis
                        changed) or auto (the default: top1-agreement when
                        every output is rank 2 or named in the model's
                        sluice.class_outputs metadata, else rel-l2)
  --accuracy-budget=X   largest error of any output in the metric (default
                        0.05 rel-l2, 0.01 top1-agreement); the most
                        sensitive layers stay in float (or unpruned,
                        dense) until it holds, and a budget that no
                        quantized layer meets fails the compile with the
                        table
  --quantization-cache=FILE
                        the calibration table (JSON; default: beside the
                        bundle, BUNDLE.quantization.json; none: off):
                        recompiling with the same model and data does not
                        recalibrate
  --no-recognize        skip the recognize phase (no layer_norm/rms_norm/
                        gelu/silu/attention composites from op chains);
                        with --fusion=none, one kernel per ONNX-level op
  --stop-after=PHASE    import | simplify | recognize | compress |
                        parallelize | fuse | plan | emit
  --emit=mlir           print the IR after the stop phase instead of a bundle
  --emit=source         write the generated source (cpu: the C++ translation
                        unit; cuda: model.cu, then host.cpp when steps run
                        on the host) to -o or stdout, without compiling it
  --emit=plan           print the plan's table (with --devices; weights in
                        absent external data files are read as shapes)
  --emit=kernels        list the kernel groups (after plan, or --stop-after
                        fuse): the ops inside each and their ONNX nodes,
                        the launch count, and the fusion passes' remarks
                        (what did not fuse and why)
  --report=FILE.json    write kernels, library_calls, launches, arena_bytes,
                        weights_bytes, steps (each launch with its ops,
                        ONNX nodes and compute: f32, int8, int8w ...),
                        on cpu cpu_gemm and cpu_conv (the GEMM and
                        convolution paths: avx512/openblas+avx2/openblas,
                        onednn/im2col)
                        and cpu_conv_post_ops (convolutions whose ReLU /
                        residual Add run as oneDNN post-ops),
                        cpu_conv_blocked_activations (activations kept
                        in oneDNN's blocked layout between convolutions),
                        cpu_gemm_packed_weights (f32 GEMMs whose weight
                        is stored packed for the host's kernel),
                        remarks and phase timings as JSON
  --cache-dir=DIR       the compile cache (docs/tools.md, "Compile cache"):
                        a bundle compiled before from the same model bytes
                        (and external data), options, compiler and
                        toolchain is linked or copied to -o instead of
                        compiled again, with its --report (default:
                        $SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice,
                        else ~/.cache/sluice; bundles only, not --emit)
  --no-cache            neither read nor write the compile cache
  --elide-weights       print weight blobs as '...' instead of hex
  --quiet               no progress lines on stderr
  --jobs=N              cpu: build the library from N translation units
                        compiled at once (default: the cores, at most 8,
                        for models of 32 distinct kernels or more; one
                        otherwise)
  --precompile-headers  build the precompiled header of generated cpu code
                        for this compiler and these flags, print its path
                        and exit (the first cpu compile builds it too;
                        docs/tools.md, "Precompiled headers")
  -h, --help            this help

Environment: SLUICE_CXX or CXX picks the C++ compiler (default c++);
SLUICE_CACHE_DIR sets the compile cache's folder (none: no cache);
SLUICE_PCH_DIR the precompiled headers' (default: the cache folder's pch/
under $XDG_CACHE_HOME/sluice or ~/.cache/sluice; none: no precompiled
header);
SLUICE_CPU_CONV=im2col keeps cpu f32 convolutions on im2col + OpenBLAS
instead of oneDNN (onednn, the default where the compiler has oneDNN, asks
for it, with activations that only convolutions read kept in oneDNN's
blocked layout; onednn-nchw reorders each convolution's NCHW src and dst
inside its call instead);
SLUICE_CPU_PACKED_WEIGHTS=1 stores cpu f32 GEMM weights packed for the
host's GEMM kernel (0, the default, keeps them raw).
)";

[[noreturn]] void die(const std::string &message) {
  sluice::tools::die("sluice-compile", message);
}

/// The report's "phases" and, for a compile that stores its bundle in the
/// cache, its "cache" entry.
void writePhasesAndCache(llvm::json::OStream &json, const std::vector<sluice::PhaseTiming> &timings,
                         bool storing, const std::string &cacheKey, const std::string &cacheDir) {
  json.attributeArray("phases", [&] {
    for (const auto &timing : timings)
      json.object([&] {
        json.attribute("name", sluice::jsonText(timing.name));
        json.attributeBegin("ms");
        sluice::writeJsonFixed3(json, timing.milliseconds);
        json.attributeEnd();
      });
  });
  if (storing)
    json.attributeObject("cache", [&] {
      json.attribute("hit", false);
      json.attribute("key", cacheKey);
      json.attribute("dir", sluice::jsonText(cacheDir));
    });
}

/// Writes --report's file and stores the finished bundle in the cache.
void finishReportAndCache(const std::string &report, const std::string &reportText, bool storing,
                          const std::string &cacheDir, const std::string &cacheKey,
                          const std::string &bundlePath, const std::string &cacheRecipe,
                          bool quiet) {
  if (!report.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream file(report, ec);
    if (ec)
      die(report + ": cannot write: " + ec.message());
    file << reportText;
  }
  if (!storing)
    return;
  // A bundle that cannot be stored is still a finished compile.
  std::string cacheError;
  if (!sluice::cache::store(cacheDir, cacheKey, bundlePath, reportText, cacheRecipe, cacheError))
    std::fprintf(stderr, "sluice-compile: warning: not cached: %s\n", cacheError.c_str());
  else if (!quiet)
    std::fprintf(stderr, "sluice-compile: cached as %s in %s\n", cacheKey.c_str(),
                 cacheDir.c_str());
}

/// --emit=kernels: each kernel group with the ops inside it and the ONNX
/// nodes they came from, then the passes' remarks (what did not fuse, why).
void printKernelGroups(ModuleOp module, const std::vector<std::string> &remarks,
                       llvm::raw_ostream &out) {
  int64_t kernels = 0, library = 0;
  module.walk([&](sluice::KernelOp kernel) {
    (kernel.getLibrary() ? library : kernels)++;
    out << kernel.getSymName();
    if (auto lib = kernel.getLibrary())
      out << " [library " << *lib << "]";
    std::vector<std::string> ops, nodes;
    sluice::codegen::describeKernel(kernel, ops, nodes);
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

/// An attribute the passes record for --report (sluice.quantization) as
/// JSON: dictionaries, arrays, strings, numbers and booleans.
void writeAttributeJson(llvm::json::OStream &json, mlir::Attribute attr) {
  if (auto dict = dyn_cast<mlir::DictionaryAttr>(attr)) {
    json.object([&] {
      for (mlir::NamedAttribute entry : dict) {
        json.attributeBegin(entry.getName().strref());
        writeAttributeJson(json, entry.getValue());
        json.attributeEnd();
      }
    });
  } else if (auto array = dyn_cast<mlir::ArrayAttr>(attr)) {
    json.array([&] {
      for (mlir::Attribute a : array)
        writeAttributeJson(json, a);
    });
  } else if (auto str = dyn_cast<mlir::StringAttr>(attr)) {
    json.value(sluice::jsonText(str.str()));
  } else if (auto b = dyn_cast<mlir::BoolAttr>(attr)) {
    json.value(b.getValue());
  } else if (auto i = dyn_cast<mlir::IntegerAttr>(attr)) {
    json.value(i.getInt());
  } else if (auto f = dyn_cast<mlir::FloatAttr>(attr)) {
    double v = f.getValueAsDouble();
    if (std::isfinite(v))
      json.value(v);
    else
      json.value(nullptr);
  } else {
    std::string text;
    llvm::raw_string_ostream os(text);
    attr.print(os);
    json.value(text);
  }
}

/// `--prune=heads=F,ffn=F,channels=F` (any subset, any order) into
/// `options`; a kind the pass does not know or a fraction outside [0, 1)
/// ends the compile with one error.
void parsePrune(const std::string &text, sluice::CompilerOptions &options) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(text).split(parts, ',', -1, false);
  if (parts.empty())
    die("bad --prune '" + text + "' (expected heads=F,ffn=F,channels=F, F in [0, 1))");
  for (llvm::StringRef part : parts) {
    auto [kind, value] = part.trim().split('=');
    double *slot = kind == "heads"      ? &options.pruneHeads
                   : kind == "ffn"      ? &options.pruneFfn
                   : kind == "channels" ? &options.pruneChannels
                                        : nullptr;
    if (!slot)
      die("unknown --prune kind '" + kind.str() +
          "' (heads: attention heads, ffn: MLP hidden units, channels: conv output channels)");
    std::string number = value.str();
    char *end = nullptr;
    double fraction = std::strtod(number.c_str(), &end);
    if (number.empty() || *end || !(fraction >= 0 && fraction < 1))
      die("bad --prune fraction '" + number + "' for " + kind.str() +
          " (expected a fraction in [0, 1), e.g. " + kind.str() + "=0.25)");
    *slot = fraction;
  }
}

std::string defaultBundlePath(const std::string &model) {
  llvm::SmallString<256> p(llvm::sys::path::filename(model));
  llvm::sys::path::replace_extension(p, ".sluice");
  return std::string(p);
}

} // namespace

int main(int argc, char **argv) {
  std::string model, output, emit, report, stop, target = "cpu";
  std::vector<std::string> gpuArchs;
  bool elide = false, quiet = false, spGiven = false;
  int jobs = 0; // --jobs: 0, the cores
  std::string clusterFile;
  bool tpGiven = false;
  bool calibrationGiven = false, methodGiven = false, budgetGiven = false, metricGiven = false;
  std::string quantizationCache;
  std::string cacheDirFlag;
  bool noCache = false;
  bool precompileHeaders = false;
  sluice::CompilerOptions options;
  sluice::ShapeVariants shapesGiven; // --shapes
  // Installed (PREFIX/bin): the code generator's headers in PREFIX/include.
  sluice::useInstalledHeaders();
  sluice::tools::ArgReader args("sluice-compile", argc, argv);
  // --tp, --pp, --micro-batches, --ep, --devices: a count from 1 to 4096.
  auto countFlag = [&](const char *flag, const char *what) -> int64_t {
    std::string value = args.flagValue(flag);
    char *end = nullptr;
    long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end || n < 1 || n > 4096)
      die(std::string("bad ") + flag + " '" + value + "' (expected " + what + ", 1 to 4096)");
    return n;
  };
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
    } else if (args.is("--gpu-arch")) {
      // The value outlives the pieces that point into it.
      std::string list = args.flagValue("--gpu-arch");
      llvm::SmallVector<llvm::StringRef> parts;
      llvm::StringRef(list).split(parts, ',', -1, false);
      for (llvm::StringRef part : parts)
        gpuArchs.push_back(part.trim().str());
    } else if (args.is("--tp")) {
      options.tp = countFlag("--tp", "a rank count");
      tpGiven = true;
    } else if (arg == "--sp") {
      options.sp = true;
      spGiven = true;
    } else if (args.is("--pp") || args.is("--micro-batches")) {
      bool stages = args.is("--pp");
      (stages ? options.pp : options.microBatches) =
          countFlag(stages ? "--pp" : "--micro-batches", "a count");
    } else if (args.is("--ep")) {
      options.ep = countFlag("--ep", "a rank count");
    } else if (args.is("--jobs")) {
      jobs = (int)countFlag("--jobs", "a number of translation units");
    } else if (args.is("--devices")) {
      options.devices = countFlag("--devices", "a device count");
    } else if (arg == "--auto") {
      options.autoPlan = true;
    } else if (args.is("--device-memory")) {
      std::string value = args.flagValue("--device-memory");
      if (!sluice::parallel::parseByteSize(value, options.deviceMemory))
        die("bad --device-memory '" + value +
            "' (expected bytes per device: 80GB, 80GiB, 512MB, or a number of bytes)");
    } else if (args.is("--cluster")) {
      clusterFile = args.flagValue("--cluster");
    } else if (args.is("--objective")) {
      options.objective = args.flagValue("--objective");
      if (options.objective != "latency" && options.objective != "throughput")
        die("unknown --objective '" + options.objective + "' (latency, throughput)");
    } else if (args.is("--fusion")) {
      options.fusion = args.flagValue("--fusion");
      if (options.fusion != "none" && options.fusion != "elementwise" &&
          options.fusion != "all")
        die("unknown --fusion '" + options.fusion + "' (none, elementwise, all)");
    } else if (args.is("--precision")) {
      std::string value = args.flagValue("--precision");
      auto precision = sluice::parsePrecision(value);
      if (!precision)
        die("unknown --precision '" + value +
            "' (fp32, fp16, bf16; aliases float32, float16, half, bfloat16)");
      options.precision = *precision;
    } else if (args.is("--quantize")) {
      options.quantize = args.flagValue("--quantize");
      if (options.quantize != "int8" && options.quantize != "w8a16" &&
          options.quantize != "w4a16" && options.quantize != "fp8")
        die("unknown --quantize '" + options.quantize + "' (int8, fp8, w8a16, w4a16)");
    } else if (args.is("--prune")) {
      parsePrune(args.flagValue("--prune"), options);
    } else if (args.is("--sparsity")) {
      options.sparsity = args.flagValue("--sparsity");
      if (options.sparsity != "2:4")
        die("unknown --sparsity '" + options.sparsity +
            "' (supported: 2:4, two of every four weights along K)");
    } else if (args.is("--calibration")) {
      options.calibration = args.flagValue("--calibration");
      calibrationGiven = true;
    } else if (args.is("--calibration-method")) {
      options.calibrationMethod = args.flagValue("--calibration-method");
      if (options.calibrationMethod != "minmax" && options.calibrationMethod != "percentile" &&
          options.calibrationMethod != "entropy")
        die("unknown --calibration-method '" + options.calibrationMethod +
            "' (minmax, percentile, entropy)");
      methodGiven = true;
    } else if (arg == "--smooth-quant" || arg.rfind("--smooth-quant=", 0) == 0) {
      std::string value = arg == "--smooth-quant" ? "0.5" : arg.substr(strlen("--smooth-quant="));
      char *end = nullptr;
      double alpha = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(alpha >= 0 && alpha <= 1))
        die("bad --smooth-quant '" + value + "' (expected ALPHA in [0, 1], e.g. 0.5)");
      options.smoothQuant = alpha;
    } else if (args.is("--accuracy-budget")) {
      std::string value = args.flagValue("--accuracy-budget");
      char *end = nullptr;
      double budget = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(budget >= 0) || !std::isfinite(budget))
        die("bad --accuracy-budget '" + value +
            "' (expected an error >= 0: 0.05 relative L2, or 0.01 of the rows for "
            "top1-agreement)");
      options.accuracyBudget = budget;
      budgetGiven = true;
    } else if (args.is("--accuracy-metric")) {
      std::string value = args.flagValue("--accuracy-metric");
      if (value != "rel-l2" && value != "top1-agreement" && value != "auto")
        die("bad --accuracy-metric '" + value + "' (expected rel-l2, top1-agreement or auto)");
      options.accuracyMetric = value;
      metricGiven = true;
    } else if (args.is("--quantization-cache")) {
      quantizationCache = args.flagValue("--quantization-cache");
    } else if (arg == "--no-recognize") {
      options.recognize = false;
    } else if (args.is("--cache-dir")) {
      cacheDirFlag = args.flagValue("--cache-dir");
      if (cacheDirFlag.empty())
        die("--cache-dir needs a folder (--no-cache turns the cache off)");
    } else if (arg == "--no-cache") {
      noCache = true;
    } else if (arg == "--elide-weights") {
      elide = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (arg == "--precompile-headers") {
      precompileHeaders = true;
    } else if (args.is("--shape")) {
      std::string error;
      if (!sluice::parseShapeOption(args.flagValue("--shape"), options, error))
        die(error);
    } else if (args.is("--shapes")) {
      std::string error;
      if (!sluice::parseShapesOption(args.flagValue("--shapes"), shapesGiven, error))
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
  if (precompileHeaders) {
    if (!model.empty())
      die("--precompile-headers takes no model");
    sluice::codegen::BundleOptions bundle;
    bundle.progress = !quiet;
    std::string path, error;
    if (!sluice::codegen::precompileCpuHeaders(bundle, path, error))
      die(error);
    std::printf("%s\n", path.c_str());
    return 0;
  }
  if (model.empty())
    die("no model given (see --help)");
  if (target != "cpu" && target != "cuda")
    die("unknown target '" + target + "' (targets: cpu, cuda)");
  options.target = target;
  if (const char *conv = std::getenv("SLUICE_CPU_CONV"); conv && *conv) {
    std::string value = conv;
    if (value != "onednn" && value != "onednn-nchw" && value != "im2col")
      die("SLUICE_CPU_CONV='" + value + "': expected onednn, onednn-nchw or im2col");
    if (value != "im2col" && std::string(sluice::codegen::cpuConvPathName()) != "onednn")
      die("SLUICE_CPU_CONV=" + value + ": this sluice-compile was built without oneDNN "
          "(libdnnl-dev); cpu convolutions use im2col");
  }
  if (const char *packed = std::getenv("SLUICE_CPU_PACKED_WEIGHTS"); packed && *packed) {
    std::string value = packed;
    if (value != "0" && value != "1")
      die("SLUICE_CPU_PACKED_WEIGHTS='" + value + "': expected 0 or 1");
  }
  if ((options.quantize == "int8" || options.quantize == "fp8") && !calibrationGiven)
    die("--quantize=" + options.quantize + " needs --calibration=DIR: the activations' " +
        options.quantize +
        " scales come from running sample inputs (DIR/NAME.npy per model input) through the "
        "model");
  if (options.prunes() && !calibrationGiven)
    die(std::string(options.sparsity.empty() ? "--prune" : "--sparsity") +
        " needs --calibration=DIR: which heads, units, channels or weights matter is measured "
        "by running sample inputs (DIR/NAME.npy per model input) through the model");
  if (options.quantize.empty() && !options.prunes() &&
      (calibrationGiven || methodGiven || budgetGiven || metricGiven || options.smoothQuant >= 0))
    die(std::string(calibrationGiven ? "--calibration"
                    : methodGiven    ? "--calibration-method"
                    : budgetGiven    ? "--accuracy-budget"
                    : metricGiven    ? "--accuracy-metric"
                                     : "--smooth-quant") +
        " applies to quantization and pruning: give --quantize=int8|fp8|w8a16|w4a16, --prune "
        "or --sparsity too");
  if (methodGiven && options.quantize.empty())
    die("--calibration-method chooses int8 and fp8 ranges: it needs --quantize=int8|fp8");
  if (options.prunes() && options.tp > 1)
    die("--prune/--sparsity with --tp is not supported yet: prune a single-device bundle "
        "(pruned head counts need not divide by the ranks)");
  if (options.smoothQuant >= 0 && options.quantize != "int8")
    die("--smooth-quant balances int8 activations against weights: it needs --quantize=int8");
  if (!options.quantize.empty() && options.tp > 1)
    die("--quantize with --tp is not supported yet: quantize a single-device bundle");
  if (options.microBatches > 1 && options.pp < 2)
    die("--micro-batches streams micro-batches through pipeline stages: give --pp=N (N >= 2) "
        "too");
  if (options.pp > 1 && (options.prunes() || !options.quantize.empty()))
    die("--prune/--sparsity/--quantize with --pp is not supported yet: compress a "
        "single-device bundle");
  if (options.ep > 1 && (options.tp > 1 || options.pp > 1))
    die("--ep combines with neither --tp nor --pp yet: give one of them");
  if (options.ep > 1 && (options.prunes() || !options.quantize.empty()))
    die("--prune/--sparsity/--quantize with --ep is not supported yet: compress a "
        "single-device bundle");
  if (options.sp && options.tp < 2)
    die("--sp splits the sequence over the tensor-parallel ranks: give --tp=N (N >= 2) too");
  if (!emit.empty() && emit != "mlir" && emit != "kernels" && emit != "source" &&
      emit != "plan")
    die("unknown --emit '" + emit + "' (supported: mlir, kernels, source, plan)");
  bool printPlan = emit == "plan";
  if ((options.autoPlan || printPlan) && options.devices == 0)
    die(std::string(options.autoPlan ? "--auto" : "--emit=plan") +
        " plans for a number of devices: give --devices=N");
  if (options.devices > 0 && !options.autoPlan && !printPlan)
    die("--devices=N is for the automatic plan: give --auto (compile the chosen plan) or "
        "--emit=plan (print the table)");
  if (options.autoPlan &&
      (tpGiven || spGiven || options.pp > 1 || options.microBatches > 1 || options.ep > 1))
    die("--auto chooses --tp, --sp, --pp, --micro-batches and --ep itself: drop them, or drop "
        "--auto");
  if ((options.deviceMemory > 0 || !clusterFile.empty() || options.objective != "latency") &&
      options.devices == 0)
    die("--device-memory, --cluster and --objective describe the automatic plan: give "
        "--devices=N with --auto or --emit=plan");
  if (!clusterFile.empty()) {
    std::string clusterError;
    if (!sluice::parallel::readClusterFile(clusterFile, options.cluster, clusterError))
      die(clusterError);
  }
  if (options.devices > options.cluster.devicesPerNode * options.cluster.nodes)
    die("--devices=" + std::to_string(options.devices) + " but the cluster has " +
        std::to_string(options.cluster.devicesPerNode * options.cluster.nodes) + " devices (" +
        std::to_string(options.cluster.nodes) + " x " +
        std::to_string(options.cluster.devicesPerNode) + "; --cluster=FILE.json describes more)");
  if (printPlan && !stop.empty())
    die("--emit=plan plans after the compress phase: drop --stop-after");
  if (options.autoPlan && (!options.quantize.empty() || options.prunes()))
    die("--auto with --quantize, --prune or --sparsity is not supported yet (they do not "
        "combine with --tp)");
  // --shapes: the variants' input shapes, checked before anything compiles.
  std::vector<std::map<std::string, std::vector<int64_t>>> variants;
  if (!shapesGiven.empty()) {
    if (target != "cpu")
      die("--shapes builds shape variants for the cpu target only: compile one cuda bundle "
          "per shape with --shape");
    if (!emit.empty() || !stop.empty())
      die("--shapes writes one bundle of shape variants: drop " +
          std::string(!emit.empty() ? "--emit" : "--stop-after") +
          " (or compile one shape with --shape=NAME=DIMS)");
    if (options.tp > 1 || options.pp > 1 || options.ep > 1 || options.microBatches > 1 ||
        options.devices > 0)
      die("--shapes does not combine with --tp, --pp, --ep, --micro-batches or --devices: a "
          "multi-rank bundle has one shape (compile one bundle per shape with --shape)");
    if (!options.quantize.empty() || options.prunes())
      die("--shapes does not combine with --quantize, --prune or --sparsity yet: their "
          "calibration and accuracy guard run at one shape (compile one bundle per shape with "
          "--shape)");
    if (llvm::StringRef(model).ends_with(".mlir"))
      die(model + ": --shapes binds each variant's shapes at the ONNX import: give the .onnx "
                  "model");
    std::string error;
    if (!sluice::shapeVariants(shapesGiven, options, variants, error))
      die(error);
    for (const auto &entry : shapesGiven)
      options.variedInputs.insert(entry.first);
  }
  options.planOnly = printPlan;
  sluice::parallel::PlanResult plan;
  if (options.devices > 0)
    options.planResult = &plan;
  sluice::Phase stopPhase = emit == "kernels" ? sluice::Phase::Plan : sluice::Phase::Emit;
  if (!stop.empty()) {
    auto phase = sluice::parsePhase(stop);
    if (!phase)
      die("unknown phase '" + stop +
          "' (phases: import simplify recognize compress parallelize fuse plan emit)");
    stopPhase = *phase;
    if (emit.empty() && stopPhase != sluice::Phase::Emit)
      die("--stop-after=" + stop + " needs --emit=mlir (only emit writes a bundle)");
    if (emit == "source" && stopPhase != sluice::Phase::Emit)
      die("--emit=source writes what the emit phase generates: drop --stop-after=" + stop);
    if (emit == "kernels" && stopPhase < sluice::Phase::Fuse)
      die("--emit=kernels lists kernel groups, which the fuse phase forms: stop after "
          "fuse, plan or emit");
  }
  bool printIR = emit == "mlir";
  bool printKernels = emit == "kernels";
  bool printSource = emit == "source";
  std::vector<std::string> remarks, warnings;
  options.remarks = &remarks;
  options.warnings = &warnings;
  options.progress = !quiet;
  // Phase lines where the compile ends in a bundle (the --emit listings go
  // to stdout and stay as they were).
  options.phaseProgress = !quiet && emit.empty() && stopPhase == sluice::Phase::Emit;
  if (!options.quantize.empty() && quantizationCache != "none") {
    if (!quantizationCache.empty())
      options.quantizationCache = quantizationCache;
    else if (stopPhase == sluice::Phase::Emit && emit.empty())
      options.quantizationCache =
          (output.empty() ? defaultBundlePath(model) : output) + ".quantization.json";
  }

  // The compile cache: bundles only (the IR, source, kernel and plan
  // listings are cheap to make and not worth a cache entry).
  std::string bundlePath = output.empty() ? defaultBundlePath(model) : output;
  std::string cacheDir, cacheKey, cacheRecipe;
  if (emit.empty() && stopPhase == sluice::Phase::Emit)
    cacheDir = sluice::cache::cacheDirectory(cacheDirFlag, noCache);
  if (!cacheDir.empty()) {
    auto start = std::chrono::steady_clock::now();
    sluice::cache::KeyInputs inputs;
    inputs.cacheDir = cacheDir;
    inputs.compilerVersion = SLUICE_VERSION_STRING;
    inputs.modelPath = model;
    inputs.options = &options;
    inputs.gpuArchitectures = gpuArchs;
    inputs.clusterFile = clusterFile;
    inputs.flags = sluice::cache::keyFlags(argc, argv, model);
    std::string keyError, cachedReport;
    // An ingredient that cannot be read (a missing model or --bind file):
    // no cache, and the compile says what is wrong.
    bool hit = false;
    if (!sluice::cache::computeKey(inputs, cacheKey, cacheRecipe, keyError))
      cacheDir.clear();
    else if (!(hit = sluice::cache::restore(cacheDir, cacheKey, bundlePath, cachedReport,
                                            keyError)) &&
             !keyError.empty())
      std::fprintf(stderr, "sluice-compile: warning: %s\n", keyError.c_str());
    if (hit) {
      if (!keyError.empty())
        die(keyError);
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!report.empty()) {
        // The report of the compile that made the entry, with this
        // compile's paths and the hit.
        llvm::json::Value value = llvm::json::Object{};
        if (auto parsed = llvm::json::parse(cachedReport))
          value = std::move(*parsed);
        else
          llvm::consumeError(parsed.takeError());
        if (llvm::json::Object *object = value.getAsObject()) {
          (*object)["model"] = sluice::jsonText(model);
          (*object)["bundle"] = sluice::jsonText(bundlePath);
          (*object)["cache"] = llvm::json::Object{{"hit", true},
                                                  {"key", cacheKey},
                                                  {"dir", sluice::jsonText(cacheDir)},
                                                  {"us", (int64_t)std::llround(seconds * 1e6)}};
        }
        std::error_code ec;
        llvm::raw_fd_ostream file(report, ec);
        if (ec)
          die(report + ": cannot write: " + ec.message());
        file << llvm::formatv("{0:2}", value) << "\n";
      }
      if (!quiet)
        std::fprintf(stderr, "sluice-compile: cache hit (%s): %s from %s in %.2f s\n",
                     cacheKey.c_str(), bundlePath.c_str(), cacheDir.c_str(), seconds);
      return 0;
    }
  }

  MLIRContext context;
  std::string error;
  std::vector<sluice::PhaseTiming> timings;
  if (!variants.empty()) {
    // Shape variants: each compiled from the import with its shapes and
    // emitted with its own entry, the constants into one shared file.
    sluice::codegen::SharedWeights shared;
    std::vector<OwningOpRef<ModuleOp>> modules;
    std::vector<sluice::codegen::CpuModel> models(variants.size());
    for (size_t v = 0; v < variants.size(); ++v) {
      sluice::CompilerOptions variantOptions = options;
      variantOptions.inputShapes = variants[v];
      if (!quiet) {
        std::string shapes;
        for (const auto &entry : shapesGiven)
          shapes += (shapes.empty() ? "" : ", ") + entry.first + "=" +
                    sluice::shapeToString(entry.second[v]);
        std::fprintf(stderr, "sluice-compile: shape variant %zu of %zu (%s)\n", v + 1,
                     variants.size(), shapes.c_str());
      }
      auto module =
          sluice::compileModel(context, model, variantOptions, sluice::Phase::Plan, error, &timings);
      if (!module)
        die(error);
      auto start = std::chrono::steady_clock::now();
      std::string emitError;
      {
        ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error)
            emitError += sluice::describeLocation(diag.getLocation()) + ": " + diag.str() + "\n";
          return success();
        });
        auto emitted =
            sluice::codegen::emitCpuModel(*module, &shared, sluice::codegen::variantEntry(v));
        if (failed(emitted))
          die(emitError.empty() ? model + ": emit phase failed" : emitError);
        models[v] = std::move(*emitted);
      }
      sluice::notePhase(options, &timings, sluice::Phase::Emit, "emit",
                        std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count());
      modules.push_back(std::move(module));
    }
    std::vector<const sluice::codegen::CpuModel *> pointers;
    for (const auto &m : models)
      pointers.push_back(&m);
    sluice::codegen::BundleOptions bundle;
    bundle.directory = bundlePath;
    bundle.modelName = llvm::sys::path::stem(model).str();
    bundle.progress = !quiet;
    bundle.precision = options.precision;
    double seconds = 0;
    if (!sluice::codegen::writeCpuVariantsBundle(pointers, shared, bundle, error, &seconds))
      die(error);
    timings.push_back({"build", seconds * 1000.0});
    if (!quiet)
      std::fprintf(stderr,
                   "sluice-compile: %zu shape variants share weights.bin: %lld bytes (%lld "
                   "as separate bundles)\n",
                   variants.size(), (long long)shared.bytes.size(),
                   (long long)shared.unsharedBytes);
    bool storing = !cacheDir.empty();
    std::string reportText;
    if (!report.empty() || storing) {
      llvm::raw_string_ostream file(reportText);
      llvm::json::OStream json(file, /*IndentSize=*/2);
      json.object([&] {
        json.attribute("model", sluice::jsonText(model));
        json.attribute("target", sluice::jsonText(target));
        json.attribute("precision", sluice::jsonText(options.precision));
        int64_t kernels = 0, library = 0, arena = 0;
        for (const auto &m : models) {
          kernels += m.kernels;
          library += m.libraryCalls;
          arena = std::max(arena, m.arenaBytes);
        }
        json.attribute("kernels", kernels);
        json.attribute("library_calls", library);
        json.attribute("launches", kernels + library);
        json.attribute("arena_bytes", arena);
        json.attribute("weights_bytes", (int64_t)shared.bytes.size());
        json.attribute("weights_bytes_unshared", shared.unsharedBytes);
        json.attribute("world_size", 1);
        json.attributeArray("variants", [&] {
          for (size_t v = 0; v < models.size(); ++v)
            json.object([&] {
              json.attribute("entry", sluice::jsonText(models[v].entry));
              json.attributeObject("shapes", [&] {
                for (const auto &input : models[v].inputs)
                  json.attributeArray(input.name, [&] {
                    for (int64_t d : input.shape)
                      json.value(d);
                  });
              });
              json.attribute("kernels", models[v].kernels);
              json.attribute("library_calls", models[v].libraryCalls);
              json.attribute("launches", models[v].kernels + models[v].libraryCalls);
              json.attribute("arena_bytes", models[v].arenaBytes);
            });
        });
        sluice::writeJsonStrings(json, "remarks", remarks);
        sluice::writeJsonStrings(json, "warnings", warnings);
        json.attribute("bundle", sluice::jsonText(bundlePath));
        writePhasesAndCache(json, timings, storing, cacheKey, cacheDir);
      });
      file << "\n";
    }
    finishReportAndCache(report, reportText, storing, cacheDir, cacheKey, bundlePath, cacheRecipe,
                         quiet);
    return 0;
  }
  sluice::Phase irPhase = std::min(stopPhase, sluice::Phase::Plan);
  if (printPlan)
    irPhase = stopPhase = sluice::Phase::Compress;
  auto module = sluice::compileModel(context, model, options, irPhase, error, &timings);
  if (printPlan && !plan.candidates.empty()) {
    // The table also when no plan fits: it shows what each would need.
    std::error_code ec;
    llvm::raw_fd_ostream out(output.empty() ? "-" : output, ec);
    if (ec)
      die(output + ": cannot write: " + ec.message());
    sluice::parallel::printPlan(plan, options.planRequest(), out);
  }
  if (!module)
    die(error);
  // A .mlir file past the compress phase carries its precision.
  if (stopPhase > sluice::Phase::Compress)
    options.precision = sluice::modulePrecision(*module);

  // What the emit phase produced, whichever the target.
  sluice::codegen::CpuModel cpuModel;
  sluice::codegen::CudaModel cudaModel;
  const sluice::codegen::ModelFacts *facts = &cpuModel;
  const std::vector<sluice::codegen::StepInfo> *steps = &cpuModel.steps;
  int64_t kernels = 0, libraryCalls = 0, hostSteps = 0;
  bool bundled = false;
  if (stopPhase == sluice::Phase::Emit) {
    auto start = std::chrono::steady_clock::now();
    std::string emitError;
    bool ok;
    {
      ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Error)
          emitError += sluice::describeLocation(diag.getLocation()) + ": " +
                       diag.str() + "\n";
        return success();
      });
      if (target == "cuda") {
        auto emitted = sluice::codegen::emitCudaModel(*module);
        if ((ok = succeeded(emitted))) {
          cudaModel = std::move(*emitted);
          facts = &cudaModel;
          steps = &cudaModel.steps;
          kernels = cudaModel.kernels;
          libraryCalls = cudaModel.libraryCalls;
          hostSteps = cudaModel.hostSteps;
          remarks.insert(remarks.end(), cudaModel.remarks.begin(), cudaModel.remarks.end());
        }
        // Form F8 is one fp8 GEMM per layer (cuBLASLt, sm_89 and newer;
        // the runtime dequantizes and multiplies in f32 on older GPUs).
        if (options.quantize == "fp8")
          remarks.push_back("--quantize=fp8: fp8 GEMMs (cuBLASLt E4M3 with per-tensor scale "
                            "pointers) on sm_89 and newer; on older GPUs the same launch "
                            "dequantizes and multiplies in f32 (docs/quantization.md)");
      } else {
        auto emitted = sluice::codegen::emitCpuModel(*module);
        if ((ok = succeeded(emitted))) {
          cpuModel = std::move(*emitted);
          kernels = cpuModel.kernels;
          libraryCalls = cpuModel.libraryCalls;
        }
        // The cpu has no fp8 arithmetic: Form F8 runs as what it means.
        if (options.quantize == "fp8")
          remarks.push_back("--quantize=fp8: fp8 emulated on cpu (activations rounded to E4M3 "
                            "in the producing kernel, E4M3 weights dequantized by an "
                            "elementwise kernel, f32 GEMMs; docs/quantization.md)");
      }
    }
    if (!ok)
      die(emitError.empty() ? model + ": emit phase failed" : emitError);
    sluice::notePhase(options, &timings, sluice::Phase::Emit, "emit",
                      std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    if (!printIR && !printKernels && !printSource) {
      sluice::codegen::BundleOptions bundle;
      bundle.directory = bundlePath;
      bundle.modelName = llvm::sys::path::stem(model).str();
      bundle.progress = !quiet;
      bundle.jobs = jobs;
      bundle.cudaArchitectures = gpuArchs;
      bundle.precision = options.precision;
      double seconds = 0;
      bool written = target == "cuda"
                         ? sluice::codegen::writeCudaBundle(cudaModel, bundle, error, &seconds)
                         : sluice::codegen::writeCpuBundle(cpuModel, bundle, error, &seconds);
      if (!written)
        die(error);
      timings.push_back({"build", seconds * 1000.0});
      bundled = true;
      if (hostSteps && !quiet)
        std::fprintf(stderr,
                     "sluice-compile: %lld of %zu steps run on the host (no cuda kernel; "
                     "--report lists them under remarks)\n",
                     (long long)hostSteps, steps->size());
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

  if (printSource) {
    std::error_code ec;
    llvm::raw_fd_ostream out(output.empty() ? "-" : output, ec);
    if (ec)
      die(output + ": cannot write: " + ec.message());
    if (target == "cuda") {
      out << cudaModel.deviceSource;
      if (!cudaModel.hostSource.empty())
        out << "\n// ===== host.cpp =====\n" << cudaModel.hostSource;
    } else {
      out << cpuModel.source;
    }
  }

  if (printKernels) {
    std::error_code ec;
    llvm::raw_fd_ostream out(output.empty() ? "-" : output, ec);
    if (ec)
      die(output + ": cannot write: " + ec.message());
    printKernelGroups(*module, remarks, out);
  }

  // The report, also without --report when the bundle goes into the
  // cache: a later hit with --report writes it.
  bool storing = bundled && !cacheDir.empty();
  std::string reportText;
  if (!report.empty() || storing) {
    llvm::raw_string_ostream file(reportText);
    llvm::json::OStream json(file, /*IndentSize=*/2);
    json.object([&] {
      json.attribute("model", sluice::jsonText(model));
      json.attribute("target", sluice::jsonText(target));
      json.attribute("precision", sluice::jsonText(options.precision));
      if (options.devices > 0)
        sluice::parallel::writePlanJson(json, plan, options.planRequest());
      if (stopPhase == sluice::Phase::Emit) {
        json.attribute("kernels", kernels);
        json.attribute("library_calls", libraryCalls);
        json.attribute("arena_bytes", facts->arenaBytes);
        std::vector<int64_t> perRank = facts->weightsBytesPerRank();
        int64_t totalWeights = 0;
        for (int64_t b : perRank)
          totalWeights += b;
        json.attribute("weights_bytes", totalWeights);
        json.attribute("world_size", facts->worldSize);
        json.attributeArray("weights_bytes_per_rank", [&] {
          for (int64_t b : perRank)
            json.value(b);
        });
        sluice::codegen::writeParallel(json, *facts);
        sluice::codegen::writeMoe(json, *facts);
        json.attributeArray("collectives", [&] {
          for (const auto &c : facts->collectives)
            json.object([&] {
              json.attribute("op", sluice::jsonText(c.op));
              json.attribute("count", c.count);
              json.attribute("bytes", c.bytes);
            });
        });
        json.attribute("launches", kernels + libraryCalls);
        if (target == "cpu") {
          json.attribute("cpu_gemm", sluice::codegen::cpuGemmPathName());
          json.attribute("cpu_conv", sluice::codegen::cpuConvPathName());
          json.attribute("cpu_conv_post_ops", cpuModel.convPostOps);
          json.attribute("cpu_conv_blocked_activations", cpuModel.convBlockedActivations);
          json.attribute("cpu_gemm_packed_weights", cpuModel.gemmPackedWeights);
        }
        if (target == "cuda") {
          json.attribute("host_steps", hostSteps);
          json.attribute("host_arena_bytes", cudaModel.hostArenaBytes);
        }
        json.attributeArray("steps", [&] {
          for (const auto &st : *steps)
            json.object([&] {
              json.attribute("name", sluice::jsonText(st.name));
              json.attribute("kind", sluice::jsonText(st.kind));
              json.attribute("op", sluice::jsonText(st.op));
              json.attribute("compute", sluice::jsonText(st.compute));
              sluice::writeJsonStrings(json, "ops", st.ops);
              sluice::writeJsonStrings(json, "nodes", st.nodes);
            });
        });
      }
      if (auto func = module->lookupSymbol<mlir::func::FuncOp>("main")) {
        for (const char *key : {"quantization", "pruning", "sparsity", "pipeline"})
          if (auto q = func->getAttrOfType<mlir::DictionaryAttr>(std::string("sluice.") + key)) {
            json.attributeBegin(key);
            writeAttributeJson(json, q);
            json.attributeEnd();
          }
      }
      sluice::writeJsonStrings(json, "remarks", remarks);
      sluice::writeJsonStrings(json, "warnings", warnings);
      if (bundled)
        json.attribute("bundle", sluice::jsonText(bundlePath));
      writePhasesAndCache(json, timings, storing, cacheKey, cacheDir);
    });
    file << "\n";
  }
  finishReportAndCache(report, reportText, storing, cacheDir, cacheKey, bundlePath, cacheRecipe,
                       quiet);
  return 0;
}
