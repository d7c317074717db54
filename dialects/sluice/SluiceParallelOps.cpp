//===- SluiceParallelOps.cpp - sharded weights and collectives ------------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

//===----------------------------------------------------------------------===//
// ShardConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ShardConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                ValueRange, DictionaryAttr attrs,
                                                OpaqueProperties properties, RegionRange,
                                                SmallVectorImpl<Type> &inferred) {
  ShardConstantOp::Adaptor adaptor(ValueRange{}, attrs, properties);
  if (!adaptor.getValueAttr() || !adaptor.getAxisAttr() || !adaptor.getPartsAttr())
    return emitOptionalError(loc, "shard_constant needs value, axis and parts");
  auto type = cast<ShapedType>(adaptor.getValue().getType());
  int64_t axis = adaptor.getAxis(), parts = adaptor.getParts();
  if (axis < 0 || axis >= type.getRank() || parts < 1)
    return emitOptionalError(loc, "shard_constant axis ", axis, " or parts ", parts,
                             " out of range for rank ", type.getRank());
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] /= parts;
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult ShardConstantOp::verify() {
  auto type = cast<ShapedType>(getValue().getType());
  int64_t axis = getAxis(), parts = getParts(), groups = getGroups();
  if (axis < 0 || axis >= type.getRank())
    return emitOpError() << "axis " << axis << " out of range for rank " << type.getRank();
  if (parts < 1 || groups < 1)
    return emitOpError("parts and groups must be at least 1");
  if (type.getDimSize(axis) % (parts * groups) != 0)
    return emitOpError() << "dim " << axis << " (" << type.getDimSize(axis)
                         << ") is not divisible by " << parts << " parts x " << groups
                         << " groups";
  return success();
}

SmallVector<std::pair<int64_t, int64_t>> ShardConstantOp::blocksOf(int64_t rank) {
  auto type = cast<ShapedType>(getValue().getType());
  int64_t extent = type.getDimSize(getAxis()), groups = getGroups();
  int64_t group = extent / groups, block = group / getParts();
  SmallVector<std::pair<int64_t, int64_t>> blocks;
  for (int64_t g = 0; g < groups; ++g)
    blocks.push_back({g * group + rank * block, g * group + (rank + 1) * block});
  return blocks;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {

/// The input type with dim `axis` multiplied (gather) or divided (scatter)
/// by the group size.
LogicalResult resizeAxis(std::optional<Location> loc, Type input, int64_t axis,
                         int64_t groupSize, bool gather, SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(input);
  if (!type) {
    inferred.push_back(input);
    return success();
  }
  if (axis < 0 || axis >= type.getRank())
    return emitOptionalError(loc, "collective axis ", axis, " out of range for rank ",
                             type.getRank());
  if (groupSize < 1)
    return emitOptionalError(loc, "group_size must be at least 1");
  SmallVector<int64_t> shape(type.getShape());
  if (!ShapedType::isDynamic(shape[axis]))
    shape[axis] = gather ? shape[axis] * groupSize : shape[axis] / groupSize;
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult verifyGroup(Operation *op, int64_t groupSize) {
  if (groupSize < 1)
    return op->emitOpError("group_size must be at least 1");
  return success();
}

} // namespace

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                            AllReduceOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AllReduceOp::verify() { return verifyGroup(*this, getGroupSize()); }

LogicalResult AllGatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            AllGatherOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return resizeAxis(loc, adaptor.getInput().getType(), adaptor.getAxis(),
                    adaptor.getGroupSize(), /*gather=*/true, inferred);
}

LogicalResult AllGatherOp::verify() { return verifyGroup(*this, getGroupSize()); }

LogicalResult ReduceScatterOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                ReduceScatterOp::Adaptor adaptor,
                                                SmallVectorImpl<Type> &inferred) {
  return resizeAxis(loc, adaptor.getInput().getType(), adaptor.getAxis(),
                    adaptor.getGroupSize(), /*gather=*/false, inferred);
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyGroup(*this, getGroupSize())))
    return failure();
  auto type = cast<RankedTensorType>(getInput().getType());
  int64_t extent = type.getDimSize(getAxis());
  if (!ShapedType::isDynamic(extent) && extent % getGroupSize() != 0)
    return emitOpError() << "dim " << getAxis() << " (" << extent
                         << ") is not divisible by the group size " << getGroupSize();
  return success();
}

LogicalResult AllToAllOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                           AllToAllOp::Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyGroup(*this, getGroupSize())))
    return failure();
  auto type = cast<RankedTensorType>(getInput().getType());
  if (type.getRank() == 0 ||
      (!type.isDynamicDim(0) && type.getDimSize(0) % getGroupSize() != 0))
    return emitOpError("dim 0 must be divisible by the group size");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceParallelOps.cpp.inc"
