//===- Reduce.h - element types and sums of collectives ------- -*- C++ -*-===//
//
// The arithmetic of the MPI transport, apart from MPI so that it is tested on
// its own: the ABI's element types (SluiceCommDType), how a collective's
// elements split into one block per rank, and the sum of several buffers.
//
// Sums are deterministic: the owner of a block adds the ranks' contributions
// in rank order, and every other rank receives that result, so replicated
// tensors stay bit-identical across ranks. float16 and bfloat16 are summed
// in float and rounded once (to nearest even), as NCCL does.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_COMM_REDUCE_H
#define SLUICE_RUNTIME_COMM_REDUCE_H

#include <cstddef>
#include <cstdint>

namespace sluice::runtime::comm {

/// Bytes of one element of `dtype` (a SluiceCommDType), 0 if unknown.
size_t dtypeBytes(int32_t dtype);
/// "f32", "f16" ... for messages ("?" if unknown).
const char *dtypeName(int32_t dtype);

/// The first element of block `block` when `count` elements split into
/// `parts` blocks whose sizes differ by at most one (later blocks larger).
inline size_t blockBegin(size_t count, int32_t parts, int32_t block) {
  // count / parts * block + the remainder's share, without count * block
  // overflowing.
  size_t base = count / (size_t)parts, extra = count % (size_t)parts;
  return base * (size_t)block + extra * (size_t)block / (size_t)parts;
}
inline size_t blockSize(size_t count, int32_t parts, int32_t block) {
  return blockBegin(count, parts, block + 1) - blockBegin(count, parts, block);
}

/// dst[i] = sources[0][i] + sources[1][i] + ... in that order, for `count`
/// elements of `dtype`. dst may be one of the sources (each element is read
/// from every source before it is written). Integers wrap around.
void sumInto(void *dst, const void *const *sources, size_t numSources,
             size_t count, int32_t dtype);

/// IEEE half and bfloat16 from and to float (round to nearest even; NaN
/// stays NaN).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);

} // namespace sluice::runtime::comm

#endif // SLUICE_RUNTIME_COMM_REDUCE_H
