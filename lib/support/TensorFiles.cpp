//===- TensorFiles.cpp - read and write .npy and ONNX .pb tensors ---------===//

#include "lib/support/TensorFiles.h"

#include "lib/support/CheckedSize.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace sluice {

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static bool readWholeFile(const std::string &path, std::string &contents,
                          std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open file";
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  contents = ss.str();
  return true;
}

bool readTensorFile(const std::string &path, Tensor &tensor, std::string &error,
                    std::string *name) {
  if (endsWith(path, ".npy"))
    return readNpy(path, tensor, error);
  return readTensorProtoFile(path, tensor, error, name);
}

bool writeTensorFile(const std::string &path, const Tensor &tensor,
                     std::string &error, const std::string &name) {
  if (endsWith(path, ".npy"))
    return writeNpy(path, tensor, error);
  return writeTensorProtoFile(path, tensor, name, error);
}

//===----------------------------------------------------------------------===//
// NumPy .npy
//===----------------------------------------------------------------------===//

static const char *npyDescr(DType type) {
  switch (type) {
  case DType::F32: return "<f4";
  case DType::F16: return "<f2";
  case DType::F64: return "<f8";
  case DType::I8: return "|i1";
  case DType::I16: return "<i2";
  case DType::I32: return "<i4";
  case DType::I64: return "<i8";
  case DType::U8: return "|u1";
  case DType::U16: return "<u2";
  case DType::U32: return "<u4";
  case DType::U64: return "<u8";
  case DType::Bool: return "|b1";
  case DType::BF16: return "<V2"; // NumPy has no bfloat16: raw 2-byte values
  case DType::String: return ""; // .npy strings are fixed-width or pickled
  case DType::I4:
  case DType::U4: return ""; // NumPy has no 4-bit integers
  // ml_dtypes' float8_e4m3fn saves as raw bytes too; read back as such.
  case DType::F8E4M3: return "|V1";
  }
  return "";
}

bool readNpy(const std::string &path, Tensor &tensor, std::string &error) {
  std::string data;
  if (!readWholeFile(path, data, error))
    return false;
  auto fail = [&](const std::string &why) {
    error = path + ": not a valid .npy file: " + why;
    return false;
  };
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    return fail("bad magic");
  int major = (unsigned char)data[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = (unsigned char)data[8] | ((unsigned char)data[9] << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      return fail("truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= (size_t)(unsigned char)data[8 + i] << (8 * i);
    headerStart = 12;
  } else {
    return fail("unsupported version " + std::to_string(major));
  }
  if (headerStart + headerLen > data.size())
    return fail("truncated header");
  std::string header = data.substr(headerStart, headerLen);
  auto field = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    if (colon == std::string::npos)
      return "";
    size_t start = header.find_first_not_of(' ', colon + 1);
    if (start == std::string::npos)
      return "";
    char open = header[start];
    if (open == '\'') {
      size_t end = header.find('\'', start + 1);
      return end == std::string::npos ? "" : header.substr(start + 1, end - start - 1);
    }
    if (open == '(') {
      size_t end = header.find(')', start);
      return end == std::string::npos ? "" : header.substr(start + 1, end - start - 1);
    }
    size_t end = header.find_first_of(",}", start);
    return header.substr(start, end - start);
  };
  std::string descr = field("descr"), order = field("fortran_order"),
              shapeText = field("shape");
  if (descr.empty())
    return fail("missing descr");
  if (order.find("True") != std::string::npos)
    return fail("Fortran order is not supported");
  DType dtype;
  bool found = false;
  for (int i = 0; i <= (int)DType::Bool; ++i) {
    std::string d = npyDescr((DType)i);
    if (d == descr || (d[0] == '<' && descr == "|" + d.substr(1)) ||
        (d[0] == '|' && descr == "<" + d.substr(1))) {
      dtype = (DType)i;
      found = true;
      break;
    }
  }
  if (!found && descr.size() > 1 &&
      (descr[1] == 'U' || descr[1] == 'S' || descr[1] == 'O'))
    return fail("string tensors (dtype " + descr +
                ") are not supported in .npy files; use a .pb TensorProto");
  if (!found)
    return fail("unsupported dtype " + descr);
  std::vector<int64_t> shape;
  std::stringstream ss(shapeText);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" ");
    if (b == std::string::npos)
      continue;
    try {
      long long v = std::stoll(item.substr(b));
      if (v < 0)
        return fail("negative dim");
      shape.push_back(v);
    } catch (...) {
      return fail("bad shape (" + shapeText + ")");
    }
  }
  size_t offset = headerStart + headerLen;
  // The header's shape is checked against the bytes the file has before
  // anything is allocated: a hostile shape must not allocate terabytes or
  // wrap the byte count.
  auto elements = checkedProduct(shape);
  auto bytes = elements ? checkedTensorBytes(*elements, 8 * (int64_t)dtypeSize(dtype))
                        : std::nullopt;
  if (!bytes)
    return fail("shape " + shapeToString(shape) + " is larger than the limit of " +
                std::to_string(maxTensorBytes()) + " bytes (SLUICE_MAX_TENSOR_BYTES)");
  if ((uint64_t)(data.size() - offset) < (uint64_t)*bytes)
    return fail("truncated data: expected " + std::to_string(*bytes) + " bytes for " +
                shapeToString(shape) + ", the file has " +
                std::to_string(data.size() - offset));
  Tensor t(dtype, shape);
  if (t.byteSize())
    std::memcpy(t.mutableData(), data.data() + offset, t.byteSize());
  tensor = std::move(t);
  return true;
}

