//===- CodeWriter.h - an indented stream of generated source ---*- C++ -*-===//
//
// Both emitters write their C++ and CUDA source through this one writer
// instead of appending strings with hand-counted spaces: a line is written
// at the current indent (formatted with llvm::formatv), a block prints its
// header followed by ` {`, indents what is written while its scope lives and
// closes with `}` when the scope ends, and chunks formatted elsewhere (a
// scalar body, a constant table) are appended as they are. The writer knows
// nothing of C++ beyond braces and two-space indents.
//
//   CodeWriter w(1);
//   w.line("#pragma omp simd");
//   {
//     auto loop = w.block("for (int64_t i = 0; i < {0}; ++i)", n);
//     w.line("out0[i] = in0[i] * {0};", scale);
//   }
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_CODEWRITER_H
#define SLUICE_CODEGEN_COMMON_CODEWRITER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>

namespace sluice::codegen {

class CodeWriter {
public:
  /// A writer whose first lines sit `depth` levels (two spaces each) deep:
  /// 1 for statements of a function body.
  explicit CodeWriter(unsigned depth = 0) : text(owned), depth(depth) {}
  /// A writer appending to `out` (which must outlive it) instead of its own
  /// text.
  CodeWriter(std::string &out, unsigned depth) : text(out), depth(depth) {}
  CodeWriter(const CodeWriter &) = delete;
  CodeWriter &operator=(const CodeWriter &) = delete;

  /// Ends a block (or an indented stretch) when it goes out of scope: the
  /// indent returns to the block's header and its closing text is written.
  class [[nodiscard]] Scope {
  public:
    Scope(Scope &&other) noexcept
        : writer(std::exchange(other.writer, nullptr)), close(std::move(other.close)) {}
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;
    Scope &operator=(Scope &&) = delete;
    ~Scope();

  private:
    friend class CodeWriter;
    Scope(CodeWriter &writer, std::string close) : writer(&writer), close(std::move(close)) {}
    CodeWriter *writer;
    std::string close; ///< the closing line; none when empty
  };

  /// One line at the current indent: `llvm::formatv(fmt, args...)`. The
  /// format string is always parsed, so a literal brace in it is written
  /// `{{` (a `}` needs no escape); braces inside arguments are copied as
  /// they are. A line that formats to nothing is written empty, without
  /// the indent.
  template <typename... Ts> CodeWriter &line(const char *fmt, Ts &&...args) {
    return put(llvm::formatv(fmt, std::forward<Ts>(args)...).str());
  }

  /// An empty line (no trailing spaces).
  CodeWriter &blank() {
    os << '\n';
    return *this;
  }

  /// `text` appended as it is: pre-formatted chunks that carry their own
  /// indents and newlines (a scalar body, a macro definition).
  CodeWriter &raw(llvm::StringRef text) {
    os << text;
    return *this;
  }

  /// `header {` on a line of its own (header formatted as by line(); an
  /// empty header opens a bare `{`); what is written while the returned
  /// scope lives is indented one level more, and `}` closes it.
  template <typename... Ts> Scope block(const char *header, Ts &&...args) {
    return blockClosedBy("}", header, std::forward<Ts>(args)...);
  }

  /// block() closed by `close` instead of `}`: `};` after a lambda or a
  /// struct, `}();` after an immediately invoked lambda.
  template <typename... Ts>
  Scope blockClosedBy(llvm::StringRef close, const char *header, Ts &&...args) {
    std::string opening = llvm::formatv(header, std::forward<Ts>(args)...).str();
    put(opening.empty() ? "{" : opening + " {");
    ++depth;
    return Scope(*this, close.str());
  }

  /// One level more indent while the returned scope lives, without braces:
  /// the body of a `for` or `if` that is a single statement.
  Scope indented() {
    ++depth;
    return Scope(*this, "");
  }

  /// The current indent as spaces, for helpers that still take one.
  std::string indentation() const { return std::string(2 * depth, ' '); }

  /// Everything written so far (with what `out` held before, for a writer
  /// appending to it).
  const std::string &str() const { return text; }

private:
  void indent() { os.indent(2 * depth); }
  CodeWriter &put(const std::string &formatted) {
    if (!formatted.empty())
      indent();
    os << formatted << '\n';
    return *this;
  }
  void closeScope(const std::string &close) {
    --depth;
    if (!close.empty()) {
      indent();
      os << close << '\n';
    }
  }

  std::string owned;
  std::string &text;
  llvm::raw_string_ostream os{text};
  unsigned depth;
};

inline CodeWriter::Scope::~Scope() {
  if (writer)
    writer->closeScope(close);
}

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_CODEWRITER_H
