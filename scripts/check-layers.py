#!/usr/bin/env python3
"""Checks that Sluice's layers only point down (docs/architecture.md, "Layers").

Every source file under dialects/ lib/ passes/ codegen/ runtime/ tools/
include/ belongs to one layer (LAYERS below: the first matching folder
wins). Each `#include "..."` of a file of another layer must name a layer the
including one may use (MAY_USE); likewise each target_link_libraries of a
target defined in those folders' CMakeLists.txt, whose layer is its folder's.
Targets that must not link MLIR or LLVM (NO_MLIR, and every runtime target)
are checked through the transitive link graph. test/ is not checked: tests
may include and link anything.

  scripts/check-layers.py [--root DIR]   prints each violation, exit 1 if any
  scripts/check-layers.py --self-test    checks the checker on a made-up tree

Python 3, standard library only.
"""

import argparse
import os
import re
import sys
import tempfile

# Folders scanned, relative to the root.
SCANNED = ["dialects", "lib", "passes", "codegen", "runtime", "tools", "include"]
SOURCE_SUFFIXES = (".h", ".hpp", ".inc", ".c", ".cc", ".cpp", ".cu", ".cuh")

# (folder prefix, layer), most specific first. Bottom to top, the compiler:
# support, dialect, {evaluator, kernel}, {importer, passes, codegen}, driver,
# tools; codegen inside: common, then {cpu, cuda}, then bundle. Beside it the
# runtime with its public headers, and the headers generated code includes.
LAYERS = [
    ("lib/support/", "support"),
    ("dialects/", "dialect"),
    ("lib/reference/", "evaluator"),
    ("lib/kernel/", "kernel"),
    ("lib/onnx/", "importer"),
    ("passes/", "passes"),
    ("codegen/include/sluice_gen/layout/", "generated-code layout"),
    ("codegen/include/", "generated-code headers"),
    ("codegen/common/", "codegen/common"),
    ("codegen/cpu/", "codegen/cpu"),
    ("codegen/cuda/", "codegen/cuda"),
    ("codegen/bundle/", "codegen/bundle"),
    # codegen/CMakeLists.txt: the one library of all four.
    ("codegen/", "codegen"),
    ("tools/driver/", "driver"),
    ("tools/", "tools"),
    ("runtime/", "runtime"),
    ("include/sluice/", "public API"),
]

_BELOW_CODEGEN = {"evaluator", "kernel", "dialect", "support"}
_CODEGEN = {"codegen", "codegen/common", "codegen/cpu", "codegen/cuda", "codegen/bundle"}
_COMPILER_BELOW_DRIVER = {"importer", "passes"} | _CODEGEN | _BELOW_CODEGEN

# What each layer may include or link besides itself. Siblings (evaluator and
# kernel; importer, passes and codegen; codegen/cpu and codegen/cuda) use
# none of each other. The compiler reaches the runtime only through its
# public headers (include/sluice), and only where it writes or runs bundles.
MAY_USE = {
    "support": set(),
    "dialect": {"support"},
    "evaluator": {"dialect", "support"},
    "kernel": {"dialect", "support"},
    "importer": set(_BELOW_CODEGEN),
    "passes": set(_BELOW_CODEGEN),
    "codegen/common": set(_BELOW_CODEGEN),
    "codegen/cpu": _BELOW_CODEGEN | {"codegen/common"},
    "codegen/cuda": _BELOW_CODEGEN | {"codegen/common"},
    "codegen/bundle": _BELOW_CODEGEN
    | {"codegen/common", "codegen/cpu", "codegen/cuda", "public API"},
    "codegen": _BELOW_CODEGEN | {"public API"},
    # The compile session stamps its cache key with the public version.
    "driver": _COMPILER_BELOW_DRIVER | {"public API"},
    "tools": _COMPILER_BELOW_DRIVER | {"driver", "public API", "runtime library"},
    "runtime": {"public API"},
    "public API": set(),
    "generated-code headers": {"public API"},
}

# The layout headers of generated code (codegen/include/sluice_gen/layout/):
# the packing and quantization math that the targets run at compile time
# and the bundles run or read at run time, so that each layout has one
# definition: the cpu target packs f32 GEMM weights into sluice_sgemm's
# column panels (cpu_gemm_pack.h) and int8 GEMM weights for its int8 GEMM
# (cpu_int8_pack.h); the cuda target packs int8 weights for cuBLASLt IMMA
# ([colsum | B^T]) and sizes the quantized GEMMs' workspaces
# (cuda_quant_layout.h), and checks a weight is 2:4 before emitting a
# cuSPARSELt GEMM (sparse_2_4.h). They are portable C++ that includes
# nothing but the standard library, so they use no layer; both targets
# and the other generated-code headers may use them.
LAYOUT = "generated-code layout"
MAY_USE[LAYOUT] = set()
for _layer in ("codegen/cpu", "codegen/cuda", "generated-code headers"):
    MAY_USE[_layer] = MAY_USE[_layer] | {LAYOUT}

