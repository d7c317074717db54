//===- Cache.cpp - sluice-compile's bundle cache --------------------------===//
//
// The key is the xxh3-128 hash of a recipe: a text with one line per
// ingredient of the bundle. Large inputs (the model, external data, the
// compiler's binary) enter it as their own hashes, so that the recipe stays
// small enough to store beside the entry and diff. An entry is a folder
// DIR/<key>/ holding bundle/ (the bundle's files), report.json and
// recipe.txt; it appears by one rename, so that a folder with that name is
// complete.
//
//===----------------------------------------------------------------------===//

#include "tools/driver/Cache.h"
#include "lib/support/CacheFolder.h"

#include <onnx/onnx_pb.h>

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

namespace sluice::cache {
namespace {

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

std::string hex128(llvm::XXH128_hash_t hash) {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", (unsigned long long)hash.high64,
                (unsigned long long)hash.low64);
  return text;
}

/// Where file digests are remembered (DIR/.digests), set by computeKey;
/// empty: nothing remembered.
std::string digestMemoDir;

/// A file's identity as stat gives it: device, inode, size, and the
/// modification and change times in nanoseconds. Any write changes the
/// change time, which no user call can set back.
struct FileStamp {
  std::string text;
  bool settled = false; ///< both times at least two seconds old
};

bool stampOf(const std::string &path, FileStamp &stamp) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return false;
  auto ns = [](const struct timespec &t) { return (long long)t.tv_sec * 1000000000LL + t.tv_nsec; };
  stamp.text = std::to_string((unsigned long long)info.st_dev) + " " +
               std::to_string((unsigned long long)info.st_ino) + " " +
               std::to_string((long long)info.st_size) + " " + std::to_string(ns(info.st_mtim)) +
               " " + std::to_string(ns(info.st_ctim));
  long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  stamp.settled = now - ns(info.st_mtim) > 2000000000LL && now - ns(info.st_ctim) > 2000000000LL;
  return true;
}

/// The hash of a file's bytes (mapped, not copied: a model may be
/// gigabytes) and its size, as "hash size"; false when it cannot be read.
/// With `mentionsLocation`, also whether the bytes hold "location" (see
/// hashModel). Reading a BERT-base model costs a second here, more than
/// the rest of a hit: so a digest is remembered in DIR/.digests under the
/// file's real path with its stamp, and used again while the stamp is the
/// same, as ccache does. A file changed in the last two seconds is hashed
/// and not remembered: its times may not show a second change within the
/// file system's clock tick.
bool hashFile(const std::string &path, std::string &digest, std::string &error,
              bool *mentionsLocation = nullptr) {
  FileStamp stamp;
  llvm::SmallString<256> real;
  std::string memo;
  if (!digestMemoDir.empty() && !llvm::sys::fs::real_path(path, real) && stampOf(path, stamp)) {
    memo = digestMemoDir + "/" + hex128(llvm::xxh3_128bits(llvm::arrayRefFromStringRef(real)));
    if (auto buffer = llvm::MemoryBuffer::getFile(memo)) {
      // "real path\nstamp\ndigest\nlocation flag"
      llvm::SmallVector<llvm::StringRef> lines;
      (*buffer)->getBuffer().split(lines, '\n');
      if (lines.size() >= 4 && lines[0] == real && lines[1] == stamp.text && stamp.settled) {
        digest = lines[2].str();
        if (mentionsLocation)
          *mentionsLocation = lines[3] == "1";
        return true;
      }
    }
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = path + ": cannot read (for the compile cache's key): " + buffer.getError().message();
    return false;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  digest = hex128(llvm::xxh3_128bits(llvm::arrayRefFromStringRef(bytes))) + " " +
           std::to_string(bytes.size());
  bool location = mentionsLocation && bytes.contains("location");
  if (mentionsLocation)
    *mentionsLocation = location;
  if (!memo.empty() && stamp.settled && !llvm::sys::fs::create_directories(digestMemoDir)) {
    // Written aside and renamed: a reader sees a whole memo or none.
    std::string temporary = memo + ".tmp-" + std::to_string(llvm::sys::Process::getProcessId());
    std::error_code ec;
    {
      llvm::raw_fd_ostream out(temporary, ec);
      if (!ec)
        out << real << "\n"
            << stamp.text << "\n"
            << digest << "\n"
            << (location ? "1" : "0") << "\n";
    }
    if (ec || llvm::sys::fs::rename(temporary, memo))
      llvm::sys::fs::remove(temporary);
  }
  return true;
}

/// Every regular file under `dir` as "relative-path hash size" lines, in
/// path order (a calibration folder, the code generator's headers).
bool hashTree(const std::string &dir, std::vector<std::string> &lines, std::string &error) {
  std::error_code ec;
  std::vector<std::string> files;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::sys::fs::file_status status;
    if (!llvm::sys::fs::status(it->path(), status) && llvm::sys::fs::is_regular_file(status))
      files.push_back(it->path());
  }
  if (ec) {
    error = dir + ": cannot list (for the compile cache's key): " + ec.message();
    return false;
  }
  std::sort(files.begin(), files.end());
  for (const std::string &file : files) {
    std::string digest;
    if (!hashFile(file, digest, error))
      return false;
    llvm::StringRef relative(file);
    relative.consume_front(dir);
    lines.push_back(relative.ltrim('/').str() + " " + digest);
  }
  return true;
}

