//===- CodeWriterTest.cpp - the indented writer of generated source -------===//
//
// Every emitter writes through CodeWriter, so its indents, its braces and
// its formatting of arguments are pinned here: a block that does not close,
// an indent that leaks out of a scope or a brace swallowed by formatv would
// change every generated file.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/CodeWriter.h"

#include <gtest/gtest.h>

using sluice::codegen::CodeWriter;

namespace {

TEST(CodeWriter, NestedBlocksIndentAndClose) {
  CodeWriter w;
  {
    auto fn = w.block("static int32_t {0}(void *const *b)", "k0");
    {
      auto loop = w.block("for (int64_t i = 0; i < {0}; ++i)", 8);
      w.line("out0[i] = in0[i];");
    }
    w.line("return 0;");
  }
  w.line("// after");
  EXPECT_EQ(w.str(), "static int32_t k0(void *const *b) {\n"
                     "  for (int64_t i = 0; i < 8; ++i) {\n"
                     "    out0[i] = in0[i];\n"
                     "  }\n"
                     "  return 0;\n"
                     "}\n"
                     "// after\n");
}

TEST(CodeWriter, StartDepthClosingTextAndIndentedStretches) {
  CodeWriter w(1);
  {
    auto lambda = w.blockClosedBy("};", "auto store_ = [&](int64_t row)");
    w.line("if (row < {0})", 4);
    {
      auto body = w.indented();
      w.line("return;");
    }
    w.line("(void)row;");
  }
  {
    auto init = w.blockClosedBy("}();", "static const int desc = []");
    w.line("return 1;");
  }
  {
    auto bare = w.block("");
    w.line("use(desc);");
  }
  EXPECT_EQ(w.str(), "  auto store_ = [&](int64_t row) {\n"
                     "    if (row < 4)\n"
                     "      return;\n"
                     "    (void)row;\n"
                     "  };\n"
                     "  static const int desc = [] {\n"
                     "    return 1;\n"
                     "  }();\n"
                     "  {\n"
                     "    use(desc);\n"
                     "  }\n");
  EXPECT_EQ(w.indentation(), "  ");
}

TEST(CodeWriter, FormatsArgumentsByPositionAndType) {
  CodeWriter w;
  int64_t big = 5000000000LL, negative = -3;
  w.line("{1} = {0} + {1} * {2};", "a", std::string("b"), big);
  w.line("x[{0}] = {1};", negative, llvm::StringRef("y"));
  w.line("{0}", 7u);
  EXPECT_EQ(w.str(), "b = a + b * 5000000000;\n"
                     "x[-3] = y;\n"
                     "7\n");
}

TEST(CodeWriter, BracesInFormatAndInArguments) {
  CodeWriter w;
  // A literal brace in the format is doubled; a closing one is not.
  w.line("static const int64_t a[] = {{1, 2};");
  // Braces in arguments are text, never replacement fields.
  w.line("static const int64_t {0}[] = {1};", "b", "{3, {4}}");
  { auto s = w.block("if ({0})", "m[{0}]"); }
  EXPECT_EQ(w.str(), "static const int64_t a[] = {1, 2};\n"
                     "static const int64_t b[] = {3, {4}};\n"
                     "if (m[{0}]) {\n"
                     "}\n");
}

TEST(CodeWriter, EmptyLinesAndRawChunks) {
  CodeWriter w(2);
  w.line("a;");
  w.blank();
  w.raw("#define X 1\n");
  w.line("");
  w.raw("  pre-indented;\n");
  // Empty lines have no trailing spaces, however they are written.
  EXPECT_EQ(w.str(), "    a;\n"
                     "\n"
                     "#define X 1\n"
                     "\n"
                     "  pre-indented;\n");
}

TEST(CodeWriter, AppendsToAnotherString) {
  std::string body = "  int a;\n";
  {
    CodeWriter w(body, 1);
    auto loop = w.block("while (a)");
    w.line("--a;");
  }
  EXPECT_EQ(body, "  int a;\n"
                  "  while (a) {\n"
                  "    --a;\n"
                  "  }\n");
}

TEST(CodeWriter, MovedScopeClosesOnce) {
  CodeWriter w;
  {
    auto outer = w.block("namespace n");
    auto moved = std::move(outer);
    w.line("int x;");
  }
  EXPECT_EQ(w.str(), "namespace n {\n"
                     "  int x;\n"
                     "}\n");
}

} // namespace
