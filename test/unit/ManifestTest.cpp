//===- ManifestTest.cpp - the runtime's manifest checks -------------------===//

#include "runtime/core/Manifest.h"

#include "sluice/version.h"

#include <gtest/gtest.h>

#include <cstring>

using sluice::runtime::Manifest;
using sluice::runtime::parseManifest;

namespace {

const char *kDir = "/b/my model.sluice";

std::string validManifest() {
  return R"({"format": "sluice-bundle", "version": ")" SLUICE_VERSION_STRING
         R"(", "abi": 6, "target": "cpu",
 "model": "mlp", "library": "model.so",
 "weights": {"file": "weights.bin", "bytes": 4096, "alignment": 64},
 "arena_bytes": 1024, "world_size": 1, "gpu_architectures": [],
 "compile_flags": ["-O3"],
 "inputs":  [{"name": "x", "dtype": "float32", "shape": [1, 4]},
             {"name": "ids", "dtype": "int64", "shape": [3]},
             {"name": "flag", "dtype": "bool", "shape": []}],
 "outputs": [{"name": "y", "dtype": "bfloat16", "shape": [1, 3]}],
 "kernels": [{"name": "k0_matmul", "kind": "library", "op": "sluice.matmul", "node": "/fc1/MatMul"},
             {"name": "k1_add", "kind": "kernel", "op": "sluice.add", "node": "/fc1/Add"}]})";
}

/// validManifest with `from` replaced by `to` (which must occur).
std::string with(const std::string &from, const std::string &to) {
  std::string text = validManifest();
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

std::string errorOf(const std::string &text) {
  Manifest manifest;
  std::string error;
  return parseManifest(text, kDir, manifest, error) ? "" : error;
}

} // namespace

TEST(Manifest, ReadsEveryKey) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(parseManifest(validManifest(), kDir, m, error)) << error;
  EXPECT_EQ(m.version, SLUICE_VERSION_STRING);
  EXPECT_EQ(m.target, "cpu");
  EXPECT_EQ(m.model, "mlp");
  EXPECT_EQ(m.library, "model.so");
  ASSERT_EQ(m.weights.size(), 1u);
  EXPECT_EQ(m.weights[0].file, "weights.bin");
  EXPECT_EQ(m.weights[0].bytes, 4096u);
  EXPECT_EQ(m.worldSize, 1);
  EXPECT_EQ(m.collectiveMaxBytes, 0u);
  EXPECT_EQ(m.arenaBytes, 1024u);
  ASSERT_EQ(m.inputs.size(), 3u);
  EXPECT_EQ(m.inputs[0].name, "x");
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(m.inputs[0].bytes, 16u);
  EXPECT_EQ(m.inputs[1].bytes, 24u);
  EXPECT_EQ(m.inputs[2].bytes, 1u); // a scalar bool is one byte
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].bytes, 6u);
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].kind, "library");
  EXPECT_EQ(m.kernels[1].node, "/fc1/Add");
}

TEST(Manifest, RefusesWhatThisRuntimeCannotRun) {
  std::string file = std::string(kDir) + "/manifest.json: ";
  EXPECT_EQ(errorOf(with("\"target\": \"cpu\"", "\"target\": \"tpu\"")),
            "bundle '/b/my model.sluice' is for target 'tpu'; this runtime "
            "runs cpu and cuda bundles");
  EXPECT_EQ(errorOf(with("\"abi\": 6", "\"abi\": 3")),
            "bundle '/b/my model.sluice' uses bundle ABI 3; this runtime "
            "supports ABI 6");
  EXPECT_EQ(errorOf(with("\"version\": \"" SLUICE_VERSION_STRING "\"",
                         "\"version\": \"9.1.0\"")),
            "bundle '/b/my model.sluice' was written by Sluice 9.1.0; this "
            "runtime (" SLUICE_VERSION_STRING
            ") runs bundles of version 0.3.x");
  EXPECT_EQ(errorOf(with("sluice-bundle", "onnx")),
            file + "not a Sluice bundle manifest (format 'onnx', expected "
                   "'sluice-bundle')");
}