/// The external data locations of every tensor in `graph` (initializers,
/// sparse initializers, Constant values, subgraphs of If/Loop/Scan).
void externalLocations(const onnx::GraphProto &graph, std::set<std::string> &locations);

void externalLocations(const onnx::TensorProto &tensor, std::set<std::string> &locations) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return;
  for (const auto &entry : tensor.external_data())
    if (entry.key() == "location")
      locations.insert(entry.value());
}

void externalLocations(const onnx::GraphProto &graph, std::set<std::string> &locations) {
  for (const auto &tensor : graph.initializer())
    externalLocations(tensor, locations);
  for (const auto &sparse : graph.sparse_initializer()) {
    externalLocations(sparse.values(), locations);
    externalLocations(sparse.indices(), locations);
  }
  for (const auto &node : graph.node())
    for (const auto &attr : node.attribute()) {
      if (attr.has_t())
        externalLocations(attr.t(), locations);
      for (const auto &tensor : attr.tensors())
        externalLocations(tensor, locations);
      if (attr.has_g())
        externalLocations(attr.g(), locations);
      for (const auto &g : attr.graphs())
        externalLocations(g, locations);
    }
}

/// The model's bytes and the external data files it names (resolved
/// beside it, as the importer reads them). Only a model whose bytes hold
/// "location" (the key of every external data entry) is parsed: a model
/// with its weights inline may be large, and parsing it would cost a hit
/// the time it saves.
bool hashModel(const std::string &path, std::vector<std::string> &lines, std::string &error) {
  std::string digest;
  bool mentionsLocation = false;
  if (!hashFile(path, digest, error, &mentionsLocation))
    return false;
  lines.push_back("model: " + digest);
  lines.push_back("model-name: " + llvm::sys::path::stem(path).str());
  if (!mentionsLocation)
    return true;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = path + ": cannot read: " + buffer.getError().message();
    return false;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  std::set<std::string> locations;
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext != ".onnxtxt" && ext != ".txt") {
    onnx::ModelProto model;
    // A model the importer will refuse: its error comes from the import.
    if (model.ParseFromArray(bytes.data(), (int)bytes.size()) && model.has_graph())
      externalLocations(model.graph(), locations);
  } else {
    // A textual model names its external data as `location: "FILE"` (the
    // parser's form): every quoted name after a location key.
    for (size_t at = bytes.find("location"); at != llvm::StringRef::npos;
         at = bytes.find("location", at + 1)) {
      llvm::StringRef rest = bytes.drop_front(at);
      size_t open = rest.find('"');
      size_t close = open == llvm::StringRef::npos ? open : rest.find('"', open + 1);
      if (close != llvm::StringRef::npos && rest.take_front(open).count('\n') == 0)
        locations.insert(rest.slice(open + 1, close).str());
    }
  }
  llvm::SmallString<256> folder(path);
  llvm::sys::path::remove_filename(folder);
  for (const std::string &location : locations) {
    llvm::SmallString<256> file(folder.empty() ? "." : folder.str());
    llvm::sys::path::append(file, location);
    std::string digest = "absent";
    if (llvm::sys::fs::exists(file) && !hashFile(std::string(file), digest, error))
      return false;
    lines.push_back("external: " + location + " " + digest);
  }
  return true;
}

