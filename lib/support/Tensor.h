//===- Tensor.h - host tensors ----------------------------------*- C++ -*-===//
//
// A dense, row-major host tensor with a runtime element type. The evaluator,
// the tensor file readers (.npy/.pb) and the tools share it. Storage is
// reference-counted and may alias memory owned elsewhere (a weight blob in an
// MLIR context, a memory-mapped file), so reshapes and constants cost nothing.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_SUPPORT_TENSOR_H
#define SLUICE_LIB_SUPPORT_TENSOR_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice {

/// Element types the evaluator supports. String tensors hold one
/// std::string per element (ONNX STRING); only Cast and the tensor files see
/// them, since the dialect lets no other op take strings, so the byte-wise
/// paths (memcpy, rawData) never meet them. I4 / U4 (ONNX INT4 / UINT4)
/// take one byte per element here (sign- or zero-extended); ONNX files and
/// bundles pack them two per byte, low nibble first (packNibbles). F8E4M3
/// is ONNX FLOAT8E4M3FN (one byte: sign, 4 exponent bits with bias 7, 3
/// mantissa bits; no infinities, NaN 0x7F / 0xFF, largest finite 448), the
/// fp8 format of quantization; it is a float type (getDouble / setDouble).
enum class DType : uint8_t {
  F32, F16, BF16, F64, I8, I16, I32, I64, U8, U16, U32, U64, Bool, String, I4, U4,
  F8E4M3
};

size_t dtypeSize(DType type);
const char *dtypeName(DType type);
bool isFloatDType(DType type);
bool isUnsignedDType(DType type);
/// Parses names as dtypeName prints them ("f32", "i64", "bool", ...).
std::optional<DType> parseDType(const std::string &name);

/// Whether `type` is a 4-bit integer (I4, U4).
bool isNibbleDType(DType type);
/// The `count` 4-bit values of `elements` (one per byte, the low nibble
/// used) packed two per byte, low nibble first: ceil(count / 2) bytes.
std::vector<uint8_t> packNibbles(const void *elements, int64_t count);
/// The inverse of packNibbles: one byte per element, sign-extended when
/// `isSigned`, into `elements` (count bytes).
void unpackNibbles(const void *packed, int64_t count, bool isSigned, void *elements);

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);
/// The value of an E4M3FN byte (NaN for 0x7F / 0xFF).
float float8E4M3ToFloat(uint8_t bits);
/// `value` rounded to E4M3FN as ONNX Cast specifies: to nearest, ties to
/// even. Beyond the largest finite value (448; 464 still rounds to it):
/// +-448 when `saturate`, else NaN; infinities likewise; NaN stays NaN.
uint8_t floatToFloat8E4M3(float value, bool saturate = true);

/// Renders a shape as "2x3x4" ("scalar" for rank 0).
std::string shapeToString(const std::vector<int64_t> &shape);

class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor.
  Tensor(DType type, std::vector<int64_t> shape);
  /// A tensor that aliases `data`, kept alive by `owner` (may be null for
  /// memory that outlives every use, such as a context's resource blob).
  static Tensor alias(DType type, std::vector<int64_t> shape, const void *data,
                      std::shared_ptr<const void> owner);
  /// A tensor holding a copy of `data`.
  static Tensor copyOf(DType type, std::vector<int64_t> shape, const void *data);
  /// A rank-1 i64 tensor.
  static Tensor fromInt64(const std::vector<int64_t> &values);
  /// A rank-0 tensor holding `value` converted to `type`.
  static Tensor scalar(DType type, double value);

  bool valid() const { return data_ != nullptr || numElements() == 0; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t rank() const { return (int64_t)shape_.size(); }
  int64_t dim(int64_t i) const { return shape_[i]; }
  int64_t numElements() const;
  size_t byteSize() const { return numElements() * dtypeSize(dtype_); }
  /// Row-major strides in elements.
  std::vector<int64_t> strides() const;

  const void *rawData() const { return data_; }
  /// Writable storage; copies first if the storage is shared or aliased.
  void *mutableData();
  template <typename T> const T *data() const { return static_cast<const T *>(data_); }
  template <typename T> T *mutableData() { return static_cast<T *>(mutableData()); }

  /// Element access through double (floats) or int64 (integers, bool).
  /// Conversions follow ONNX Cast: float to int truncates toward zero.
  double getDouble(int64_t index) const;
  int64_t getInt(int64_t index) const;
  void setDouble(int64_t index, double value);
  void setInt(int64_t index, int64_t value);

  /// String elements (DType::String only). getDouble/getInt on strings
  /// parse them and setDouble/setInt format them, so castTo works both ways.
  const std::string &getString(int64_t index) const;
  void setString(int64_t index, std::string value);

  /// Same storage, new shape (element count must match).
  Tensor reshaped(std::vector<int64_t> shape) const;
  /// The element ranges [lo, hi) along `axis`, concatenated in order along
  /// it (one rank's blocks of a split weight; a slice when there is one
  /// range). Ranges must lie within the dim; not for string tensors.
  Tensor takeAlong(int64_t axis, const std::vector<std::pair<int64_t, int64_t>> &ranges) const;
  /// Element-type conversion with ONNX Cast semantics.
  Tensor castTo(DType type) const;
  /// All values as int64 (for shape-like tensors).
  std::vector<int64_t> toInt64Vector() const;
  /// All values as double.
  std::vector<double> toDoubleVector() const;
  /// A tensor of `type` and `shape` filled from doubles.
  static Tensor fromDoubles(DType type, std::vector<int64_t> shape,
                            const std::vector<double> &values);

  /// "f32[2x3]" for messages.
  std::string describe() const;

private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<const void> owner_;
  void *data_ = nullptr;
  bool aliased_ = false;
  /// Storage of DType::String tensors (data_ points at its elements); shared
  /// between copies like owner_ and copied on write.
  std::shared_ptr<std::vector<std::string>> strings_;
};

/// Parses ONNX Cast's textual numbers ("3.5", "1e-5", "NaN", "INF",
/// "-INF"); nullopt when `text` is not a number.
std::optional<double> parseNumber(const std::string &text);
/// The shortest text that reads back as the same value of `type` (float32
/// values print as float32, "0.1" rather than "0.10000000149011612"), as
/// NumPy's str does for ONNX's reference.
std::string formatNumber(DType type, double value);

} // namespace sluice

#endif // SLUICE_LIB_SUPPORT_TENSOR_H