TEST(Manifest, NamesTheBadKey) {
  std::string file = std::string(kDir) + "/manifest.json: ";
  EXPECT_EQ(errorOf(with("\"arena_bytes\": 1024,", "")),
            file + "missing key 'arena_bytes'");
  EXPECT_EQ(errorOf(with("\"abi\": 6", "\"abi\": \"5\"")),
            file + "key 'abi' must be a number, got a string");
  EXPECT_EQ(errorOf(with("\"bytes\": 4096", "\"bytes\": -1")),
            file + "key 'weights.bytes' must not be negative");
  EXPECT_EQ(errorOf(with("\"bytes\": 4096", "\"bytes\": 40.5")),
            file + "'weights.bytes' must be an integer");
  EXPECT_EQ(errorOf(with("\"alignment\": 64", "\"alignment\": 48")),
            file + "'weights.alignment' must be a power of two up to 4096, "
                   "got 48");
  EXPECT_EQ(
      errorOf(with("\"library\": \"model.so\"", "\"library\": \"../evil.so\"")),
      file + "'library' must be a file name in the bundle folder, got "
             "'../evil.so'");
  EXPECT_EQ(errorOf(with("\"dtype\": \"int64\"", "\"dtype\": \"complex64\"")),
            file + "'inputs[1]' has unknown dtype 'complex64'");
  EXPECT_EQ(errorOf(with("\"shape\": [3]", "\"shape\": [-1]")),
            file + "'inputs[1].shape[0]' must not be negative (shapes in a "
                   "bundle are static; only an output's data-dependent dim "
                   "may be -1, bounded by its max_shape)");
  // Outputs may have a data-dependent dim bounded by max_shape; inputs not.
  EXPECT_EQ(errorOf(with("\"shape\": [3]", "\"shape\": [-1], \"max_shape\": [3]")),
            file + "input 'ids' has a data-dependent dim; only outputs may");
  EXPECT_EQ(errorOf(with("\"shape\": [3]", "\"shape\": 3")),
            file + "key 'inputs[1].shape' must be an array, got a number");
  EXPECT_EQ(errorOf(with("{\"name\": \"y\", ", "{")),
            file + "missing key 'outputs[0].name'");
  EXPECT_EQ(errorOf(with("\"kind\": \"kernel\"", "\"kind\": \"gemm\"")),
            file + "'kernels[1].kind' must be 'kernel', 'library' or 'host', "
                   "got 'gemm'");
  EXPECT_EQ(errorOf("[1, 2]"), file + "the manifest must be a JSON object");
  EXPECT_EQ(errorOf("{\"format\": \"sluice-bundle\",}"),
            file + "invalid JSON at byte 27: expected a string key");
}

/// validManifest for target cuda with `archs` (a JSON array) and `extra`
/// keys.
std::string cudaManifest(const std::string &archs,
                         const std::string &extra = "") {
  std::string text = with("\"target\": \"cpu\"", "\"target\": \"cuda\"" + extra);
  size_t at = text.find("\"gpu_architectures\": []");
  text.replace(at, std::strlen("\"gpu_architectures\": []"),
               "\"gpu_architectures\": " + archs);
  return text;
}

TEST(Manifest, CudaKeys) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(parseManifest(
      cudaManifest(R"(["sm_80", "sm_90", "compute_90"])",
                   R"(, "host_arena_bytes": 4096)"),
      kDir, m, error))
      << error;
  EXPECT_EQ(m.target, "cuda");
  EXPECT_EQ(m.gpuArchitectures,
            (std::vector<std::string>{"sm_80", "sm_90", "compute_90"}));
  EXPECT_EQ(m.hostArenaBytes, 4096u);

  // host_arena_bytes is optional (no host steps) and means 0 then.
  ASSERT_TRUE(parseManifest(cudaManifest(R"(["sm_90"])"), kDir, m, error))
      << error;
  EXPECT_EQ(m.hostArenaBytes, 0u);
  // cpu bundles may carry it too; nothing reads it there.
  ASSERT_TRUE(parseManifest(with("\"world_size\": 1",
                                 "\"world_size\": 1, \"host_arena_bytes\": 8"),
                            kDir, m, error))
      << error;
  EXPECT_EQ(m.hostArenaBytes, 8u);

  std::string file = std::string(kDir) + "/manifest.json: ";
  EXPECT_EQ(errorOf(cudaManifest("[]")),
            file + "a cuda bundle must list its 'gpu_architectures' "
                   "(\"sm_90\", \"compute_90\" ...)");
  EXPECT_EQ(errorOf(cudaManifest(R"(["sm_90", "ampere"])")),
            file + "'gpu_architectures' entry 'ampere' is not sm_XY or "
                   "compute_XY");
  EXPECT_EQ(errorOf(cudaManifest(R"(["sm_90", 90])")),
            file + "'gpu_architectures' must hold strings");
  EXPECT_EQ(errorOf(cudaManifest(R"(["sm_90"])", R"(, "host_arena_bytes": -4)")),
            file + "key 'host_arena_bytes' must not be negative");
  EXPECT_EQ(errorOf(cudaManifest(R"(["sm_90"])", R"(, "host_arena_bytes": "4")")),
            file + "key 'host_arena_bytes' must be a number, got a string");
}

