//===- Bundle.cpp - write a bundle folder and build its library -----------===//

#include "codegen/bundle/Bundle.h"

#include "lib/support/Json.h"
#include "llvm/ADT/StringExtras.h"
#include "sluice/bundle_abi.h"
#include "sluice/version.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace sluice::codegen {
namespace {

/// Writes the manifest's "inputs" or "outputs" (`key`).
void writeTensors(llvm::json::OStream &json, llvm::StringRef key,
                  const std::vector<TensorInfo> &tensors) {
  json.attributeArray(key, [&] {
    for (const TensorInfo &tensor : tensors)
      json.object([&] {
        json.attribute("name", jsonText(tensor.name));
        json.attribute("dtype", jsonText(tensor.dtype));
        json.attributeArray("shape", [&] {
          for (int64_t dim : tensor.shape)
            json.value(dim);
        });
        if (!tensor.maxShape.empty())
          json.attributeArray("max_shape", [&] {
            for (int64_t dim : tensor.maxShape)
              json.value(dim);
          });
      });
  });
}

bool writeFile(const std::string &path, llvm::StringRef bytes, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (!ec) {
    out << bytes;
    out.close();
    ec = out.error();
  }
  if (ec) {
    error = path + ": cannot write: " + ec.message();
    return false;
  }
  return true;
}

std::vector<std::string> includeDirs() {
  const char *env = std::getenv("SLUICE_INCLUDE_DIRS");
  std::string dirs = env && *env ? env : SLUICE_SOURCE_INCLUDE_DIRS;
  std::vector<std::string> result;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(dirs).split(parts, ':', -1, false);
  for (auto p : parts)
    result.push_back(p.str());
  return result;
}

struct ManifestFacts {
  std::string target, source, flags;
  std::vector<std::string> architectures;
  int64_t hostArenaBytes = 0;
};

} // namespace

std::string weightsFileName(const ModelFacts &model, size_t rank) {
  return model.worldSize == 1 ? "weights.bin" : "weights.rank" + std::to_string(rank) + ".bin";
}

void writeParallel(llvm::json::OStream &json, const ModelFacts &model) {
  json.attributeObject("parallel", [&] {
    json.attribute("tp", model.tp);
    json.attribute("sp", model.sequenceParallel);
    json.attribute("pp", model.pp);
    json.attribute("micro_batches", model.microBatches);
    json.attribute("ep", 1);
    // The axes of size > 1, outermost first (rank r: stage r / tp,
    // tensor-parallel index r % tp); a single rank: [1], ["tp"].
    std::vector<std::pair<const char *, int64_t>> axes;
    if (model.pp > 1)
      axes.push_back({"pp", model.pp});
    if (model.tp > 1 || axes.empty())
      axes.push_back({"tp", model.tp});
    json.attributeArray("grid", [&] {
      for (auto &axis : axes)
        json.value(axis.second);
    });
    json.attributeArray("axes", [&] {
      for (auto &axis : axes)
        json.value(axis.first);
    });
    json.attribute("layers", model.layers);
  });
}

