#!/usr/bin/env python3
"""Lists the longest C++ and CUDA functions under the given folders (default:
codegen and passes, the generated-code headers of codegen/include with
them), longest first: lines from the signature to the closing brace,
lambdas counted in the function that holds them.

A brace scanner, not a parser: comments, string and char literals and
preprocessor directives are blanked, then every `{` at namespace or class
scope whose header has a parameter list (and no `=`) opens a function.
Attribute lists (`__launch_bounds__(...)`, `__attribute__((...))`,
`alignas(...)`) are no parameter list, and lines that only invoke a macro
(`NAME(args)`, no `;`) are no part of the declaration after them. Good
enough for this tree's style (clang-format, no macros that open blocks).
Reads .cpp, .h, .cu and .cuh files.

usage: scripts/function-lengths.py [--top N | --min LINES | --max LINES]
                                   [--exclude PREFIX]... [--root DIR]
                                   [DIR_OR_FILE...]
       scripts/function-lengths.py --self-test

  --top N          the N longest (default 10)
  --min LINES      every function at least LINES long
  --max LINES      every function longer than LINES; exit 1 if any
  --exclude PREFIX skip files whose path relative to --root (default: this
                   script's checkout) starts with PREFIX; repeatable
  --self-test      check the scanner on made-up sources
"""
import argparse
import contextlib
import io
import os
import re
import sys
import tempfile

SUFFIXES = (".cpp", ".h", ".cu", ".cuh")

# Attribute-like calls that may stand in a function's or a class's header.
ATTRIBUTES = re.compile(r"\b(__launch_bounds__|__attribute__|__declspec|alignas|__align__)\s*\(")


def blank_comments_and_strings(text):
    """`text` with comments, string and char literals and preprocessor
    directives replaced by spaces (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    line_start = True  # only blanks since the last newline
    while i < n:
        c = text[i]
        if c == "#" and line_start:
            # A directive runs to the first newline not escaped by `\`.
            j = text.find("\n", i)
            while j >= 0 and text[i:j].rstrip("\r").endswith("\\"):
                j = text.find("\n", j + 1)
            j = n if j < 0 else j
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "\n":
            line_start = True
        elif c not in " \t\r":
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# A whole line that invokes a macro at namespace scope without a `;` (its
# expansion defines things): not part of the declaration after it.
MACRO_LINE = re.compile(r"[ \t]*[A-Z_][A-Z0-9_]*[ \t]*\([^\n]*\)[ \t]*\n")


def skip_macro_lines(text, start, end):
    """`start` moved past the MACRO_LINEs that open text[start:end], as long
    as a declaration follows them."""
    while True:
        p = start + len(text[start:end]) - len(text[start:end].lstrip())
        m = MACRO_LINE.match(text, p, end)
        if not m or not text[m.end():end].strip():
            return start
        start = m.end()


def strip_attributes(flat):
    """`flat` without attribute-like calls (ATTRIBUTES and their balanced
    parentheses)."""
    while True:
        m = ATTRIBUTES.search(flat)
        if not m:
            return flat
        depth, j = 0, m.end() - 1
        while j < len(flat):
            depth += {"(": 1, ")": -1}.get(flat[j], 0)
            j += 1
            if depth == 0:
                break
        flat = flat[:m.start()] + " " + flat[j:]


def functions(path):
    """(name, first line, last line) of each function defined in `path`."""
    text = blank_comments_and_strings(open(path, encoding="utf-8", errors="replace").read())
    found = []
    stack = []  # kinds of the open braces: ns, class, func, other
    header_start = 0  # where the text since the last ; { } begins
    line = 1
    line_at = [0] * (len(text) + 1)
    for i, c in enumerate(text):
        line_at[i] = line
        if c == "\n":
            line += 1
    func_start = {}
    for i, c in enumerate(text):
        if c == "{":
            header_start = skip_macro_lines(text, header_start, i)
            header = text[header_start:i]
            inside_func = any(k == "func" for k in stack)
            flat = strip_attributes(" ".join(header.split()))
            if inside_func:
                kind = "other"
            elif re.search(r"\bnamespace\b|\bextern\s*\"\s*\"", flat):
                kind = "ns"
            elif re.match(r"^(template\s*<.*>\s*)?(typedef\s+)?(struct|class|union|enum)\b[^()]*$", flat):
                kind = "class"
            elif "(" in flat and not re.search(r"=\s*$", flat) and not flat.endswith(","):
                kind = "func"
                m = re.search(r"([~\w:]+(?:<[^()]*>)?|operator\W+)\s*\(", flat)
                name = m.group(1) if m else flat[:40]
                start = header_start + len(header) - len(header.lstrip())
                func_start[len(stack)] = (name, line_at[start])
            else:
                kind = "other"
            stack.append(kind)
            header_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "other"
            if kind == "func":
                name, first = func_start.pop(len(stack))
                found.append((name, first, line_at[i]))
            header_start = i + 1
        elif c == ";":
            header_start = i + 1
    return found


def source_files(paths, root, excludes):
    """The source files named by or under `paths`, less those whose path
    relative to `root` starts with one of `excludes`."""
    files = []
    for p in paths:
        if os.path.isfile(p):
            files.append(p)
            continue
        for folder, _, names in os.walk(p):
            files += [os.path.join(folder, n) for n in names if n.endswith(SUFFIXES)]

    def excluded(f):
        rel = os.path.relpath(os.path.abspath(f), root).replace(os.sep, "/")
        return any(rel.startswith(prefix) for prefix in excludes)

    return sorted(f for f in files if not excluded(f))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", default=["codegen", "passes"])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--min", type=int, default=0, help="list every function at least this long")
    ap.add_argument("--max", type=int, default=None,
                    help="list every function longer than this; exit 1 if any")
    ap.add_argument("--exclude", action="append", default=[], metavar="PREFIX",
                    help="skip files whose path relative to --root starts with PREFIX")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="what --exclude is relative to (default: this script's checkout)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the scanner on made-up sources instead")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    rows = []
    for f in source_files(args.paths, os.path.abspath(args.root), args.exclude):
        for name, first, last in functions(f):
            rows.append((last - first + 1, f"{f}:{first}", name))
    rows.sort(key=lambda r: (-r[0], r[1]))
    if args.max is not None:
        shown = [r for r in rows if r[0] > args.max]
    elif args.min:
        shown = [r for r in rows if r[0] >= args.min]
    else:
        shown = rows[:args.top]
    for length, where, name in shown:
        print(f"{length:5d}  {name}  ({where})")
    if args.max is not None and shown:
        print(f"{len(shown)} function(s) longer than {args.max} lines", file=sys.stderr)
        return 1
    return 0


# Made-up sources for --self-test, and the rows expected from them: (length,
# file, first line, name).
_SOURCES = {
    # A free function of known length after directives (their parentheses
    # and braces are not read), holding braces in a comment, a string and a
    # char; then one after lines that invoke a macro.
    "passes/Plain.cpp": """#include "Plain.h"
