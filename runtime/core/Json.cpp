//===- Json.cpp - a small strict JSON reader ------------------------------===//
//
// A recursive-descent parser over the RFC 8259 grammar. Nesting is capped so
// that a hostile manifest cannot overflow the stack.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Json.h"

#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace sluice::runtime {

const JsonValue *JsonValue::get(const std::string &key) const {
  for (const auto &member : object)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *jsonKindName(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return "boolean";
  case JsonValue::Kind::Number:
    return "number";
  case JsonValue::Kind::String:
    return "string";
  case JsonValue::Kind::Array:
    return "array";
  case JsonValue::Kind::Object:
    return "object";
  }
  return "value";
}

namespace {

constexpr int kMaxDepth = 256;

class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  bool parseDocument(JsonValue &value) {
    skipSpace();
    if (!parseValue(value, 0))
      return false;
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the JSON value");
    return true;
  }

  std::string error;

private:
  const std::string &text;
  size_t pos = 0;

  bool fail(const std::string &message) {
    error = "at byte " + std::to_string(pos) + ": " + message;
    return false;
  }
  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return text[pos]; }

  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      ++pos;
  }

  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return fail("invalid literal");
    pos += n;
    return true;
  }

  bool parseValue(JsonValue &value, int depth) {
    if (atEnd())
      return fail("unexpected end of input");
    switch (peek()) {
    case '{':
      return parseObject(value, depth);
    case '[':
      return parseArray(value, depth);
    case '"':
      value.kind = JsonValue::Kind::String;
      return parseString(value.string);
    case 't':
      value.kind = JsonValue::Kind::Bool;
      value.boolean = true;
      return literal("true");
    case 'f':
      value.kind = JsonValue::Kind::Bool;
      value.boolean = false;
      return literal("false");
    case 'n':
      value.kind = JsonValue::Kind::Null;
      return literal("null");
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9'))
        return parseNumber(value);
      return fail(std::string("unexpected character '") + peek() + "'");
    }
  }

  bool parseObject(JsonValue &value, int depth) {
    if (depth >= kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    value.kind = JsonValue::Kind::Object;
    ++pos; // '{'
    skipSpace();
    if (!atEnd() && peek() == '}') {
      ++pos;
      return true;
    }
    std::unordered_set<std::string> keys;
    while (true) {
      skipSpace();
      if (atEnd() || peek() != '"')
        return fail("expected a string key");
      size_t keyStart = pos;
      std::string key;
      if (!parseString(key))
        return false;
      // A set, not a scan of the keys so far: a hostile object with many
      // keys must not take quadratic time.
      if (!keys.insert(key).second) {
        pos = keyStart;
        return fail("duplicate key '" + key + "'");
      }
      skipSpace();
      if (atEnd() || peek() != ':')
        return fail("expected ':' after a key");
      ++pos;
      skipSpace();
      value.object.emplace_back(std::move(key), JsonValue());
      if (!parseValue(value.object.back().second, depth + 1))
        return false;
      skipSpace();
      if (atEnd())
        return fail("unterminated object");
      if (peek() == '}') {
        ++pos;
        return true;
      }
      if (peek() != ',')
        return fail("expected ',' or '}' in an object");
      ++pos;
    }
  }

  bool parseArray(JsonValue &value, int depth) {
    if (depth >= kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    value.kind = JsonValue::Kind::Array;
    ++pos; // '['
    skipSpace();
    if (!atEnd() && peek() == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      value.array.emplace_back();
      if (!parseValue(value.array.back(), depth + 1))
        return false;
      skipSpace();
      if (atEnd())
        return fail("unterminated array");
      if (peek() == ']') {
        ++pos;
        return true;
      }
      if (peek() != ',')
        return fail("expected ',' or ']' in an array");
      ++pos;
    }
  }

  bool parseHex4(unsigned &code) {
    if (pos + 4 > text.size())
      return fail("truncated \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos + i];
      code <<= 4;
      if (c >= '0' && c <= '9')
        code |= c - '0';
      else if (c >= 'a' && c <= 'f')
        code |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        code |= c - 'A' + 10;
      else
        return fail("invalid \\u escape");
    }
    pos += 4;
    return true;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += (char)code;
    } else if (code < 0x800) {
      out += (char)(0xC0 | (code >> 6));
      out += (char)(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += (char)(0xE0 | (code >> 12));
      out += (char)(0x80 | ((code >> 6) & 0x3F));
      out += (char)(0x80 | (code & 0x3F));
    } else {
      out += (char)(0xF0 | (code >> 18));
      out += (char)(0x80 | ((code >> 12) & 0x3F));
      out += (char)(0x80 | ((code >> 6) & 0x3F));
      out += (char)(0x80 | (code & 0x3F));
    }
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      char c = text[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if ((unsigned char)c < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        ++pos;
        continue;
      }
      ++pos;
      if (atEnd())
        return fail("unterminated string");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code = 0;
        if (!parseHex4(code))
          return false;
        if (code >= 0xDC00 && code <= 0xDFFF)
          return fail("unpaired low surrogate in \\u escape");
        if (code >= 0xD800 && code <= 0xDBFF) {
          unsigned low = 0;
          if (text.compare(pos, 2, "\\u") != 0)
            return fail("unpaired high surrogate in \\u escape");
          pos += 2;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low > 0xDFFF)
            return fail("unpaired high surrogate in \\u escape");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(out, code);
        break;
      }
      default:
        pos -= 2; // point at the backslash
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  bool digits() {
    size_t start = pos;
    while (!atEnd() && peek() >= '0' && peek() <= '9')
      ++pos;
    return pos > start;
  }

  bool parseNumber(JsonValue &value) {
    size_t start = pos;
    if (peek() == '-')
      ++pos;
    if (atEnd() || !(peek() >= '0' && peek() <= '9'))
      return fail("invalid number");
    if (peek() == '0') {
      ++pos;
      if (!atEnd() && peek() >= '0' && peek() <= '9')
        return fail("invalid number (leading zero)");
    } else {
      digits();
    }
    if (!atEnd() && peek() == '.') {
      ++pos;
      if (!digits())
        return fail("invalid number (no digits after '.')");
    }
    if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
      ++pos;
      if (!atEnd() && (peek() == '+' || peek() == '-'))
        ++pos;
      if (!digits())
        return fail("invalid number (no digits in the exponent)");
    }
    value.kind = JsonValue::Kind::Number;
    value.number =
        std::strtod(text.substr(start, pos - start).c_str(), nullptr);
    return true;
  }
};

} // namespace

bool parseJson(const std::string &text, JsonValue &value, std::string &error) {
  Parser parser(text);
  value = JsonValue();
  if (parser.parseDocument(value))
    return true;
  error = parser.error;
  return false;
}

} // namespace sluice::runtime
