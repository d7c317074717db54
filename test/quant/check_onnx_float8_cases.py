#!/usr/bin/env python3
"""ONNX's own backend test cases for FLOAT8E4M3FN (Cast / CastLike to and
from it, saturating and not; QuantizeLinear / DequantizeLinear with float8
zero points) run through the reference evaluator and the cpu target.

Debian's libonnx-testdata (ONNX 1.12, the conformance suite's data)
predates float8 (ONNX 1.14), so `run_conformance.py --filter float8` finds
no case; they are made here from the installed onnx package's case
definitions as check_onnx_int4_cases.py does (its write_case). The other
float8 formats (E4M3FNUZ, E5M2, E5M2FNUZ, E8M0) are not Sluice types and
are left out.

Each case runs `sluice-run MODEL --reference` and, with --targets
reference,cpu, also compiles a cpu bundle and runs it. NaN matches NaN.

Exit 0 when every case matches exactly, 1 otherwise, 77 (ctest's skip) when
the onnx package has no float8 cases.

Usage: check_onnx_float8_cases.py --bin BUILD/bin [--targets reference,cpu]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402
from check_onnx_int4_cases import capture_cases, write_case  # noqa: E402


def wanted(name):
    upper = name.upper()
    return "E4M3FN" in upper and "E4M3FNUZ" not in upper


def collect():
    """(node, inputs, outputs, name, kwargs) of every E4M3FN case."""
    import warnings  # noqa: PLC0415
    # The cases overflow on purpose (values beyond float16's range), also
    # when the package's import runs them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node.cast as cast  # noqa: PLC0415
        import onnx.backend.test.case.node.castlike as castlike  # noqa: PLC0415
        import onnx.backend.test.case.node.dequantizelinear as dq  # noqa: PLC0415
        import onnx.backend.test.case.node.quantizelinear as q  # noqa: PLC0415
        captured = capture_cases((cast, castlike, dq, q))
    return [c for c in captured if wanted(c[3])]


def run(cmd):
    """Runs a tool; returns (exit status, stdout + stderr)."""
    return st.run(cmd)[:2]


def input_shapes(folder, feeds):
    """--shape flags of the case's inputs, read from their .pb files."""
    import onnx  # noqa: PLC0415
    flags = []
    for feed in feeds:
        name, path = feed.split("=", 1)
        proto = onnx.TensorProto()
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
        flags.append(f"--shape={name}=" + "x".join(str(d) for d in proto.dims))
    return flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--targets", default="reference")
    args = ap.parse_args()
    targets = args.targets.split(",")
    cases = collect()
    if not cases:
        print("the installed onnx package has no float8 e4m3fn cases: skipped")
        return st.SKIPPED
    failed, runs = [], 0
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            folder = os.path.join(work, case[3])
            feeds, expected = write_case(case, folder)
            model = os.path.join(folder, "model.onnx")
            check = ["--expect", *expected, "--rtol=0", "--atol=0"]
            for target in targets:
                runs += 1
                if target == "reference":
                    rc, out = run([st.tool(args.bin, "sluice-run"), model,
                                   "--reference", *feeds, *check])
                else:
                    bundle = os.path.join(folder, f"{target}.sluice")
                    rc, out = st.compile_bundle(args.bin, model, bundle,
                                                [f"--target={target}",
                                                 *input_shapes(folder, feeds)])[:2]
                    if rc == 0:
                        rc, out = run([st.tool(args.bin, "sluice-run"), bundle,
                                       *feeds, *check])
                print(f"{case[3]} [{target}]: {'ok' if rc == 0 else 'FAIL'}")
                if rc:
                    print(out)
                    failed.append(f"{case[3]} [{target}]")
    print(f"{runs - len(failed)}/{runs} runs pass ({len(cases)} cases x {targets})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
