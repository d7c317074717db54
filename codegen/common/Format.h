//===- Format.h - C++ spellings of numbers, strings and arrays -*- C++ -*-===//
//
// How both emitters spell values in generated source. Each helper's name
// says what it produces, because the spellings are not interchangeable: a
// plain `123` is an int in C++ (wrong beyond int32 in an expression that
// multiplies it), `123LL` a long long, and a float printed with 9
// significant digits reads back as the same float only with them.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_FORMAT_H
#define SLUICE_CODEGEN_COMMON_FORMAT_H

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace sluice::codegen {

/// `123`: a plain decimal, for names, sizes in comments and template
/// arguments, and literals whose context makes an int right.
std::string decimal(int64_t value);

/// `123LL`: a C++ integer literal of type long long (64 bits wherever the
/// generated code builds), right for every int64 value and in any
/// arithmetic it takes part in.
std::string cInt64(int64_t value);

/// `123`, or `5000000000LL` beyond int32's range: the shortest literal that
/// holds the value, for arguments of int64_t parameters (the conversion
/// happens at the call).
std::string cIntOrInt64(int64_t value);

/// `{1LL, 2LL}`: a brace initializer of cInt64 literals; `{0}` for no
/// values, so an array declared with it stays legal.
std::string cInt64List(llvm::ArrayRef<int64_t> values);

/// `static const int64_t name[] = {1LL, 2LL};` (one statement, no newline).
std::string cInt64ArrayDecl(llvm::StringRef name, llvm::ArrayRef<int64_t> values);

/// `callee(a, b, c)`: a call with its arguments spelled by the caller.
std::string cCall(llvm::StringRef callee, llvm::ArrayRef<std::string> args);

/// A C++ string literal of `text`: quotes and backslashes escaped, control
/// characters as spaces.
std::string cStringLiteral(llvm::StringRef text);

/// `1.000000047e-03f`: a float literal of a float value that reads back as
/// the same float (9 significant digits).
std::string cFloatLiteral(const llvm::APFloat &value);

/// `1.000000047e-03`: the digits of cFloatLiteral without the `f` (a double
/// literal of the float's value), for code that casts it to its compute type.
std::string floatDigits(const llvm::APFloat &value);

/// `0.10000000000000001`, `1`, `-9.2e+18`: 17 significant digits (%.17g),
/// which read back as the same double. Not always a floating literal (`1`),
/// so for contexts that convert it (a double argument or array element).
std::string doubleDigits(double value);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_FORMAT_H
