//===- ToolSupport.h - command-line plumbing shared by the tools -*- C++ -*-===//
//
// The tools parse their own flags (the tool contract mixes positional files,
// NAME=FILE pairs and list flags that llvm::cl cannot express) and report every
// failure as one `tool: error: message` line with a non-zero exit.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_COMMON_TOOLSUPPORT_H
#define SLUICE_TOOLS_COMMON_TOOLSUPPORT_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice::tools {

/// Prints `tool: error: message` (trailing newlines trimmed) and exits 2.
[[noreturn]] inline void die(const char *tool, const std::string &message) {
  std::string text = message;
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  std::fprintf(stderr, "%s: error: %s\n", tool, text.c_str());
  std::exit(2);
}

/// Walks argv; `flagValue` reads a flag's value given as `--flag=V` or as the
/// next argument.
class ArgReader {
public:
  ArgReader(const char *tool, int argc, char **argv)
      : tool(tool), argc(argc), argv(argv) {}

  bool next() { return ++index < argc; }
  const std::string &arg() {
    current = argv[index];
    return current;
  }
  /// True if the current argument is `flag` or `flag=...`.
  bool is(const char *flag) const {
    size_t n = std::strlen(flag);
    return current.compare(0, n, flag) == 0 &&
           (current.size() == n || current[n] == '=');
  }
  std::string flagValue(const char *flag) {
    size_t n = std::strlen(flag);
    if (current.size() > n && current[n] == '=')
      return current.substr(n + 1);
    if (index + 1 >= argc)
      die(tool, std::string("missing value for ") + flag);
    return argv[++index];
  }

private:
  const char *tool;
  int argc;
  char **argv;
  int index = 0;
  std::string current;
};

} // namespace sluice::tools

#endif // SLUICE_TOOLS_COMMON_TOOLSUPPORT_H
