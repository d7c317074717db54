//===- Format.cpp - C++ spellings of numbers, strings and arrays ----------===//

#include "codegen/common/Format.h"

#include <climits>
#include <cstdio>

namespace sluice::codegen {

std::string decimal(int64_t value) { return std::to_string(value); }

std::string cInt64(int64_t value) { return std::to_string(value) + "LL"; }

std::string cIntOrInt64(int64_t value) {
  return value > INT32_MAX || value < INT32_MIN ? cInt64(value) : decimal(value);
}

std::string cInt64List(llvm::ArrayRef<int64_t> values) {
  if (values.empty())
    return "{0}";
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + cInt64(values[i]);
  return s + "}";
}

std::string cInt64ArrayDecl(llvm::StringRef name, llvm::ArrayRef<int64_t> values) {
  return "static const int64_t " + name.str() + "[] = " + cInt64List(values) + ";";
}

std::string cCall(llvm::StringRef callee, llvm::ArrayRef<std::string> args) {
  std::string s = callee.str() + "(";
  for (size_t i = 0; i < args.size(); ++i)
    s += (i ? ", " : "") + args[i];
  return s + ")";
}

std::string cStringLiteral(llvm::StringRef text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      s += '\\';
    if ((unsigned char)c < 0x20)
      s += ' ';
    else
      s += c;
  }
  return s + "\"";
}

std::string cFloatLiteral(const llvm::APFloat &value) { return floatDigits(value) + "f"; }

std::string floatDigits(const llvm::APFloat &value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9e", value.convertToFloat());
  return buffer;
}

std::string doubleDigits(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

} // namespace sluice::codegen
