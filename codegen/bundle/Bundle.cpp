//===- Bundle.cpp - write a bundle folder and build its library -----------===//

#include "codegen/bundle/Bundle.h"
#include "codegen/bundle/Precompiled.h"
#include "codegen/bundle/SanitizerFlags.h"

#include "lib/support/Json.h"
#include "sluice/bundle_abi.h"
#include "sluice/version.h"
#include "llvm/ADT/StringExtras.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <cstdio>
#include <cstdlib>

#include <cerrno>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

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
  /// The library's file name (model-<id>.so), the bundle id it exports and
  /// each weights file's fingerprint (16 hex digits each).
  std::string library, bundleId;
  std::vector<std::string> fingerprints;
  /// A bundle of shape variants: each variant's program and source file
  /// (manifest "variants"), and the shared weights file's size.
  std::vector<std::pair<const CpuModel *, std::string>> variants = {};
  int64_t sharedWeightsBytes = -1;
};

/// FNV-1a, 64 bit, continued from `hash`.
uint64_t fnv1a(llvm::StringRef bytes, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string hex16(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", (unsigned long long)value);
  return text;
}

/// Each weights file's sluice_weights_fingerprint, in rank order.
std::vector<std::string> weightsFingerprints(const ModelFacts &model) {
  std::vector<std::string> prints;
  if (model.worldSize == 1)
    prints.push_back(hex16(sluice_weights_fingerprint(model.weights.data(), model.weights.size())));
  else
    for (const auto &bytes : model.rankWeights)
      prints.push_back(hex16(sluice_weights_fingerprint(bytes.data(), bytes.size())));
  return prints;
}

/// The bundle id: a hash of what the library is built from (the source and
/// its compile command) and of the weights it is meant for. It names the
/// library (model-<id>.so: a recompiled bundle is a new path, so a process
/// that loaded the old one does not get it back from the loader's cache)
/// and the library exports it (sluice_model_bundle_id), which the runtime
/// checks against the manifest.
std::string bundleIdOf(llvm::StringRef source, const std::vector<std::string> &args,
                       const std::vector<std::string> &fingerprints) {
  uint64_t hash = fnv1a(source);
  for (const std::string &arg : args)
    hash = fnv1a(arg + '\0', hash);
  for (const std::string &print : fingerprints)
    hash = fnv1a(print, hash);
  return hex16(hash);
}

/// The source's export of its bundle id.
std::string bundleIdExport(const std::string &id) {
  return "\n// The bundle id (sluice/bundle_abi.h): the manifest's \"bundle_id\".\n"
         "extern \"C\" const char *sluice_model_bundle_id(void) { return \"" +
         id + "\"; }\n";
}

/// Files a bundle folder holds that the writer makes: what replacing an old
/// bundle removes (anything else in it is kept).
bool isBundleArtifact(llvm::StringRef name) {
  return name == "manifest.json" || name == "model.so" || name == "model.cpp" ||
         name == "model.cu" || name == "host.cpp" || name == "host.o" || name == "compile.log" ||
         name == "host-compile.log" || name == "weights.bin" ||
         (name.starts_with("model-") && name.ends_with(".so")) ||
         (name.starts_with("model.v") && name.ends_with(".cpp")) ||
         (name.starts_with("weights.rank") && name.ends_with(".bin"));
}

/// A bundle is written into a staging folder beside its destination and
/// moved into place when complete, so that an interrupted or failed compile
/// never leaves a folder that looks complete, two compiles into one folder
/// do not interleave (the last to finish wins), and the old bundle's files
/// are not rewritten under a process that has them mapped.
class StagedBundle {
public:
  bool begin(const std::string &destination, std::string &error) {
    final_ = destination;
    while (final_.size() > 1 && llvm::sys::path::is_separator(final_.back()))
      final_.pop_back();
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(final_, status) && !llvm::sys::fs::is_directory(status)) {
      error = final_ + ": exists and is not a folder (a bundle is a folder)";
      return false;
    }
    llvm::SmallString<256> parent(final_);
    llvm::sys::path::remove_filename(parent);
    if (!parent.empty())
      if (std::error_code ec = llvm::sys::fs::create_directories(parent)) {
        error = std::string(parent) + ": cannot create the folder: " + ec.message();
        return false;
      }
    removeAbandoned(parent.empty() ? std::string(".") : std::string(parent));
    staging_ = final_ + ".partial-" + std::to_string(llvm::sys::Process::getProcessId());
    llvm::sys::fs::remove_directories(staging_);
    if (std::error_code ec = llvm::sys::fs::create_directory(staging_)) {
      error = staging_ + ": cannot create the bundle folder: " + ec.message();
      return false;
    }
    return true;
  }
  const std::string &dir() const { return staging_; }
  /// Keep the staging folder when the compile fails (its log is there).
  void keep() { keep_ = true; }

  /// Moves the staging folder into place: a rename, or an atomic exchange
  /// with the old bundle, whose own files are then removed (anything else
  /// in it moves into the new one).
  bool commit(std::string &error) {
    llvm::sys::fs::file_status status;
    bool exists = !llvm::sys::fs::status(final_, status);
    if (exists && ::rmdir(final_.c_str()) == 0)
      exists = false; // an empty folder: take its place
    if (!exists) {
      if (std::error_code ec = llvm::sys::fs::rename(staging_, final_)) {
        error = final_ + ": cannot move the bundle into place: " + ec.message();
        return false;
      }
      committed_ = true;
      return true;
    }
    llvm::SmallString<256> manifest(final_);
    llvm::sys::path::append(manifest, "manifest.json");
    if (!llvm::sys::fs::exists(manifest)) {
      error = final_ + ": exists and is not a bundle (no manifest.json): remove it or choose "
                       "another -o";
      return false;
    }
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) != 0) {
      // No exchange on this file system: two renames, a moment without it.
      std::string old = final_ + ".old-" + std::to_string(llvm::sys::Process::getProcessId());
      llvm::sys::fs::remove_directories(old);
      if (std::error_code ec = llvm::sys::fs::rename(final_, old)) {
        error = final_ + ": cannot replace the old bundle: " + ec.message();
        return false;
      }
      if (std::error_code ec = llvm::sys::fs::rename(staging_, final_)) {
        error = final_ + ": cannot move the bundle into place: " + ec.message();
        return false;
      }
      staging_ = old;
    }
    committed_ = true;
    // staging_ now holds the old bundle.
    std::error_code ec;
    std::vector<std::string> remove, move;
    for (llvm::sys::fs::directory_iterator it(staging_, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      (isBundleArtifact(name) ? remove : move).push_back(it->path());
    }
    for (const std::string &path : remove)
      llvm::sys::fs::remove(path);
    for (const std::string &path : move) {
      llvm::SmallString<256> to(final_);
      llvm::sys::path::append(to, llvm::sys::path::filename(path));
      if (!llvm::sys::fs::exists(to))
        (void)llvm::sys::fs::rename(path, to);
    }
    llvm::sys::fs::remove_directories(staging_);
    return true;
  }
  ~StagedBundle() {
    if (!committed_ && !keep_ && !staging_.empty())
      llvm::sys::fs::remove_directories(staging_);
  }

