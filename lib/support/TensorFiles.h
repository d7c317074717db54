//===- TensorFiles.h - read and write .npy and ONNX .pb tensors -*- C++ -*-===//
//
// The tensor files users already have: NumPy .npy (v1-3, little endian,
// C order) and ONNX TensorProto .pb. Readers never crash on bad input: they
// return an error message naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_SUPPORT_TENSORFILES_H
#define SLUICE_LIB_SUPPORT_TENSORFILES_H

#include "lib/support/RuntimeValue.h"
#include "lib/support/Tensor.h"

#include <string>

namespace onnx {
class TensorProto;
}

namespace sluice {

/// Reads a .npy or .pb file (by extension; .pb otherwise). On failure returns
/// false and sets `error`. `name` receives the TensorProto's name (if any).
bool readTensorFile(const std::string &path, Tensor &tensor, std::string &error,
                    std::string *name = nullptr);
bool readNpy(const std::string &path, Tensor &tensor, std::string &error);
bool readTensorProtoFile(const std::string &path, Tensor &tensor,
                         std::string &error, std::string *name = nullptr);

/// Reads a value of `kind` from `path`: a tensor as readTensorFile does; a
/// sequence or an optional from an ONNX SequenceProto / OptionalProto .pb
/// (the ONNX backend tests' format). The kind comes from the model: the
/// three protos cannot be told apart from their bytes alone.
bool readValueFile(const std::string &path, RuntimeValue::Kind kind,
                   RuntimeValue &value, std::string &error);

/// Writes by extension (.npy or .pb).
bool writeTensorFile(const std::string &path, const Tensor &tensor,
                     std::string &error, const std::string &name = "");
bool writeNpy(const std::string &path, const Tensor &tensor, std::string &error);
bool writeTensorProtoFile(const std::string &path, const Tensor &tensor,
                          const std::string &name, std::string &error);

/// Converts an ONNX TensorProto with inline data (raw_data or typed fields).
/// External data is the importer's business (it confines paths to the model
/// folder); here it is an error.
bool tensorFromProto(const onnx::TensorProto &proto, Tensor &tensor,
                     std::string &error);
/// The evaluator dtype for an ONNX TensorProto data type, if supported.
bool dtypeFromOnnx(int onnxType, DType &dtype);
int onnxFromDType(DType dtype);

} // namespace sluice

#endif // SLUICE_LIB_SUPPORT_TENSORFILES_H
