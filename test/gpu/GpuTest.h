//===- GpuTest.h - what every GPU test program shares ---------*- CUDA -*-===//
//
// The CUDA error check, the device buffer and the skip rule of the test
// programs in test/gpu: without a CUDA device they print one line and exit
// 77, ctest's SKIP_RETURN_CODE for the "gpu" label.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TEST_GPU_GPUTEST_H
#define SLUICE_TEST_GPU_GPUTEST_H

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

/// Exits 1 with the failing call and CUDA's message when `call` fails.
#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t err_ = (call);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_));     \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

namespace sluice_gpu_test {

/// What main returns on a machine without a CUDA device (ctest: skipped).
constexpr int kSkipped = 77;

/// Whether the machine has no CUDA device; says so on stdout when it has none.
inline bool noDevice() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("no CUDA device: skipped\n");
    return true;
  }
  return false;
}

/// A zeroed device array of `n` T (a copy of a host array when given one)
/// that frees itself.
template <typename T> struct DeviceBuffer {
  T *ptr = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n) : count(n) {
    CHECK_CUDA(cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)));
    CHECK_CUDA(cudaMemset(ptr, 0, std::max<size_t>(n, 1) * sizeof(T)));
  }
  DeviceBuffer(const T *host, size_t n) : DeviceBuffer(n) {
    CHECK_CUDA(cudaMemcpy(ptr, host, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.data(), host.size()) {}
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { cudaFree(ptr); }
  /// The array, copied back to the host.
  std::vector<T> read() const {
    std::vector<T> host(count);
    CHECK_CUDA(cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
};

} // namespace sluice_gpu_test

#endif // SLUICE_TEST_GPU_GPUTEST_H