bool writeNpy(const std::string &path, const Tensor &tensor, std::string &error) {
  if (tensor.dtype() == DType::String) {
    error = path + ": string tensors cannot be written as .npy; use .pb";
    return false;
  }
  if (isNibbleDType(tensor.dtype())) {
    error = path + ": 4-bit tensors cannot be written as .npy; use .pb";
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    shape += std::to_string(tensor.shape()[i]) + ", ";
  if (tensor.shape().size() > 1)
    shape.erase(shape.size() - 1);
  if (tensor.shape().size() > 1)
    shape.erase(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + std::string(npyDescr(tensor.dtype())) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = path + ": cannot write file";
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {(char)(header.size() & 0xff), (char)(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(static_cast<const char *>(tensor.rawData()), tensor.byteSize());
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// ONNX TensorProto
//===----------------------------------------------------------------------===//

bool dtypeFromOnnx(int onnxType, DType &dtype) {
  using TP = onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT: dtype = DType::F32; return true;
  case TP::FLOAT16: dtype = DType::F16; return true;
  case TP::BFLOAT16: dtype = DType::BF16; return true;
  case TP::DOUBLE: dtype = DType::F64; return true;
  case TP::INT8: dtype = DType::I8; return true;
  case TP::INT16: dtype = DType::I16; return true;
  case TP::INT32: dtype = DType::I32; return true;
  case TP::INT64: dtype = DType::I64; return true;
  case TP::UINT8: dtype = DType::U8; return true;
  case TP::UINT16: dtype = DType::U16; return true;
  case TP::UINT32: dtype = DType::U32; return true;
  case TP::UINT64: dtype = DType::U64; return true;
  case TP::BOOL: dtype = DType::Bool; return true;
  case TP::STRING: dtype = DType::String; return true;
  // INT4 / UINT4 (ONNX 1.16) postdate this protobuf's enum: their numbers.
  case 21: dtype = DType::U4; return true;
  case 22: dtype = DType::I4; return true;
  // FLOAT8E4M3FN (ONNX 1.14) likewise.
  case 17: dtype = DType::F8E4M3; return true;
  default: return false;
  }
}

int onnxFromDType(DType dtype) {
  using TP = onnx::TensorProto;
  switch (dtype) {
  case DType::F32: return TP::FLOAT;
  case DType::F16: return TP::FLOAT16;
  case DType::BF16: return TP::BFLOAT16;
  case DType::F64: return TP::DOUBLE;
  case DType::I8: return TP::INT8;
  case DType::I16: return TP::INT16;
  case DType::I32: return TP::INT32;
  case DType::I64: return TP::INT64;
  case DType::U8: return TP::UINT8;
  case DType::U16: return TP::UINT16;
  case DType::U32: return TP::UINT32;
  case DType::U64: return TP::UINT64;
  case DType::Bool: return TP::BOOL;
  case DType::String: return TP::STRING;
  case DType::U4: return 21;
  case DType::I4: return 22;
  case DType::F8E4M3: return 17;
  }
  return TP::UNDEFINED;
}

bool tensorFromProto(const onnx::TensorProto &proto, Tensor &tensor,
                     std::string &error) {
  DType dtype;
  if (!dtypeFromOnnx(proto.data_type(), dtype)) {
    error = "tensor '" + proto.name() + "' has unsupported data type " +
            onnx::TensorProto::DataType_Name(
                (onnx::TensorProto::DataType)proto.data_type());
    return false;
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "tensor '" + proto.name() + "' uses external data";
    return false;
  }
  std::vector<int64_t> shape;
  for (int64_t d : proto.dims()) {
    if (d < 0) {
      error = "tensor '" + proto.name() + "' has a negative dim";
      return false;
    }
    shape.push_back(d);
  }
  auto sizeError = [&](int64_t have) {
    error = "tensor '" + proto.name() + "' holds " + std::to_string(have) +
            " values for shape " + shapeToString(shape);
    return false;
  };
  // Before allocating: the shape's product must not wrap, and a tensor
  // holds at most two values per byte or entry of its largest field, so a
  // hostile shape is refused here instead of allocating its size.
  auto elements = checkedProduct(shape);
  if (!elements || !checkedTensorBytes(*elements, 8 * (int64_t)dtypeSize(dtype))) {
    error = "tensor '" + proto.name() + "' of shape " + shapeToString(shape) +
            " is larger than the limit of " + std::to_string(maxTensorBytes()) +
            " bytes (SLUICE_MAX_TENSOR_BYTES)";
    return false;
  }
  int64_t available = std::max<int64_t>(
      {(int64_t)proto.raw_data().size(), proto.float_data_size(), proto.double_data_size(),
       proto.int32_data_size(), proto.int64_data_size(), proto.uint64_data_size(),
       proto.string_data_size()});
  if (*elements > 2 * available + 1)
    return sizeError(available);
  Tensor t(dtype, shape);
  int64_t n = t.numElements();
  if (dtype == DType::String) {
    // Strings live in string_data only (raw_data cannot hold them).
    if (proto.string_data_size() != n)
      return sizeError(proto.string_data_size());
    for (int64_t i = 0; i < n; ++i)
      t.setString(i, proto.string_data(i));
  } else if (isNibbleDType(dtype)) {
    // Packed two per byte, low nibble first: in raw_data, or one byte per
    // int32_data entry.
    std::string bytes = proto.raw_data();
    if (!proto.has_raw_data())
      for (int32_t v : proto.int32_data())
        bytes.push_back((char)v);
    if ((int64_t)bytes.size() != (n + 1) / 2)
      return sizeError((int64_t)bytes.size() * 2);
    unpackNibbles(bytes.data(), n, dtype == DType::I4, t.mutableData());
  } else if (proto.has_raw_data()) {
    if (proto.raw_data().size() != t.byteSize())
      return sizeError(proto.raw_data().size() / dtypeSize(dtype));
    if (n)
      std::memcpy(t.mutableData(), proto.raw_data().data(), t.byteSize());
  } else {
    switch (dtype) {
    case DType::F32:
      if (proto.float_data_size() != n)
        return sizeError(proto.float_data_size());
      for (int64_t i = 0; i < n; ++i)
        t.setDouble(i, proto.float_data(i));
      break;
    case DType::F64:
      if (proto.double_data_size() != n)
        return sizeError(proto.double_data_size());
      for (int64_t i = 0; i < n; ++i)
        t.setDouble(i, proto.double_data(i));
      break;
    case DType::I64:
      if (proto.int64_data_size() != n)
        return sizeError(proto.int64_data_size());
      for (int64_t i = 0; i < n; ++i)
        t.setInt(i, proto.int64_data(i));
      break;
    case DType::U32:
    case DType::U64:
      if (proto.uint64_data_size() != n)
        return sizeError(proto.uint64_data_size());
      for (int64_t i = 0; i < n; ++i) {
        if (dtype == DType::U64)
          t.mutableData<uint64_t>()[i] = proto.uint64_data(i);
        else
          t.setInt(i, (int64_t)proto.uint64_data(i));
      }
      break;
    case DType::F16:
    case DType::BF16: {
      // 16-bit floats are stored as their bit patterns in int32_data.
      if (proto.int32_data_size() != n)
        return sizeError(proto.int32_data_size());
      auto *bits = t.mutableData<uint16_t>();
      for (int64_t i = 0; i < n; ++i)
        bits[i] = (uint16_t)proto.int32_data(i);
      break;
    }
    case DType::F8E4M3: {
      // Float8 values likewise: one bit pattern per int32_data entry.
      if (proto.int32_data_size() != n)
        return sizeError(proto.int32_data_size());
      auto *bits = t.mutableData<uint8_t>();
      for (int64_t i = 0; i < n; ++i)
        bits[i] = (uint8_t)proto.int32_data(i);
      break;
    }
    default: // int8/16/32, uint8/16, bool in int32_data
      if (proto.int32_data_size() != n)
        return sizeError(proto.int32_data_size());
      for (int64_t i = 0; i < n; ++i)
        t.setInt(i, proto.int32_data(i));
      break;
    }
  }
  tensor = std::move(t);
  return true;
}

bool readTensorProtoFile(const std::string &path, Tensor &tensor,
                         std::string &error, std::string *name) {
  std::string data;
  if (!readWholeFile(path, data, error))
    return false;
  onnx::TensorProto proto;
  if (!proto.ParseFromString(data)) {
    error = path + ": not a valid ONNX TensorProto";
    return false;
  }
  if (name)
    *name = proto.name();
  if (!tensorFromProto(proto, tensor, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

bool writeTensorProtoFile(const std::string &path, const Tensor &tensor,
                          const std::string &name, std::string &error) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnxFromDType(tensor.dtype()));
  for (int64_t d : tensor.shape())
    proto.add_dims(d);
  if (tensor.dtype() == DType::String) {
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      proto.add_string_data(tensor.getString(i));
  } else if (isNibbleDType(tensor.dtype())) {
    std::vector<uint8_t> packed = packNibbles(tensor.rawData(), tensor.numElements());
    proto.set_raw_data(std::string(packed.begin(), packed.end()));
  } else {
    proto.set_raw_data(std::string(static_cast<const char *>(tensor.rawData()),
                                   tensor.byteSize()));
  }
  std::ofstream out(path, std::ios::binary);
  if (!out || !proto.SerializeToOstream(&out)) {
    error = path + ": cannot write file";
    return false;
  }
  return true;
}

/// The tensors of a SequenceProto (sequences of tensors only).
static bool sequenceFromProto(const onnx::SequenceProto &proto,
                              std::vector<Tensor> &elements, std::string &error) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR &&
      proto.elem_type() != onnx::SequenceProto::UNDEFINED)
    return error = "sequences of " +
                   onnx::SequenceProto::DataType_Name(
                       (onnx::SequenceProto::DataType)proto.elem_type()) +
                   " are not supported (only sequences of tensors)",
           false;
  for (const auto &tensorProto : proto.tensor_values()) {
    Tensor t;
    if (!tensorFromProto(tensorProto, t, error))
      return false;
    elements.push_back(std::move(t));
  }
  return true;
}

bool readValueFile(const std::string &path, RuntimeValue::Kind kind,
                   RuntimeValue &value, std::string &error) {
  if (kind == RuntimeValue::Kind::Tensor) {
    Tensor t;
    if (!readTensorFile(path, t, error))
      return false;
    value = std::move(t);
    return true;
  }
  const char *what =
      kind == RuntimeValue::Kind::Sequence ? "a sequence" : "an optional";
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0)
    return error = path + ": a .npy file holds a tensor, but the model expects " +
                   what + " here (pass an ONNX " +
                   (kind == RuntimeValue::Kind::Sequence ? "SequenceProto"
                                                         : "OptionalProto") +
                   " .pb)",
           false;
  std::string data;
  if (!readWholeFile(path, data, error))
    return false;
  if (kind == RuntimeValue::Kind::Sequence) {
    onnx::SequenceProto proto;
    std::vector<Tensor> elements;
    if (!proto.ParseFromString(data))
      return error = path + ": not a valid ONNX SequenceProto", false;
    if (!sequenceFromProto(proto, elements, error))
      return error = path + ": " + error, false;
    value = RuntimeValue::sequence(std::move(elements));
    return true;
  }
  onnx::OptionalProto proto;
  if (!proto.ParseFromString(data))
    return error = path + ": not a valid ONNX OptionalProto", false;
  if (proto.has_tensor_value()) {
    Tensor t;
    if (!tensorFromProto(proto.tensor_value(), t, error))
      return error = path + ": " + error, false;
    value = RuntimeValue::optional(std::move(t));
  } else if (proto.has_sequence_value()) {
    std::vector<Tensor> elements;
    if (!sequenceFromProto(proto.sequence_value(), elements, error))
      return error = path + ": " + error, false;
    value = RuntimeValue::optional(RuntimeValue::sequence(std::move(elements)));
  } else if (proto.elem_type() != onnx::OptionalProto::UNDEFINED &&
             proto.elem_type() != onnx::OptionalProto::TENSOR &&
             proto.elem_type() != onnx::OptionalProto::SEQUENCE) {
    return error = path + ": optionals of " +
                   onnx::OptionalProto::DataType_Name(
                       (onnx::OptionalProto::DataType)proto.elem_type()) +
                   " are not supported",
           false;
  } else {
    value = RuntimeValue::none();
  }
  return true;
}

} // namespace sluice
