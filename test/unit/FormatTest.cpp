//===- FormatTest.cpp - C++ spellings of values in generated source -------===//
//
// The spellings of codegen/common/Format.h differ on purpose (`123` vs
// `123LL`, 9 vs 17 significant digits); a helper that drifts changes what
// the generated code computes, so each spelling is pinned here.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>

using namespace sluice::codegen;

namespace {

TEST(Format, Integers) {
  EXPECT_EQ(decimal(123), "123");
  EXPECT_EQ(decimal(-5000000000LL), "-5000000000");
  EXPECT_EQ(cInt64(123), "123LL");
  EXPECT_EQ(cInt64(std::numeric_limits<int64_t>::max()), "9223372036854775807LL");
  // The narrow spelling switches to long long exactly outside int32.
  EXPECT_EQ(cIntOrInt64(2147483647), "2147483647");
  EXPECT_EQ(cIntOrInt64(2147483648LL), "2147483648LL");
  EXPECT_EQ(cIntOrInt64(-2147483648LL), "-2147483648");
  EXPECT_EQ(cIntOrInt64(-2147483649LL), "-2147483649LL");
}

TEST(Format, Arrays) {
  EXPECT_EQ(cInt64List({1, -2, 3}), "{1LL, -2LL, 3LL}");
  EXPECT_EQ(cInt64List({}), "{0}");
  EXPECT_EQ(cInt64ArrayDecl("a_off", {0, 64}), "static const int64_t a_off[] = {0LL, 64LL};");
  EXPECT_EQ(cInt64ArrayDecl("none", {}), "static const int64_t none[] = {0};");
}

TEST(Format, Calls) {
  EXPECT_EQ(cCall("sluice_fill<float>", {"4", "0.0f", "out0"}),
            "sluice_fill<float>(4, 0.0f, out0)");
  EXPECT_EQ(cCall("f", {}), "f()");
}

TEST(Format, Strings) {
  EXPECT_EQ(cStringLiteral("k0_add"), "\"k0_add\"");
  EXPECT_EQ(cStringLiteral("a\"b\\c\nd"), "\"a\\\"b\\\\c d\"");
}

TEST(Format, FloatsReadBackExactly) {
  llvm::APFloat eps(1e-5f);
  EXPECT_EQ(cFloatLiteral(eps), "9.999999747e-06f");
  EXPECT_EQ(floatDigits(eps), "9.999999747e-06");
  EXPECT_EQ(std::strtof(floatDigits(eps).c_str(), nullptr), 1e-5f);
  EXPECT_EQ(doubleDigits(0.1), "0.10000000000000001");
  EXPECT_EQ(doubleDigits(1.0), "1");
  EXPECT_EQ(std::strtod(doubleDigits(1.0 / 3).c_str(), nullptr), 1.0 / 3);
}

} // namespace
