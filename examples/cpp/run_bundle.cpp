//===- run_bundle.cpp - run a Sluice bundle from C++ ----------------------===//
//
//   run_bundle BUNDLE [INPUT.npy ...] [--save=DIR]
//
// Loads a bundle that sluice-compile wrote, fills its inputs from .npy files
// (in the bundle's input order) or, for inputs not given, with a fixed
// pattern, runs it once and prints each output's name, dtype, shape and
// first values; --save=DIR writes each output as DIR/<name>.npy ('/' in
// a name as '_'). It uses only the installed runtime (find_package(Sluice),
// Sluice::runtime) and its header-only C++ wrapper, sluice/runtime.hpp.
//
//===----------------------------------------------------------------------===//

#include <sluice/runtime.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// NumPy's dtype names as .npy headers spell them (little-endian).
std::string npyDescr(const std::string &dtype) {
  if (dtype == "float32")
    return "<f4";
  if (dtype == "float64")
    return "<f8";
  if (dtype == "float16")
    return "<f2";
  if (dtype == "int64")
    return "<i8";
  if (dtype == "int32")
    return "<i4";
  if (dtype == "int8")
    return "|i1";
  if (dtype == "uint8")
    return "|u1";
  if (dtype == "bool")
    return "|b1";
  return "";
}

/// Reads the data of a C-order .npy file (format 1.0 to 3.0) whose dtype is
/// `dtype` and whose size is `bytes`; false with `error` otherwise.
bool readNpy(const std::string &path, const std::string &dtype, size_t bytes,
             std::vector<char> &data, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = path + ": not a .npy file";
    return false;
  }
  uint32_t headerBytes = 0;
  unsigned char length[4] = {};
  in.read((char *)length, magic[6] == 1 ? 2 : 4);
  headerBytes = length[0] | length[1] << 8 | length[2] << 16 | (uint32_t)length[3] << 24;
  std::string header(headerBytes, '\0');
  in.read(&header[0], headerBytes);
  std::string descr = npyDescr(dtype);
  if (descr.empty() || header.find("'" + descr + "'") == std::string::npos) {
    error = path + ": dtype is not the input's " + dtype + " (header " + header + ")";
    return false;
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    error = path + ": Fortran order (save it C-contiguous)";
    return false;
  }
  data.resize(bytes);
  if (!in.read(data.data(), (std::streamsize)bytes) || in.peek() != EOF) {
    error = path + ": holds not " + std::to_string(bytes) + " bytes of " + dtype;
    return false;
  }
  return true;
}

/// Writes `bytes` of `dtype` with `shape` as a .npy file (format 1.0).
bool writeNpy(const std::string &path, const std::string &dtype, const std::vector<int64_t> &shape,
              const void *data, size_t bytes) {
  std::ostringstream dims;
  for (int64_t d : shape)
    dims << d << (shape.size() == 1 ? "," : ", ");
  std::string text = dims.str();
  if (shape.size() > 1)
    text.resize(text.size() - 2);
  std::string header =
      "{'descr': '" + npyDescr(dtype) + "', 'fortran_order': False, 'shape': (" + text + "), }";
  // Magic, version and length take 10 bytes; the header ends in '\n' and
  // pads the data to 64 bytes.
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  uint16_t length = (uint16_t)header.size();
  out.write("\x93NUMPY\x01\x00", 8);
  out.put((char)(length & 0xff)).put((char)(length >> 8));
  out << header;
  out.write((const char *)data, (std::streamsize)bytes);
  return (bool)out;
}

/// An input's fixed pattern: small values of its dtype, the same each run.
void fillPattern(const std::string &dtype, std::vector<char> &data) {
  size_t i = 0;
  if (dtype == "float32")
    for (float *p = (float *)data.data(), *e = p + data.size() / 4; p != e; ++p, ++i)
      *p = (float)((i * 37) % 17) / 17.0f - 0.5f;
  else if (dtype == "int64")
    for (int64_t *p = (int64_t *)data.data(), *e = p + data.size() / 8; p != e; ++p, ++i)
      *p = (int64_t)(i % 7);
  else if (dtype == "int32")
    for (int32_t *p = (int32_t *)data.data(), *e = p + data.size() / 4; p != e; ++p, ++i)
      *p = (int32_t)(i % 7);
  else
    std::memset(data.data(), 0, data.size());
}

