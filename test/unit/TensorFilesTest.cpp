//===- TensorFilesTest.cpp - .npy and .pb readers and writers -------------===//

#include "lib/support/TensorFiles.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace sluice;

namespace {
std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/" + name;
}
} // namespace

TEST(TensorFiles, NpyRoundTrip) {
  for (DType type : {DType::F32, DType::F16, DType::I64, DType::U8, DType::Bool}) {
    Tensor t = Tensor::fromDoubles(type, {2, 3}, {1, 0, 3, 4, 5, 6});
    std::string path = tempPath(std::string("t_") + dtypeName(type) + ".npy"), error;
    ASSERT_TRUE(writeNpy(path, t, error)) << error;
    Tensor back;
    ASSERT_TRUE(readNpy(path, back, error)) << error;
    EXPECT_EQ(back.dtype(), type);
    EXPECT_EQ(back.shape(), t.shape());
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_EQ(back.getDouble(i), t.getDouble(i));
  }
}

TEST(TensorFiles, NpyScalarAndVectorShapes) {
  std::string error;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, std::vector<int64_t>{5}}) {
    Tensor t(DType::F64, shape);
    std::string path = tempPath("shape.npy");
    ASSERT_TRUE(writeNpy(path, t, error));
    Tensor back;
    ASSERT_TRUE(readNpy(path, back, error)) << error;
    EXPECT_EQ(back.shape(), shape);
  }
}

TEST(TensorFiles, TruncatedNpyIsAnError) {
  Tensor t = Tensor::fromDoubles(DType::F32, {100}, std::vector<double>(100, 1.0));
  std::string path = tempPath("trunc.npy"), error;
  ASSERT_TRUE(writeNpy(path, t, error));
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(path, std::ios::binary).write(data.data(), data.size() - 10);
  Tensor back;
  EXPECT_FALSE(readNpy(path, back, error));
  EXPECT_NE(error.find("truncated data"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos);
}

TEST(TensorFiles, ProtoRoundTripKeepsName) {
  Tensor t = Tensor::fromDoubles(DType::I32, {3}, {-1, 2, 7});
  std::string path = tempPath("t.pb"), error, name;
  ASSERT_TRUE(writeTensorProtoFile(path, t, "x", error)) << error;
  Tensor back;
  ASSERT_TRUE(readTensorFile(path, back, error, &name)) << error;
  EXPECT_EQ(name, "x");
  EXPECT_EQ(back.toInt64Vector(), (std::vector<int64_t>{-1, 2, 7}));
}

TEST(TensorFiles, GarbageProtoIsAnError) {
  std::string path = tempPath("bad.pb"), error;
  std::ofstream(path, std::ios::binary) << "\xff\xff\xff\xff not a proto";
  Tensor back;
  EXPECT_FALSE(readTensorFile(path, back, error));
  EXPECT_NE(error.find("not a valid ONNX TensorProto"), std::string::npos) << error;
}

TEST(TensorFiles, MissingFileNamesThePath) {
  Tensor back;
  std::string error;
  EXPECT_FALSE(readTensorFile("/nonexistent/x.npy", back, error));
  EXPECT_NE(error.find("/nonexistent/x.npy"), std::string::npos);
}

TEST(TensorFiles, StringTensorsUseProtoStringData) {
  Tensor t(DType::String, {2});
  t.setString(0, "0.5");
  t.setString(1, "-INF");
  std::string path = tempPath("strings.pb"), error;
  ASSERT_TRUE(writeTensorProtoFile(path, t, "s", error)) << error;
  Tensor back;
  ASSERT_TRUE(readTensorProtoFile(path, back, error)) << error;
  ASSERT_EQ(back.dtype(), DType::String);
  EXPECT_EQ(back.getString(0), "0.5");
  EXPECT_EQ(back.getString(1), "-INF");
  // .npy has no variable-length strings: a clear error, not garbage.
  EXPECT_FALSE(writeNpy(tempPath("strings.npy"), t, error));
  EXPECT_NE(error.find("string"), std::string::npos) << error;
}
