//===- Tensor.cpp - host tensors ------------------------------------------===//

#include "lib/support/Tensor.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace sluice {

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I8:
  case DType::U8:
  case DType::I4:
  case DType::U4:
  case DType::F8E4M3:
  case DType::Bool:
    return 1;
  case DType::String:
    return sizeof(std::string);
  }
  return 1;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F64: return "f64";
  case DType::I8: return "i8";
  case DType::I16: return "i16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::U8: return "u8";
  case DType::U16: return "u16";
  case DType::U32: return "u32";
  case DType::U64: return "u64";
  case DType::Bool: return "bool";
  case DType::String: return "string";
  case DType::I4: return "i4";
  case DType::U4: return "u4";
  case DType::F8E4M3: return "f8e4m3fn";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string &name) {
  for (int i = 0; i <= (int)DType::F8E4M3; ++i)
    if (name == dtypeName((DType)i))
      return (DType)i;
  return std::nullopt;
}

bool isFloatDType(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::F64 ||
         type == DType::F8E4M3;
}

bool isUnsignedDType(DType type) {
  return type == DType::U8 || type == DType::U16 || type == DType::U32 ||
         type == DType::U64 || type == DType::Bool || type == DType::U4;
}

bool isNibbleDType(DType type) { return type == DType::I4 || type == DType::U4; }

std::vector<uint8_t> packNibbles(const void *elements, int64_t count) {
  const auto *in = static_cast<const uint8_t *>(elements);
  std::vector<uint8_t> packed((count + 1) / 2, 0);
  for (int64_t i = 0; i < count; ++i)
    packed[i / 2] |= (uint8_t)((in[i] & 0xF) << (4 * (i % 2)));
  return packed;
}

void unpackNibbles(const void *packed, int64_t count, bool isSigned, void *elements) {
  const auto *in = static_cast<const uint8_t *>(packed);
  auto *out = static_cast<uint8_t *>(elements);
  for (int64_t i = 0; i < count; ++i) {
    uint8_t nibble = (in[i / 2] >> (4 * (i % 2))) & 0xF;
    out[i] = isSigned && (nibble & 0x8) ? (uint8_t)(nibble | 0xF0) : nibble;
  }
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) // inf or nan
    return sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0);
  if (absx >= 0x477ff000) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (absx < 0x38800000) { // subnormal half or zero
    // Scale so that the half subnormal's ulp is 1, then round to nearest even.
    float f;
    std::memcpy(&f, &absx, 4);
    float scaled = f * 16777216.0f; // 2^24
    return sign | (uint16_t)std::nearbyint(scaled);
  }
  uint32_t mant = absx & 0x7fffff;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return sign | half;
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t x = (uint32_t)bits << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBfloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return (x >> 16) | 0x40; // quiet NaN
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return (x + rounding) >> 16;
}

float float8E4M3ToFloat(uint8_t bits) {
  int exponent = (bits >> 3) & 0xF, mantissa = bits & 0x7;
  float magnitude;
  if ((bits & 0x7F) == 0x7F)
    magnitude = std::numeric_limits<float>::quiet_NaN();
  else if (exponent == 0) // subnormal: mantissa * 2^-9
    magnitude = std::ldexp((float)mantissa, -9);
  else
    magnitude = std::ldexp((float)(8 + mantissa), exponent - 10);
  return bits & 0x80 ? -magnitude : magnitude;
}

uint8_t floatToFloat8E4M3(float value, bool saturate) {
  uint8_t sign = std::signbit(value) ? 0x80 : 0;
  float a = std::fabs(value);
  if (std::isnan(a))
    return sign | 0x7F;
  // 464 is the tie between 448 (0x7E) and the NaN code: it rounds to even,
  // 448; anything larger is out of range.
  if (a > 464.0f)
    return sign | (saturate ? 0x7E : 0x7F);
  // E4M3's codes are monotonic in the value, so counting ulps from zero and
  // adding them gives the code even when rounding carries into the next
  // binade. Below 2^-6 the ulp is 2^-9 (subnormals), above it 2^(e-3).
  // 2^-6 is the smallest normal; a = f * 2^exponent with f in [0.5, 1), so
  // a lies in [2^e, 2^(e+1)) and spans 8 to 16 steps of 2^(e-3).
  int exponent;
  std::frexp(a, &exponent);
  if (a < 0.015625f)
    return sign | (uint8_t)std::nearbyint(std::ldexp(a, 9));
  int e = exponent - 1;
  auto steps = (int)std::nearbyint(std::ldexp(a, 3 - e));
  return sign | (uint8_t)(((e + 7) << 3) + (steps - 8));
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

static int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Storage comes from one aligned allocation so vector code may use it.
static std::shared_ptr<void> allocate(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void *q) { std::free(q); });
}