/// Runs `program --version` and returns its output (empty when it does not
/// run): the toolchain's identity, as a build system's compiler check.
std::string versionOutput(const std::string &program) {
  llvm::SmallString<128> out;
  if (llvm::sys::fs::createTemporaryFile("sluice-cache-version", "txt", out))
    return "";
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out),
                                                llvm::StringRef(out)};
  llvm::StringRef args[] = {program, "--version"};
  int rc = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects);
  std::string text;
  if (auto buffer = llvm::MemoryBuffer::getFile(out))
    text = (*buffer)->getBuffer().str();
  llvm::sys::fs::remove(out);
  return "rc=" + std::to_string(rc) + " " + text;
}

/// The resolved compiler, its real path and the hash of its --version.
std::string toolIdentity(const std::string &command) {
  std::string program = command;
  if (!llvm::StringRef(command).contains('/'))
    if (auto found = llvm::sys::findProgramByName(command))
      program = *found;
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(program, real))
    real = program;
  std::string version = versionOutput(program);
  return command + " -> " + std::string(real) + " " +
         hex128(llvm::xxh3_128bits(llvm::arrayRefFromStringRef(version)));
}

/// The host CPU -march=native builds for: /proc/cpuinfo's first model name
/// and the hash of its feature flags.
std::string hostCpu() {
  auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/cpuinfo");
  if (!buffer)
    return "unknown";
  llvm::StringRef text = (*buffer)->getBuffer(), name, flags;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    auto [field, value] = line.split(':');
    field = field.trim();
    if (field == "model name" && name.empty())
      name = value.trim();
    else if (field == "flags" && flags.empty())
      flags = value.trim();
  }
  return name.str() + " flags " + hex128(llvm::xxh3_128bits(llvm::arrayRefFromStringRef(flags)));
}

/// The code generator's include folders, as the bundle writer finds them
/// (codegen/bundle: $SLUICE_INCLUDE_DIRS, else the source tree's).
std::vector<std::string> includeDirs() {
  std::string dirs = env("SLUICE_INCLUDE_DIRS");
  if (dirs.empty())
    dirs = SLUICE_SOURCE_INCLUDE_DIRS;
  std::vector<std::string> result;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(dirs).split(parts, ':', -1, false);
  for (llvm::StringRef part : parts)
    result.push_back(part.str());
  return result;
}

std::string number(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

/// Every CompilerOptions field that can change the bundle, by name, as
/// the options hold it (the last of a repeated --shape, the precision's
/// canonical name): the options' meaning, whatever order the command line
/// gave them in.
void optionLines(const CompilerOptions &o, std::vector<std::string> &lines) {
  lines.push_back(std::string("target: ") + choiceName(o.target));
  for (const auto &[name, dims] : o.inputShapes) {
    std::string text;
    for (int64_t d : dims)
      text += (text.empty() ? "" : "x") + std::to_string(d);
    lines.push_back("shape: " + name + "=" + text);
  }
  for (const auto &[name, shapes] : o.sequenceShapes)
    lines.push_back("sequence shape: " + sequenceShapeSpec(name, shapes));
  for (const std::string &name : o.absentInputs)
    lines.push_back("absent: " + name);
  lines.push_back(std::string("fusion: ") + choiceName(o.fusion));
  lines.push_back("recognize: " + std::to_string(o.recognize));
  lines.push_back(std::string("precision: ") + choiceName(o.precision));
  lines.push_back("grid: tp=" + std::to_string(o.tp) + " sp=" + std::to_string(o.sp) + " pp=" +
                  std::to_string(o.pp) + " micro-batches=" + std::to_string(o.microBatches) +
                  " ep=" + std::to_string(o.ep));
  lines.push_back(
      "quantize: " + passOptionName(o.quantize) + " method=" + choiceName(o.calibrationMethod) +
      " smooth-quant=" + number(o.smoothQuant) + " metric=" + choiceName(o.accuracyMetric) +
      " budget=" + number(o.accuracyBudget));
  lines.push_back("prune: heads=" + number(o.pruneHeads) + " ffn=" + number(o.pruneFfn) +
                  " channels=" + number(o.pruneChannels) +
                  " sparsity=" + passOptionName(o.sparsity));
  lines.push_back(
      "plan: devices=" + std::to_string(o.devices) + " auto=" + std::to_string(o.autoPlan) +
      " memory=" + std::to_string(o.deviceMemory) + " objective=" + choiceName(o.objective));
  lines.push_back(std::string("cpu config: isa=") + choiceName(o.cpuIsa) + " conv=" +
                  choiceName(o.cpuConv) + " packed-weights=" + std::to_string(o.cpuPackedWeights));
  lines.push_back("cusparselt: " + o.cusparseltHeader + " " + o.cusparseltLibDir);
}

} // namespace

