#!/usr/bin/env python3
"""Runs a cpu bundle's model.so straight through the bundle ABI with ctypes.

A developer's cross-check of include/sluice/bundle_abi.h that needs neither
the runtime library nor sluice-run: it reads manifest.json, maps inputs from
ONNX .pb / .npy files in graph order, calls sluice_model_run and compares
with expected outputs (ONNX backend test tolerances by default).

Usage: run_bundle.py BUNDLE [INPUT ...] [--expect OUTPUT ...] [--rtol R --atol A]
Exit 0 when every output matches, 1 on mismatch, 2 on error.
"""
import argparse
import ctypes
import json
import os
import sys

import numpy as np


def load(path):
    if path.endswith(".npy"):
        return np.load(path)
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


class Hooks(ctypes.Structure):
    _fields_ = [("user", ctypes.c_void_p), ("begin", ctypes.c_void_p), ("end", ctypes.c_void_p)]


class RunArgs(ctypes.Structure):
    _fields_ = [("inputs", ctypes.POINTER(ctypes.c_void_p)),
                ("outputs", ctypes.POINTER(ctypes.c_void_p)),
                ("arena", ctypes.c_void_p), ("weights", ctypes.c_void_p),
                ("num_threads", ctypes.c_int32), ("trace", ctypes.POINTER(Hooks)),
                ("error", ctypes.c_char_p), ("error_size", ctypes.c_size_t)]


def dtype_of(name):
    return np.dtype("uint16") if name == "bfloat16" else np.dtype(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--expect", nargs="*", default=[])
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-7)
    a = ap.parse_args()
    with open(os.path.join(a.bundle, "manifest.json")) as f:
        m = json.load(f)
    lib = ctypes.CDLL(os.path.join(os.path.abspath(a.bundle), m["library"]))
    weights = np.fromfile(os.path.join(a.bundle, m["weights"]["file"]), dtype=np.uint8)
    weights = np.concatenate([weights, np.zeros(64, np.uint8)])
    ins = []
    for spec, path in zip(m["inputs"], a.inputs):
        x = np.ascontiguousarray(load(path)).astype(dtype_of(spec["dtype"]), copy=False)
        if list(x.shape) != spec["shape"] and x.size == 1 and spec["shape"] == []:
            x = x.reshape(())  # some onnx versions read 0-d .pb tensors as shape (1,)
        if list(x.shape) != spec["shape"]:
            print(f"error: {path}: shape {x.shape}, bundle expects {spec['shape']}")
            return 2
        ins.append(np.ascontiguousarray(x))
    outs = [np.zeros(o["shape"], dtype_of(o["dtype"])) for o in m["outputs"]]
    arena = np.zeros(m["arena_bytes"] + 64, np.uint8)
    in_ptrs = (ctypes.c_void_p * max(len(ins), 1))(*[x.ctypes.data for x in ins])
    out_ptrs = (ctypes.c_void_p * max(len(outs), 1))(*[x.ctypes.data for x in outs])
    err = ctypes.create_string_buffer(512)
    args = RunArgs(in_ptrs, out_ptrs, arena.ctypes.data, weights.ctypes.data,
                   os.cpu_count() or 1, None, ctypes.cast(err, ctypes.c_char_p), 512)
    rc = lib.sluice_model_run(ctypes.byref(args))
    if rc:
        print("error:", err.value.decode())
        return 2
    ok = True
    for spec, got, path in zip(m["outputs"], outs, a.expect):
        want = load(path)
        if got.dtype == np.uint16 and spec["dtype"] == "bfloat16":
            got = (got.astype(np.uint32) << 16).view(np.float32)
            want = want.astype(np.float32)
        if list(want.shape) != list(got.shape):
            print(f"{spec['name']}: MISMATCH shape {got.shape} vs {want.shape}")
            ok = False
            continue
        if got.dtype.kind in "fc":
            good = np.allclose(got, want, rtol=a.rtol, atol=a.atol, equal_nan=True)
        else:
            good = np.array_equal(got, want)
        err_abs = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
        print(f"{spec['name']}: {'ok' if good else 'MISMATCH'} max abs err {err_abs:.3g}")
        ok &= bool(good)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
