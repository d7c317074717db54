"""Sluice from Python: compile ONNX models into bundles and run them.

    import sluice
    model = sluice.compile("model.onnx", shapes={"x": (1, 128)})
    outputs = model.run({"x": x})          # name -> numpy.ndarray
    model = sluice.Model("model.sluice")   # load a bundle compiled before

See docs/python.md. The runtime part is the extension sluice._sluice over
the runtime's C API (include/sluice/runtime.h); sluice.compile runs the
sluice-compile executable.
"""

from . import _sluice
from ._compile import CompileWarning, compile, compiler_options, find_compiler
from ._model import Context, KernelInfo, Model, SequenceInfo, TensorInfo

Error = _sluice.Error
BundleError = _sluice.BundleError
RunError = _sluice.RunError
DeviceError = _sluice.DeviceError
InputError = _sluice.InputError
CompileError = _sluice.CompileError

__version__ = _sluice.runtime_version()
"""The runtime library's version (the bundle format's major.minor must match)."""

__all__ = [
    "compile", "compiler_options", "find_compiler", "Model", "Context", "TensorInfo",
    "SequenceInfo", "KernelInfo", "Error", "BundleError", "RunError", "DeviceError", "InputError",
    "CompileError", "CompileWarning", "__version__",
]