std::string cacheDirectory(const std::string &flagDir, bool noCache) {
  if (noCache)
    return "";
  if (!flagDir.empty())
    return flagDir;
  return userCacheFolder("SLUICE_CACHE_DIR", "");
}

std::vector<std::string> keyFlags(int argc, char **argv, const std::string &model) {
  std::vector<std::string> flags;
  bool modelSeen = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    // Where output goes and how loud: not what the bundle is.
    // --jobs: how many translation units build the library, not what it is.
    if (arg == "-o" || arg == "--report" || arg == "--cache-dir" ||
        (arg == "--jobs" && i + 1 < argc)) {
      ++i;
      continue;
    }
    if (arg.starts_with("-o=") || arg.starts_with("--report=") || arg.starts_with("--cache-dir=") ||
        arg == "--quiet" || arg == "--no-cache" || arg.starts_with("--jobs"))
      continue;
    if (arg.starts_with("-")) {
      flags.push_back(arg.str());
    } else if (arg == model && !modelSeen) {
      modelSeen = true;
    } else if (!flags.empty()) {
      // A flag's separate value: "--shape x=4" and "--shape=x=4" are one.
      flags.back() += "=" + arg.str();
    } else {
      flags.push_back(arg.str());
    }
  }
  std::sort(flags.begin(), flags.end());
  return flags;
}

bool computeKey(const KeyInputs &inputs, std::string &key, std::string &recipe,
                std::string &error) {
  const CompilerOptions &o = *inputs.options;
  digestMemoDir = inputs.cacheDir.empty() ? "" : inputs.cacheDir + "/.digests";
  std::vector<std::string> lines = {"format: sluice-compile-cache 1",
                                    "version: " + inputs.compilerVersion,
                                    std::string("llvm: ") + LLVM_VERSION_STRING};
  // This compiler's own binary: a rebuilt compiler (any pass, any emitter
  // changed) is a new key; one rebuilt from the same sources is not.
  std::string digest;
  if (!hashFile("/proc/self/exe", digest, error))
    return false;
  lines.push_back("compiler: " + digest);
  if (!hashModel(inputs.modelPath, lines, error))
    return false;
  optionLines(o, lines);
  for (const std::string &arch : inputs.gpuArchitectures)
    lines.push_back("gpu-arch: " + arch);
  for (const auto &[name, file] : o.boundInputs) {
    if (!hashFile(file, digest, error))
      return false;
    lines.push_back("bind: " + name + " " + digest);
  }
  if (!o.calibration.empty()) {
    std::vector<std::string> files;
    if (llvm::sys::fs::is_directory(o.calibration)) {
      if (!hashTree(o.calibration, files, error))
        return false;
    } else if (hashFile(o.calibration, digest, error)) {
      files.push_back(digest);
    } else {
      return false;
    }
    for (const std::string &f : files)
      lines.push_back("calibration: " + f);
  }
  if (!inputs.clusterFile.empty()) {
    if (!hashFile(inputs.clusterFile, digest, error))
      return false;
    lines.push_back("cluster: " + digest);
  }
  for (const std::string &flag : inputs.flags)
    lines.push_back("flag: " + flag);
  // The headers generated code includes.
  for (const std::string &dir : includeDirs()) {
    std::vector<std::string> files;
    if (llvm::sys::fs::is_directory(dir) && !hashTree(dir, files, error))
      return false;
    for (const std::string &f : files)
      lines.push_back("header: " + f);
  }
  // What the emit step reads from the environment, and the toolchain it
  // calls: the host compiler (cpu bundles and cuda host steps), nvcc for
  // cuda, and the CPU whose ISA -march=native targets.
  for (const char *name :
       {"SLUICE_CXX", "CXX", "SLUICE_NVCC", "CUDA_HOME", "SLUICE_NVCC_FLAGS", "SLUICE_INCLUDE_DIRS",
        "SLUICE_CUSPARSELT_DIR", "SLUICE_MAX_TENSOR_BYTES", "SLUICE_CPU_CONV",
        "SLUICE_CPU_PACKED_WEIGHTS"})
    lines.push_back(std::string("env: ") + name + "=" + env(name));
  std::string cxx = env("SLUICE_CXX");
  if (cxx.empty())
    cxx = env("CXX");
  lines.push_back("cxx: " + toolIdentity(cxx.empty() ? "c++" : cxx));
  lines.push_back("cpu: " + hostCpu());
  if (o.target == Target::Cuda) {
    lines.push_back("env: VIRTUAL_ENV=" + env("VIRTUAL_ENV"));
    std::string nvcc = env("SLUICE_NVCC");
    if (nvcc.empty() && !env("CUDA_HOME").empty())
      nvcc = env("CUDA_HOME") + "/bin/nvcc";
    if (nvcc.empty())
      nvcc = llvm::sys::findProgramByName("nvcc") ? "nvcc" : "/usr/local/cuda/bin/nvcc";
    lines.push_back("nvcc: " + toolIdentity(nvcc));
  }
  recipe = llvm::join(lines, "\n") + "\n";
  key = hex128(llvm::xxh3_128bits(llvm::arrayRefFromStringRef(recipe)));
  return true;
}

