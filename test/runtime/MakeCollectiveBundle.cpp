//===- MakeCollectiveBundle.cpp - lay out the multi-rank test bundle ------===//
//
//   sluice-make-collective-bundle DIR WORLD [cuda]
//
// Writes what sluice-compile --tp=WORLD would next to model.so (built from
// CollectiveModel.cpp, copied in by CMake): manifest.json with world_size,
// parallel, weights.ranks and collective_max_bytes; one weights file per
// rank, each different; the input DIR/inputs/x.npy; and, computed here
// directly from the weights and not through collectives, the outputs every
// rank must hold, DIR/expected/<output>.npy (CollectiveModel.cpp lists
// them). Also DIR/expected/ones-all_reduce.txt: the first all_reduce values
// for x = 1 (what the C API example prints). With "cuda", the manifest is a
// cuda bundle's (for CollectiveModel.cpp built for the simulated CUDA
// runtime).
//
//===----------------------------------------------------------------------===//

#include "sluice/bundle_abi.h"
#include "sluice/version.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

constexpr int kN = 24, kK = 3, kC = 4;

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "sluice-make-collective-bundle: %s\n", message.c_str());
  std::exit(2);
}

void writeFile(const std::string &path, const void *data, size_t bytes) {
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || std::fwrite(data, 1, bytes, file) != bytes ||
      std::fclose(file) != 0)
    fail(path + ": cannot write");
}

