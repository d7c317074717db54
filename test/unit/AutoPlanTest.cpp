//===- AutoPlanTest.cpp - the automatic plan's inputs: sizes, cluster files ===//
//
// The parts of passes/parallel/AutoPlan that are not IR: --device-memory's
// byte sizes and the cluster file reader (every field, one error naming
// the field and the file). The plan itself is tested on real models by
// test/plan (lit) and plan-auto-* (MPI).
//
//===----------------------------------------------------------------------===//

#include "passes/parallel/AutoPlan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

using namespace sluice::parallel;

namespace {

TEST(AutoPlan, ByteSizes) {
  int64_t b = 0;
  ASSERT_TRUE(parseByteSize("80GB", b));
  EXPECT_EQ(b, 80000000000);
  ASSERT_TRUE(parseByteSize("80GiB", b));
  EXPECT_EQ(b, 80LL << 30);
  ASSERT_TRUE(parseByteSize("512MB", b));
  EXPECT_EQ(b, 512000000);
  ASSERT_TRUE(parseByteSize("4KiB", b));
  EXPECT_EQ(b, 4096);
  ASSERT_TRUE(parseByteSize("1.5GB", b));
  EXPECT_EQ(b, 1500000000);
  ASSERT_TRUE(parseByteSize("123456", b));
  EXPECT_EQ(b, 123456);
  for (const char *bad : {"", "0", "-5GB", "80XB", "GB", "1e30", "nan"})
    EXPECT_FALSE(parseByteSize(bad, b)) << bad;
}

/// Writes `text` to a file under the test's temporary folder.
std::string writeFile(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char *kComplete = R"({
  "device": {"flops_per_second": 312e12, "memory_bytes_per_second": 2.0e12,
             "memory_bytes": 40e9},
  "devices_per_node": 4, "nodes": 2,
  "intra_node": {"bytes_per_second": 300e9, "latency_seconds": 2e-6},
  "inter_node": {"bytes_per_second": 25e9, "latency_seconds": 6e-6}
})";

TEST(AutoPlan, ClusterFile) {
  ClusterModel c;
  std::string error;
  ASSERT_TRUE(readClusterFile(writeFile("complete.json", kComplete), c, error)) << error;
  EXPECT_EQ(c.device.flopsPerSecond, 312e12);
  EXPECT_EQ(c.device.bytesPerSecond, 2.0e12);
  EXPECT_EQ(c.device.memoryBytes, 40e9);
  EXPECT_EQ(c.device.launchSeconds, DeviceModel().launchSeconds); // optional
  EXPECT_EQ(c.devicesPerNode, 4);
  EXPECT_EQ(c.nodes, 2);
  EXPECT_EQ(c.intraNode.bytesPerSecond, 300e9);
  EXPECT_EQ(c.intraNode.latencySeconds, 2e-6);
  EXPECT_EQ(c.interNode.bytesPerSecond, 25e9);
  EXPECT_EQ(c.interNode.latencySeconds, 6e-6);
  // A group of 8 consecutive ranks spans both nodes: the network.
  EXPECT_EQ(&c.linkFor(4), &c.intraNode);
  EXPECT_EQ(&c.linkFor(8), &c.interNode);
}

TEST(AutoPlan, ClusterFileErrors) {
  struct Case {
    const char *from, *to, *message;
  } cases[] = {
      {"\"nodes\": 2,", "", "cluster field 'nodes' is missing"},
      {"\"nodes\": 2", "\"nodes\": 0", "cluster field 'nodes' must be a positive integer"},
      {"\"latency_seconds\": 2e-6", "\"latency\": 2e-6",
       "cluster field 'intra_node.latency_seconds' is missing"},
      {"\"memory_bytes\": 40e9", "\"memory_bytes\": \"40GB\"",
       "cluster field 'device.memory_bytes' must be a positive number"},
      {"\"flops_per_second\": 312e12", "\"flops_per_second\": -1",
       "cluster field 'device.flops_per_second' must be a positive number"},
      {"\"inter_node\": {", "\"inter_node\": 5, \"x\": {",
       "cluster field 'inter_node' must be an object"},
  };
  for (const Case &k : cases) {
    std::string text = kComplete;
    size_t at = text.find(k.from);
    ASSERT_NE(at, std::string::npos) << k.from;
    text.replace(at, strlen(k.from), k.to);
    std::string path = writeFile("bad.json", text);
    ClusterModel c;
    std::string error;
    EXPECT_FALSE(readClusterFile(path, c, error)) << k.message;
    EXPECT_NE(error.find(path + ": " + k.message), std::string::npos) << error;
  }
  ClusterModel c;
  std::string error;
  EXPECT_FALSE(readClusterFile(writeFile("notjson.json", "{nodes: 1"), c, error));
  EXPECT_NE(error.find("not JSON"), std::string::npos) << error;
  EXPECT_FALSE(readClusterFile(::testing::TempDir() + "/absent.json", c, error));
  EXPECT_NE(error.find("cannot read the cluster file"), std::string::npos) << error;
}

TEST(AutoPlan, Describe) {
  PlanCandidate c;
  EXPECT_EQ(c.describe(), "tp=1");
  c.tp = 4;
  c.sp = true;
  c.pp = 2;
  c.microBatches = 8;
  EXPECT_EQ(c.describe(), "tp=4 sp pp=2 M=8");
}

} // namespace