TEST(Manifest, DtypeSizes) {
  using sluice::runtime::dtypeBytes;
  EXPECT_EQ(dtypeBytes("float32"), 4u);
  EXPECT_EQ(dtypeBytes("float16"), 2u);
  EXPECT_EQ(dtypeBytes("bfloat16"), 2u);
  EXPECT_EQ(dtypeBytes("uint64"), 8u);
  EXPECT_EQ(dtypeBytes("bool"), 1u);
  EXPECT_EQ(dtypeBytes("f32"), 0u);
}

TEST(Manifest, ReadsThePrecision) {
  Manifest m;
  std::string error;
  // Bundles written before the field: fp32.
  ASSERT_TRUE(parseManifest(validManifest(), kDir, m, error)) << error;
  EXPECT_EQ(m.precision, "fp32");
  Manifest half;
  ASSERT_TRUE(parseManifest(with("\"target\": \"cpu\",", "\"target\": \"cpu\", \"precision\": \"bf16\","),
                            kDir, half, error))
      << error;
  EXPECT_EQ(half.precision, "bf16");
  std::string file = std::string(kDir) + "/manifest.json: ";
  EXPECT_EQ(errorOf(with("\"target\": \"cpu\",", "\"target\": \"cpu\", \"precision\": \"fp8\",")),
            file + "'precision' must be 'fp32', 'fp16' or 'bf16', got 'fp8'");
  EXPECT_EQ(errorOf(with("\"target\": \"cpu\",", "\"target\": \"cpu\", \"precision\": 16,")),
            file + "key 'precision' must be a string, got a number");
}

namespace {

/// validManifest as a multi-rank bundle of `world` ranks, with `weights`
/// and `parallel` as given (JSON) and collective_max_bytes 4096.
std::string rankManifest(const std::string &weights,
                         const std::string &parallel, int world = 2) {
  std::string text = with("\"world_size\": 1",
                          "\"world_size\": " + std::to_string(world) +
                              ", \"parallel\": " + parallel +
                              ", \"collective_max_bytes\": 4096");
  std::string single =
      "\"weights\": {\"file\": \"weights.bin\", \"bytes\": 4096, "
      "\"alignment\": 64}";
  size_t at = text.find(single);
  text.replace(at, single.size(), "\"weights\": " + weights);
  return text;
}

const char *kTwoRanks =
    R"({"alignment": 64, "ranks": [{"file": "weights.rank0.bin", "bytes": 2048},
                                  {"file": "weights.rank1.bin", "bytes": 2050}]})";
const char *kTp2 =
    R"({"tp": 2, "sp": true, "grid": [2], "axes": ["tp"], "layers": 12})";

} // namespace

TEST(Manifest, ReadsAMultiRankBundle) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(parseManifest(rankManifest(kTwoRanks, kTp2), kDir, m, error))
      << error;
  EXPECT_EQ(m.worldSize, 2);
  ASSERT_EQ(m.weights.size(), 2u);
  EXPECT_EQ(m.weights[1].file, "weights.rank1.bin");
  EXPECT_EQ(m.weights[1].bytes, 2050u);
  EXPECT_EQ(m.weightsAlignment, 64u);
  EXPECT_EQ(m.collectiveMaxBytes, 4096u);
  EXPECT_EQ(m.parallel.tp, 2);
  EXPECT_TRUE(m.parallel.sp);
  EXPECT_EQ(m.parallel.grid, (std::vector<int64_t>{2}));
  EXPECT_EQ(m.parallel.axes, (std::vector<std::string>{"tp"}));
  EXPECT_EQ(m.parallel.layers, 12);

  // "layers" may be left out.
  ASSERT_TRUE(parseManifest(
      rankManifest(kTwoRanks,
                   R"({"tp": 2, "sp": false, "grid": [2], "axes": ["tp"]})"),
      kDir, m, error))
      << error;
  EXPECT_EQ(m.parallel.layers, 0);
}