# Single headers a layer may include from a layer it may not otherwise use:
# (including layer, header). The cuda target runs a group it has no kernel
# for as the cpu target's kernel on the host (host steps); CpuKernel.h is the
# whole of that interface, everything else the targets share is
# codegen/common; codegen/common's collective calls use the bundle ABI's
# element-type codes.
INCLUDE_EXCEPTIONS = {
    ("codegen/cuda", "codegen/cpu/CpuKernel.h"),
    # The element-type codes generated collective calls pass to the runtime's
    # communicator (SluiceCommDType) are the bundle ABI's own constants.
    ("codegen/common", "include/sluice/bundle_abi.h"),
}

# The runtime as a library that tools link (sluice-run runs bundles through
# it): linking is allowed where including runtime/ internals is not.
RUNTIME_TARGETS_AS_LIBRARY = "runtime library"

# Targets that must not link MLIR or LLVM, directly or through what they link.
NO_MLIR = {"SluiceTensor", "SluiceSupport"}
MLIR_LIBRARIES = {"MLIR", "LLVM", "SluiceStaticMLIR"}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def layer_of(path):
    """The layer of a root-relative path, or None."""
    for prefix, layer in LAYERS:
        if path.startswith(prefix):
            return layer
    return None


def resolve_include(root, including, name, bracket):
    """The root-relative path an include names, or None when it is outside
    the tree (mlir/, llvm/, onnx/, the standard library). Generated files
    (*.inc in the build tree) mirror their sources' folders."""
    if bracket == '"':
        local = os.path.normpath(os.path.join(os.path.dirname(including), name))
        if os.path.isfile(os.path.join(root, local)):
            return local
    # The include paths of CMakeLists.txt: the root, include/, and for the
    # generated code's headers codegen/include/.
    for base in ("", "include/", "codegen/include/"):
        candidate = os.path.normpath(base + name)
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    if layer_of(name) is not None and not name.startswith("include/"):
        return name  # a generated file: dialects/sluice/SluiceOps.h.inc
    return None


def source_files(root):
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(folder, f), root)


def check_includes(root, report):
    count = 0
    for path in source_files(root):
        count += 1
        layer = layer_of(path)
        if layer is None:
            report(f"{path}: not in any layer (add its folder to LAYERS in "
                   "scripts/check-layers.py and to docs/architecture.md)")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for line in f:
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve_include(root, path, m.group(2), m.group(1))
                if target is None:
                    continue
                used = layer_of(target)
                if used is None or used == layer or used in MAY_USE[layer]:
                    continue
                if (layer, target) in INCLUDE_EXCEPTIONS:
                    continue
                report(f"{path}: includes {m.group(2)} (layer {layer} -> layer {used})")
    return count


def cmake_commands(text):
    """(command, [arguments]) for each command of a CMakeLists.txt, comments
    dropped, arguments split on blanks (quoted arguments and generator
    expressions kept whole)."""
    # Quoted strings stay (they may hold '#' and parentheses), comments go.
    quoted_or_comment = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*')
    text = quoted_or_comment.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", text)
    command = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
    pos = 0
    while True:
        m = command.search(text, pos)
        if not m:
            return
        depth, i = 1, m.end()
        while i < len(text) and depth:
            if text[i] == '"':
                i = quoted_or_comment.match(text, i).end()
                continue
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        pos = i
        args = re.findall(r'"(?:[^"\\]|\\.)*"|\$<[^>]*>|[^\s()"]+', text[m.end():i - 1])
        yield m.group(1).lower(), [a.strip('"') for a in args]