Tensor::Tensor(DType type, std::vector<int64_t> shape)
    : dtype_(type), shape_(std::move(shape)) {
  if (type == DType::String) {
    strings_ = std::make_shared<std::vector<std::string>>(numElements());
    data_ = strings_->data();
    return;
  }
  auto storage = allocate(byteSize());
  data_ = storage.get();
  owner_ = std::move(storage);
}

Tensor Tensor::alias(DType type, std::vector<int64_t> shape, const void *data,
                     std::shared_ptr<const void> owner) {
  if (type == DType::String) // strings own their storage
    return copyOf(type, std::move(shape), data);
  Tensor t;
  t.dtype_ = type;
  t.shape_ = std::move(shape);
  t.data_ = const_cast<void *>(data);
  t.owner_ = std::move(owner);
  t.aliased_ = true;
  return t;
}

Tensor Tensor::copyOf(DType type, std::vector<int64_t> shape,
                      const void *data) {
  Tensor t(type, std::move(shape));
  if (type == DType::String) {
    std::copy_n(static_cast<const std::string *>(data), t.numElements(),
                t.strings_->begin());
    return t;
  }
  if (t.byteSize())
    std::memcpy(t.data_, data, t.byteSize());
  return t;
}

Tensor Tensor::fromInt64(const std::vector<int64_t> &values) {
  return copyOf(DType::I64, {(int64_t)values.size()}, values.data());
}

Tensor Tensor::scalar(DType type, double value) {
  Tensor t(type, {});
  if (isFloatDType(type))
    t.setDouble(0, value);
  else
    t.setInt(0, (int64_t)value);
  return t;
}

int64_t Tensor::numElements() const { return product(shape_); }

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> s(shape_.size(), 1);
  for (int64_t i = (int64_t)shape_.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape_[i + 1];
  return s;
}

void *Tensor::mutableData() {
  if (dtype_ == DType::String) {
    if (strings_.use_count() > 1) {
      strings_ = std::make_shared<std::vector<std::string>>(*strings_);
      data_ = strings_->data();
    }
    return data_;
  }
  if (aliased_ || owner_.use_count() > 1) {
    auto storage = allocate(byteSize());
    if (byteSize())
      std::memcpy(storage.get(), data_, byteSize());
    data_ = storage.get();
    owner_ = std::move(storage);
    aliased_ = false;
  }
  return data_;
}

/// Float to int64 the way ONNX Cast does it: truncation toward zero, NaN to
/// 0, and out-of-range values saturate instead of being undefined behavior.
static int64_t saturatingToInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return (int64_t)v;
}

double Tensor::getDouble(int64_t i) const {
  const void *p = data_;
  switch (dtype_) {
  case DType::F32: return static_cast<const float *>(p)[i];
  case DType::F16: return halfToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::BF16: return bfloat16ToFloat(static_cast<const uint16_t *>(p)[i]);
  case DType::F8E4M3: return float8E4M3ToFloat(static_cast<const uint8_t *>(p)[i]);
  case DType::F64: return static_cast<const double *>(p)[i];
  case DType::U64: return (double)static_cast<const uint64_t *>(p)[i];
  case DType::String: {
    auto value = parseNumber(getString(i));
    return value ? *value : std::nan("");
  }
  default: return (double)getInt(i);
  }
}