namespace {

bool writeManifest(const std::string &dir, const BundleOptions &options,
                   const ModelFacts &model, const std::vector<StepInfo> &steps,
                   const ManifestFacts &facts, std::string &error) {
  // The manifest last: a folder with a manifest is a complete bundle.
  std::string m;
  llvm::raw_string_ostream stream(m);
  llvm::json::OStream json(stream, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("format", "sluice-bundle");
    json.attribute("version", SLUICE_VERSION_STRING);
    json.attribute("abi", SLUICE_BUNDLE_ABI_VERSION);
    json.attribute("target", jsonText(facts.target));
    json.attribute("precision", jsonText(options.precision));
    json.attribute("model", jsonText(options.modelName));
    json.attribute("library", "model.so");
    json.attribute("source", jsonText(facts.source));
    json.attribute("compile_flags", jsonText(facts.flags));
    json.attributeObject("weights", [&] {
      if (model.worldSize == 1) {
        json.attribute("file", "weights.bin");
        json.attribute("bytes", (int64_t)model.weights.size());
      }
      json.attribute("alignment", 64);
      if (model.worldSize > 1)
        json.attributeArray("ranks", [&] {
          for (auto [rank, bytes] : llvm::enumerate(model.weightsBytesPerRank()))
            json.object([&] {
              json.attribute("file", weightsFileName(model, rank));
              json.attribute("bytes", bytes);
            });
        });
    });
    json.attribute("arena_bytes", model.arenaBytes);
    if (facts.target != "cpu")
      json.attribute("host_arena_bytes", facts.hostArenaBytes);
    json.attribute("world_size", model.worldSize);
    if (model.worldSize > 1) {
      writeParallel(json, model);
      json.attribute("collective_max_bytes", model.collectiveMaxBytes);
    }
    writeJsonStrings(json, "gpu_architectures", facts.architectures);
    writeTensors(json, "inputs", model.inputs);
    writeTensors(json, "outputs", model.outputs);
    json.attributeArray("kernels", [&] {
      for (const StepInfo &step : steps)
        json.object([&] {
          json.attribute("name", jsonText(step.name));
          json.attribute("kind", jsonText(step.kind));
          json.attribute("op", jsonText(step.op));
          json.attribute("node", jsonText(step.node));
          json.attribute("compute", jsonText(step.compute));
          writeJsonStrings(json, "ops", step.ops);
          writeJsonStrings(json, "nodes", step.nodes);
        });
    });
  });
  stream << "\n";
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, "manifest.json");
  return writeFile(std::string(p), m, error);
}

} // namespace

std::string cxxCompiler() {
  for (const char *var : {"SLUICE_CXX", "CXX"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "c++";
}

namespace {

/// Runs a compiler; on failure sets `error` to one line naming `source`,
/// the exit code and the log's first error line (the log stays beside it).
bool runCompiler(const std::string &program, const std::vector<std::string> &args,
                 const std::string &source, const std::string &log, const char *what,
                 std::string &error, double &seconds) {
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  auto start = std::chrono::steady_clock::now();
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(program, argRefs, std::nullopt, redirects, 0, 0,
                                     &execError);
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rc != 0) {
    std::string first;
    if (auto buffer = llvm::MemoryBuffer::getFile(log)) {
      llvm::SmallVector<llvm::StringRef> lines;
      (*buffer)->getBuffer().split(lines, '\n');
      for (auto line : lines)
        if (line.contains("error")) {
          first = line.trim().str();
          break;
        }
    }
    error = source + ": " + what + " failed (exit " + std::to_string(rc) + ")" +
            (execError.empty() ? "" : ": " + execError) + (first.empty() ? "" : ": " + first) +
            " (full log: " + log + ")";
    return false;
  }
  llvm::sys::fs::remove(log);
  return true;
}

/// Creates the bundle folder and writes `files` (name -> bytes) into it.
bool startBundle(const std::string &dir,
                 std::initializer_list<std::pair<const char *, llvm::StringRef>> files,
                 std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = dir + ": cannot create the bundle folder: " + ec.message();
    return false;
  }
  for (auto &[name, bytes] : files) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    if (!writeFile(std::string(p), bytes, error))
      return false;
  }
  return true;
}

std::string inDir(const std::string &dir, llvm::StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

/// weights.bin, or one weights.rank<R>.bin per rank (each rank maps only
/// its own); stale files of another world size are removed.
bool writeWeights(const std::string &dir, const ModelFacts &model, std::string &error) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name == "weights.bin" || (name.starts_with("weights.rank") && name.ends_with(".bin")))
      llvm::sys::fs::remove(it->path());
  }
  if (model.worldSize == 1)
    return writeFile(inDir(dir, "weights.bin"),
                     llvm::StringRef((const char *)model.weights.data(), model.weights.size()),
                     error);
  for (auto [rank, bytes] : llvm::enumerate(model.rankWeights))
    if (!writeFile(inDir(dir, weightsFileName(model, rank)),
                   llvm::StringRef((const char *)bytes.data(), bytes.size()), error))
      return false;
  return true;
}

