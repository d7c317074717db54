#!/usr/bin/env python3
"""Checks that bench_gpu.py's transformers exports compile well (no GPU needed).

Exports BERT and GPT-2 with bench_gpu.py's own export() (same configs, fewer
layers: --layers, 2 by default), writes each as a test/models-style folder
(model.onnx, inputs/, expected/ from PyTorch fp32 on the same random weights,
manifest.json with the layer span) and runs test/models/check_model.py on it:
the cpu target in fp32 and fp16 (against PyTorch and ONNX Runtime; fp16 by
relative L2 error) and the cuda target in fp32 and fp16 with --compile-only
(nvcc for --gpu-arch, the launch budget, host steps). Each layer must take at
most --max-launches launches (kernels + library calls) on every target.

Usage: check_export.py --bin build/bin [--out DIR] [--layers 2] [--seq 128]
                       [--gpu-arch sm_90] [--models bert,gpt2]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu  # noqa: E402

# Layer spans over ONNX node names of the torch.onnx exports (check_model.py).
SPANS = {
    "bert": {"start": r"^/inner/encoder/layer\.\d+/attention/self/query/MatMul$",
             "to_end": True},
    "gpt2": {"start": r"^/inner/h\.\d+/ln_1/", "end": r"^/inner/ln_f/"},
}


def prepare(kind, folder, layers, seq):
    import torch  # noqa: PLC0415

    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
    how = bench_gpu.export(kind, os.path.join(folder, "model.onnx"), layers)
    model, vocab = bench_gpu.build_model(kind, "eager", layers)  # same seed: same weights
    ids = np.random.default_rng(1).integers(0, vocab, size=(1, seq), dtype=np.int64)
    with torch.no_grad():
        out = model(torch.from_numpy(ids)).numpy()
    np.save(os.path.join(folder, "inputs", "input_ids.npy"), ids)
    np.save(os.path.join(folder, "expected", "last_hidden_state.npy"), out)
    manifest = {"opset": 17, "inputs": ["input_ids"], "outputs": ["last_hidden_state"],
                "shapes": [f"input_ids=1x{seq}"], "exporter": how,
                "layers": dict(SPANS[kind], layers=layers, max_launches=0)}
    return manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--out", default="build/check-export")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--gpu-arch", default="sm_90")
    ap.add_argument("--max-launches", type=int, default=7)
    ap.add_argument("--models", default="bert,gpt2")
    args = ap.parse_args()
    check = os.path.join(HERE, "..", "..", "test", "models", "check_model.py")
    failed = []
    for kind in [m for m in args.models.split(",") if m]:
        if kind not in SPANS:
            sys.exit(f"check_export: unknown model '{kind}' (bert, gpt2)")
        folder = os.path.join(args.out, "hf_" + kind)
        manifest = prepare(kind, folder, args.layers, args.seq)
        manifest["layers"]["max_launches"] = args.max_launches
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        print(f"== {kind}: exported ({manifest['exporter']}, {args.layers} layers) to {folder}",
              flush=True)
        for target, precision, extra in (("cpu", "fp32", []), ("cpu", "fp16", []),
                                         ("cuda", "fp32", ["--compile-only"]),
                                         ("cuda", "fp16", ["--compile-only"])):
            cmd = [sys.executable, check, "--bin", args.bin, "--target", target,
                   "--precision", precision, *extra, folder]
            if target == "cuda":
                cmd[-1:-1] = ["--gpu-arch", args.gpu_arch]
            print(f"-- {kind} {target} {precision}", flush=True)
            if subprocess.run(cmd).returncode:
                failed.append(f"{kind} {target} {precision}")
    print("check_export: " + ("FAILED: " + ", ".join(failed) if failed else "all passed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
