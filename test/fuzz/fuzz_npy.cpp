//===- fuzz_npy.cpp - libFuzzer target: the .npy reader --------------------===//
//
// Inputs users hand to sluice-run: any bytes must read as a tensor whose
// storage matches its shape, or fail with a message, without allocating
// more than the file could hold.
//
//===----------------------------------------------------------------------===//

#include "lib/support/TensorFiles.h"
#include "test/fuzz/FuzzFile.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = sluice::fuzz::writeInput(data, size, ".npy");
  if (path.empty())
    return 0;
  sluice::Tensor tensor;
  std::string error;
  if (sluice::readNpy(path, tensor, error)) {
    if (tensor.byteSize() > size)
      __builtin_trap(); // more data than the file held
  } else if (error.empty()) {
    __builtin_trap();
  }
  return 0;
}