/// A NumPy .npy file (format 1.0) of `values` with `shape`.
template <typename T>
void writeNpy(const std::string &path, const std::vector<T> &values,
              const std::vector<int> &shape, const char *descr) {
  std::string dims;
  for (int d : shape)
    dims += std::to_string(d) + ",";
  if (shape.size() > 1)
    dims.pop_back();
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += (char)(header.size() & 0xff);
  bytes += (char)(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(values.data()),
               values.size() * sizeof(T));
  writeFile(path, bytes.data(), bytes.size());
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 4 && std::string(argv[3]) == "cuda"))
    fail("usage: sluice-make-collective-bundle DIR WORLD [cuda]");
  std::string dir = argv[1];
  int W = std::atoi(argv[2]);
  bool cuda = argc == 4;
  if (W < 2 || 2 * W * kK > kN)
    fail("WORLD must be 2 .. 4");
  for (const std::string &folder : {dir, dir + "/inputs", dir + "/expected"})
    ::mkdir(folder.c_str(), 0755);

  // Rank r's weights differ from every other rank's.
  std::vector<std::vector<float>> w(W, std::vector<float>(kN));
  for (int r = 0; r < W; ++r) {
    for (int i = 0; i < kN; ++i)
      w[r][i] = (float)(r + 1) + 0.5f * i;
    writeFile(dir + "/weights.rank" + std::to_string(r) + ".bin", w[r].data(),
              kN * sizeof(float));
  }
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i)
    x[i] = (float)(i % 5) - 2.0f + 0.25f * i;
  writeNpy(dir + "/inputs/x.npy", x, {kN}, "<f4");

  // What the run must produce, from the definitions.
  std::vector<float> allReduce(kN, 0.0f);
  for (int i = 0; i < kN; ++i)
    for (int r = 0; r < W; ++r)
      allReduce[i] += w[r][i] * x[i];
  std::vector<float> allGather(2 * W * kK), reduceScatter(2 * W * kK);
  for (int o = 0; o < 2; ++o)
    for (int p = 0; p < W; ++p)
      for (int k = 0; k < kK; ++k) {
        allGather[(o * W + p) * kK + k] = w[p][o * kK + k] + x[k];
        float sum = 0;
        for (int q = 0; q < W; ++q)
          sum += w[q][(o * W + p) * kK + k] * x[k];
        reduceScatter[(o * W + p) * kK + k] = sum;
      }
  // Rank p received from rank q: q*1000 + p*10 + c + w_q[c].
  std::vector<float> allToAll(W * W * kC);
  for (int p = 0; p < W; ++p)
    for (int q = 0; q < W; ++q)
      for (int c = 0; c < kC; ++c)
        allToAll[(p * W + q) * kC + c] = q * 1000.0f + p * 10.0f + c + w[q][c];
  std::vector<float> sendRecv(W * kC);
  for (int p = 0; p < W; ++p)
    for (int c = 0; c < kC; ++c)
      sendRecv[p * kC + c] = 2 * w[(p + W - 1) % W][c];
  std::vector<float> broadcast(kC);
  for (int c = 0; c < kC; ++c)
    broadcast[c] = w[W - 1][kC + c];
  std::vector<int32_t> counts(4);
  for (int i = 0; i < 4; ++i)
    counts[i] = W * (W + 1) / 2 * (i + 1);
  writeNpy(dir + "/expected/all_reduce.npy", allReduce, {kN}, "<f4");
  writeNpy(dir + "/expected/all_gather.npy", allGather, {2, W, kK}, "<f4");
  writeNpy(dir + "/expected/reduce_scatter.npy", reduceScatter, {2, W, kK},
           "<f4");
  writeNpy(dir + "/expected/all_to_all.npy", allToAll, {W, W, kC}, "<f4");
  writeNpy(dir + "/expected/send_recv.npy", sendRecv, {W, kC}, "<f4");
  writeNpy(dir + "/expected/broadcast.npy", broadcast, {kC}, "<f4");
  writeNpy(dir + "/expected/all_reduce_i32.npy", counts, {4}, "<i4");
  std::string ones;
  for (int i = 0; i < 4; ++i) {
    float sum = 0;
    for (int r = 0; r < W; ++r)
      sum += w[r][i];
    ones += (i ? " " : "") + std::to_string((int)sum);
  }
  ones += "\n";
  writeFile(dir + "/expected/ones-all_reduce.txt", ones.data(), ones.size());

  // The manifest: the largest collective buffer is all_to_all's gathered
  // [W, W, 4] (or all_reduce's [24]).
  size_t maxBytes = std::max<size_t>(W * W * kC, kN) * sizeof(float);
  auto shape = [](std::vector<int> dims) {
    std::string text = "[";
    for (size_t i = 0; i < dims.size(); ++i)
      text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + "]";
  };
  auto output = [&](const char *name, const char *dtype,
                    std::vector<int> dims) {
    return std::string("    {\"name\": \"") + name + "\", \"dtype\": \"" +
           dtype + "\", \"shape\": " + shape(dims) + "}";
  };
  std::string ranks;
  for (int r = 0; r < W; ++r)
    ranks += std::string(r ? ", " : "") + "{\"file\": \"weights.rank" +
             std::to_string(r) +
             ".bin\", \"bytes\": " + std::to_string(kN * sizeof(float)) + "}";
  std::string grid = std::to_string(W);
  std::string manifest =
      std::string("{\n  \"format\": \"sluice-bundle\",\n  \"version\": \"") +
      SLUICE_VERSION_STRING +
      "\",\n  \"abi\": " + std::to_string(SLUICE_BUNDLE_ABI_VERSION) +
      ",\n  \"target\": \"" + (cuda ? "cuda" : "cpu") +
      "\",\n  \"model\": \"collectives\",\n"
      "  \"library\": \"model.so\",\n"
      "  \"world_size\": " +
      grid +
      ",\n"
      "  \"parallel\": {\"tp\": " +
      grid + ", \"sp\": false, \"grid\": [" + grid +
      "], \"axes\": [\"tp\"], \"layers\": 1},\n"
      "  \"weights\": {\"alignment\": 64, \"ranks\": [" +
      ranks +
      "]},\n"
      "  \"collective_max_bytes\": " +
      std::to_string(maxBytes) +
      ",\n"
      "  \"arena_bytes\": 4096,\n  \"gpu_architectures\": [" +
      (cuda ? "\"sm_80\", \"compute_80\"" : "") +
      "],\n"
      "  \"inputs\": [\n" +
      output("x", "float32", {kN}) +
      "\n  ],\n"
      "  \"outputs\": [\n" +
      output("all_reduce", "float32", {kN}) + ",\n" +
      output("all_gather", "float32", {2, W, kK}) + ",\n" +
      output("reduce_scatter", "float32", {2, W, kK}) + ",\n" +
      output("all_to_all", "float32", {W, W, kC}) + ",\n" +
      output("send_recv", "float32", {W, kC}) + ",\n" +
      output("broadcast", "float32", {kC}) + ",\n" +
      output("all_reduce_i32", "int32", {4}) +
      "\n  ],\n"
      "  \"kernels\": [\n"
      "    {\"name\": \"k1_all_reduce\", \"kind\": \"library\", \"op\": "
      "\"sluice.all_reduce\"}\n  ]\n}\n";
  writeFile(dir + "/manifest.json", manifest.data(), manifest.size());
  return 0;
}