int64_t Tensor::getInt(int64_t i) const {
  const void *p = data_;
  switch (dtype_) {
  case DType::I8: return static_cast<const int8_t *>(p)[i];
  case DType::I16: return static_cast<const int16_t *>(p)[i];
  case DType::I32: return static_cast<const int32_t *>(p)[i];
  case DType::I64: return static_cast<const int64_t *>(p)[i];
  case DType::U8: return static_cast<const uint8_t *>(p)[i];
  case DType::U16: return static_cast<const uint16_t *>(p)[i];
  case DType::U32: return static_cast<const uint32_t *>(p)[i];
  case DType::U64: return (int64_t) static_cast<const uint64_t *>(p)[i];
  case DType::Bool: return static_cast<const uint8_t *>(p)[i] != 0;
  // The low nibble is the value, whatever the high one holds (an MLIR
  // attribute's storage of i4 need not sign-extend).
  case DType::I4: return (int8_t)(static_cast<const uint8_t *>(p)[i] << 4) >> 4;
  case DType::U4: return static_cast<const uint8_t *>(p)[i] & 0xF;
  case DType::String: {
    // Integers parse exactly (no trip through double) when they can.
    const std::string &text = getString(i);
    int64_t value = 0;
    const char *begin = text.data() + (!text.empty() && text[0] == '+');
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size())
      return value;
    return saturatingToInt64(getDouble(i));
  }
  default:
    return saturatingToInt64(getDouble(i));
  }
}

void Tensor::setDouble(int64_t i, double v) {
  void *p = mutableData();
  switch (dtype_) {
  case DType::F32: static_cast<float *>(p)[i] = (float)v; return;
  case DType::F16: static_cast<uint16_t *>(p)[i] = floatToHalf((float)v); return;
  case DType::BF16: static_cast<uint16_t *>(p)[i] = floatToBfloat16((float)v); return;
  // ONNX Cast's default (saturate = 1); Cast with saturate = 0 converts
  // through floatToFloat8E4M3 itself.
  case DType::F8E4M3: static_cast<uint8_t *>(p)[i] = floatToFloat8E4M3((float)v); return;
  case DType::F64: static_cast<double *>(p)[i] = v; return;
  case DType::Bool: static_cast<uint8_t *>(p)[i] = v != 0; return;
  case DType::String: setString(i, formatNumber(DType::F64, v)); return;
  case DType::U64:
    static_cast<uint64_t *>(p)[i] =
        std::isnan(v) || v <= 0 ? 0 : v >= 1.8446744073709552e19 ? ~0ull : (uint64_t)v;
    return;
  default:
    setInt(i, saturatingToInt64(v));
  }
}

void Tensor::setInt(int64_t i, int64_t v) {
  void *p = mutableData();
  switch (dtype_) {
  case DType::I8: static_cast<int8_t *>(p)[i] = (int8_t)v; return;
  case DType::I16: static_cast<int16_t *>(p)[i] = (int16_t)v; return;
  case DType::I32: static_cast<int32_t *>(p)[i] = (int32_t)v; return;
  case DType::I64: static_cast<int64_t *>(p)[i] = v; return;
  case DType::U8: static_cast<uint8_t *>(p)[i] = (uint8_t)v; return;
  case DType::U16: static_cast<uint16_t *>(p)[i] = (uint16_t)v; return;
  case DType::U32: static_cast<uint32_t *>(p)[i] = (uint32_t)v; return;
  case DType::U64: static_cast<uint64_t *>(p)[i] = (uint64_t)v; return;
  case DType::Bool: static_cast<uint8_t *>(p)[i] = v != 0; return;
  // Wraps like the other integer types (a cast to int4 keeps the low bits).
  case DType::I4: static_cast<int8_t *>(p)[i] = (int8_t)((uint8_t)v << 4) >> 4; return;
  case DType::U4: static_cast<uint8_t *>(p)[i] = (uint8_t)v & 0xF; return;
  case DType::String: setString(i, std::to_string(v)); return;
  default: setDouble(i, (double)v); return;
  }
}

const std::string &Tensor::getString(int64_t i) const {
  if (dtype_ != DType::String)
    throw std::logic_error("getString on " + describe());
  return (*strings_)[i];
}

void Tensor::setString(int64_t i, std::string value) {
  if (dtype_ != DType::String)
    throw std::logic_error("setString on " + describe());
  mutableData();
  (*strings_)[i] = std::move(value);
}

std::optional<double> parseNumber(const std::string &text) {
  // strtod takes "nan", "inf", "infinity" in any case with an optional sign,
  // which covers ONNX's "NaN", "INF", "+INF" and "-INF"; it also skips
  // leading blanks, which is harmless.
  if (text.empty())
    return std::nullopt;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size())
    return std::nullopt;
  return value;
}