/// An output's name as a file name ('/' and ':' of ONNX names as '_').
std::string fileName(std::string name) {
  for (char &c : name)
    if (c == '/' || c == ':' || c == '\\')
      c = '_';
  return name;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace

int main(int argc, char **argv) {
  std::string bundle, saveDir;
  std::vector<std::string> inputFiles;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--save=", 0) == 0)
      saveDir = arg.substr(7);
    else if (arg == "-h" || arg == "--help" || arg.rfind("-", 0) == 0) {
      std::fprintf(stderr, "usage: run_bundle BUNDLE [INPUT.npy ...] [--save=DIR]\n");
      return arg.rfind("-h", 0) == 0 || arg == "--help" ? 0 : 2;
    } else if (bundle.empty())
      bundle = arg;
    else
      inputFiles.push_back(arg);
  }
  if (bundle.empty()) {
    std::fprintf(stderr, "usage: run_bundle BUNDLE [INPUT.npy ...] [--save=DIR]\n");
    return 2;
  }

  std::string error;
  sluice::rt::Model model;
  if (!model.load(bundle, &error)) {
    std::fprintf(stderr, "run_bundle: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %s bundle, Sluice %s, %zu inputs, %zu outputs\n", model.name().c_str(),
              model.target().c_str(), model.version().c_str(), model.numInputs(),
              model.numOutputs());
  if (inputFiles.size() > model.numInputs()) {
    std::fprintf(stderr, "run_bundle: %zu input files for %zu inputs\n", inputFiles.size(),
                 model.numInputs());
    return 2;
  }
  sluice::rt::Context context;
  if (!context.create(model, &error)) {
    std::fprintf(stderr, "run_bundle: %s\n", error.c_str());
    return 1;
  }
  for (size_t i = 0; i < model.numInputs(); ++i) {
    sluice::rt::TensorInfo info = model.input(i);
    std::vector<char> data(info.bytes);
    if (i < inputFiles.size()) {
      if (!readNpy(inputFiles[i], info.dtype, info.bytes, data, error)) {
        std::fprintf(stderr, "run_bundle: input '%s': %s\n", info.name.c_str(), error.c_str());
        return 2;
      }
    } else {
      fillPattern(info.dtype, data);
    }
    if (!context.setInput(i, data.data(), data.size(), &error)) {
      std::fprintf(stderr, "run_bundle: %s\n", error.c_str());
      return 1;
    }
    std::printf("input %s %s %s%s\n", info.name.c_str(), info.dtype.c_str(),
                shapeText(info.shape).c_str(), i < inputFiles.size() ? "" : " (pattern)");
  }
  if (!context.run(&error)) {
    std::fprintf(stderr, "run_bundle: %s\n", error.c_str());
    return 1;
  }
  for (size_t i = 0; i < model.numOutputs(); ++i) {
    sluice::rt::TensorInfo info = model.output(i);
    size_t bytes = 0;
    const void *data = context.output(i, &bytes);
    std::vector<int64_t> shape = context.outputDims(i);
    std::printf("output %s %s %s:", info.name.c_str(), info.dtype.c_str(),
                shapeText(shape).c_str());
    if (info.dtype == "float32")
      for (size_t k = 0; k < bytes / 4 && k < 8; ++k)
        std::printf(" %.6g", ((const float *)data)[k]);
    std::printf("%s\n", info.dtype == "float32" && bytes / 4 > 8 ? " ..." : "");
    if (!saveDir.empty() &&
        !writeNpy(saveDir + "/" + fileName(info.name) + ".npy", info.dtype, shape, data, bytes)) {
      std::fprintf(stderr, "run_bundle: cannot write %s/%s.npy\n", saveDir.c_str(),
                   fileName(info.name).c_str());
      return 1;
    }
  }
  std::printf("ran in %.1f us\n", context.runMicroseconds());
  return 0;
}
