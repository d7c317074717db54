"""Model folders: what test/models/export_models.py, test/zoo/make_zoo.py and
test/moe/export_moe.py write for each model and the checks read.

    FOLDER/model.onnx
    FOLDER/manifest.json         "inputs", "outputs" (names), "shapes", ...
    FOLDER/inputs/NAME.npy       the check inputs
    FOLDER/expected/NAME.npy     the reference outputs on them
"""
import json
import os


def read_manifest(folder):
    """FOLDER/manifest.json as a dict."""
    with open(os.path.join(folder, "manifest.json")) as f:
        return json.load(f)


def tensor_path(folder, kind, name):
    """FOLDER/KIND/NAME.npy; kind is "inputs" or "expected"."""
    return os.path.join(folder, kind, name + ".npy")


def tensor_paths(folder, kind, names):
    """The .npy paths of `names`, in order (sluice-run's positional inputs)."""
    return [tensor_path(folder, kind, n) for n in names]


def tensor_args(folder, kind, names):
    """NAME=PATH arguments of `names` (sluice-run's named inputs and
    --expect outputs)."""
    return [f"{n}={tensor_path(folder, kind, n)}" for n in names]


def load_tensors(folder, kind, names):
    """{name: array} of `names` (ONNX Runtime's feeds)."""
    import numpy as np  # noqa: PLC0415
    return {n: np.load(tensor_path(folder, kind, n)) for n in names}
