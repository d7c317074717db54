//===- Manifest.h - a bundle's manifest.json, read and checked --*- C++ -*-===//
//
// The manifest says what a bundle needs (target, ABI, arena and weight
// sizes) and what it takes and makes (inputs, outputs with static shapes).
// readManifest checks all of it before the runtime maps or opens anything,
// so a bundle this runtime cannot run fails with one clear message.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_MANIFEST_H
#define SLUICE_RUNTIME_CORE_MANIFEST_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::runtime {

struct TensorSpec {
  std::string name;
  std::string dtype; ///< NumPy's name: "float32", "int64", "bool" ...
  std::vector<int64_t> shape;    ///< -1: a data-dependent dim (outputs only)
  std::vector<int64_t> maxShape; ///< the bound of every dim (== shape if static)
  size_t elementBytes = 0;
  size_t bytes = 0; ///< elements of maxShape times elementBytes
};

struct KernelSpec {
  std::string name;
  std::string kind; ///< "kernel", "library" or "host" (cuda: on the cpu)
  std::string op;
  std::string node;
};

/// One rank's weights file (manifest "weights"): a single-rank bundle has
/// one, "weights.file"; a multi-rank bundle one per rank, "weights.ranks",
/// sliced at compile time so that each rank maps only its own.
struct WeightsFile {
  std::string file; ///< file name inside the bundle folder
  uint64_t bytes = 0;
  /// sluice_weights_fingerprint of the file, 16 hex digits ("" in bundles
  /// written before it existed: not checked).
  std::string fingerprint;
};

/// How a multi-rank bundle is split across its ranks (manifest "parallel").
struct ParallelSpec {
  int64_t tp = 1;    ///< tensor-parallel degree
  bool sp = false;   ///< sequence parallelism on top of tp
  std::vector<int64_t> grid;     ///< the device grid; its product is the world
  std::vector<std::string> axes; ///< one name per grid axis ("tp")
  int64_t layers = 0;            ///< transformer layers split (0: not given)
};

/// One mixture-of-experts op (manifest "moe", in the order of the
/// expert-load counters, SluiceRunArgs.expert_load).
struct MoeSpec {
  std::string node;   ///< its ONNX node
  std::string gating; ///< "top_k" or "hard"
  int64_t experts = 0, topK = 1;
  int64_t expertsPerRank = 0; ///< experts / ep: the world is experts / this
  int64_t loadOffset = 0;     ///< its first counter (the experts before it)
};

/// One shape variant of a bundle compiled with `--shapes` (manifest
/// "variants"): its program's boundary, arena and run function.
struct VariantSpec {
  std::string entry; ///< the library's run function (sluice_v<i>_model_run)
  uint64_t arenaBytes = 0;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<KernelSpec> kernels;
};

struct Manifest {
  std::string version;
  int64_t abi = 0;
  std::string target;
  /// The precision the graph was compiled in (`--precision`): "fp32",
  /// "fp16" or "bf16"; "fp32" when absent (bundles before the field).
  /// Inputs and outputs keep their dtypes whatever it is.
  std::string precision = "fp32";
  std::string model;
  std::string library;     ///< file name inside the bundle folder
  /// What the library's sluice_model_bundle_id must return ("" in bundles
  /// written before it existed: not checked).
  std::string bundleId;
  /// One per rank, in rank order (one for a single-rank bundle).
  std::vector<WeightsFile> weights;
  uint64_t weightsAlignment = 0;
  uint64_t arenaBytes = 0;
  /// cuda: pinned host memory for the staging buffers of host steps
  /// (optional, 0 when absent).
  uint64_t hostArenaBytes = 0;
  /// Ranks the bundle runs as (1: a single-rank bundle, whose run calls no
  /// collective); for more, "parallel" and "collective_max_bytes" follow.
  int64_t worldSize = 1;
  ParallelSpec parallel;
  /// The largest send or recv buffer of any collective of a run, in bytes:
  /// what the communication library's staging buffers hold (0 when
  /// world_size is 1).
  uint64_t collectiveMaxBytes = 0;
  /// cuda: the codes the library carries, "sm_XY" cubins and "compute_XY"
  /// PTX (runtime/core/GpuArch.h); at least one for a cuda bundle.
  std::vector<std::string> gpuArchitectures;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<KernelSpec> kernels;
  /// The moe ops (optional key; none when absent) and the counters their
  /// expert-load profile takes: the sum of their experts.
  std::vector<MoeSpec> moe;
  int64_t expertLoadCounters = 0;
  /// Shape variants (optional key; none in a bundle of one shape). Then
  /// `inputs`, `outputs` and `kernels` are the first variant's and
  /// `arenaBytes` the largest variant's; every variant has the same inputs
  /// and outputs (names, dtypes, ranks) with shapes of its own.
  std::vector<VariantSpec> variants;
};

/// "1x128" (a rank-0 shape: "scalar").
std::string shapeText(const std::vector<int64_t> &shape);

/// The shapes a bundle of variants takes: "x: 1x128 | 8x128 | 32x128",
/// inputs separated by "; " (a variant's shapes are the i-th of each).
std::string describeVariantShapes(const Manifest &manifest);

/// The size of one element of NumPy dtype `name` (bool is 1 byte), or 0 if
/// the runtime does not know it.
size_t dtypeBytes(const std::string &name);

/// Reads the manifest JSON `text` of the bundle in `bundleDir` (named in
/// messages) and checks that this runtime can run it: format, version
/// major.minor, ABI, target, every required key with its type. Unknown keys
/// are ignored. On failure returns false and sets `error`.
bool parseManifest(const std::string &text, const std::string &bundleDir,
                   Manifest &manifest, std::string &error);

/// Reads `bundleDir`/manifest.json and parses it as parseManifest does.
bool readManifest(const std::string &bundleDir, Manifest &manifest,
                  std::string &error);

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_MANIFEST_H
