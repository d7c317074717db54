//===- Access.h - a kernel's strided access to one buffer -----*- C++ -*-===//
//
// Part of the kernel model (docs/architecture.md, "Layers"): how generated
// code reaches the elements of one leaf or output of a kernel group. A leaf
// seen through view ops (a transpose, a slice, the head split of a QKV GEMM)
// is the buffer's pointer plus an element offset and one stride per dim of
// the iteration space it is read in (0 on broadcast dims). Every group plan
// of both targets (elementwise, GEMM epilogue, row, attention) describes its
// operands with this one type.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_KERNEL_ACCESS_H
#define SLUICE_LIB_KERNEL_ACCESS_H

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::kernel {

/// `pointer[offset + sum_d index[d] * strides[d]]` is element `index` of the
/// accessed value. `pointer` is the C++ name generated code holds the
/// buffer in ("in0", "out1", a constant array "c2").
struct Access {
  std::string pointer;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

} // namespace sluice::kernel

#endif // SLUICE_LIB_KERNEL_ACCESS_H
