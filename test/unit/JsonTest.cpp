//===- JsonTest.cpp - the runtime's strict JSON reader --------------------===//

#include "runtime/core/Json.h"

#include "lib/support/Json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using sluice::runtime::JsonValue;
using sluice::runtime::parseJson;

namespace {
/// The error parseJson gives for `text` ("" if it parses).
std::string errorOf(const std::string &text) {
  JsonValue value;
  std::string error;
  return parseJson(text, value, error) ? "" : error;
}
} // namespace

TEST(Json, Scalars) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(parseJson(" true ", v, error)) << error;
  EXPECT_TRUE(v.isBool() && v.boolean);
  ASSERT_TRUE(parseJson("false", v, error)) << error;
  EXPECT_TRUE(v.isBool() && !v.boolean);
  ASSERT_TRUE(parseJson("null", v, error)) << error;
  EXPECT_TRUE(v.isNull());
  ASSERT_TRUE(parseJson("-12.5e2", v, error)) << error;
  EXPECT_EQ(v.number, -1250);
  ASSERT_TRUE(parseJson("0", v, error)) << error;
  EXPECT_EQ(v.number, 0);
  ASSERT_TRUE(parseJson("4096", v, error)) << error;
  EXPECT_EQ(v.number, 4096);
  ASSERT_TRUE(parseJson("1E+3", v, error)) << error;
  EXPECT_EQ(v.number, 1000);
}

TEST(Json, Nesting) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(parseJson(R"({"a": [1, {"b": [[], {}]}, "c"], "d": {"e": null}})",
                        v, error))
      << error;
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.object.size(), 2u);
  const JsonValue *a = v.get("a");
  ASSERT_TRUE(a && a->isArray());
  ASSERT_EQ(a->array.size(), 3u);
  EXPECT_EQ(a->array[0].number, 1);
  const JsonValue *b = a->array[1].get("b");
  ASSERT_TRUE(b && b->isArray());
  EXPECT_TRUE(b->array[0].isArray() && b->array[0].array.empty());
  EXPECT_TRUE(b->array[1].isObject() && b->array[1].object.empty());
  EXPECT_EQ(a->array[2].string, "c");
  EXPECT_TRUE(v.get("d")->get("e")->isNull());
  EXPECT_EQ(v.get("missing"), nullptr);
}

TEST(Json, Escapes) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(parseJson(R"("q\" b\\ s\/ \b\f\n\r\t")", v, error)) << error;
  EXPECT_EQ(v.string, "q\" b\\ s/ \b\f\n\r\t");
  ASSERT_TRUE(parseJson(R"("\u0041\u00e9\u20AC\ud83d\ude00")", v, error))
      << error;
  EXPECT_EQ(v.string, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  ASSERT_TRUE(parseJson("\"bundle with space/x\"", v, error)) << error;
  EXPECT_EQ(v.string, "bundle with space/x");
}

TEST(Json, ErrorsCarryByteOffsets) {
  EXPECT_EQ(errorOf(""), "at byte 0: unexpected end of input");
  EXPECT_EQ(errorOf("{\"a\": 1,}"), "at byte 8: expected a string key");
  EXPECT_EQ(errorOf("[1, 2"), "at byte 5: unterminated array");
  EXPECT_EQ(errorOf("[1 2]"), "at byte 3: expected ',' or ']' in an array");
  EXPECT_EQ(errorOf("{\"a\" 1}"), "at byte 5: expected ':' after a key");
  EXPECT_EQ(errorOf("{\"a\": 1, \"a\": 2}"), "at byte 9: duplicate key 'a'");
  EXPECT_EQ(errorOf("\"abc"), "at byte 4: unterminated string");
  EXPECT_EQ(errorOf("\"a\\qb\""), "at byte 2: invalid escape '\\q'");
  EXPECT_EQ(errorOf("\"\\u12G4\""), "at byte 3: invalid \\u escape");
  EXPECT_EQ(errorOf("\"\\ud83d\""), "at byte 7: unpaired high surrogate in "
                                    "\\u escape");
  EXPECT_EQ(errorOf("\"a\nb\""), "at byte 2: control character in a string");
  EXPECT_EQ(errorOf("01"), "at byte 1: invalid number (leading zero)");
  EXPECT_EQ(errorOf("1."), "at byte 2: invalid number (no digits after '.')");
  EXPECT_EQ(errorOf("-"), "at byte 1: invalid number");
  EXPECT_EQ(errorOf("1e"), "at byte 2: invalid number (no digits in the "
                           "exponent)");
  EXPECT_EQ(errorOf("tru"), "at byte 0: invalid literal");
  EXPECT_EQ(errorOf("{} x"), "at byte 3: unexpected text after the JSON value");
  EXPECT_EQ(errorOf("// comment\n{}"), "at byte 0: unexpected character '/'");
  EXPECT_EQ(errorOf(std::string(300, '[') + std::string(300, ']')),
            "at byte 256: nesting deeper than 256");
}

// The compiler writes manifests with llvm::json (lib/support/Json.h); the
// runtime reads them with its own parser. Everything the writer may emit
// reads back: every escape it uses (quote, backslash, \t \n \r, \u00XX for
// other control characters), raw UTF-8, bytes that were not UTF-8 (U+FFFD),
// 2^53, negative dims, fixed-decimal numbers, pretty-printed nesting.
TEST(Json, ReadsWhatTheCompilerWrites) {
  const std::string path = "out \"q\"\\dir/\x01\t\n\r\x1f\x7f caf\xc3\xa9 \xf0\x9f\x98\x80";
  std::string text;
  llvm::raw_string_ostream stream(text);
  llvm::json::OStream json(stream, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("path", sluice::jsonText(path));
    json.attribute("latin1", sluice::jsonText("caf\xe9"));
    json.attribute("big", int64_t(1) << 53);
    json.attributeArray("shape", [&] {
      for (int64_t dim : {-1, 0, 12})
        json.value(dim);
    });
    sluice::writeJsonStrings(json, "nodes", std::vector<std::string>{"/0/Gemm", ""});
    json.attributeBegin("ms");
    sluice::writeJsonFixed3(json, 5.0);
    json.attributeEnd();
  });

  JsonValue v;
  std::string error;
  ASSERT_TRUE(parseJson(text, v, error)) << error << "\n" << text;
  ASSERT_TRUE(v.isObject());
  EXPECT_EQ(v.get("path")->string, path);
  EXPECT_EQ(v.get("latin1")->string, "caf\xef\xbf\xbd");
  EXPECT_EQ(v.get("big")->number, 9007199254740992.0);
  const JsonValue *shape = v.get("shape");
  ASSERT_TRUE(shape && shape->isArray() && shape->array.size() == 3);
  EXPECT_EQ(shape->array[0].number, -1);
  EXPECT_EQ(shape->array[2].number, 12);
  const JsonValue *nodes = v.get("nodes");
  ASSERT_TRUE(nodes && nodes->isArray() && nodes->array.size() == 2);
  EXPECT_EQ(nodes->array[0].string, "/0/Gemm");
  EXPECT_EQ(nodes->array[1].string, "");
  EXPECT_EQ(v.get("ms")->number, 5);
  // Written with its decimals, so Python reads a float, not an int.
  EXPECT_NE(text.find("\"ms\": 5.000"), std::string::npos) << text;
}
