//===- GpuArchTest.cpp - which of a bundle's GPU codes a device runs ------===//
//
// The decision the cuda context makes before it touches a GPU, tested
// without one.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/GpuArch.h"

#include <gtest/gtest.h>

using namespace sluice::runtime;

namespace {

/// The entry pickGpuArch chooses for capability major.minor ("" for none).
std::string picked(const std::vector<std::string> &archs, int major,
                   int minor) {
  int index = pickGpuArch(archs, major, minor);
  return index < 0 ? "" : archs[index];
}

} // namespace

TEST(GpuArch, Parses) {
  GpuArch arch;
  ASSERT_TRUE(parseGpuArch("sm_90", arch));
  EXPECT_EQ(arch.code, GpuArch::Code::Cubin);
  EXPECT_EQ(arch.major, 9);
  EXPECT_EQ(arch.minor, 0);
  ASSERT_TRUE(parseGpuArch("compute_86", arch));
  EXPECT_EQ(arch.code, GpuArch::Code::Ptx);
  EXPECT_EQ(arch.major, 8);
  EXPECT_EQ(arch.minor, 6);
  ASSERT_TRUE(parseGpuArch("sm_120", arch));
  EXPECT_EQ(arch.major, 12);
  EXPECT_EQ(arch.minor, 0);
  ASSERT_TRUE(parseGpuArch("sm_90a", arch));
  EXPECT_EQ(arch.variant, GpuArch::Variant::Specific);
  ASSERT_TRUE(parseGpuArch("compute_100f", arch));
  EXPECT_EQ(arch.variant, GpuArch::Variant::Family);
  EXPECT_EQ(arch.major, 10);
  for (const char *bad : {"sm90", "sm_", "sm_9", "sm_1000", "sm_9x", "lto_90",
                          "compute_", "sm_05", "", "sm_90b"})
    EXPECT_FALSE(parseGpuArch(bad, arch)) << bad;
}

TEST(GpuArch, CubinRunsOnItsMajorWithANewerMinor) {
  std::vector<std::string> archs = {"sm_80"};
  EXPECT_EQ(picked(archs, 8, 0), "sm_80"); // A100
  EXPECT_EQ(picked(archs, 8, 6), "sm_80"); // RTX 30xx
  EXPECT_EQ(picked(archs, 8, 9), "sm_80"); // L4, L40
  EXPECT_EQ(picked(archs, 9, 0), "");      // H100: another major
  EXPECT_EQ(picked(archs, 7, 5), "");      // T4: older
  EXPECT_EQ(picked({"sm_86"}, 8, 0), "");  // older minor
}

TEST(GpuArch, PtxIsCompiledForItsVersionOrNewer) {
  std::vector<std::string> archs = {"compute_80"};
  EXPECT_EQ(picked(archs, 8, 0), "compute_80");
  EXPECT_EQ(picked(archs, 9, 0), "compute_80");
  EXPECT_EQ(picked(archs, 12, 0), "compute_80");
  EXPECT_EQ(picked(archs, 7, 5), "");
}

TEST(GpuArch, PrefersACubinThenTheNewest) {
  // What the cuda target builds: sm_80, sm_90 cubins and compute_90 PTX.
  std::vector<std::string> archs = {"sm_80", "sm_90", "compute_90"};
  EXPECT_EQ(picked(archs, 8, 0), "sm_80");
  EXPECT_EQ(picked(archs, 8, 9), "sm_80");
  EXPECT_EQ(picked(archs, 9, 0), "sm_90");       // H100, H200: no JIT
  EXPECT_EQ(picked(archs, 10, 0), "compute_90"); // B200: JIT from PTX
  EXPECT_EQ(picked(archs, 12, 0), "compute_90");
  EXPECT_EQ(picked(archs, 7, 0), "");            // V100
  EXPECT_EQ(picked({"compute_80", "compute_90", "sm_80"}, 8, 6), "sm_80");
  EXPECT_EQ(picked({"compute_80", "compute_90"}, 9, 0), "compute_90");
}

TEST(GpuArch, SuffixesRestrict) {
  EXPECT_EQ(picked({"sm_90a"}, 9, 0), "sm_90a");
  EXPECT_EQ(picked({"sm_90a"}, 9, 1), ""); // arch-specific: exact only
  EXPECT_EQ(picked({"compute_90a"}, 10, 0), "");
  EXPECT_EQ(picked({"sm_100f"}, 10, 3), "sm_100f"); // family: same major
  EXPECT_EQ(picked({"compute_100f"}, 12, 0), "");
  EXPECT_EQ(picked({"sm_90", "sm_90a"}, 9, 0), "sm_90a");
  EXPECT_EQ(picked({"ampere", "sm_80"}, 8, 0), "sm_80"); // skips bad entries
}

TEST(GpuArch, MismatchNamesBundleGpuAndCodes) {
  EXPECT_EQ(gpuArchMismatch("/b/m.sluice", "Tesla V100-SXM2-16GB", 7, 0,
                            {"sm_80", "sm_90", "compute_90"}),
            "bundle '/b/m.sluice' cannot run on Tesla V100-SXM2-16GB (sm_70): "
            "it carries code for [sm_80, sm_90, compute_90] (a cubin runs on "
            "its major version with the same or a newer minor, PTX on its "
            "version or newer): compile it for this GPU (sluice-compile "
            "--gpu-arch=sm_70)");
}
