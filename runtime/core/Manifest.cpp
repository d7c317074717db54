//===- Manifest.cpp - a bundle's manifest.json, read and checked ----------===//
//
// Checks run in the order that gives the most useful message: first whether
// this is a bundle at all, then whether this runtime can run it (version,
// ABI, target), and only then the details of every key.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Manifest.h"
#include "runtime/core/GpuArch.h"
#include "runtime/core/Json.h"
#include "runtime/core/Paths.h"

#include "sluice/bundle_abi.h"
#include "sluice/version.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace sluice::runtime {

size_t dtypeBytes(const std::string &name) {
  static const struct {
    const char *name;
    size_t bytes;
  } kTable[] = {{"float32", 4}, {"float64", 8}, {"float16", 2}, {"bfloat16", 2},
                {"int8", 1},    {"int16", 2},   {"int32", 4},   {"int64", 8},
                {"uint8", 1},   {"uint16", 2},  {"uint32", 4},  {"uint64", 8},
                {"bool", 1},    {"float8_e4m3fn", 1}};
  for (const auto &entry : kTable)
    if (name == entry.name)
      return entry.bytes;
  return 0;
}

namespace {

/// The largest input or output a manifest may declare (1 TiB): beyond any
/// device, so only a corrupt or hostile manifest asks for more.
constexpr size_t kMaxTensorBytes = size_t(1) << 40;

/// Reads typed keys of one JSON object, remembering the first error. `where`
/// prefixes key names in messages ("inputs[0].").
class Reader {
public:
  Reader(const JsonValue &object, std::string file, std::string where,
         std::string &error)
      : object(object), file(std::move(file)), where(std::move(where)),
        error(error) {}

  const JsonValue *require(const char *key, JsonValue::Kind kind) {
    const JsonValue *value = object.get(key);
    if (!value)
      return fail(std::string("missing key '") + where + key + "'");
    if (value->kind != kind)
      return fail(std::string("key '") + where + key + "' must be " +
                  article(kind) + jsonKindName(kind) + ", got " +
                  article(value->kind) + jsonKindName(value->kind));
    return value;
  }

  bool string(const char *key, std::string &out, bool optional = false) {
    if (optional && !object.get(key))
      return true;
    const JsonValue *value = require(key, JsonValue::Kind::String);
    if (!value)
      return false;
    out = value->string;
    return true;
  }

  bool boolean(const char *key, bool &out) {
    const JsonValue *value = require(key, JsonValue::Kind::Bool);
    if (!value)
      return false;
    out = value->boolean;
    return true;
  }

  bool integer(const char *key, int64_t &out) {
    const JsonValue *value = require(key, JsonValue::Kind::Number);
    if (!value)
      return false;
    return toInteger(*value, where + key, out);
  }

  bool size(const char *key, uint64_t &out) {
    int64_t v;
    if (!integer(key, v))
      return false;
    if (v < 0)
      return reject(std::string("key '") + where + key +
                    "' must not be negative");
    out = (uint64_t)v;
    return true;
  }

  bool toInteger(const JsonValue &value, const std::string &what,
                 int64_t &out) {
    // Doubles hold integers exactly up to 2^53; sizes beyond are not real.
    if (!value.isNumber() || value.number != std::floor(value.number) ||
        std::fabs(value.number) > 9007199254740992.0)
      return reject("'" + what + "' must be an integer");
    out = (int64_t)value.number;
    return true;
  }

  std::nullptr_t fail(const std::string &message) {
    if (error.empty())
      error = file + ": " + message;
    return nullptr;
  }
  bool reject(const std::string &message) {
    fail(message);
    return false;
  }

private:
  static const char *article(JsonValue::Kind kind) {
    return kind == JsonValue::Kind::Array || kind == JsonValue::Kind::Object
               ? "an "
               : "a ";
  }

