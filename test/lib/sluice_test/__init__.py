"""Helpers the Python checks of test/ share (test/README.md, "Python
checks"): running Sluice's tools, ctest's skip code and GPU detection, a
model folder's inputs and expected outputs, comparing arrays and the
verdict a check prints.

A check finds this package through its own path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import sluice_test as st  # noqa: E402

(one more ".." per folder level below test/). The package needs only the
standard library and NumPy, so that the checks the device bundle carries
(scripts/device-bundle.sh copies test/lib) run on a GPU machine too.
"""
from .folders import load_tensors, read_manifest, tensor_args, tensor_path, tensor_paths
from .gpu import NO_GPU, SKIPPED, gpu_present
from .judge import abs_error, finish, outside
from .tools import Result, compile_bundle, run, tool

__all__ = [
    "NO_GPU", "Result", "SKIPPED", "abs_error", "compile_bundle", "finish", "gpu_present",
    "load_tensors", "outside", "read_manifest", "run", "tensor_args", "tensor_path",
    "tensor_paths", "tool",
]
