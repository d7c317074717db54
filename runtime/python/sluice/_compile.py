"""sluice.compile: an ONNX model to a loaded bundle, through sluice-compile.

The compiler runs as the sluice-compile executable, not in this process:
it links LLVM/MLIR (the runtime layer this package belongs to links none,
docs/architecture.md), it builds the bundle's library with the system C++
compiler or nvcc in child processes anyway, and a crash or a fatal error in
it fails one compile instead of the Python process. Its keyword options are
the executable's own flags, read from `sluice-compile --help`, so a flag
the compiler gains is an option here without a change to this file.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from typing import Dict, List, Optional, Tuple

from . import _sluice
from ._model import Model, _remove_on_collect

CompileError = _sluice.CompileError


class CompileWarning(UserWarning):
    """A compile that succeeded but did less than asked (sluice-compile's
    warning lines, such as pruning the accuracy guard mostly refused)."""

# Flags the function's own arguments stand for, or that write something
# other than a bundle: not options.
_NOT_OPTIONS = {"o", "target", "shape", "shapes", "precision", "emit", "stop_after", "quiet", "help", "h"}
# Flags given once per value: a dict option becomes one flag per entry.
_REPEATED = {"bind"}

_flags_cache: Dict[Tuple[str, float], Dict[str, str]] = {}


def find_compiler() -> str:
    """The sluice-compile that sluice.compile runs: $SLUICE_COMPILE, else the
    one of the build this package came from, else the first on PATH."""
    from . import _build

    env = os.environ.get("SLUICE_COMPILE")
    if env:
        if not os.access(env, os.X_OK):
            raise CompileError(f"SLUICE_COMPILE={env} is not an executable file")
        return env
    built = os.path.join(_build.COMPILE_DIR, "sluice-compile")
    if os.access(built, os.X_OK):
        return built
    found = shutil.which("sluice-compile")
    if found:
        return found
    raise CompileError(
        f"sluice-compile not found: set SLUICE_COMPILE, put it on PATH, or build it "
        f"({built} does not exist; see docs/python.md)")


def compiler_options(compiler: Optional[str] = None) -> Dict[str, str]:
    """The keyword options sluice.compile accepts: option name -> "flag"
    (True gives it), "value" (--name=VALUE) or "optional" (either)."""
    compiler = compiler or find_compiler()
    key = (compiler, os.path.getmtime(compiler))
    if key not in _flags_cache:
        done = subprocess.run([compiler, "--help"], capture_output=True, text=True)
        if done.returncode != 0:
            raise CompileError(f"{compiler} --help failed: {done.stderr.strip()}")
        options = {}
        # Option lines: two spaces, the flag, then "=VALUE", "[=VALUE]" or
        # blanks and the description.
        for match in re.finditer(r"^  (--?[a-z][a-z0-9-]*)(\[=|=)?", done.stdout, re.M):
            name = match.group(1).lstrip("-").replace("-", "_")
            if name in _NOT_OPTIONS:
                continue
            kind = {"=": "value", "[=": "optional", None: "flag"}[match.group(2)]
            options.setdefault(name, kind)
        _flags_cache[key] = options
    return _flags_cache[key]


def _value_text(name: str, value) -> str:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, bool):
        raise TypeError(f"option {name}= takes a value, not {value}")
    if isinstance(value, dict):  # prune={"heads": 0.25, "ffn": 0.5}
        return ",".join(f"{k}={_value_text(name, v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):  # gpu_arch=["sm_80", "sm_90"]
        return ",".join(_value_text(name, v) for v in value)
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    raise TypeError(f"option {name}= cannot be {type(value).__name__} ({value!r})")


def _option_flags(options: dict, valid: Dict[str, str]) -> List[str]:
    flags = []
    for name, value in options.items():
        kind = valid.get(name)
        if kind is None:
            raise TypeError(f"sluice.compile() got an unknown option {name}=; the options are "
                            f"{', '.join(sorted(valid))} (sluice-compile's flags, "
                            f"--name-with-dashes as name_with_underscores)")
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:  # not given
            continue
        if value is True:
            if kind == "value":
                raise TypeError(f"option {name}= takes a value (sluice-compile {flag}=VALUE)")
            flags.append(flag)
            continue
        if kind == "flag":
            raise TypeError(f"option {name}= is a switch: pass True or False, not {value!r}")
        if name in _REPEATED and isinstance(value, dict):
            flags += [f"{flag}={k}={_value_text(name, v)}" for k, v in value.items()]
        else:
            flags.append(f"{flag}={_value_text(name, value)}")
    return flags


def _shape_flags(shapes) -> List[str]:
    if shapes is None:
        return []
    if not isinstance(shapes, dict):
        raise TypeError("shapes must be a dict of input name -> shape (tuple of ints or '2x128')")
    flags = []
    for name, shape in shapes.items():
        if isinstance(shape, str):
            text = shape
        elif isinstance(shape, list) and shape and all(isinstance(s, (tuple, list))
                                                       for s in shape):
            # A sequence input: a list of shapes, one per element
            # (sluice-compile's NAME=3x4,2x4; the string "empty" for none).
            text = ",".join("x".join(str(int(d)) for d in s) or "scalar" for s in shape)
        else:
            try:
                text = "x".join(str(int(d)) for d in shape)
            except TypeError:
                raise TypeError(f"shapes['{name}'] must be a tuple of ints or a string like "
                                f"'2x128', not {shape!r}") from None
        flags.append(f"--shape={name}={text}")
    return flags


def _variant_flags(variants) -> List[str]:
    if variants is None:
        return []
    if not isinstance(variants, dict):
        raise TypeError("variants must be a dict of input name -> list of shapes "
                        "(tuples of ints or strings like '8x128')")
    items = []
    for name, shapes in variants.items():
        if not isinstance(shapes, (list, tuple)) or isinstance(shapes, str):
            raise TypeError(f"variants['{name}'] must be a list of shapes, not {shapes!r}")
        for shape in shapes:
            if isinstance(shape, str):
                text = shape
            else:
                try:
                    text = "x".join(str(int(d)) for d in shape)
                except TypeError:
                    raise TypeError(f"variants['{name}'] holds {shape!r}: a shape is a tuple of "
                                    f"ints or a string like '8x128'") from None
            items.append(f"{name}={text}")
    return [f"--shapes={','.join(items)}"] if items else []


def _write_model_proto(model, folder: str) -> str:
    """Saves an onnx.ModelProto for the compiler. Weights must be inside the
    proto (what onnx.load returns by default); over protobuf's 2 GiB limit
    they go to an external data file beside it, which the compiler reads."""
    import onnx
    from onnx import external_data_helper

    for tensor in external_data_helper._get_all_tensors(model):
        if external_data_helper.uses_external_data(tensor):
            location = next((e.value for e in tensor.external_data if e.key == "location"), "?")
            raise ValueError(
                f"the ModelProto's tensor '{tensor.name}' refers to external data "
                f"('{location}') it does not hold: load it with its data "
                f"(onnx.load(path) loads external data), or pass the model's path")
    path = os.path.join(folder, "model.onnx")
    if model.ByteSize() < 2**31 - 2**20:
        onnx.save_model(model, path)
    else:
        onnx.save_model(model, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.onnx.data")
    return path


def _is_model_proto(model) -> bool:
    return type(model).__name__ == "ModelProto" and hasattr(model, "SerializeToString")


def compile(model, output=None, *, shapes: Optional[dict] = None,
            variants: Optional[dict] = None, target: str = "cpu",
            precision: str = "fp32", verbose: bool = False, **options) -> Model:
    """Compiles an ONNX model into a bundle and loads it.

    model: a path (.onnx or .onnxtxt; external data beside it as the file
    names it) or an onnx.ModelProto. output: the bundle folder (default: a
    temporary folder removed when the returned Model is collected).
    shapes: input name -> shape, bound for the compile (--shape); a
        sequence input's: a list of element shapes ("empty" for none).
    variants: input name -> a list of shapes, one per shape variant
        (--shapes, cpu): one bundle with a program per shape sharing one
        weights file, e.g. {"x": [(1, 128), (8, 128), (32, 128)]}; the i-th
        shape of every listed input forms variant i. Model.variants lists
        them and run() picks the variant of the inputs' shapes.
    target: "cpu" or "cuda"; precision: "fp32", "fp16" or "bf16".
    verbose: print the compiler's progress lines on stderr as it goes.
    options: sluice-compile's other flags, --name-with-dashes written
    name_with_underscores: quantize="int8", calibration="cal/", tp=2,
    prune={"heads": 0.25}, gpu_arch=["sm_90"], bind={"x": "x.npy"},
    no_recognize=True ... (an unknown one is a TypeError listing them).
    The compile cache (docs/tools.md, "Compile cache") is on as for the
    CLI: cache_dir="DIR" picks its folder, no_cache=True turns it off; a
    hit returns the cached bundle in well under a second.
    Raises CompileError with the compiler's message when it fails.
    """
    compiler = find_compiler()
    flags = [f"--target={target}", f"--precision={precision}"]
    flags += _shape_flags(shapes)
    flags += _variant_flags(variants)
    flags += _option_flags(options, compiler_options(compiler))
    if not verbose:
        flags.append("--quiet")

    temporary_output = output is None
    if temporary_output:
        output = os.path.join(tempfile.mkdtemp(prefix="sluice-"), "model.sluice")
    output = os.fspath(output)
    try:
        with tempfile.TemporaryDirectory(prefix="sluice-model-") as scratch:
            if _is_model_proto(model):
                model_path = _write_model_proto(model, scratch)
            elif isinstance(model, (str, os.PathLike)):
                model_path = os.fspath(model)
            else:
                raise TypeError(f"model must be a path or an onnx.ModelProto, "
                                f"not {type(model).__name__}")
            _run_compiler([compiler, model_path, "-o", output] + flags, verbose)
        loaded = Model(output)
    except BaseException:
        if temporary_output:
            shutil.rmtree(os.path.dirname(output), ignore_errors=True)
        raise
    if temporary_output:
        _remove_on_collect(loaded, os.path.dirname(output))
    return loaded


def _run_compiler(command: List[str], verbose: bool) -> None:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace")
    lines = []
    for line in process.stdout:
        lines.append(line)
        if verbose:
            sys.stderr.write(line)
            sys.stderr.flush()
    process.wait()
    if process.returncode != 0:
        text = "".join(lines).strip()
        # The error lines (the tool's own without its "sluice-compile:
        # error: " prefix, diagnostics with their location); all of the
        # output when it printed none (a crash).
        prefix = "sluice-compile: error: "
        errors = [l[len(prefix):] if l.startswith(prefix) else l
                  for l in text.splitlines() if "error: " in l]
        message = "\n".join(errors) if errors else (
            text or f"sluice-compile exited with status {process.returncode}")
        error = CompileError(message)
        error.status = None
        error.returncode = process.returncode
        error.command = command
        error.output = text
        raise error
    # The compiler's warnings (a request the accuracy guard mostly refused)
    # as Python warnings; verbose runs printed them already.
    prefix = "sluice-compile: warning: "
    for line in lines:
        if line.startswith(prefix) and not verbose:
            warnings.warn(line[len(prefix):].strip(), CompileWarning, stacklevel=3)