def check_links(root, report):
    """Applies MAY_USE to target_link_libraries; returns the targets found."""
    defined = {}  # target -> (layer, CMakeLists.txt)
    links = []  # (CMakeLists.txt, target, library)
    mlir_linked = set()
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            if "CMakeLists.txt" not in files:
                continue
            cmake = os.path.relpath(os.path.join(folder, "CMakeLists.txt"), root)
            layer = layer_of(cmake)
            with open(os.path.join(root, cmake), encoding="utf-8") as f:
                text = f.read()
            for command, args in cmake_commands(text):
                if not args:
                    continue
                if command in ("add_library", "add_executable"):
                    if layer is None:
                        report(f"{cmake}: defines {args[0]} outside any layer")
                    defined[args[0]] = (layer, cmake)
                elif command == "target_link_libraries":
                    for lib in args[1:]:
                        if lib not in ("PUBLIC", "PRIVATE", "INTERFACE"):
                            links.append((cmake, args[0], lib))
                elif command == "sluice_link_mlir":
                    mlir_linked.add(args[0])

    def library_layer(lib):
        layer = defined[lib][0]
        return RUNTIME_TARGETS_AS_LIBRARY if layer == "runtime" else layer

    graph = {}
    for cmake, target, lib in links:
        graph.setdefault(target, set()).add(lib)
        if target not in defined or lib not in defined:
            continue
        layer, used = defined[target][0], library_layer(lib)
        if layer is None or used is None or defined[lib][0] == layer:
            continue
        if used not in MAY_USE[layer]:
            report(f"{cmake}: {target} links {lib} (layer {layer} -> layer {used})")

    def links_mlir(target, seen):
        if target in mlir_linked or target in MLIR_LIBRARIES:
            return True
        seen.add(target)
        return any(links_mlir(lib, seen) for lib in graph.get(target, ()) if lib not in seen)

    for target, (layer, cmake) in sorted(defined.items()):
        if (target in NO_MLIR or layer == "runtime") and links_mlir(target, set()):
            report(f"{cmake}: {target} links MLIR/LLVM (layer {layer} must not)")
    return defined


def check(root, out=sys.stdout):
    """Prints each violation under `root` to `out`; returns their number."""
    violations = []
    files = check_includes(root, violations.append)
    targets = check_links(root, violations.append)
    if not files or not targets:
        violations.append(f"{root}: no sources or no CMake targets found (wrong --root?)")
    for v in violations:
        print(v, file=out)
    return len(violations)


# A made-up tree for --self-test: one file per layer, each including what it
# may, and CMake targets that link what they may.
_CLEAN_TREE = {
    "lib/support/Tensor.h": "",
    "dialects/sluice/Ops.h": '#include "lib/support/Tensor.h"\n#include "dialects/sluice/Ops.h.inc"\n',
    "lib/reference/Evaluator.h": '#include "dialects/sluice/Ops.h"\n',
    "lib/kernel/Access.h": '#include "dialects/sluice/Ops.h"\n',
    "lib/onnx/Importer.cpp": '#include "lib/reference/Evaluator.h"\n#include "mlir/IR/Builders.h"\n',
    "passes/fuse/Fuse.cpp": '#include "lib/kernel/Access.h"\n#include "Local.h"\n',
    "passes/fuse/Local.h": "",
    "codegen/common/Scalar.h": '#include "lib/kernel/Access.h"\n',
    "codegen/cpu/Cpu.h": '#include "codegen/common/Scalar.h"\n',
    "codegen/cuda/Cuda.cpp": '#include "codegen/common/Scalar.h"\n',
    "codegen/bundle/Bundle.cpp": '#include "codegen/cpu/Cpu.h"\n#include "sluice/abi.h"\n',
    "codegen/include/sluice_gen/cpu.h": '#include "sluice/abi.h"\n#include "sluice_gen/scalar.h"\n',
    "codegen/include/sluice_gen/scalar.h": "",
    "tools/driver/Pipeline.cpp": '#include "passes/fuse/Fuse.h"\n#include "lib/onnx/Importer.h"\n',
    "tools/sluice-run/run.cpp": '#include "tools/driver/Pipeline.h"\n#include "sluice/runtime.h"\n',
    "runtime/core/Bundle.cpp": '#include "sluice/runtime.h"\n#include "runtime/cpu/Cpu.h"\n',
    "runtime/cpu/Cpu.h": "",
    "include/sluice/runtime.h": '#include "sluice/abi.h"\n',
    "include/sluice/abi.h": "",
    "lib/support/CMakeLists.txt": "add_library(SluiceTensor Tensor.cpp)\nadd_library(SluiceDiag L.cpp)\n"
    "sluice_link_mlir(SluiceDiag)\n",
    "dialects/sluice/CMakeLists.txt": "add_library(SluiceDialect D.cpp)\n"
    "target_link_libraries(SluiceDialect PUBLIC SluiceDiag) # SluiceCodegen\n",
    "passes/CMakeLists.txt": "add_library(SluicePasses F.cpp)\n"
    "target_link_libraries(SluicePasses PUBLIC SluiceDialect\n  MLIR)\n",
    "codegen/CMakeLists.txt": "add_library(SluiceCodegen B.cpp)\n"
    'target_link_libraries(SluiceCodegen PUBLIC SluiceDialect "$<LINK_GROUP:RESCAN,a;b>")\n',
    "runtime/CMakeLists.txt": "add_library(SluiceRuntime SHARED B.cpp)\n",
    "tools/sluice-run/CMakeLists.txt": "add_executable(sluice-run run.cpp)\n"
    "target_link_libraries(sluice-run PRIVATE SluicePasses SluiceRuntime)\n",
}