std::string formatNumber(DType type, double value) {
  if (!isFloatDType(type))
    return std::to_string((int64_t)value);
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  // Shortest round-trip digits for the value's own precision, laid out as
  // Python's repr (which NumPy's str follows): positional for decimal
  // exponents in [-4, 16) with at least one fractional digit ("1.0"),
  // scientific otherwise ("1e-05", "1.5e+16").
  char buf[64];
  std::to_chars_result r;
  if (type == DType::F64)
    r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  else
    r = std::to_chars(buf, buf + sizeof buf, (float)value,
                      std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  size_t e = sci.find('e');
  std::string sign = sci[0] == '-' ? "-" : "";
  std::string mantissa = sci.substr(sign.size(), e - sign.size());
  int exponent = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.')
      digits += c;
  if (exponent < -4 || exponent >= 16)
    return sci;
  std::string out;
  if (exponent < 0) {
    out = "0." + std::string(-exponent - 1, '0') + digits;
  } else if ((int)digits.size() <= exponent + 1) {
    out = digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
  }
  return sign + out;
}

Tensor Tensor::takeAlong(int64_t axis,
                         const std::vector<std::pair<int64_t, int64_t>> &ranges) const {
  int64_t outer = 1, inner = (int64_t)dtypeSize(dtype_), taken = 0;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape_[d];
  for (int64_t d = axis + 1; d < rank(); ++d)
    inner *= shape_[d];
  for (auto [lo, hi] : ranges)
    taken += hi - lo;
  std::vector<int64_t> shape = shape_;
  shape[axis] = taken;
  Tensor result(dtype_, shape);
  auto *to = static_cast<unsigned char *>(result.mutableData());
  const auto *from = static_cast<const unsigned char *>(data_);
  int64_t extent = shape_[axis];
  for (int64_t o = 0; o < outer; ++o)
    for (auto [lo, hi] : ranges) {
      size_t bytes = (size_t)((hi - lo) * inner);
      if (bytes)
        std::memcpy(to, from + (o * extent + lo) * inner, bytes);
      to += bytes;
    }
  return result;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  if (product(shape) != numElements())
    throw std::logic_error("reshape of " + describe() + " to " +
                           shapeToString(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::castTo(DType type) const {
  if (type == dtype_)
    return *this;
  Tensor out(type, shape_);
  int64_t n = numElements();
  if (type == DType::String) {
    // Each number prints in its own type's precision; bool as "1"/"0".
    for (int64_t i = 0; i < n; ++i) {
      if (isFloatDType(dtype_))
        out.setString(i, formatNumber(dtype_, getDouble(i)));
      else if (dtype_ == DType::U64)
        out.setString(i, std::to_string((uint64_t)getInt(i)));
      else
        out.setString(i, std::to_string(getInt(i)));
    }
    return out;
  }
  if (dtype_ == DType::String) {
    // Text parses as a number, then converts like a number of that kind.
    for (int64_t i = 0; i < n; ++i) {
      if (isFloatDType(type))
        out.setDouble(i, getDouble(i));
      else if (type == DType::U64 && !getString(i).empty() &&
               getString(i)[0] != '-')
        out.setDouble(i, getDouble(i));
      else
        out.setInt(i, getInt(i));
    }
    return out;
  }
  bool fromFloat = isFloatDType(dtype_);
  bool toFloat = isFloatDType(type);
  for (int64_t i = 0; i < n; ++i) {
    if (fromFloat || toFloat || dtype_ == DType::U64)
      out.setDouble(i, getDouble(i));
    else
      out.setInt(i, getInt(i));
  }
  if (dtype_ == DType::U64 && !toFloat)
    for (int64_t i = 0; i < n; ++i)
      out.setInt(i, getInt(i));
  return out;
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  std::vector<int64_t> v(numElements());
  for (int64_t i = 0; i < (int64_t)v.size(); ++i)
    v[i] = getInt(i);
  return v;
}

std::vector<double> Tensor::toDoubleVector() const {
  std::vector<double> v(numElements());
  for (int64_t i = 0; i < (int64_t)v.size(); ++i)
    v[i] = getDouble(i);
  return v;
}

Tensor Tensor::fromDoubles(DType type, std::vector<int64_t> shape,
                           const std::vector<double> &values) {
  Tensor t(type, std::move(shape));
  for (int64_t i = 0; i < (int64_t)values.size(); ++i)
    t.setDouble(i, values[i]);
  return t;
}

std::string Tensor::describe() const {
  return std::string(dtypeName(dtype_)) + "[" + shapeToString(shape_) + "]";
}

} // namespace sluice
