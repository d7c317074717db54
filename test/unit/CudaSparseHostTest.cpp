//===- CudaSparseHostTest.cpp - host part of the cuda 2:4 GEMMs -----------===//
//
// The plain C++ parts of sluice_gen/cuda_sparse.cuh, which run without a
// GPU: the 2:4 check the compiler makes before it emits a sparse GEMM
// (sluice_gen/layout/sparse_2_4.h), and the dlopen search whose failure is
// the dense fallback of bundles on machines without cuSPARSELt
// (sluice_gen/cuda_sparse_load.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/include/sluice_gen/cuda_sparse_load.h"
#include "codegen/include/sluice_gen/layout/sparse_2_4.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

/// A K x N f32 matrix whose every group of four rows keeps rows 1 and 3 of
/// each column (row stride `ld`).
std::vector<float> pattern24(int64_t k, int64_t n, int64_t ld) {
  std::vector<float> w(k * ld, 0.0f);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t j = 0; j < n; ++j)
      if (r % 4 == 1 || r % 4 == 3)
        w[r * ld + j] = 1.0f + r + 0.5f * j;
  return w;
}

TEST(CudaSparseHost, TwoOfFourAlongK) {
  std::vector<float> w = pattern24(8, 3, 3);
  EXPECT_TRUE(sluice_is_2_4(w.data(), 4, 8, 3, 3));
  // A third nonzero in the second group of column 2.
  w[4 * 3 + 2] = 0.25f;
  EXPECT_FALSE(sluice_is_2_4(w.data(), 4, 8, 3, 3));
  // -0.0 is zero.
  w[4 * 3 + 2] = -0.0f;
  EXPECT_TRUE(sluice_is_2_4(w.data(), 4, 8, 3, 3));
  // The groups run along K: three nonzero rows among four are not 2:4, however
  // the columns look.
  std::vector<float> rows(8 * 4, 0.0f);
  for (int64_t j = 0; j < 4; ++j)
    rows[0 * 4 + j] = rows[1 * 4 + j] = rows[2 * 4 + j] = 1.0f;
  EXPECT_FALSE(sluice_is_2_4(rows.data(), 4, 8, 4, 4));
}

TEST(CudaSparseHost, RowStrideAndHalf) {
  // Columns beyond N (ld > N) are not looked at.
  std::vector<float> w = pattern24(4, 2, 5);
  w[0 * 5 + 4] = w[2 * 5 + 4] = w[1 * 5 + 4] = 7.0f;
  EXPECT_TRUE(sluice_is_2_4(w.data(), 4, 4, 2, 5));
  EXPECT_FALSE(sluice_is_2_4(w.data(), 4, 4, 5, 5));
  // f16 bits: 0x8000 is -0, 0x3c00 is 1.
  std::vector<uint16_t> h = {0x3c00, 0x8000, 0x0000, 0x3c00};
  EXPECT_TRUE(sluice_is_2_4(h.data(), 2, 4, 1, 1));
  h[1] = 0x0001; // the smallest subnormal is not zero
  EXPECT_FALSE(sluice_is_2_4(h.data(), 2, 4, 1, 1));
  // K not a multiple of 4 has no 2:4 groups.
  EXPECT_FALSE(sluice_is_2_4(w.data(), 4, 3, 2, 5));
}

TEST(CudaSparseHost, SearchOrder) {
  unsetenv("SLUICE_CUSPARSELT_LIB");
  std::vector<std::string> paths = sluice_cusparselt_paths("/opt/pip/nvidia/cu13/lib");
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], "libcusparseLt.so.0");
  EXPECT_EQ(paths[1], "/opt/pip/nvidia/cu13/lib/libcusparseLt.so.0");
  EXPECT_EQ(sluice_cusparselt_paths("").size(), 1u);
  setenv("SLUICE_CUSPARSELT_LIB", "/somewhere/libcusparseLt.so.0", 1);
  paths = sluice_cusparselt_paths(nullptr);
  unsetenv("SLUICE_CUSPARSELT_LIB");
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], "/somewhere/libcusparseLt.so.0");
  EXPECT_EQ(paths[1], "libcusparseLt.so.0");
}

TEST(CudaSparseHost, LoadsTheFirstLibraryWithEverySymbol) {
  const char *names[] = {"cos", "sin"};
  void *fns[2] = {nullptr, nullptr};
  std::string why;
  void *lib =
      sluice_dlopen_first({"/nonexistent/libcusparseLt.so.0", "libm.so.6"}, names, 2, fns, why);
  ASSERT_NE(lib, nullptr) << why;
  ASSERT_NE(fns[0], nullptr);
  EXPECT_DOUBLE_EQ(((double (*)(double))fns[0])(0.0), 1.0);
  EXPECT_DOUBLE_EQ(((double (*)(double))fns[1])(0.0), 0.0);
  // The failed try before it is recorded, not fatal.
  EXPECT_NE(why.find("/nonexistent/libcusparseLt.so.0"), std::string::npos) << why;
  dlclose(lib);
}

TEST(CudaSparseHost, FallbackSaysWhyEachTryFailed) {
  // The dense fallback: nothing loads with every symbol. libm lacks the
  // cuSPARSELt entry point, the other files do not exist.
  const char *names[] = {"cos", "cusparseLtInit"};
  void *fns[2] = {nullptr, nullptr};
  std::string why;
  setenv("SLUICE_CUSPARSELT_LIB", "libm.so.6", 1);
  std::vector<std::string> paths = sluice_cusparselt_paths("/nonexistent/cu13/lib");
  unsetenv("SLUICE_CUSPARSELT_LIB");
  paths[1] = "/nonexistent/libcusparseLt.so.0"; // not the machine's loader path
  EXPECT_EQ(sluice_dlopen_first(paths, names, 2, fns, why), nullptr);
  EXPECT_NE(why.find("libm.so.6: no symbol cusparseLtInit"), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/libcusparseLt.so.0: "), std::string::npos) << why;
  EXPECT_NE(why.find("/nonexistent/cu13/lib/libcusparseLt.so.0: "), std::string::npos) << why;
}

} // namespace