# One bad edge each: (file, text appended, the violation expected).
_BAD_EDGES = [
    ("lib/support/Tensor.h", '#include "lib/reference/Evaluator.h"\n',
     "lib/support/Tensor.h: includes lib/reference/Evaluator.h (layer support -> layer evaluator)"),
    ("lib/reference/Evaluator.h", '#include "lib/kernel/Access.h"\n',
     "lib/reference/Evaluator.h: includes lib/kernel/Access.h (layer evaluator -> layer kernel)"),
    ("passes/fuse/Fuse.cpp", '#include "codegen/cpu/Cpu.h"\n',
     "passes/fuse/Fuse.cpp: includes codegen/cpu/Cpu.h (layer passes -> layer codegen/cpu)"),
    ("passes/fuse/Fuse.cpp", '  #  include <lib/onnx/Importer.h>\n',
     "passes/fuse/Fuse.cpp: includes lib/onnx/Importer.h (layer passes -> layer importer)"),
    ("codegen/cuda/Cuda.cpp", '#include "codegen/cpu/Cpu.h"\n',
     "codegen/cuda/Cuda.cpp: includes codegen/cpu/Cpu.h (layer codegen/cuda -> layer codegen/cpu)"),
    ("codegen/common/Scalar.h", '#include "tools/driver/Pipeline.h"\n',
     "codegen/common/Scalar.h: includes tools/driver/Pipeline.h (layer codegen/common -> layer driver)"),
    ("runtime/cpu/Cpu.h", '#include "lib/support/Tensor.h"\n',
     "runtime/cpu/Cpu.h: includes lib/support/Tensor.h (layer runtime -> layer support)"),
    ("tools/sluice-run/run.cpp", '#include "runtime/cpu/Cpu.h"\n',
     "tools/sluice-run/run.cpp: includes runtime/cpu/Cpu.h (layer tools -> layer runtime)"),
    ("codegen/cpu/Cpu.h", '#include "sluice/runtime.h"\n',
     "codegen/cpu/Cpu.h: includes sluice/runtime.h (layer codegen/cpu -> layer public API)"),
    ("codegen/include/sluice_gen/cpu.h", '#include "codegen/cpu/Cpu.h"\n',
     "codegen/include/sluice_gen/cpu.h: includes codegen/cpu/Cpu.h "
     "(layer generated-code headers -> layer codegen/cpu)"),
    ("lib/misc/Thing.h", "",
     "lib/misc/Thing.h: not in any layer (add its folder to LAYERS in "
     "scripts/check-layers.py and to docs/architecture.md)"),
    ("passes/CMakeLists.txt", "target_link_libraries(SluicePasses\n  PRIVATE SluiceCodegen)\n",
     "passes/CMakeLists.txt: SluicePasses links SluiceCodegen (layer passes -> layer codegen)"),
    ("codegen/CMakeLists.txt", "target_link_libraries(SluiceCodegen PUBLIC SluiceRuntime)\n",
     "codegen/CMakeLists.txt: SluiceCodegen links SluiceRuntime (layer codegen -> layer runtime library)"),
    ("lib/support/CMakeLists.txt", "target_link_libraries(SluiceTensor PUBLIC SluiceDiag)\n",
     "lib/support/CMakeLists.txt: SluiceTensor links MLIR/LLVM (layer support must not)"),
    ("runtime/CMakeLists.txt", "target_link_libraries(SluiceRuntime PRIVATE LLVM)\n",
     "runtime/CMakeLists.txt: SluiceRuntime links MLIR/LLVM (layer runtime must not)"),
]


def self_test():
    """The clean tree passes; each bad edge alone fails with its message."""
    import io

    def run(extra):
        with tempfile.TemporaryDirectory() as tmp:
            files = dict(_CLEAN_TREE)
            if extra:
                files[extra[0]] = files.get(extra[0], "") + extra[1]
            for path, text in files.items():
                os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(tmp, path), "w") as f:
                    f.write(text)
            out = io.StringIO()
            check(tmp, out)
            return out.getvalue().splitlines()

    failures = []
    clean = run(None)
    if clean:
        failures.append("the clean tree reports:\n  " + "\n  ".join(clean))
    for path, text, expected in _BAD_EDGES:
        got = run((path, text))
        if got != [expected]:
            failures.append(f"adding to {path} {text.strip()!r}: expected\n  {expected}\n"
                            "got\n  " + ("\n  ".join(got) or "(no violation)"))
    for f in failures:
        print("self-test: " + f)
    print(f"self-test: {1 + len(_BAD_EDGES) - len(failures)} of {1 + len(_BAD_EDGES)} cases pass")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the source tree (default: this script's checkout)")
    parser.add_argument("--self-test", action="store_true",
                        help="check the checker on made-up trees instead")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    n = check(os.path.abspath(args.root))
    if n:
        print(f"{n} layering violation(s); the layers: docs/architecture.md, \"Layers\"")
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
