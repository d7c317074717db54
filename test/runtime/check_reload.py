#!/usr/bin/env python3
"""Recompiling a bundle into the folder a process has loaded
(docs/runtime.md, "The bundle").

One process (this one, through the C API with ctypes) loads bundle A from
folder D and keeps a context of it; sluice-compile then writes bundle B into
the same D. Checks:
  1. A's context still runs and still computes A: the compile wrote B into a
     staging folder and swapped it in, instead of rewriting the weights file
     A has mapped (which changed A's results or raised SIGBUS);
  2. loading D again in the same process runs B's code: B's library has a
     new file name (model-<bundle id>.so), where the loader once handed back
     A's library, already loaded under the same path, with B's manifest;
  3. a library and a manifest of different compiles are refused at load
     (the bundle id the library exports), and so is a weights file of
     another compile (its fingerprint).

Usage: check_reload.py --bin BUILD/bin --lib BUILD/lib WORKDIR
"""
import argparse
import ctypes
import json
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402


def model(path, scale, add):
    """y = x * W (+ 1 when `add`): W a 64-float weight of `scale`."""
    w = numpy_helper.from_array(np.full([64], scale, np.float32), "w")
    nodes = [helper.make_node("Mul", ["x", "w"], ["m" if add else "y"])]
    inits = [w]
    if add:
        inits.append(numpy_helper.from_array(np.ones([64], np.float32), "one"))
        nodes.append(helper.make_node("Add", ["m", "one"], ["y"]))
    graph = helper.make_graph(nodes, "reload", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [64])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])],
        inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    save(m, path)


class Runtime:
    def __init__(self, lib):
        self.rt = ctypes.CDLL(os.path.join(lib, "libsluice_runtime.so"))
        self.rt.sluice_last_error.restype = ctypes.c_char_p

    def check(self, status, what):
        if status != 0:
            raise RuntimeError("%s: %s" % (what, self.rt.sluice_last_error().decode()))

    def load(self, folder):
        handle = ctypes.c_void_p()
        self.check(self.rt.sluice_model_load(folder.encode(), ctypes.byref(handle)), "load")
        return handle

    def load_error(self, folder):
        handle = ctypes.c_void_p()
        if self.rt.sluice_model_load(folder.encode(), ctypes.byref(handle)) == 0:
            self.rt.sluice_model_free(handle)
            return ""
        return self.rt.sluice_last_error().decode()

    def context(self, handle):
        context = ctypes.c_void_p()
        self.check(self.rt.sluice_context_create(handle, ctypes.byref(context)), "context")
        return context

    def run(self, context, x):
        self.check(self.rt.sluice_context_set_input(context, ctypes.c_size_t(0),
                                                   x.ctypes.data_as(ctypes.c_void_p),
                                                   ctypes.c_size_t(x.nbytes)), "input")
        self.check(self.rt.sluice_context_run(context), "run")
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        self.check(self.rt.sluice_context_output(context, ctypes.c_size_t(0), ctypes.byref(data),
                                                 ctypes.byref(size)), "output")
        return np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_float)),
                                     (size.value // 4,)).copy()


def compile_into(bin_dir, onnx_path, folder):
    st.compile_bundle(bin_dir, onnx_path, folder, ["--quiet"], show=True, check=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--lib", required=True)
    parser.add_argument("work")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    a, b = os.path.join(args.work, "a.onnx"), os.path.join(args.work, "b.onnx")
    model(a, 2.0, add=False)
    model(b, 5.0, add=True)
    folder = os.path.join(args.work, "model.sluice")
    x = np.arange(64, dtype=np.float32)
    rt = Runtime(args.lib)
    failures = []

    compile_into(args.bin, a, folder)
    model_a = rt.load(folder)
    context_a = rt.context(model_a)
    if not np.array_equal(rt.run(context_a, x), x * 2):
        failures.append("bundle A does not compute 2x")

    compile_into(args.bin, b, folder)
    got = rt.run(context_a, x)
    if not np.array_equal(got, x * 2):
        failures.append("A's context, run after B was compiled into its folder, computes %s "
                        "instead of 2x" % got[:4])
    model_b = rt.load(folder)
    context_b = rt.context(model_b)
    got = rt.run(context_b, x)
    if not np.array_equal(got, x * 5 + 1):
        failures.append("bundle B, loaded in the process that loaded A from the same folder, "
                        "computes %s instead of 5x+1 (A's library?)" % got[:4])
    for handle in (context_a, context_b):
        rt.rt.sluice_context_free(handle)
    for handle in (model_a, model_b):
        rt.rt.sluice_model_free(handle)

    # A and B side by side: B's manifest with A's library, B with A's weights.
    folder_a = os.path.join(args.work, "a.sluice")
    compile_into(args.bin, a, folder_a)
    manifest_a = json.load(open(os.path.join(folder_a, "manifest.json")))
    mixed = os.path.join(args.work, "mixed.sluice")
    shutil.copytree(folder, mixed)
    shutil.copy(os.path.join(folder_a, manifest_a["library"]),
                os.path.join(mixed, json.load(open(os.path.join(mixed, "manifest.json")))["library"]))
    error = rt.load_error(mixed)
    if "was built for bundle %s, the manifest says" % manifest_a.get("bundle_id", "(none)") not in error:
        failures.append("a library of another compile loads: %r" % error)
    # Same shapes as B, other values: only the fingerprint tells them apart.
    c = os.path.join(args.work, "c.onnx")
    model(c, 3.0, add=True)
    folder_c = os.path.join(args.work, "c.sluice")
    compile_into(args.bin, c, folder_c)
    weights = os.path.join(args.work, "weights.sluice")
    shutil.copytree(folder, weights)
    shutil.copy(os.path.join(folder_c, "weights.bin"), os.path.join(weights, "weights.bin"))
    error = rt.load_error(weights)
    if "does not belong to this bundle" not in error:
        failures.append("a weights file of another compile loads: %r" % error)
    # Nothing of the staging folders is left beside the bundles.
    leftovers = [n for n in os.listdir(args.work) if ".partial-" in n or ".old-" in n]
    if leftovers:
        failures.append("staging folders left: %s" % leftovers)

    return st.finish(failures, "reload: A's context kept A's weights, the reloaded folder ran "
                               "B's code, a library and a weights file of another compile were "
                               "refused")


if __name__ == "__main__":
    sys.exit(main())
