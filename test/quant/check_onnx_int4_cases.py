#!/usr/bin/env python3
"""ONNX's own backend test cases for 4-bit integers and blocked quantization
(opset 21: test_dequantizelinear_{blocked,int4,uint4},
test_quantizelinear_{blocked_asymmetric,blocked_symmetric,int4,uint4}) run
through the reference evaluator (sluice-run MODEL --reference --expect).

Debian's libonnx-testdata (ONNX 1.12, the conformance suite's data) predates
these cases, so they are made here from the installed onnx package's case
definitions (onnx.backend.test.case.node.{de,}quantizelinear), the same
code that makes ONNX's published test data: each export_* function's
expect() call becomes a model and its input/output .pb files.

Exit 0 when every case matches exactly, 1 otherwise, 77 (ctest's skip) when
the onnx package has no such cases.

Usage: check_onnx_int4_cases.py --bin BUILD/bin
"""
import argparse
import inspect
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402

WANTED = ("int4", "uint4", "blocked")


def capture_cases(modules):
    """(node, inputs, outputs, name, kwargs) of every case the onnx
    package's node test `modules` export (their `expect` captured)."""
    captured = []
    for module in modules:
        module.expect = lambda node, inputs, outputs, name, **kw: captured.append(
            (node, inputs, outputs, name, kw))
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for fname, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
                if fname.startswith("export"):
                    fn()
    return captured


def collect():
    """(node, inputs, outputs, name, kwargs) of every wanted case."""
    import onnx.backend.test.case.node.dequantizelinear as dq  # noqa: PLC0415
    import onnx.backend.test.case.node.quantizelinear as q  # noqa: PLC0415
    return [c for c in capture_cases((dq, q)) if any(w in c[3] for w in WANTED)]


def write_case(case, folder):
    import onnx  # noqa: PLC0415
    from onnx import helper, numpy_helper  # noqa: PLC0415
    from onnx.backend.test.case.node import _extract_value_info  # noqa: PLC0415
    node, inputs, outputs, name, kw = case
    graph = helper.make_graph(
        [node], name, [_extract_value_info(v, n) for n, v in zip(node.input, inputs)],
        [_extract_value_info(v, n) for n, v in zip(node.output, outputs)])
    model = helper.make_model(graph, opset_imports=kw.get("opset_imports")
                              or [helper.make_opsetid("", 21)])
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    files = []
    for kind, names, values in (("in", node.input, inputs), ("out", node.output, outputs)):
        for n, v in zip(names, values):
            proto = v if isinstance(v, onnx.TensorProto) else numpy_helper.from_array(v, n)
            path = os.path.join(folder, f"{kind}_{n}.pb")
            with open(path, "wb") as f:
                f.write(proto.SerializeToString())
            files.append((kind, f"{n}={path}"))
    return ([f for k, f in files if k == "in"], [f for k, f in files if k == "out"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    cases = collect()
    if not cases:
        print("the installed onnx package has no int4 / blocked quantization cases: skipped")
        return st.SKIPPED
    failed = []
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            folder = os.path.join(work, case[3])
            feeds, expected = write_case(case, folder)
            cmd = [st.tool(args.bin, "sluice-run"), os.path.join(folder, "model.onnx"),
                   "--reference", *feeds, "--expect", *expected, "--rtol=0", "--atol=0"]
            r = st.run(cmd)
            status = "ok" if r.rc == 0 else "FAIL"
            print(f"{case[3]}: {status}")
            if r.rc:
                print(r.out)
                failed.append(case[3])
    print(f"{len(cases) - len(failed)}/{len(cases)} cases pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