  const JsonValue &object;
  std::string file, where;
  std::string &error;
};

/// A file name the manifest gives must stay inside the bundle folder.
/// 16 lowercase hex digits: a bundle id or a weights fingerprint.
bool isHexId(const std::string &text) {
  if (text.size() != 16)
    return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

bool plainFileName(const std::string &name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." &&
         name != "..";
}

bool readTensors(const JsonValue &root, const char *key,
                 const std::string &file, std::vector<TensorSpec> &tensors,
                 std::string &error) {
  Reader top(root, file, "", error);
  const JsonValue *list = top.require(key, JsonValue::Kind::Array);
  if (!list)
    return false;
  for (size_t i = 0; i < list->array.size(); ++i) {
    std::string where = std::string(key) + "[" + std::to_string(i) + "]";
    const JsonValue &entry = list->array[i];
    if (!entry.isObject())
      return top.reject("'" + where + "' must be an object");
    Reader reader(entry, file, where + ".", error);
    TensorSpec spec;
    if (!reader.string("name", spec.name) ||
        !reader.string("dtype", spec.dtype))
      return false;
    spec.elementBytes = dtypeBytes(spec.dtype);
    if (!spec.elementBytes)
      return top.reject("'" + where + "' has unknown dtype '" + spec.dtype +
                        "'");
    const JsonValue *shape = reader.require("shape", JsonValue::Kind::Array);
    if (!shape)
      return false;
    // Outputs may bound data-dependent dims (-1) with "max_shape".
    const JsonValue *maxShape = nullptr;
    for (const auto &[key, value] : entry.object)
      if (key == "max_shape")
        maxShape = &value;
    if (maxShape && (!maxShape->isArray() ||
                     maxShape->array.size() != shape->array.size()))
      return top.reject("'" + where +
                        ".max_shape' must be an array as long as its shape");
    size_t elements = 1;
    for (size_t d = 0; d < shape->array.size(); ++d) {
      int64_t dim;
      std::string what = where + ".shape[" + std::to_string(d) + "]";
      if (!reader.toInteger(shape->array[d], what, dim))
        return false;
      int64_t bound = dim;
      if (dim == -1 && maxShape) {
        std::string boundWhat = where + ".max_shape[" + std::to_string(d) + "]";
        if (!reader.toInteger(maxShape->array[d], boundWhat, bound))
          return false;
      }
      if (dim < -1 || bound < 0)
        return top.reject("'" + what +
                          "' must not be negative (shapes in a "
                          "bundle are static; only an output's data-dependent "
                          "dim may be -1, bounded by its max_shape)");
      spec.shape.push_back(dim);
      spec.maxShape.push_back(bound);
      // Checked: a wrapped product would pass as a small buffer that the
      // model then writes past.
      if (__builtin_mul_overflow(elements, (size_t)bound, &elements))
        return top.reject("'" + where + "' has more elements than fit in 64 bits");
    }
    if (__builtin_mul_overflow(elements, spec.elementBytes, &spec.bytes) ||
        spec.bytes > kMaxTensorBytes)
      return top.reject("'" + where + "' needs more than " + std::to_string(kMaxTensorBytes) +
                        " bytes");
    tensors.push_back(std::move(spec));
  }
  return true;
}

/// The "kernels" list of `root` (the manifest, or a variant: `where`
/// prefixes the key in messages).
bool readKernels(const JsonValue &root, const std::string &file, const std::string &where,
                 std::vector<KernelSpec> &kernels, std::string &error) {
  Reader reader(root, file, where, error);
  const JsonValue *list = reader.require("kernels", JsonValue::Kind::Array);
  if (!list)
    return false;
  for (size_t i = 0; i < list->array.size(); ++i) {
    std::string at = where + "kernels[" + std::to_string(i) + "]";
    const JsonValue &entry = list->array[i];
    if (!entry.isObject())
      return reader.reject("'" + at + "' must be an object");
    Reader kernelReader(entry, file, at + ".", error);
    KernelSpec kernel;
    if (!kernelReader.string("name", kernel.name) ||
        !kernelReader.string("kind", kernel.kind) ||
        !kernelReader.string("op", kernel.op, /*optional=*/true) ||
        !kernelReader.string("node", kernel.node, /*optional=*/true))
      return false;
    // "host": a cuda bundle's step that runs on the cpu (no cuda kernel).
    if (kernel.kind != "kernel" && kernel.kind != "library" && kernel.kind != "host")
      return reader.reject("'" + at + ".kind' must be 'kernel', 'library' or 'host', got '" +
                           kernel.kind + "'");
    kernels.push_back(std::move(kernel));
  }
  return true;
}

/// "weights": {"file", "bytes", "alignment"} for a single-rank bundle;
/// {"alignment", "ranks": [{"file", "bytes"} per rank]} for a multi-rank
/// one (manifest.worldSize read already).
bool readWeights(const JsonValue &root, const std::string &file,
                 Manifest &manifest, std::string &error) {
  Reader top(root, file, "", error);
  const JsonValue *weights = top.require("weights", JsonValue::Kind::Object);
  if (!weights)
    return false;
  Reader reader(*weights, file, "weights.", error);
  if (!reader.size("alignment", manifest.weightsAlignment))
    return false;
  // mmap gives page alignment; a bundle asking for more cannot be honoured.
  if (manifest.weightsAlignment == 0 || manifest.weightsAlignment > 4096 ||
      (manifest.weightsAlignment & (manifest.weightsAlignment - 1)))
    return top.reject("'weights.alignment' must be a power of two up to "
                      "4096, got " +
                      std::to_string(manifest.weightsAlignment));
  auto readFile = [&](Reader &entry, const std::string &where) {
    WeightsFile weightsFile;
    if (!entry.string("file", weightsFile.file) ||
        !entry.size("bytes", weightsFile.bytes) ||
        !entry.string("fingerprint", weightsFile.fingerprint, /*optional=*/true))
      return false;
    if (!weightsFile.fingerprint.empty() && !isHexId(weightsFile.fingerprint))
      return top.reject("'" + where + ".fingerprint' must be 16 hex digits, got '" +
                        weightsFile.fingerprint + "'");
    if (!plainFileName(weightsFile.file))
      return top.reject("'" + where +
                        ".file' must be a file name in the bundle folder, "
                        "got '" +
                        weightsFile.file + "'");
    manifest.weights.push_back(std::move(weightsFile));
    return true;
  };
  if (manifest.worldSize == 1)
    return readFile(reader, "weights");
  // Each rank maps only its own slice, written at compile time.
  const JsonValue *ranks = reader.require("ranks", JsonValue::Kind::Array);
  if (!ranks)
    return false;
  if ((int64_t)ranks->array.size() != manifest.worldSize)
    return top.reject("'weights.ranks' lists " +
                      std::to_string(ranks->array.size()) +
                      " weights files for world_size " +
                      std::to_string(manifest.worldSize) +
                      " (one per rank)");
  for (size_t r = 0; r < ranks->array.size(); ++r) {
    std::string where = "weights.ranks[" + std::to_string(r) + "]";
    if (!ranks->array[r].isObject())
      return top.reject("'" + where + "' must be an object");
    Reader entry(ranks->array[r], file, where + ".", error);
    if (!readFile(entry, where))
      return false;
    for (size_t q = 0; q < r; ++q)
      if (manifest.weights[q].file == manifest.weights[r].file)
        return top.reject("'" + where + ".file' '" + manifest.weights[r].file +
                          "' is also rank " + std::to_string(q) + "'s");
  }
  return true;
}

/// "parallel" and "collective_max_bytes" of a multi-rank bundle.
bool readParallel(const JsonValue &root, const std::string &file,
                  Manifest &manifest, std::string &error) {
  Reader top(root, file, "", error);
  if (!top.size("collective_max_bytes", manifest.collectiveMaxBytes))
    return false;
  const JsonValue *parallel = top.require("parallel", JsonValue::Kind::Object);
  if (!parallel)
    return false;
  Reader reader(*parallel, file, "parallel.", error);
  ParallelSpec &spec = manifest.parallel;
  if (!reader.integer("tp", spec.tp) || !reader.boolean("sp", spec.sp))
    return false;
  if (parallel->get("layers") && !reader.integer("layers", spec.layers))
    return false;
  const JsonValue *grid = reader.require("grid", JsonValue::Kind::Array);
  const JsonValue *axes =
      grid ? reader.require("axes", JsonValue::Kind::Array) : nullptr;
  if (!axes)
    return false;
  int64_t ranks = 1;
  for (size_t d = 0; d < grid->array.size(); ++d) {
    int64_t extent;
    if (!reader.toInteger(grid->array[d],
                          "parallel.grid[" + std::to_string(d) + "]", extent))
      return false;
    if (extent < 1)
      return top.reject("'parallel.grid[" + std::to_string(d) +
                        "]' must be at least 1, got " + std::to_string(extent));
    spec.grid.push_back(extent);
    if (__builtin_mul_overflow(ranks, extent, &ranks) || ranks > (1 << 20))
      return top.reject("'parallel.grid' spans more than 2^20 ranks");
  }
  for (const JsonValue &axis : axes->array) {
    if (!axis.isString())
      return top.reject("'parallel.axes' must hold strings");
    spec.axes.push_back(axis.string);
  }
  if (spec.axes.size() != spec.grid.size())
    return top.reject("'parallel.axes' names " +
                      std::to_string(spec.axes.size()) +
                      " axes for a grid of " +
                      std::to_string(spec.grid.size()));
  if (ranks != manifest.worldSize)
    return top.reject("'parallel.grid' holds " + std::to_string(ranks) +
                      " ranks, world_size is " +
                      std::to_string(manifest.worldSize));
  if (spec.tp < 1 || manifest.worldSize % spec.tp != 0)
    return top.reject("'parallel.tp' must divide world_size " +
                      std::to_string(manifest.worldSize) + ", got " +
                      std::to_string(spec.tp));
  return true;
}
/// Whether `root` (read by `reader`) is a bundle manifest that this runtime
/// can run: its format, version, bundle ABI and target.
bool readRunnable(Reader &reader, const std::string &file, const std::string &bundleDir,
                  Manifest &manifest, std::string &error) {
  std::string format;
  if (!reader.string("format", format))
    return false;
  if (format != "sluice-bundle") {
    error = file + ": not a Sluice bundle manifest (format '" + format +
            "', expected 'sluice-bundle')";
    return false;
  }
  if (!reader.string("version", manifest.version))
    return false;
  int major = -1, minor = -1;
  if (std::sscanf(manifest.version.c_str(), "%d.%d", &major, &minor) != 2) {
    error =
        file + ": version '" + manifest.version + "' is not major.minor.patch";
    return false;
  }
  if (major != SLUICE_VERSION_MAJOR || minor != SLUICE_VERSION_MINOR) {
    error =
        "bundle '" + bundleDir + "' was written by Sluice " + manifest.version +
        "; this runtime (" SLUICE_VERSION_STRING ") runs bundles of version " +
        std::to_string(SLUICE_VERSION_MAJOR) + "." +
        std::to_string(SLUICE_VERSION_MINOR) + ".x";
    return false;
  }
  if (!reader.integer("abi", manifest.abi))
    return false;
  if (manifest.abi != SLUICE_BUNDLE_ABI_VERSION) {
    error = "bundle '" + bundleDir + "' uses bundle ABI " +
            std::to_string(manifest.abi) + "; this runtime supports ABI " +
            std::to_string(SLUICE_BUNDLE_ABI_VERSION);
    return false;
  }
  if (!reader.string("target", manifest.target))
    return false;
  if (manifest.target != "cpu" && manifest.target != "cuda") {
    error = "bundle '" + bundleDir + "' is for target '" + manifest.target +
            "'; this runtime runs cpu and cuda bundles";
    return false;
  }
  return true;
}

/// The top-level scalars: "precision", "model", "library", "bundle_id",
/// "arena_bytes" and "world_size".
bool readDetails(Reader &reader, Manifest &manifest) {
  if (!reader.string("precision", manifest.precision, /*optional=*/true))
    return false;
  if (manifest.precision != "fp32" && manifest.precision != "fp16" &&
      manifest.precision != "bf16")
    return reader.reject("'precision' must be 'fp32', 'fp16' or 'bf16', got '" +
                         manifest.precision + "'");
  if (!reader.string("model", manifest.model, /*optional=*/true) ||
      !reader.string("library", manifest.library))
    return false;
  if (!plainFileName(manifest.library))
    return reader.reject("'library' must be a file name in the bundle folder, "
                         "got '" +
                         manifest.library + "'");
  if (!reader.string("bundle_id", manifest.bundleId, /*optional=*/true))
    return false;
  if (!manifest.bundleId.empty() && !isHexId(manifest.bundleId))
    return reader.reject("'bundle_id' must be 16 hex digits, got '" + manifest.bundleId + "'");
  if (!reader.size("arena_bytes", manifest.arenaBytes) ||
      !reader.integer("world_size", manifest.worldSize))
    return false;
  if (manifest.worldSize < 1)
    return reader.reject("'world_size' must be at least 1, got " +
                         std::to_string(manifest.worldSize));
  return true;
}

/// "gpu_architectures": strings, of which a cuda bundle lists at least one,
/// each sm_XY or compute_XY.
bool readGpuArchitectures(Reader &reader, Manifest &manifest) {
  const JsonValue *archs =
      reader.require("gpu_architectures", JsonValue::Kind::Array);
  if (!archs)
    return false;
  for (const JsonValue &arch : archs->array) {
    if (!arch.isString())
      return reader.reject("'gpu_architectures' must hold strings");
    manifest.gpuArchitectures.push_back(arch.string);
  }
  if (manifest.target == "cuda") {
    if (manifest.gpuArchitectures.empty())
      return reader.reject("a cuda bundle must list its 'gpu_architectures' "
                           "(\"sm_90\", \"compute_90\" ...)");
    for (const std::string &name : manifest.gpuArchitectures) {
      GpuArch arch;
      if (!parseGpuArch(name, arch))
        return reader.reject("'gpu_architectures' entry '" + name +
                             "' is not sm_XY or compute_XY");
    }
  }
  return true;
}

/// False, naming the input, when one of `inputs` has a data-dependent dim
/// (only outputs may). `where` starts the message: "" for the bundle's own
/// inputs, "'variants[1]' " for a variant's.
bool staticInputs(Reader &reader, const std::vector<TensorSpec> &inputs, const std::string &where) {
  for (const TensorSpec &input : inputs)
    for (int64_t dim : input.shape)
      if (dim < 0)
        return reader.reject(where + "input '" + input.name +
                             "' has a data-dependent dim; only outputs may");
  return true;
}

/// Whether a variant's inputs or outputs, `mine`, are the bundle's, `top`,
/// but for the shapes: the same names, dtypes and ranks, in order.
bool sameBoundary(Reader &reader, const std::string &where, const std::vector<TensorSpec> &mine,
                  const std::vector<TensorSpec> &top, const char *side) {
  bool same = mine.size() == top.size();
  for (size_t i = 0; same && i < mine.size(); ++i)
    same = mine[i].name == top[i].name && mine[i].dtype == top[i].dtype &&
           mine[i].shape.size() == top[i].shape.size();
  if (!same)
    reader.reject("'" + where + "." + side + "' must list the bundle's " + side +
                  " (names, dtypes and ranks) in order");
  return same;
}

/// One shape variant, "variants[v]" (`where`): its run function, arena,
/// inputs, outputs and kernels. `reader` reads the manifest.
bool readVariant(Reader &reader, const JsonValue &entry, const std::string &where,
                 const std::string &file, const Manifest &manifest, VariantSpec &spec,
                 std::string &error) {
  if (!entry.isObject())
    return reader.reject("'" + where + "' must be an object");
  Reader variantReader(entry, file, where + ".", error);
  if (!variantReader.string("entry", spec.entry) ||
      !variantReader.size("arena_bytes", spec.arenaBytes) ||
      !readTensors(entry, "inputs", file, spec.inputs, error) ||
      !readTensors(entry, "outputs", file, spec.outputs, error) ||
      !readKernels(entry, file, where + ".", spec.kernels, error))
    return false;
  if (spec.entry.empty())
    return reader.reject("'" + where + ".entry' must name the variant's run function");
  if (spec.arenaBytes > manifest.arenaBytes)
    return reader.reject("'" + where + ".arena_bytes' (" + std::to_string(spec.arenaBytes) +
                         ") exceeds 'arena_bytes' (" + std::to_string(manifest.arenaBytes) +
                         "), the arena every variant runs in");
  return sameBoundary(reader, where, spec.inputs, manifest.inputs, "inputs") &&
         sameBoundary(reader, where, spec.outputs, manifest.outputs, "outputs") &&
         staticInputs(reader, spec.inputs, "'" + where + "' ");
}

/// "variants": the shape variants of a cpu, single-rank bundle (bundles of
/// one shape have no key).
bool readVariants(Reader &reader, const JsonValue &root, const std::string &file,
                  Manifest &manifest, std::string &error) {
  const JsonValue *variants = root.get("variants");
  if (!variants)
    return true;
  if (!variants->isArray() || variants->array.empty())
    return reader.reject("'variants' must be a non-empty array");
  if (manifest.target != "cpu" || manifest.worldSize != 1)
    return reader.reject("'variants' (shape variants) run on the cpu target with one rank; "
                         "this bundle is " +
                         manifest.target + " with world_size " +
                         std::to_string(manifest.worldSize));
  for (size_t v = 0; v < variants->array.size(); ++v) {
    std::string where = "variants[" + std::to_string(v) + "]";
    VariantSpec spec;
    if (!readVariant(reader, variants->array[v], where, file, manifest, spec, error))
      return false;
    manifest.variants.push_back(std::move(spec));
  }
  return true;
}

/// "moe": the mixture-of-experts ops (bundles without one have no key),
/// each given its block of the expert-load counters.
bool readMoe(Reader &reader, const JsonValue &root, const std::string &file, Manifest &manifest,
             std::string &error) {
  const JsonValue *moe = root.get("moe");
  if (!moe)
    return true;
  if (!moe->isArray())
    return reader.reject("'moe' must be an array");
  for (size_t i = 0; i < moe->array.size(); ++i) {
    std::string where = "moe[" + std::to_string(i) + "]";
    const JsonValue &entry = moe->array[i];
    if (!entry.isObject())
      return reader.reject("'" + where + "' must be an object");
    Reader moeReader(entry, file, where + ".", error);
    MoeSpec spec;
    if (!moeReader.string("node", spec.node) || !moeReader.string("gating", spec.gating) ||
        !moeReader.integer("experts", spec.experts) || !moeReader.integer("top_k", spec.topK) ||
        !moeReader.integer("experts_per_rank", spec.expertsPerRank))
      return false;
    if (spec.experts < 1 || spec.experts > (int64_t(1) << 24) || spec.expertsPerRank < 1 ||
        spec.experts % spec.expertsPerRank != 0)
      return reader.reject("'" + where + "' needs experts >= 1 and experts_per_rank " +
                           "dividing it, got " + std::to_string(spec.experts) + " and " +
                           std::to_string(spec.expertsPerRank));
    spec.loadOffset = manifest.expertLoadCounters;
    manifest.expertLoadCounters += spec.experts;
    manifest.moe.push_back(std::move(spec));
  }
  return true;
}
} // namespace

bool parseManifest(const std::string &text, const std::string &bundleDir, Manifest &manifest,
                   std::string &error) {
  std::string file = joinPath(bundleDir, "manifest.json");
  manifest = Manifest();
  error.clear();
  JsonValue root;
  std::string jsonError;
  if (!parseJson(text, root, jsonError)) {
    error = file + ": invalid JSON " + jsonError;
    return false;
  }
  if (!root.isObject()) {
    error = file + ": the manifest must be a JSON object";
    return false;
  }
  Reader reader(root, file, "", error);

  // Is it a bundle, and one this runtime can run? Then the details.
  if (!readRunnable(reader, file, bundleDir, manifest, error) || !readDetails(reader, manifest))
    return false;
  if (!readWeights(root, file, manifest, error) ||
      (manifest.worldSize > 1 && !readParallel(root, file, manifest, error)))
    return false;
  if (!readGpuArchitectures(reader, manifest))
    return false;
  if (root.get("host_arena_bytes") && !reader.size("host_arena_bytes", manifest.hostArenaBytes))
    return false;
  if (!readTensors(root, "inputs", file, manifest.inputs, error) ||
      !readTensors(root, "outputs", file, manifest.outputs, error) ||
      !staticInputs(reader, manifest.inputs, ""))
    return false;
  return readKernels(root, file, "", manifest.kernels, error) &&
         readVariants(reader, root, file, manifest, error) &&
         readMoe(reader, root, file, manifest, error);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? "x" : "") + std::to_string(shape[d]);
  return text;
}

std::string describeVariantShapes(const Manifest &manifest) {
  std::string text;
  for (size_t i = 0; i < manifest.inputs.size(); ++i) {
    text += (i ? "; " : "") + manifest.inputs[i].name + ":";
    for (size_t v = 0; v < manifest.variants.size(); ++v)
      text += (v ? " | " : " ") + shapeText(manifest.variants[v].inputs[i].shape);
  }
  return text;
}

bool readManifest(const std::string &bundleDir, Manifest &manifest,
                  std::string &error) {
  std::string file = joinPath(bundleDir, "manifest.json");
  std::string text;
  if (!readWholeFile(file, text, error))
    return false;
  return parseManifest(text, bundleDir, manifest, error);
}

} // namespace sluice::runtime