namespace {

std::string inFolder(const std::string &dir, llvm::StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

/// The files a bundle writer makes (codegen/bundle's rule): what replacing
/// an old bundle removes; anything else in its folder is the user's.
bool isBundleArtifact(llvm::StringRef name) {
  return name == "manifest.json" || name == "model.so" || name == "model.cpp" ||
         name == "model.cu" || name == "host.cpp" || name == "host.o" || name == "compile.log" ||
         name == "host-compile.log" || name == "weights.bin" ||
         (name.starts_with("model-") && name.ends_with(".so")) ||
         (name.starts_with("weights.rank") && name.ends_with(".bin"));
}

/// A hard link of `from` at `to`, else a copy (another file system).
bool linkOrCopy(const std::string &from, const std::string &to, std::string &error) {
  if (!llvm::sys::fs::create_hard_link(from, to))
    return true;
  if (std::error_code ec = llvm::sys::fs::copy_file(from, to)) {
    error = to + ": cannot copy from the compile cache: " + ec.message();
    return false;
  }
  return true;
}

/// Links or copies the regular files of folder `from` into the new folder
/// `to` (a bundle is flat).
bool cloneFolder(const std::string &from, const std::string &to, std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(to)) {
    error = to + ": cannot create: " + ec.message();
    return false;
  }
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(from, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status) || !llvm::sys::fs::is_regular_file(status))
      continue;
    if (!linkOrCopy(it->path(), inFolder(to, llvm::sys::path::filename(it->path())), error))
      return false;
  }
  if (ec) {
    error = from + ": cannot list: " + ec.message();
    return false;
  }
  return true;
}

/// The files of bundle folder `dir` as "name size mtime" lines, sorted: what
/// an entry records when it is stored and checks on each hit. Its files
/// are hard-linked to bundles, so a write into a bundle's file in place
/// (not a recompile: that replaces files) would change the entry too; the
/// modification time shows it (linking, unlike writing, changes only the
/// change time).
std::string bundleFiles(const std::string &dir) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    struct stat info;
    if (::stat(it->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode))
      continue;
    lines.push_back(
        llvm::sys::path::filename(it->path()).str() + " " +
        std::to_string((long long)info.st_size) + " " +
        std::to_string((long long)info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec));
  }
  std::sort(lines.begin(), lines.end());
  return llvm::join(lines, "\n") + "\n";
}

/// A name no other process uses at the same time.
std::string unique(const std::string &base) {
  return base + "-" + std::to_string(llvm::sys::Process::getProcessId());
}

} // namespace

