//===- Bundle.cpp - write a bundle folder and build its library -----------===//

#include "codegen/bundle/Bundle.h"

#include "lib/support/Json.h"
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

std::string tensorList(const std::vector<TensorInfo> &tensors) {
  std::string s = "[";
  for (size_t i = 0; i < tensors.size(); ++i) {
    s += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + jsonString(tensors[i].name) +
         ", \"dtype\": " + jsonString(tensors[i].dtype) + ", \"shape\": [";
    for (size_t d = 0; d < tensors[i].shape.size(); ++d)
      s += (d ? ", " : "") + std::to_string(tensors[i].shape[d]);
    s += "]";
    if (!tensors[i].maxShape.empty()) {
      s += ", \"max_shape\": [";
      for (size_t d = 0; d < tensors[i].maxShape.size(); ++d)
        s += (d ? ", " : "") + std::to_string(tensors[i].maxShape[d]);
      s += "]";
    }
    s += "}";
  }
  return s + (tensors.empty() ? "]" : "\n  ]");
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

} // namespace

std::string cxxCompiler() {
  for (const char *var : {"SLUICE_CXX", "CXX"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "c++";
}

bool writeCpuBundle(const CpuModel &model, const BundleOptions &options,
                    std::string &error, double *compileSeconds) {
  const std::string &dir = options.directory;
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = dir + ": cannot create the bundle folder: " + ec.message();
    return false;
  }
  auto path = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  std::string source = path("model.cpp"), library = path("model.so");
  if (!writeFile(source, model.source, error) ||
      !writeFile(path("weights.bin"),
                 llvm::StringRef((const char *)model.weights.data(), model.weights.size()),
                 error))
    return false;

  // Build the library.
  std::string cxx = cxxCompiler();
  auto program = llvm::sys::findProgramByName(cxx);
  if (!program) {
    error = "cannot find the C++ compiler '" + cxx +
            "' (set SLUICE_CXX or CXX, or install g++)";
    return false;
  }
  std::vector<std::string> args = {*program, "-std=c++17", "-O2", "-march=native",
                                   "-fopenmp", "-fPIC", "-shared",
                                   "-fno-math-errno", "-fno-trapping-math", "-w"};
  for (const std::string &d : includeDirs())
    args.push_back("-I" + d);
  for (const std::string &f : options.extraFlags)
    args.push_back(f);
  args.push_back(source);
  args.push_back("-o");
  args.push_back(library);
  if (model.usesBlas)
    args.push_back("-lopenblas");
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string log = path("compile.log");
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: building %s (%lld kernels, %lld library calls) with %s\n",
                 library.c_str(), (long long)model.kernels, (long long)model.libraryCalls,
                 cxx.c_str());
  auto start = std::chrono::steady_clock::now();
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(*program, argRefs, std::nullopt, redirects, 0, 0,
                                     &execError);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (compileSeconds)
    *compileSeconds = seconds;
  if (rc != 0) {
    std::string first;
    if (auto buffer = llvm::MemoryBuffer::getFile(log)) {
      llvm::SmallVector<llvm::StringRef> lines;
      (*buffer)->getBuffer().split(lines, '\n');
      for (auto line : lines)
        if (line.contains("error")) {
          first = line.str();
          break;
        }
    }
    error = source + ": the C++ compiler failed (exit " + std::to_string(rc) + ")" +
            (execError.empty() ? "" : ": " + execError) +
            (first.empty() ? "" : ": " + first) + " (full log: " + log + ")";
    return false;
  }
  llvm::sys::fs::remove(log);
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: built in %.1f s\n", seconds);

  // The manifest last: a folder with a manifest is a complete bundle.
  std::string m = "{\n";
  m += "  \"format\": \"sluice-bundle\",\n";
  m += "  \"version\": \"" SLUICE_VERSION_STRING "\",\n";
  m += "  \"abi\": " + std::to_string(SLUICE_BUNDLE_ABI_VERSION) + ",\n";
  m += "  \"target\": \"cpu\",\n";
  m += "  \"model\": " + jsonString(options.modelName) + ",\n";
  m += "  \"library\": \"model.so\",\n";
  m += "  \"source\": \"model.cpp\",\n";
  // -march=native: the library runs on CPUs with this machine's ISA.
  std::string flags;
  for (size_t i = 1; i < args.size() && args[i] != source; ++i)
    if (args[i].rfind("-I", 0) != 0)
      flags += (flags.empty() ? "" : " ") + args[i];
  m += "  \"compile_flags\": " + jsonString(flags) + ",\n";
  m += "  \"weights\": {\"file\": \"weights.bin\", \"bytes\": " +
       std::to_string(model.weights.size()) + ", \"alignment\": 64},\n";
  m += "  \"arena_bytes\": " + std::to_string(model.arenaBytes) + ",\n";
  m += "  \"world_size\": 1,\n";
  m += "  \"gpu_architectures\": [],\n";
  m += "  \"inputs\": " + tensorList(model.inputs) + ",\n";
  m += "  \"outputs\": " + tensorList(model.outputs) + ",\n";
  m += "  \"kernels\": [";
  for (size_t i = 0; i < model.steps.size(); ++i) {
    const StepInfo &s = model.steps[i];
    m += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + jsonString(s.name) +
         ", \"kind\": " + jsonString(s.kind) + ", \"op\": " + jsonString(s.op) +
         ", \"node\": " + jsonString(s.node) + ", \"ops\": " + jsonStringList(s.ops) +
         ", \"nodes\": " + jsonStringList(s.nodes) + "}";
  }
  m += model.steps.empty() ? "]\n" : "\n  ]\n";
  m += "}\n";
  return writeFile(path("manifest.json"), m, error);
}

} // namespace sluice::codegen
