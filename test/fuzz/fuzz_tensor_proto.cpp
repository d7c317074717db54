//===- fuzz_tensor_proto.cpp - libFuzzer target: the .pb TensorProto reader -===//
//
// ONNX's TensorProto files (the backend tests' format, and sluice-run's
// inputs): any bytes must read or fail with a message; a hostile shape must
// not allocate its claimed size.
//
//===----------------------------------------------------------------------===//

#include "lib/support/TensorFiles.h"
#include "test/fuzz/FuzzFile.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = sluice::fuzz::writeInput(data, size, ".pb");
  if (path.empty())
    return 0;
  sluice::Tensor tensor;
  std::string error, name;
  if (!sluice::readTensorProtoFile(path, tensor, error, &name) && error.empty())
    __builtin_trap();
  return 0;
}