bool restore(const std::string &cacheDir, const std::string &key, const std::string &output,
             std::string &report, std::string &error) {
  std::string entry = inFolder(cacheDir, key);
  std::string bundle = inFolder(entry, "bundle");
  if (!llvm::sys::fs::exists(inFolder(bundle, "manifest.json")))
    return false;
  auto recorded = llvm::MemoryBuffer::getFile(inFolder(entry, "files.txt"));
  if (!recorded || (*recorded)->getBuffer() != bundleFiles(bundle)) {
    // Changed since it was stored: not to be trusted, and not kept.
    llvm::sys::fs::remove_directories(entry);
    error = "cache entry " + key + " changed since it was stored (a bundle file written in " +
            "place?): removed";
    return false;
  }
  std::string destination = output;
  while (destination.size() > 1 && llvm::sys::path::is_separator(destination.back()))
    destination.pop_back();
  llvm::sys::fs::file_status status;
  bool exists = !llvm::sys::fs::status(destination, status);
  if (exists && !llvm::sys::fs::is_directory(status)) {
    error = destination + ": exists and is not a folder (a bundle is a folder)";
    return true;
  }
  if (exists && ::rmdir(destination.c_str()) == 0)
    exists = false; // an empty folder: take its place
  if (exists && !llvm::sys::fs::exists(inFolder(destination, "manifest.json"))) {
    error = destination +
            ": exists and is not a bundle (no manifest.json): remove it or choose another -o";
    return true;
  }
  llvm::SmallString<256> parent(destination);
  llvm::sys::path::remove_filename(parent);
  if (!parent.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(parent)) {
      error = std::string(parent) + ": cannot create the folder: " + ec.message();
      return true;
    }
  // Staged beside the destination and renamed into place, as a compile
  // does: a reader never sees half a bundle.
  std::string staging =
      destination + ".partial-" + std::to_string(llvm::sys::Process::getProcessId());
  llvm::sys::fs::remove_directories(staging);
  if (!cloneFolder(bundle, staging, error)) {
    llvm::sys::fs::remove_directories(staging);
    return true;
  }
  if (exists) {
    std::string old = destination + ".old-" + std::to_string(llvm::sys::Process::getProcessId());
    llvm::sys::fs::remove_directories(old);
    if (std::error_code ec = llvm::sys::fs::rename(destination, old)) {
      error = destination + ": cannot replace the old bundle: " + ec.message();
      llvm::sys::fs::remove_directories(staging);
      return true;
    }
    if (std::error_code ec = llvm::sys::fs::rename(staging, destination)) {
      error = destination + ": cannot move the bundle into place: " + ec.message();
      return true;
    }
    // The user's files in the old folder move into the new one.
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(old, ec), end; it != end && !ec; it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      std::string to = inFolder(destination, name);
      if (!isBundleArtifact(name) && !llvm::sys::fs::exists(to))
        (void)llvm::sys::fs::rename(it->path(), to);
    }
    llvm::sys::fs::remove_directories(old);
  } else if (std::error_code ec = llvm::sys::fs::rename(staging, destination)) {
    error = destination + ": cannot move the bundle into place: " + ec.message();
    llvm::sys::fs::remove_directories(staging);
    return true;
  }
  if (auto buffer = llvm::MemoryBuffer::getFile(inFolder(entry, "report.json")))
    report = (*buffer)->getBuffer().str();
  return true;
}

bool store(const std::string &cacheDir, const std::string &key, const std::string &bundle,
           const std::string &report, const std::string &recipe, std::string &error) {
  std::string entry = inFolder(cacheDir, key);
  if (llvm::sys::fs::exists(entry))
    return true; // another compile stored it first
  if (std::error_code ec = llvm::sys::fs::create_directories(cacheDir)) {
    error = cacheDir + ": cannot create the compile cache: " + ec.message();
    return false;
  }
  std::string staging = inFolder(cacheDir, unique(".partial-" + key));
  auto fail = [&](const std::string &message) {
    error = message;
    llvm::sys::fs::remove_directories(staging);
    return false;
  };
  if (!cloneFolder(bundle, inFolder(staging, "bundle"), error))
    return fail(error);
  std::string files = bundleFiles(inFolder(staging, "bundle"));
  for (auto [name, text] : {std::pair<const char *, const std::string *>{"report.json", &report},
                            {"recipe.txt", &recipe},
                            {"files.txt", &files}}) {
    std::error_code ec;
    llvm::raw_fd_ostream out(inFolder(staging, name), ec);
    if (!ec) {
      out << *text;
      out.close();
      ec = out.error();
    }
    if (ec)
      return fail(inFolder(staging, name) + ": cannot write: " + ec.message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(staging, entry)) {
    // Another compile of the same key won the race: its entry is as good.
    llvm::sys::fs::remove_directories(staging);
    if (llvm::sys::fs::exists(inFolder(entry, "bundle")))
      return true;
    error = entry + ": cannot store in the compile cache: " + ec.message();
    return false;
  }
  return true;
}

} // namespace sluice::cache