/// The flags of a compiler command line, for the manifest (no include
/// paths, no file names).
std::string flagsOf(const std::vector<std::string> &args, size_t end) {
  std::string flags;
  for (size_t i = 1; i < end; ++i)
    if (args[i].rfind("-I", 0) != 0)
      flags += (flags.empty() ? "" : " ") + args[i];
  return flags;
}


/// The host C++ flags of generated code (cpu bundles and cuda host steps).
std::vector<std::string> hostCxxFlags() {
  return {"-std=c++17", "-O2", "-march=native", "-fopenmp", "-fPIC",
          "-fno-math-errno", "-fno-trapping-math", "-w"};
}

/// The host C++ compiler's command for generated code: the program, the
/// host flags and the include folders; false (with `error`) when there is no
/// such compiler.
bool hostCompileCommand(std::vector<std::string> &args, std::string &error) {
  std::string cxx = cxxCompiler();
  auto program = llvm::sys::findProgramByName(cxx);
  if (!program) {
    error = "cannot find the C++ compiler '" + cxx +
            "' (set SLUICE_CXX or CXX, or install g++)";
    return false;
  }
  args = {*program};
  for (const std::string &f : hostCxxFlags())
    args.push_back(f);
  for (const std::string &d : includeDirs())
    args.push_back("-I" + d);
  return true;
}

} // namespace

bool writeCpuBundle(const CpuModel &model, const BundleOptions &options,
                    std::string &error, double *compileSeconds) {
  const std::string &dir = options.directory;
  if (!startBundle(dir, {{"model.cpp", model.source}}, error) ||
      !writeWeights(dir, model, error))
    return false;
  std::string source = inDir(dir, "model.cpp"), library = inDir(dir, "model.so");

  // Build the library.
  std::vector<std::string> args;
  if (!hostCompileCommand(args, error))
    return false;
  args.push_back("-shared");
  for (const std::string &f : options.extraFlags)
    args.push_back(f);
  size_t flagsEnd = args.size();
  args.push_back(source);
  args.push_back("-o");
  args.push_back(library);
  if (model.usesBlas)
    args.push_back("-lopenblas");
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: building %s (%lld kernels, %lld library calls) with %s\n",
                 library.c_str(), (long long)model.kernels, (long long)model.libraryCalls,
                 cxxCompiler().c_str());
  double seconds = 0;
  bool built = runCompiler(args.front(), args, source, inDir(dir, "compile.log"),
                           "the C++ compiler", error, seconds);
  if (compileSeconds)
    *compileSeconds = seconds;
  if (!built)
    return false;
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: built in %.1f s\n", seconds);
  // -march=native: the library runs on CPUs with this machine's ISA.
  ManifestFacts facts{"cpu", "model.cpp", flagsOf(args, flagsEnd), {}, 0};
  return writeManifest(dir, options, model, model.steps, facts, error);
}

std::string nvccCompiler() {
  if (const char *v = std::getenv("SLUICE_NVCC"); v && *v)
    return v;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return std::string(home) + "/bin/nvcc";
  if (auto found = llvm::sys::findProgramByName("nvcc"))
    return *found;
  return "/usr/local/cuda/bin/nvcc";
}

