#!/usr/bin/env python3
"""Lists the longest C++ functions under the given folders (default: codegen
and passes), longest first: lines from the signature to the closing brace,
lambdas counted in the function that holds them.

A brace scanner, not a parser: comments and string literals are blanked,
then every `{` at namespace or class scope whose header has a parameter
list (and no `=`) opens a function. Good enough for this tree's style
(clang-format, no macros that open blocks).

usage: scripts/function-lengths.py [--top N] [--min LINES] [DIR_OR_FILE...]
"""
import argparse
import os
import re
import sys


def blank_comments_and_strings(text):
    """`text` with comments, string and char literals replaced by spaces
    (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
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
            header = text[header_start:i]
            inside_func = any(k == "func" for k in stack)
            flat = " ".join(header.split())
            if inside_func:
                kind = "other"
            elif re.search(r"\bnamespace\b|\bextern\s*\"\"", flat):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", default=["codegen", "passes"])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--min", type=int, default=0, help="list every function at least this long")
    args = ap.parse_args()
    files = []
    for p in args.paths:
        if os.path.isfile(p):
            files.append(p)
            continue
        for root, _, names in os.walk(p):
            files += [os.path.join(root, n) for n in names
                      if n.endswith((".cpp", ".h")) and "/include/" not in os.path.join(root, n)]
    rows = []
    for f in sorted(files):
        for name, first, last in functions(f):
            rows.append((last - first + 1, f"{f}:{first}", name))
    rows.sort(key=lambda r: (-r[0], r[1]))
    shown = [r for r in rows if r[0] >= args.min] if args.min else rows[:args.top]
    for length, where, name in shown:
        print(f"{length:5d}  {name}  ({where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