#if defined(SLUICE_X) // it's
#define BRACE(x) { x
#endif

// A comment with a brace: {
int plain(int a) {
  const char *s = "}}{";
  /* { */
  char c = '{';
  return a + 1;
}
UNARY(exp, exp)
UNARY(log, log)
int after(int x) {
  return x;
}
""",
    # A lambda inside a function counts in it; a class's method and a
    # constructor are functions, the class and the namespace are not.
    "passes/Nested.h": """namespace sluice {

struct alignas(16) Holder {
  Holder(int v) : value(v) {}
  int twice() const {
    auto f = [&](int x) {
      return 2 * x;
    };
    return f(value);
  }
  int value;
};

extern "C" {
void api() {}
}

} // namespace sluice
""",
    # A CUDA kernel with launch bounds.
    "codegen/include/sluice_gen/kernels.cuh": """#pragma once
template <typename T>
__global__ void __launch_bounds__(256)
    scale(T *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] *= 2;
  }
}
""",
    # Excluded by the self-test's --exclude.
    "passes/skipped/Long.cpp": "void skipped() {\n" + "  ;\n" * 200 + "}\n",
}

# In the order printed: longest first, then by "path:line" as text.
_EXPECTED = [
    (8, "codegen/include/sluice_gen/kernels.cuh", 2, "scale"),
    (6, "passes/Nested.h", 5, "twice"),
    (6, "passes/Plain.cpp", 7, "plain"),
    (3, "passes/Plain.cpp", 15, "after"),
    (1, "passes/Nested.h", 15, "api"),
    (1, "passes/Nested.h", 4, "Holder"),
]


def self_test():
    """Runs the scanner over _SOURCES; each mismatch is a failure."""
    failures = []

    def run(tmp, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = main(["--root", tmp, *argv])
        return rc, out.getvalue().splitlines()

    def row(length, path, line, name, tmp):
        return f"{length:5d}  {name}  ({os.path.join(tmp, path)}:{line})"

    with tempfile.TemporaryDirectory() as tmp:
        for path, text in _SOURCES.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        paths = [os.path.join(tmp, "codegen"), os.path.join(tmp, "passes")]
        exclude = ["--exclude", "passes/skipped/"]
        cases = [
            ("every function", ["--top", "100", *exclude, *paths], 0,
             [row(*e, tmp) for e in _EXPECTED]),
            ("without --exclude", ["--top", "1", *paths], 0,
             [row(202, "passes/skipped/Long.cpp", 1, "skipped", tmp)]),
            ("--max 6", ["--max", "6", *exclude, *paths], 1,
             [row(*_EXPECTED[0], tmp)]),
            ("--max 8", ["--max", "8", *exclude, *paths], 0, []),
            ("--min 6", ["--min", "6", *exclude, *paths], 0,
             [row(*e, tmp) for e in _EXPECTED[:3]]),
        ]
        for what, argv, rc_expected, expected in cases:
            rc, got = run(tmp, *argv)
            if got != expected or rc != rc_expected:
                failures.append(f"{what}: expected exit {rc_expected} and\n  " +
                                ("\n  ".join(expected) or "(nothing)") +
                                f"\ngot exit {rc} and\n  " + ("\n  ".join(got) or "(nothing)"))
    for f in failures:
        print("self-test: " + f)
    print(f"self-test: {len(cases) - len(failures)} of {len(cases)} cases pass")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