bool writeCudaBundle(const CudaModel &model, const BundleOptions &options,
                     std::string &error, double *compileSeconds) {
  const std::string &dir = options.directory;
  if (!startBundle(dir, {{"model.cu", model.deviceSource}}, error) ||
      !writeWeights(dir, model, error))
    return false;
  std::vector<std::string> archs =
      options.cudaArchitectures.empty() ? cudaArchitectures() : options.cudaArchitectures;
  for (const std::string &arch : archs)
    if (!llvm::StringRef(arch).starts_with("sm_") && !llvm::StringRef(arch).starts_with("compute_")) {
      error = "bad GPU architecture '" + arch + "' (expected sm_XY or compute_XY)";
      return false;
    }
  double seconds = 0;
  std::string hostObject;
  if (!model.hostSource.empty()) {
    // Host steps: the cpu emitter's kernels, built by the host compiler.
    std::string hostSource = inDir(dir, "host.cpp");
    hostObject = inDir(dir, "host.o");
    if (!writeFile(hostSource, model.hostSource, error))
      return false;
    std::vector<std::string> args;
    if (!hostCompileCommand(args, error))
      return false;
    args.insert(args.end(), {"-c", hostSource, "-o", hostObject});
    if (options.progress)
      std::fprintf(stderr, "sluice-compile: building %s (%lld host steps) with %s\n",
                   hostSource.c_str(), (long long)model.hostSteps, cxxCompiler().c_str());
    if (!runCompiler(args.front(), args, hostSource, inDir(dir, "host-compile.log"),
                     "the C++ compiler", error, seconds))
      return false;
  }

  std::string nvcc = nvccCompiler();
  if (!llvm::sys::fs::can_execute(nvcc)) {
    error = "cannot find nvcc ('" + nvcc +
            "'): the cuda target needs the CUDA toolkit (set SLUICE_NVCC or CUDA_HOME)";
    return false;
  }
  std::string source = inDir(dir, "model.cu"), library = inDir(dir, "model.so");
  // -cudart shared: the bundle and the runtime's cuda module share one
  // CUDA runtime (streams, graphs and allocations cross between them).
  std::vector<std::string> args = {nvcc, "-std=c++17", "-O3", "-shared", "-cudart", "shared",
                                   "-Xcompiler", "-fPIC", "-Xcompiler", "-fopenmp", "-w",
                                   "--expt-relaxed-constexpr"};
  for (const std::string &arch : archs) {
    std::string number = arch.substr(arch.find('_') + 1);
    args.push_back("-gencode");
    args.push_back("arch=compute_" + number + ",code=" + arch);
  }
  for (const std::string &d : includeDirs())
    args.push_back("-I" + d);
  for (const std::string &f : options.extraFlags)
    args.push_back(f);
  // $SLUICE_NVCC_FLAGS: where a machine keeps cuDNN elsewhere (-I/-L), ...
  if (const char *env = std::getenv("SLUICE_NVCC_FLAGS"); env && *env) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(env).split(parts, ' ', -1, false);
    for (llvm::StringRef part : parts)
      args.push_back(part.str());
  }
  size_t flagsEnd = args.size();
  args.push_back(source);
  if (!hostObject.empty())
    args.push_back(hostObject);
  args.insert(args.end(), {"-o", library, "-lcublasLt", "-lcublas"});
  if (model.usesCudnn)
    args.push_back("-lcudnn");
  if (model.hostUsesBlas)
    args.push_back("-lopenblas");
  args.push_back("-lgomp");
  if (options.progress)
    std::fprintf(stderr,
                 "sluice-compile: building %s (%lld kernels, %lld library calls, %lld host "
                 "steps) with nvcc for %s\n",
                 library.c_str(), (long long)model.kernels, (long long)model.libraryCalls,
                 (long long)model.hostSteps, llvm::join(archs, ", ").c_str());
  bool built = runCompiler(nvcc, args, source, inDir(dir, "compile.log"), "nvcc", error, seconds);
  if (compileSeconds)
    *compileSeconds = seconds;
  if (!built)
    return false;
  if (!hostObject.empty())
    llvm::sys::fs::remove(hostObject);
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: built in %.1f s\n", seconds);
  ManifestFacts facts{"cuda", "model.cu", flagsOf(args, flagsEnd), archs, model.hostArenaBytes};
  return writeManifest(dir, options, model, model.steps, facts, error);
}

} // namespace sluice::codegen