TEST(Manifest, NamesTheBadMultiRankKey) {
  std::string file = std::string(kDir) + "/manifest.json: ";
  EXPECT_EQ(errorOf(rankManifest(
                R"({"alignment": 64, "ranks": [{"file": "weights.rank0.bin", "bytes": 8}]})",
                kTp2)),
            file + "'weights.ranks' lists 1 weights files for world_size 2 "
                   "(one per rank)");
  EXPECT_EQ(errorOf(rankManifest(
                R"({"alignment": 64, "file": "weights.bin", "bytes": 8})", kTp2)),
            file + "missing key 'weights.ranks'");
  EXPECT_EQ(errorOf(rankManifest(
                R"({"alignment": 64, "ranks": [{"file": "w.bin", "bytes": 8},
                                               {"file": "w.bin", "bytes": 8}]})",
                kTp2)),
            file + "'weights.ranks[1].file' 'w.bin' is also rank 0's");
  EXPECT_EQ(errorOf(rankManifest(
                R"({"alignment": 64, "ranks": [{"file": "a.bin", "bytes": 8},
                                               {"file": "../b.bin", "bytes": 8}]})",
                kTp2)),
            file + "'weights.ranks[1].file' must be a file name in the bundle "
                   "folder, got '../b.bin'");
  EXPECT_EQ(errorOf(rankManifest(
                R"({"alignment": 64, "ranks": [{"file": "a.bin", "bytes": 8},
                                               {"file": "b.bin"}]})",
                kTp2)),
            file + "missing key 'weights.ranks[1].bytes'");
  EXPECT_EQ(errorOf(rankManifest(kTwoRanks,
                                 R"({"tp": 2, "sp": false, "grid": [4], "axes": ["tp"]})")),
            file + "'parallel.grid' holds 4 ranks, world_size is 2");
  EXPECT_EQ(errorOf(rankManifest(kTwoRanks,
                                 R"({"tp": 2, "sp": false, "grid": [2], "axes": []})")),
            file + "'parallel.axes' names 0 axes for a grid of 1");
  EXPECT_EQ(errorOf(rankManifest(kTwoRanks,
                                 R"({"tp": 3, "sp": false, "grid": [2], "axes": ["tp"]})")),
            file + "'parallel.tp' must divide world_size 2, got 3");
  EXPECT_EQ(errorOf(rankManifest(kTwoRanks,
                                 R"({"tp": 2, "sp": 0, "grid": [2], "axes": ["tp"]})")),
            file + "key 'parallel.sp' must be a boolean, got a number");
  EXPECT_EQ(errorOf(rankManifest(kTwoRanks, R"({"tp": 2})")),
            file + "missing key 'parallel.sp'");
  std::string noParallel = rankManifest(kTwoRanks, kTp2);
  noParallel.replace(noParallel.find("\"parallel\""), 10, "\"paralel\"");
  EXPECT_EQ(errorOf(noParallel), file + "missing key 'parallel'");
  std::string noBound = rankManifest(kTwoRanks, kTp2);
  noBound.replace(noBound.find(", \"collective_max_bytes\": 4096"),
                  std::strlen(", \"collective_max_bytes\": 4096"), "");
  EXPECT_EQ(errorOf(noBound), file + "missing key 'collective_max_bytes'");
  EXPECT_EQ(errorOf(with("\"world_size\": 1", "\"world_size\": 0")),
            file + "'world_size' must be at least 1, got 0");
}


// The moe list (bundle ABI 6): each op's counters start after the experts
// of the ops before it; a bundle without the key has none.
TEST(Manifest, ReadsTheMoeOps) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(parseManifest(validManifest(), kDir, m, error)) << error;
  EXPECT_TRUE(m.moe.empty());
  EXPECT_EQ(m.expertLoadCounters, 0);
  std::string moe = R"("moe": [
    {"node": "/a/Softmax", "experts": 8, "top_k": 2, "gating": "top_k", "experts_per_rank": 2},
    {"node": "/b/Gather", "experts": 4, "top_k": 1, "gating": "hard", "experts_per_rank": 4}],
 "kernels":)";
  ASSERT_TRUE(parseManifest(with("\"kernels\":", moe), kDir, m, error)) << error;
  ASSERT_EQ(m.moe.size(), 2u);
  EXPECT_EQ(m.moe[0].node, "/a/Softmax");
  EXPECT_EQ(m.moe[0].gating, "top_k");
  EXPECT_EQ(m.moe[0].experts, 8);
  EXPECT_EQ(m.moe[0].topK, 2);
  EXPECT_EQ(m.moe[0].expertsPerRank, 2);
  EXPECT_EQ(m.moe[0].loadOffset, 0);
  EXPECT_EQ(m.moe[1].gating, "hard");
  EXPECT_EQ(m.moe[1].loadOffset, 8);
  EXPECT_EQ(m.expertLoadCounters, 12);
}