private:
  /// Staging folders of this destination left by compiles that failed (kept
  /// for their logs) or were killed: removed once their process is gone.
  void removeAbandoned(const std::string &parent) {
    std::string prefix = llvm::sys::path::filename(final_).str() + ".partial-";
    std::error_code ec;
    std::vector<std::string> abandoned;
    for (llvm::sys::fs::directory_iterator it(parent, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      long long pid = 0;
      if (!name.consume_front(prefix) || name.getAsInteger(10, pid) || pid <= 0)
        continue;
      if (::kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        abandoned.push_back(it->path());
    }
    for (const std::string &path : abandoned)
      llvm::sys::fs::remove_directories(path);
  }

  std::string final_, staging_;
  bool committed_ = false, keep_ = false;
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
    json.attribute("ep", model.ep);
    // The axes of size > 1, outermost first (rank r: stage r / tp,
    // tensor-parallel index r % tp; pure ep: expert block r); a single
    // rank: [1], ["tp"].
    std::vector<std::pair<const char *, int64_t>> axes;
    if (model.pp > 1)
      axes.push_back({"pp", model.pp});
    if (model.ep > 1)
      axes.push_back({"ep", model.ep});
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

void writeMoe(llvm::json::OStream &json, const ModelFacts &model) {
  if (model.moe.empty())
    return;
  json.attributeArray("moe", [&] {
    for (const MoeInfo &moe : model.moe)
      json.object([&] {
        json.attribute("node", jsonText(moe.node));
        json.attribute("experts", moe.experts);
        json.attribute("top_k", moe.topK);
        json.attribute("gating", jsonText(moe.gating));
        json.attribute("experts_per_rank", moe.expertsPerRank);
      });
  });
}

/// Writes the manifest section `key` from `main`'s `inputAttr` /
/// `outputAttr` (arrays of dictionaries): {"inputs": [...], "outputs":
/// [...]}, each entry's `name`, then `present` and `elements` where it has
/// them. Absent when both are empty.
void writeGraphGroups(llvm::json::OStream &json, const ModelFacts &model, llvm::StringRef key,
                      llvm::StringRef inputAttr, llvm::StringRef outputAttr) {
  auto list = [&](llvm::StringRef attr) {
    return model.func ? model.func->getAttrOfType<mlir::ArrayAttr>(attr) : mlir::ArrayAttr();
  };
  mlir::ArrayAttr inputs = list(inputAttr);
  mlir::ArrayAttr outputs = list(outputAttr);
  if ((!inputs || inputs.empty()) && (!outputs || outputs.empty()))
    return;
  auto write = [&](llvm::StringRef side, mlir::ArrayAttr entries) {
    json.attributeArray(side, [&] {
      for (mlir::Attribute entry :
           entries ? entries.getValue() : llvm::ArrayRef<mlir::Attribute>())
        json.object([&] {
          auto fields = llvm::cast<mlir::DictionaryAttr>(entry);
          json.attribute("name",
                         jsonText(llvm::cast<mlir::StringAttr>(fields.get("name")).str()));
          if (auto present = fields.getAs<mlir::BoolAttr>("present"))
            json.attribute("present", present.getValue());
          if (auto elements = fields.getAs<mlir::ArrayAttr>("elements"))
            json.attributeArray("elements", [&] {
              for (mlir::Attribute name : elements)
                json.value(jsonText(llvm::cast<mlir::StringAttr>(name).str()));
            });
        });
    });
  };
  json.attributeObject(key, [&] {
    write("inputs", inputs);
    write("outputs", outputs);
  });
}

/// Writes the manifest's "sequences": each graph input and output that is
/// a sequence (`main`'s sluice.input_sequences / sluice.output_sequences)
/// with its element tensors' names, in order; those are among "inputs" /
/// "outputs" (an empty sequence has none). Absent when there is none.
void writeSequences(llvm::json::OStream &json, const ModelFacts &model) {
  writeGraphGroups(json, model, "sequences", "sluice.input_sequences", "sluice.output_sequences");
}

/// Writes the manifest's "optionals": each graph input and output that is
/// an ONNX optional (`main`'s sluice.input_optionals /
/// sluice.output_optionals), whether the bundle has it present, and for an
/// input the inputs holding its value (itself, or a sequence's elements).
/// A present output is the output (or "sequences" entry) of its name; an
/// absent one has none. Absent when there is none.
void writeOptionals(llvm::json::OStream &json, const ModelFacts &model) {
  writeGraphGroups(json, model, "optionals", "sluice.input_optionals", "sluice.output_optionals");
}

namespace {

bool writeManifest(const std::string &dir, const BundleOptions &options, const ModelFacts &model,
                   const std::vector<StepInfo> &steps, const ManifestFacts &facts,
                   std::string &error) {
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
    json.attribute("library", jsonText(facts.library));
    json.attribute("bundle_id", jsonText(facts.bundleId));
    json.attribute("source", jsonText(facts.source));
    json.attribute("compile_flags", jsonText(facts.flags));
    json.attributeObject("weights", [&] {
      if (model.worldSize == 1) {
        json.attribute("file", "weights.bin");
        json.attribute("bytes", facts.sharedWeightsBytes >= 0 ? facts.sharedWeightsBytes
                                                               : (int64_t)model.weights.size());
        json.attribute("fingerprint", jsonText(facts.fingerprints.at(0)));
      }
      json.attribute("alignment", 64);
      if (model.worldSize > 1)
        json.attributeArray("ranks", [&] {
          for (auto [rank, bytes] : llvm::enumerate(model.weightsBytesPerRank()))
            json.object([&] {
              json.attribute("file", weightsFileName(model, rank));
              json.attribute("bytes", bytes);
              json.attribute("fingerprint", jsonText(facts.fingerprints.at(rank)));
            });
        });
    });
    // A bundle of shape variants: the largest variant's arena (a context
    // allocates it once and runs any variant in it).
    int64_t arenaBytes = model.arenaBytes;
    for (const auto &variant : facts.variants)
      arenaBytes = std::max(arenaBytes, variant.first->arenaBytes);
    json.attribute("arena_bytes", arenaBytes);
    if (facts.target != "cpu")
      json.attribute("host_arena_bytes", facts.hostArenaBytes);
    json.attribute("world_size", model.worldSize);
    if (model.worldSize > 1) {
      writeParallel(json, model);
      json.attribute("collective_max_bytes", model.collectiveMaxBytes);
    }
    writeMoe(json, model);
    writeJsonStrings(json, "gpu_architectures", facts.architectures);
    writeTensors(json, "inputs", model.inputs);
    writeTensors(json, "outputs", model.outputs);
    writeSequences(json, model);
    writeOptionals(json, model);
    auto writeSteps = [&](const std::vector<StepInfo> &list) {
      json.attributeArray("kernels", [&] {
        for (const StepInfo &step : list)
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
    };
    writeSteps(steps);
    // Shape variants: the top-level inputs, outputs and kernels are the
    // first variant's; each variant has its own, with its entry symbol.
    if (!facts.variants.empty())
      json.attributeArray("variants", [&] {
        for (const auto &[variant, source] : facts.variants)
          json.object([&] {
            json.attribute("entry", jsonText(variant->entry));
            json.attribute("source", jsonText(source));
            json.attribute("arena_bytes", variant->arenaBytes);
            writeTensors(json, "inputs", variant->inputs);
            writeTensors(json, "outputs", variant->outputs);
            writeSteps(variant->steps);
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
  int rc = llvm::sys::ExecuteAndWait(program, argRefs, std::nullopt, redirects, 0, 0, &execError);
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rc != 0) {
    std::string first = firstCompilerError(log);
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
/// A sanitizer build of Sluice (SLUICE_SANITIZE) builds its bundles with the
/// same sanitizers, so that their code is checked where its tests run it.
std::vector<std::string> hostCxxFlags() {
  std::vector<std::string> flags = {"-std=c++17", "-O2",           "-march=native",
                                    "-fopenmp",   "-fPIC",         "-fno-math-errno",
                                    "-fno-trapping-math", "-w"};
  for (std::string &flag : sanitizerCxxFlags())
    flags.push_back(std::move(flag));
  return flags;
}

/// The host C++ compiler's command for generated code: the program, the
/// host flags and the include folders; false (with `error`) when there is no
/// such compiler.
bool hostCompileCommand(std::vector<std::string> &args, std::string &error) {
  std::string cxx = cxxCompiler();
  auto program = llvm::sys::findProgramByName(cxx);
  if (!program) {
    error = "cannot find the C++ compiler '" + cxx + "' (set SLUICE_CXX or CXX, or install g++)";
    return false;
  }
  args = {*program};
  for (const std::string &f : hostCxxFlags())
    args.push_back(f);
  for (const std::string &d : includeDirs())
    args.push_back("-I" + d);
  return true;
}

/// The command that builds a cpu bundle's library, before its inputs: the
/// host compiler and flags, -shared and the options' extra flags (the
/// precompiled header is compiled with the same but -shared).
bool cpuLibraryCommand(const BundleOptions &options, std::vector<std::string> &args,
                       std::string &error) {
  if (!hostCompileCommand(args, error))
    return false;
  args.push_back("-shared");
  for (const std::string &f : options.extraFlags)
    args.push_back(f);
  return true;
}

/// The hidden-visibility attribute: the kernels of a split build are
/// external to link across its translation units, and stay out of the
/// library's exported symbols.
constexpr const char *kHidden = "__attribute__((visibility(\"hidden\"))) ";

/// The translation units of a cpu build in `jobs` parts: the kernels spread
/// over them by the size of their code (largest first, each to the lightest
/// part); part 0 also holds the ABI, the scratch exports, sluice_model_run
/// and `tail` (the bundle id), with a declaration of every kernel defined in
/// another part. One part: model.source + tail, as written to model.cpp.
std::vector<std::string> splitCpuSource(const CpuModel &model, int jobs, llvm::StringRef tail) {
  size_t parts = std::min<size_t>(std::max(jobs, 1), model.kernelSources.size() + 1);
  if (parts <= 1)
    return {model.source + tail.str()};
  // Kernels alike but for their numbers (a layer's GEMM and the next
  // layer's) instantiate the same header templates: one part holds them
  // all, or each part would compile those instantiations again. Groups are
  // placed largest first on the lightest part; a group larger than a part's
  // share is placed kernel by kernel.
  std::map<std::string, std::vector<size_t>> groups;
  size_t total = model.run.size();
  std::map<std::string, size_t> indexOf;
  for (size_t k = 0; k < model.kernelSources.size(); ++k) {
    const CpuKernelSource &kernel = model.kernelSources[k];
    indexOf[kernel.name] = k;
    if (!kernel.shared.empty())
      continue; // placed with the kernel it forwards to (static there)
    std::string shape;
    llvm::StringRef code(kernel.code);
    // The body after the kernel's own name, digits dropped.
    size_t at = code.find(kernel.name + "(");
    for (char c : code.substr(at == llvm::StringRef::npos ? 0 : at + kernel.name.size()))
      if (!llvm::isDigit(c))
        shape += c;
    groups[shape].push_back(k);
    total += kernel.code.size();
  }
  std::vector<std::vector<size_t>> units;
  for (auto &[shape, members] : groups) {
    size_t bytes = 0;
    for (size_t k : members)
      bytes += model.kernelSources[k].code.size();
    if (bytes > total / parts) {
      for (size_t k : members)
        units.push_back({k});
    } else {
      units.push_back(members);
    }
  }
  auto sizeOf = [&](const std::vector<size_t> &unit) {
    size_t bytes = 0;
    for (size_t k : unit)
      bytes += model.kernelSources[k].code.size();
    return bytes;
  };
  std::stable_sort(units.begin(), units.end(), [&](const auto &a, const auto &b) {
    return sizeOf(a) > sizeOf(b);
  });
  std::vector<size_t> load(parts, 0), partOf(model.kernelSources.size());
  load[0] = model.run.size();
  for (const std::vector<size_t> &unit : units) {
    size_t lightest = std::min_element(load.begin(), load.end()) - load.begin();
    for (size_t k : unit)
      partOf[k] = lightest;
    load[lightest] += sizeOf(unit);
  }
  for (size_t k = 0; k < model.kernelSources.size(); ++k)
    if (const std::string &shared = model.kernelSources[k].shared; !shared.empty())
      partOf[k] = partOf[indexOf.at(shared)];
  std::vector<std::string> sources(parts, model.prelude + "\n");
  std::string declarations;
  for (size_t k = 0; k < partOf.size(); ++k) {
    const CpuKernelSource &kernel = model.kernelSources[k];
    if (partOf[k] == 0) {
      sources[0] += kernel.code;
      continue;
    }
    // External (hidden) linkage instead of static: part 0 calls it.
    std::string code = kernel.code;
    std::string header = "static int32_t " + kernel.name + "(";
    size_t at = code.find(header);
    if (at != std::string::npos)
      code.replace(at, header.size(), kHidden + std::string("int32_t ") + kernel.name + "(");
    sources[partOf[k]] += code;
    declarations += kHidden + std::string("int32_t ") + kernel.name +
                    "(void *const *b, const SluiceRunArgs *args);\n";
  }
  // Each part holds its own threads' scratch (cpu_scratch.h keeps its
  // registry per translation unit): part 0's exports release and count all.
  std::string release = "  sluice_scratch_release();\n", bytes = "  size_t n = sluice_scratch_bytes();\n";
  for (size_t p = 1; p < parts; ++p) {
    std::string id = std::to_string(p);
    sources[p] += kHidden + std::string("void sluice_part") + id +
                  "_scratch_release(void) { sluice_scratch_release(); }\n" + kHidden +
                  "size_t sluice_part" + id + "_scratch_bytes(void) { return sluice_scratch_bytes(); }\n";
    declarations += kHidden + std::string("void sluice_part") + id + "_scratch_release(void);\n" +
                    kHidden + "size_t sluice_part" + id + "_scratch_bytes(void);\n";
    release += "  sluice_part" + id + "_scratch_release();\n";
    bytes += "  n += sluice_part" + id + "_scratch_bytes();\n";
  }
  sources[0] += declarations + model.abi +
                "extern \"C\" void sluice_model_release_scratch(void) {\n" + release + "}\n" +
                "extern \"C\" size_t sluice_model_scratch_bytes(void) {\n" + bytes +
                "  return n;\n}\n\n" + model.run + tail.str();
  return sources;
}

/// The translation units of a build compiled at once, one compiler process
/// each (object files beside them), then linked by `link`. Prints
/// `[c++ N/M] FILE S s` as each finishes.
bool compileParts(const std::vector<std::string> &compile, const std::vector<std::string> &sources,
                  const std::vector<std::string> &objects, std::vector<std::string> link,
                  const std::string &dir, bool progress, std::string &error, double &seconds) {
  auto start = std::chrono::steady_clock::now();
  struct Running {
    llvm::sys::ProcessInfo info;
    size_t part;
    std::string log;
  };
  std::vector<Running> running;
  std::string execError;
  for (size_t p = 0; p < sources.size(); ++p) {
    std::vector<std::string> args = compile;
    args.insert(args.end(), {"-c", sources[p], "-o", objects[p]});
    std::vector<llvm::StringRef> refs(args.begin(), args.end());
    std::string log = inDir(dir, "compile.part" + std::to_string(p) + ".log");
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                  llvm::StringRef(log)};
    bool failedToStart = false;
    llvm::sys::ProcessInfo info = llvm::sys::ExecuteNoWait(args.front(), refs, std::nullopt,
                                                           redirects, 0, &execError,
                                                           &failedToStart);
    if (failedToStart) {
      error = sources[p] + ": cannot start the C++ compiler: " + execError;
      for (Running &r : running)
        llvm::sys::Wait(r.info, std::nullopt);
      return false;
    }
    running.push_back({info, p, log});
  }
  size_t done = 0;
  std::string firstError;
  while (!running.empty()) {
    for (size_t i = 0; i < running.size();) {
      llvm::sys::ProcessInfo result =
          llvm::sys::Wait(running[i].info, 0, &execError, nullptr, /*Polling=*/true);
      if (result.Pid == 0) { // still running
        ++i;
        continue;
      }
      Running finished = running[i];
      running.erase(running.begin() + i);
      ++done;
      if (result.ReturnCode != 0) {
        if (firstError.empty()) {
          std::string first = firstCompilerError(finished.log);
          firstError = sources[finished.part] + ": the C++ compiler failed (exit " +
                       std::to_string(result.ReturnCode) + ")" +
                       (first.empty() ? "" : ": " + first) + " (full log: " + finished.log + ")";
        }
        continue;
      }
      llvm::sys::fs::remove(finished.log);
      if (progress)
        std::fprintf(stderr, "sluice-compile: [c++ %zu/%zu] %s %.1f s\n", done, sources.size(),
                     llvm::sys::path::filename(sources[finished.part]).str().c_str(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                         .count());
    }
    if (!running.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!firstError.empty()) {
    error = firstError;
    return false;
  }
  return runCompiler(link.front(), link, objects.front(), inDir(dir, "link.log"), "the linker",
                     error, seconds);
}

/// Kernels below which an automatic cpu build stays one translation unit:
/// a split costs a compiler start, repeated header parsing and a link per
/// part, which small models (the ONNX backend cases, a few kernels each)
/// do not win back; a transformer's dozens of GEMM and row kernels do.
constexpr size_t kMinKernelsToSplit = 32;

/// The number of translation units of a cpu build: `jobs`, or when 0 the
/// cores (at most 8) for a model of at least kMinKernelsToSplit distinct
/// kernels (those that forward to another's code cost nothing), else one.
int cpuBuildJobs(int jobs, const CpuModel &model) {
  if (jobs > 0)
    return jobs;
  size_t distinct = std::count_if(model.kernelSources.begin(), model.kernelSources.end(),
                                  [](const CpuKernelSource &k) { return k.shared.empty(); });
  if (distinct < kMinKernelsToSplit)
    return 1;
  unsigned cores = std::thread::hardware_concurrency();
  return (int)std::clamp(cores ? cores : 1u, 1u, 8u);
}

} // namespace

bool precompileCpuHeaders(const BundleOptions &options, std::string &path, std::string &error) {
  std::vector<std::string> library, args;
  if (!cpuLibraryCommand(options, library, error))
    return false;
  for (const std::string &a : library)
    if (a != "-shared")
      args.push_back(a);
  path = precompiledHeader(args, options.progress);
  if (!path.empty())
    return true;
  error = precompiledHeaderRoot().empty()
              ? "no folder for precompiled headers (SLUICE_PCH_DIR is none, or there is no "
                "HOME or XDG_CACHE_HOME)"
              : "the precompiled header could not be built (the note above says why)";
  return false;
}

bool writeCpuBundle(const CpuModel &model, const BundleOptions &options, std::string &error,
                    double *compileSeconds) {
  StagedBundle stage;
  if (!stage.begin(options.directory, error))
    return false;
  const std::string &dir = stage.dir();
  std::vector<std::string> args;
  if (!cpuLibraryCommand(options, args, error))
    return false;
  size_t flagsEnd = args.size();
  std::vector<std::string> fingerprints = weightsFingerprints(model);
  std::string id = bundleIdOf(model.source, std::vector<std::string>(args.begin() + 1, args.end()),
                              fingerprints);
  std::string libraryName = "model-" + id + ".so";
  if (!startBundle(dir, {{"model.cpp", model.source + bundleIdExport(id)}}, error) ||
      !writeWeights(dir, model, error))
    return false;
  std::string source = inDir(dir, "model.cpp"), library = inDir(dir, libraryName);
  // The headers every model shares, precompiled once (Precompiled.h): how
  // the library is built, not what it is (neither the id nor the recorded
  // flags name it). The compile of the header: these flags but -shared, as
  // precompileCpuHeaders composes them.
  std::vector<std::string> headerCompile;
  for (const std::string &a : args)
    if (a != "-shared")
      headerCompile.push_back(a);
  if (std::string pch = precompiledHeader(headerCompile, options.progress); !pch.empty())
    args.insert(args.end(), {"-include", pch});

  // Build the library: model.cpp as one translation unit, or its parts
  // (model.partN.cpp) compiled at once and linked; the parts and their
  // objects are removed once the library is built (model.cpp stays).
  std::vector<std::string> parts =
      splitCpuSource(model, cpuBuildJobs(options.jobs, model), bundleIdExport(id));
  if (options.progress)
    std::fprintf(stderr,
                 "sluice-compile: building %s (%lld kernels, %lld library calls) with %s%s\n",
                 inDir(options.directory, libraryName).c_str(), (long long)model.kernels,
                 (long long)model.libraryCalls, cxxCompiler().c_str(),
                 parts.size() > 1
                     ? (" in " + std::to_string(parts.size()) + " translation units").c_str()
                     : "");
  double seconds = 0;
  bool built;
  std::vector<std::string> partFiles, objects;
  if (parts.size() == 1) {
    args.push_back(source);
    args.push_back("-o");
    args.push_back(library);
    if (model.usesBlas)
      args.push_back("-lopenblas");
    if (model.usesDnnl)
      args.push_back("-ldnnl");
    built = runCompiler(args.front(), args, source, inDir(dir, "compile.log"),
                        "the C++ compiler", error, seconds);
  } else {
    for (size_t p = 0; p < parts.size(); ++p) {
      partFiles.push_back(inDir(dir, "model.part" + std::to_string(p) + ".cpp"));
      objects.push_back(inDir(dir, "model.part" + std::to_string(p) + ".o"));
      if (!writeFile(partFiles.back(), parts[p], error))
        return false;
    }
    // The compile: the flags without -shared (the link's).
    std::vector<std::string> compile;
    for (const std::string &a : args)
      if (a != "-shared")
        compile.push_back(a);
    std::vector<std::string> link = args;
    link.insert(link.end(), objects.begin(), objects.end());
    link.insert(link.end(), {"-o", library});
    if (model.usesBlas)
      link.push_back("-lopenblas");
    if (model.usesDnnl)
      link.push_back("-ldnnl");
    built = compileParts(compile, partFiles, objects, link, dir, options.progress, error,
                         seconds);
  }
  if (compileSeconds)
    *compileSeconds = seconds;
  if (!built) {
    stage.keep(); // the error names its log
    return false;
  }
  for (const std::vector<std::string> *files : {&partFiles, &objects})
    for (const std::string &f : *files)
      llvm::sys::fs::remove(f);
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: built in %.1f s\n", seconds);
  // -march=native: the library runs on CPUs with this machine's ISA.
  ManifestFacts facts{"cpu", "model.cpp", flagsOf(args, flagsEnd), {}, 0, libraryName,
                      id,    fingerprints};
  return writeManifest(dir, options, model, model.steps, facts, error) && stage.commit(error);
}

std::string variantEntry(size_t variant) {
  return "sluice_v" + std::to_string(variant) + "_model_run";
}

bool writeCpuVariantsBundle(const std::vector<const CpuModel *> &variants,
                            const SharedWeights &weights, const BundleOptions &options,
                            std::string &error, double *compileSeconds) {
  if (variants.empty()) {
    error = "no shape variants to write";
    return false;
  }
  StagedBundle stage;
  if (!stage.begin(options.directory, error))
    return false;
  const std::string &dir = stage.dir();
  std::vector<std::string> args;
  if (!cpuLibraryCommand(options, args, error))
    return false;
  size_t flagsEnd = args.size();
  std::vector<std::string> fingerprints = {
      hex16(sluice_weights_fingerprint(weights.bytes.data(), weights.bytes.size()))};
  // One translation unit per variant: its kernels (static, so the variants'
  // same-named kernels do not meet), its scratch (cpu_scratch.h keeps a
  // registry per unit) and its entry; variant 0's also holds the ABI
  // version, the scratch exports over all units and the bundle id.
  std::vector<std::string> sources(variants.size());
  std::string declarations, release = "  sluice_scratch_release();\n",
                            bytes = "  size_t n = sluice_scratch_bytes();\n";
  bool usesBlas = false, usesDnnl = false;
  for (size_t v = 0; v < variants.size(); ++v) {
    const CpuModel &model = *variants[v];
    usesBlas |= model.usesBlas;
    usesDnnl |= model.usesDnnl;
    std::string &source = sources[v];
    source = "// Shape variant " + std::to_string(v) + " (entry " + model.entry + ").\n" +
             model.prelude + "\n";
    for (const CpuKernelSource &kernel : model.kernelSources)
      source += kernel.code;
    if (v > 0) {
      std::string id = std::to_string(v);
      source += kHidden + std::string("void sluice_v") + id +
                "_scratch_release(void) { sluice_scratch_release(); }\n" + kHidden +
                "size_t sluice_v" + id + "_scratch_bytes(void) { return sluice_scratch_bytes(); }\n";
      declarations += kHidden + std::string("void sluice_v") + id + "_scratch_release(void);\n" +
                      kHidden + "size_t sluice_v" + id + "_scratch_bytes(void);\n";
      release += "  sluice_v" + id + "_scratch_release();\n";
      bytes += "  n += sluice_v" + id + "_scratch_bytes();\n";
    }
    source += "\n" + model.run;
  }
  sources[0] += "\n" + declarations + variants[0]->abi +
                "extern \"C\" void sluice_model_release_scratch(void) {\n" + release + "}\n" +
                "extern \"C\" size_t sluice_model_scratch_bytes(void) {\n" + bytes +
                "  return n;\n}\n";
  std::string all;
  for (const std::string &source : sources)
    all += source;
  std::string id = bundleIdOf(all, std::vector<std::string>(args.begin() + 1, args.end()),
                              fingerprints);
  sources[0] += bundleIdExport(id);
  std::string libraryName = "model-" + id + ".so";
  if (!startBundle(dir, {}, error) ||
      !writeFile(inDir(dir, "weights.bin"),
                 llvm::StringRef((const char *)weights.bytes.data(), weights.bytes.size()),
                 error))
    return false;
  std::vector<std::string> sourceNames, sourceFiles, objects;
  for (size_t v = 0; v < variants.size(); ++v) {
    sourceNames.push_back("model.v" + std::to_string(v) + ".cpp");
    sourceFiles.push_back(inDir(dir, sourceNames.back()));
    objects.push_back(inDir(dir, "model.v" + std::to_string(v) + ".o"));
    if (!writeFile(sourceFiles.back(), sources[v], error))
      return false;
  }
  std::string library = inDir(dir, libraryName);
  if (options.progress)
    std::fprintf(stderr,
                 "sluice-compile: building %s (%zu shape variants) with %s in %zu translation "
                 "units\n",
                 inDir(options.directory, libraryName).c_str(), variants.size(),
                 cxxCompiler().c_str(), variants.size());
  std::vector<std::string> compile;
  for (const std::string &a : args)
    if (a != "-shared")
      compile.push_back(a);
  std::vector<std::string> link = args;
  if (std::string pch = precompiledHeader(compile, options.progress); !pch.empty())
    compile.insert(compile.end(), {"-include", pch});
  link.insert(link.end(), objects.begin(), objects.end());
  link.insert(link.end(), {"-o", library});
  if (usesBlas)
    link.push_back("-lopenblas");
  if (usesDnnl)
    link.push_back("-ldnnl");
  double seconds = 0;
  bool built =
      compileParts(compile, sourceFiles, objects, link, dir, options.progress, error, seconds);
  if (compileSeconds)
    *compileSeconds = seconds;
  if (!built) {
    stage.keep(); // the error names its log
    return false;
  }
  for (const std::string &f : objects)
    llvm::sys::fs::remove(f);
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: built in %.1f s\n", seconds);
  ManifestFacts facts{"cpu", sourceNames[0], flagsOf(args, flagsEnd), {}, 0, libraryName,
                      id,    fingerprints};
  for (size_t v = 0; v < variants.size(); ++v)
    facts.variants.push_back({variants[v], sourceNames[v]});
  facts.sharedWeightsBytes = (int64_t)weights.bytes.size();
  return writeManifest(dir, options, *variants[0], variants[0]->steps, facts, error) &&
         stage.commit(error);
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

bool writeCudaBundle(const CudaModel &model, const BundleOptions &options, std::string &error,
                     double *compileSeconds) {
  StagedBundle stage;
  if (!stage.begin(options.directory, error))
    return false;
  const std::string &dir = stage.dir();
  std::vector<std::string> fingerprints = weightsFingerprints(model);
  // The id covers the host source, the options and architectures too.
  std::vector<std::string> recipe = options.extraFlags;
  recipe.push_back(model.hostSource);
  for (const std::string &arch : options.cudaArchitectures)
    recipe.push_back(arch);
  if (const char *env = std::getenv("SLUICE_NVCC_FLAGS"))
    recipe.push_back(env);
  std::string id = bundleIdOf(model.deviceSource, recipe, fingerprints);
  std::string libraryName = "model-" + id + ".so";
  if (!startBundle(dir, {{"model.cu", model.deviceSource + bundleIdExport(id)}}, error) ||
      !writeWeights(dir, model, error))
    return false;
  std::vector<std::string> archs =
      options.cudaArchitectures.empty() ? cudaArchitectures() : options.cudaArchitectures;
  for (const std::string &arch : archs)
    if (!llvm::StringRef(arch).starts_with("sm_") &&
        !llvm::StringRef(arch).starts_with("compute_")) {
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
                     "the C++ compiler", error, seconds)) {
      stage.keep();
      return false;
    }
  }

  std::string nvcc = nvccCompiler();
  if (!llvm::sys::fs::can_execute(nvcc)) {
    error = "cannot find nvcc ('" + nvcc +
            "'): the cuda target needs the CUDA toolkit (set SLUICE_NVCC or CUDA_HOME)";
    return false;
  }
  std::string source = inDir(dir, "model.cu"), library = inDir(dir, libraryName);
  // -cudart shared: the bundle and the runtime's cuda module share one
  // CUDA runtime (streams, graphs and allocations cross between them).
  std::vector<std::string> args = {
      nvcc,         "-std=c++17", "-O3",        "-shared",  "-cudart", "shared",
      "-Xcompiler", "-fPIC",      "-Xcompiler", "-fopenmp", "-w",      "--expt-relaxed-constexpr"};
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
                 inDir(options.directory, libraryName).c_str(), (long long)model.kernels,
                 (long long)model.libraryCalls, (long long)model.hostSteps,
                 llvm::join(archs, ", ").c_str());
  bool built = runCompiler(nvcc, args, source, inDir(dir, "compile.log"), "nvcc", error, seconds);
  if (compileSeconds)
    *compileSeconds = seconds;
  if (!built) {
    stage.keep();
    return false;
  }
  if (!hostObject.empty())
    llvm::sys::fs::remove(hostObject);
  if (options.progress)
    std::fprintf(stderr, "sluice-compile: built in %.1f s\n", seconds);
  ManifestFacts facts{"cuda", "model.cu",           flagsOf(args, flagsEnd),
                      archs,  model.hostArenaBytes, libraryName,
                      id,     fingerprints};
  return writeManifest(dir, options, model, model.steps, facts, error) && stage.commit(error);
}

} // namespace sluice::codegen
