//===- sluice_gen/cuda_move_kernels.cuh - strided moves (cuda) -*- CUDA -*-===//
//
// The strided gather with a fill that cuda bundles run for a view group the
// elementwise kernel cannot plan (a transpose whose result a reshape merges)
// and for Pad in constant mode. Device code only, no CUDA runtime header:
// the unit tests run it under the host emulation (test/unit/CudaMoveEmuTest).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_MOVE_KERNELS_CUH
#define SLUICE_GEN_CUDA_MOVE_KERNELS_CUH

#include <cstdint>

/// A strided gather with a fill: out (rank <= 8, row-major, `shape`) reads
/// in[offset + sum_d (o_d - begin_d) * stride_d] where every coordinate
/// o_d - begin_d lies in [0, extent_d), else the fill. A copy of a strided
/// view (a transpose the elementwise kernel cannot plan) has begin 0 and
/// extent = shape; a constant-mode Pad has its begin pads (negative ones
/// crop) and the input's extents.
struct SluiceMoveShape {
  int64_t rank;
  int64_t shape[8], stride[8], begin[8], extent[8];
  int64_t offset;
};

/// The move of SluiceMoveShape `s` over `total` elements of T (an unsigned
/// type of the element's size); `fill` (may be null: zero bits) is read on
/// the device.
template <typename T>
__global__ void __launch_bounds__(256)
sluice_strided_move_kernel(const T *__restrict__ in, T *__restrict__ out, int64_t total,
                           SluiceMoveShape s, const T *__restrict__ fill) {
  const T pad = fill ? *fill : T(0);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = e, off = s.offset;
    bool inside = true;
    for (int64_t d = s.rank - 1; d >= 0; --d) {
      const int64_t c = rem % s.shape[d] - s.begin[d];
      rem /= s.shape[d];
      inside = inside && c >= 0 && c < s.extent[d];
      off += c * s.stride[d];
    }
    out[e] = inside ? in[off] : pad;
  }
}

#endif // SLUICE_GEN_CUDA_MOVE_KERNELS_CUH