TEST(Manifest, NamesTheBadMoeKey) {
  std::string file = std::string(kDir) + "/manifest.json: ";
  auto moe = [](const std::string &entry) {
    return with("\"kernels\":", "\"moe\": [" + entry + "], \"kernels\":");
  };
  EXPECT_EQ(errorOf(with("\"kernels\":", "\"moe\": 3, \"kernels\":")),
            file + "'moe' must be an array");
  EXPECT_EQ(errorOf(moe(R"({"node": "n", "experts": 4, "top_k": 1, "gating": "hard"})")),
            file + "missing key 'moe[0].experts_per_rank'");
  EXPECT_EQ(
      errorOf(moe(
          R"({"node": "n", "experts": 4, "top_k": 1, "gating": "hard", "experts_per_rank": 3})")),
      file + "'moe[0]' needs experts >= 1 and experts_per_rank dividing it, got 4 and 3");
}

namespace {

/// validManifest with shape variants of batch 1 and 8 (`variants` the
/// entries' text).
std::string withVariants(const std::string &variants) {
  std::string text = validManifest();
  text.insert(text.rfind('}'), R"(, "variants": )" + variants);
  return text;
}

std::string variant(int batch, const std::string &entry, int arena = 512) {
  std::string b = std::to_string(batch);
  return R"({"entry": ")" + entry + R"(", "source": "model.v0.cpp", "arena_bytes": )" +
         std::to_string(arena) + R"(,
  "inputs": [{"name": "x", "dtype": "float32", "shape": [)" + b + R"(, 4]},
             {"name": "ids", "dtype": "int64", "shape": [3]},
             {"name": "flag", "dtype": "bool", "shape": []}],
  "outputs": [{"name": "y", "dtype": "bfloat16", "shape": [)" + b + R"(, 3]}],
  "kernels": [{"name": "k0", "kind": "kernel"}]})";
}

} // namespace

TEST(Manifest, ReadsShapeVariants) {
  Manifest m;
  std::string error;
  ASSERT_TRUE(parseManifest(withVariants("[" + variant(1, "sluice_v0_model_run") + ", " +
                                         variant(8, "sluice_v1_model_run", 1024) + "]"),
                            kDir, m, error))
      << error;
  ASSERT_EQ(m.variants.size(), 2u);
  EXPECT_EQ(m.variants[1].entry, "sluice_v1_model_run");
  EXPECT_EQ(m.variants[1].arenaBytes, 1024u);
  EXPECT_EQ(m.variants[1].inputs[0].shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(m.variants[1].inputs[0].bytes, 128u);
  EXPECT_EQ(m.variants[1].outputs[0].bytes, 48u);
  EXPECT_EQ(m.variants[0].kernels.size(), 1u);
  EXPECT_EQ(sluice::runtime::describeVariantShapes(m),
            "x: 1x4 | 8x4; ids: 3 | 3; flag: scalar | scalar");
  // A bundle without the key has none.
  ASSERT_TRUE(parseManifest(validManifest(), kDir, m, error)) << error;
  EXPECT_TRUE(m.variants.empty());
}

TEST(Manifest, NamesTheBadVariant) {
  std::string file = std::string(kDir) + "/manifest.json: ";
  EXPECT_EQ(errorOf(withVariants("[]")), file + "'variants' must be a non-empty array");
  EXPECT_EQ(errorOf(withVariants("[" + variant(1, "") + "]")),
            file + "'variants[0].entry' must name the variant's run function");
  EXPECT_EQ(errorOf(withVariants("[" + variant(1, "e", 4096) + "]")),
            file + "'variants[0].arena_bytes' (4096) exceeds 'arena_bytes' (1024), the arena "
                   "every variant runs in");
  std::string renamed = variant(1, "e");
  renamed.replace(renamed.find("\"ids\""), 5, "\"idx\"");
  EXPECT_EQ(errorOf(withVariants("[" + renamed + "]")),
            file + "'variants[0].inputs' must list the bundle's inputs (names, dtypes and "
                   "ranks) in order");
  std::string cuda = withVariants("[" + variant(1, "e") + "]");
  cuda.replace(cuda.find("\"target\": \"cpu\""), 15, "\"target\": \"cuda\"");
  cuda.replace(cuda.find("\"gpu_architectures\": []"), 23,
               "\"gpu_architectures\": [\"sm_90\"]");
  EXPECT_EQ(errorOf(cuda), file + "'variants' (shape variants) run on the cpu target with one "
                                  "rank; this bundle is cuda with world_size 1");
}
