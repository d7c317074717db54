//===- Resize.h - the sampling rule of ONNX Resize --------------*- C++ -*-===//
//
// Where each output position of a resized axis reads the input: the source
// coordinate from the coordinate transformation, then the nearest / linear /
// cubic taps and weights around it. The evaluator applies it at run time;
// the cpu target computes the same tables at compile time, so both follow
// one definition.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_REFERENCE_RESIZE_H
#define SLUICE_LIB_REFERENCE_RESIZE_H

#include "dialects/sluice/SluiceOps.h"

#include <vector>

namespace sluice {

/// How one output position along one axis reads the input: taps (clamped to
/// the axis) with their weights, or the extrapolation value.
struct ResizeSample {
  std::vector<int64_t> taps;
  std::vector<double> weights;
  bool extrapolate = false;
};

/// The samples of one axis of `resize` resized from `in` to `out` elements
/// with `scale` (and, for tf_crop_and_resize, the roi's start and end on
/// that axis), following the ONNX reference.
std::vector<ResizeSample> resizeAxis(ResizeOp resize, int64_t in, int64_t out,
                                     double scale, double roiStart, double roiEnd);

} // namespace sluice

#endif // SLUICE_LIB_REFERENCE_RESIZE_H
