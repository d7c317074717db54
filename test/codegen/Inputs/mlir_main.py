"""Prints a module whose @main the test-module generators of this folder
(int8_modules.py, wonly_modules.py) filled: typed arguments, the body's
lines, results named o0, o1, ..."""


def print_main(args, results, lines):
    """args: [(name, type)], results: [(value, type)], lines: the body."""
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    types = ", ".join(t for _, t in results)
    in_names = ", ".join(f'"{n}"' for n, _ in args)
    out_names = ", ".join(f'"o{i}"' for i in range(len(results)))
    print("module {")
    print(f"  func.func @main({sig}) -> ({types}) attributes {{sluice.input_names = [{in_names}], "
          f"sluice.output_names = [{out_names}]}} {{")
    print("\n".join(lines))
    print("    return " + ", ".join(v for v, _ in results) + " : " + types)
    print("  }")
    print("}")
