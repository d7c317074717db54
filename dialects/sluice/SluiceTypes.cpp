//===- SluiceTypes.cpp - shape and type helpers shared by op families -----===//

#include "dialects/sluice/SluiceTypes.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

namespace sluice {

bool areCompatibleResultTypes(TypeRange inferred, TypeRange declared) {
  if (inferred.size() != declared.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, declared)) {
    // Sequences and optionals are compatible when what they hold is.
    if (auto sa = dyn_cast<SequenceType>(a)) {
      auto sb = dyn_cast<SequenceType>(b);
      if (!sb || !areCompatibleResultTypes(TypeRange{sa.getElementType()},
                                           TypeRange{sb.getElementType()}))
        return false;
      continue;
    }
    if (auto oa = dyn_cast<OptionalType>(a)) {
      auto ob = dyn_cast<OptionalType>(b);
      if (!ob || !areCompatibleResultTypes(TypeRange{oa.getElementType()},
                                           TypeRange{ob.getElementType()}))
        return false;
      continue;
    }
    auto ta = dyn_cast<TensorType>(a);
    auto tb = dyn_cast<TensorType>(b);
    if (!ta || !tb) {
      if (a != b)
        return false;
      continue;
    }
    if (ta.getElementType() != tb.getElementType())
      return false;
    if (!ta.hasRank() || !tb.hasRank())
      continue;
    if (ta.getRank() != tb.getRank())
      return false;
    for (auto [da, db] : llvm::zip(ta.getShape(), tb.getShape()))
      if (!ShapedType::isDynamic(da) && !ShapedType::isDynamic(db) && da != db)
        return false;
  }
  return true;
}

FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (ShapedType::isDynamic(da)) {
      out[i] = db;
    } else if (ShapedType::isDynamic(db)) {
      out[i] = da;
    } else {
      return failure();
    }
  }
  return out;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += "x";
    s += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return "[" + s + "]";
}

FailureOr<std::optional<SmallVector<int64_t>>>
broadcastTypes(std::optional<Location> loc, TypeRange types) {
  SmallVector<int64_t> shape;
  for (Type t : types) {
    auto tensor = dyn_cast<TensorType>(t);
    if (!tensor || !tensor.hasRank())
      return std::optional<SmallVector<int64_t>>();
  }
  for (Type t : types) {
    auto tensor = cast<TensorType>(t);
    auto next = broadcastShapes(shape, tensor.getShape());
    if (failed(next)) {
      (void)emitOptionalError(loc, "shapes ", shapeString(shape), " and ",
                              shapeString(tensor.getShape()),
                              " are not broadcast-compatible");
      return failure();
    }
    shape = *next;
  }
  return std::optional<SmallVector<int64_t>>(shape);
}

TensorType makeTensorType(std::optional<ArrayRef<int64_t>> shape,
                          Type element) {
  if (!shape)
    return UnrankedTensorType::get(element);
  return RankedTensorType::get(*shape, element);
}

FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return failure();
  return axis < 0 ? axis + rank : axis;
}

std::optional<SmallVector<int64_t>> getConstantIntValues(Value value) {
  if (!value)
    return std::nullopt;
  ElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  if (!isa<IntegerType>(attr.getElementType()))
    return std::nullopt;
  SmallVector<int64_t> values;
  auto maybeValues = attr.tryGetValues<APInt>();
  if (!maybeValues)
    return std::nullopt;
  bool isUnsigned = attr.getElementType().isUnsignedInteger() ||
                    attr.getElementType().isInteger(1);
  for (const APInt &v : *maybeValues)
    values.push_back(isUnsigned ? (int64_t)v.getZExtValue() : v.getSExtValue());
  return values;
}

std::optional<SmallVector<double>> getConstantFloatValues(Value value) {
  if (!value)
    return std::nullopt;
  ElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<double> values;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    // The importer keeps float vectors (Resize scales, ...) as blobs, which
    // have no APFloat iterator: read f32 blobs directly.
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    int64_t count = resource.getType().getNumElements();
    if (!blob || !resource.getElementType().isF32() ||
        (int64_t)blob->getData().size() != count * (int64_t)sizeof(float))
      return std::nullopt;
    for (int64_t i = 0; i < count; ++i) {
      float v;
      std::memcpy(&v, blob->getData().data() + i * sizeof(float), sizeof(float));
      values.push_back(v);
    }
    return values;
  }
  if (isa<FloatType>(attr.getElementType())) {
    auto maybeValues = attr.tryGetValues<APFloat>();
    if (!maybeValues)
      return std::nullopt;
    for (const APFloat &v : *maybeValues)
      values.push_back(v.convertToDouble());
    return values;
  }
  auto ints = getConstantIntValues(value);
  if (!ints)
    return std::nullopt;
  for (int64_t v : *ints)
    values.push_back((double)v);
  return values;
}

std::pair<int64_t, int64_t> shapeRange(int64_t rank, int64_t start,
                                       std::optional<int64_t> end) {
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t s = clamp(start), e = end ? clamp(*end) : rank;
  return {s, std::max(s, e)};
}

std::pair<int64_t, int64_t> sliceRange(int64_t dim, int64_t start, int64_t end,
                                       int64_t step) {
  if (dim == 0)
    return {0, 0};
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? (end - start - 1) / step + 1 : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  // Any step at least as long as the dim takes one element; INT64_MIN
  // cannot be negated.
  int64_t stride = step == INT64_MIN ? INT64_MAX : -step;
  return {start, start > end ? (start - end - 1) / stride + 1 : 0};
}

std::optional<SmallVector<int64_t>> getShape(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return std::nullopt;
  return SmallVector<int64_t>(type.getShape());
}

FailureOr<Type> joinTypes(Type a, Type b) {
  if (auto sa = dyn_cast<SequenceType>(a)) {
    auto sb = dyn_cast<SequenceType>(b);
    if (!sb)
      return failure();
    auto element = joinTypes(sa.getElementType(), sb.getElementType());
    if (failed(element))
      return failure();
    return Type(SequenceType::get(a.getContext(), cast<TensorType>(*element)));
  }
  if (auto oa = dyn_cast<OptionalType>(a)) {
    auto ob = dyn_cast<OptionalType>(b);
    if (!ob)
      return failure();
    auto element = joinTypes(oa.getElementType(), ob.getElementType());
    if (failed(element))
      return failure();
    return Type(OptionalType::get(a.getContext(), *element));
  }
  auto ta = dyn_cast<TensorType>(a), tb = dyn_cast<TensorType>(b);
  if (!ta || !tb || ta.getElementType() != tb.getElementType())
    return failure();
  if (!ta.hasRank() || !tb.hasRank() || ta.getRank() != tb.getRank())
    return Type(UnrankedTensorType::get(ta.getElementType()));
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
    shape.push_back(x == y ? x : ShapedType::kDynamic);
  return Type(RankedTensorType::get(shape, ta.getElementType()));
}

Type relaxShapes(Type type) {
  if (auto sequence = dyn_cast<SequenceType>(type))
    return SequenceType::get(
        type.getContext(),
        UnrankedTensorType::get(sequence.getElementType().getElementType()));
  if (auto optional = dyn_cast<OptionalType>(type))
    return OptionalType::get(type.getContext(),
                             relaxShapes(optional.getElementType()));
  auto tensor = dyn_cast<TensorType>(type);
  if (!tensor || !tensor.hasRank())
    return type;
  return RankedTensorType::get(
      SmallVector<int64_t>(tensor.getRank(), ShapedType::kDynamic),
      tensor.getElementType());
}

} // namespace sluice
