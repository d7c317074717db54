"""sluice.Model and sluice.Context: load a bundle and run it.

The checks the manifest can answer (names, dtypes, shapes) and the run are
in the extension (runtime/python/src/module.cpp); this file turns what
callers pass (NumPy arrays, torch tensors, lists) into arrays the runtime
can read in place, and keeps a pool of contexts so that Model.run works
from several threads at once.
"""

import json
import os
import sys
import threading
import weakref
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from . import _sluice


class TensorInfo(NamedTuple):
    """One input or output of a bundle, as its manifest lists it."""

    name: str
    dtype: np.dtype
    """NumPy's dtype. NumPy has no bfloat16: such a tensor is uint16 holding
    the bits (torch.bfloat16 tensors are accepted as inputs too)."""
    shape: Tuple[int, ...]
    """Static dims; -1 marks an output's data-dependent dim (NonZero ...)."""
    dtype_name: str
    """The manifest's dtype name ("float32", "bfloat16" ...)."""
    shapes: Tuple[Tuple[int, ...], ...] = ()
    """Its shape in each shape variant of the bundle (sluice-compile
    --shapes, sluice.compile(variants=...)), in variant order; one entry,
    `shape`, for a bundle without variants. `shape` is the first's."""


class SequenceInfo(NamedTuple):
    """A sequence input or output of the graph (the manifest's "sequences"):
    the bundle takes or returns its elements as the tensors `elements`."""

    name: str
    elements: Tuple[str, ...]


def _manifest_sequences(path: str, key: str) -> List[SequenceInfo]:
    # The runtime ignores "sequences" (its C API is flat tensors); the
    # grouping is for callers, so the package reads it from the manifest.
    try:
        with open(os.path.join(path, "manifest.json"), encoding="utf-8") as f:
            entries = json.load(f).get("sequences", {}).get(key, [])
        return [SequenceInfo(e["name"], tuple(e["elements"])) for e in entries]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


class KernelInfo(NamedTuple):
    """One generated kernel or library call of a bundle."""

    name: str
    kind: str  # "kernel", "library" or "host"
    op: str  # the sluice op ("" if unknown)
    node: str  # the ONNX node it came from ("" if unknown)


def _info(entry, variants=None) -> TensorInfo:
    name, dtype, dims, _bytes = entry
    numpy_dtype = np.dtype("uint16" if dtype == "bfloat16" else dtype)
    shapes = tuple(tuple(v[2]) for v in variants) if variants else (tuple(dims),)
    return TensorInfo(name, numpy_dtype, tuple(dims), dtype, shapes)


def _torch_tensor_type():
    # torch is imported only if the caller already did: a torch tensor can
    # only come from a program that imported it.
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None) if torch is not None else None


class Context:
    """One run's state (arena, bound inputs, outputs) of a Model.

    A context belongs to one thread at a time; give each thread its own to
    run a model concurrently (runs release the GIL). Made by
    Model.context().
    """

    def __init__(self, model: "Model", device: Optional[int] = None,
                 threads: Optional[int] = None):
        self._model = model
        self._context = _sluice.Context(model._model, -1 if device is None else int(device),
                                        0 if threads is None else int(threads))

    @property
    def model(self) -> "Model":
        return self._model

    @property
    def device(self) -> str:
        """What runs it: "cpu", or the GPU's name, architecture and index."""
        return self._context.device

    @property
    def last_run_ms(self) -> float:
        """The last run's duration in milliseconds."""
        return self._context.run_time_us / 1000.0

    def run(self, inputs: Dict[str, object]) -> Dict[str, np.ndarray]:
        """Runs the model once on `inputs` (name -> array; every input).

        Values may be NumPy arrays, torch tensors, anything with __dlpack__
        or __array__, or nested lists and scalars (converted to the input's
        dtype). Arrays of the input's dtype and shape are read in place when
        contiguous; anything else is an InputError naming the input. A
        sequence input (Model.sequences) takes a list of arrays, one per
        element. Returns name -> a new NumPy array for every output, a list
        of them for a sequence output.
        """
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs must be a dict of name -> array, got {type(inputs).__name__}")
        prepared = {}
        for name, value in inputs.items():
            sequence = self._model._input_sequences.get(name)
            if sequence is None:
                prepared[name] = self._prepare(name, value)
                continue
            # A sequence input: a list of arrays, one per element tensor.
            if not isinstance(value, (list, tuple)):
                raise _sluice.InputError(
                    f"input '{name}' is a sequence of {len(sequence.elements)}: pass a list of "
                    f"arrays, not {type(value).__name__}")
            if len(value) != len(sequence.elements):
                raise _sluice.InputError(
                    f"input '{name}' is a sequence of {len(value)} elements, the bundle takes "
                    f"{len(sequence.elements)}")
            for element, item in zip(sequence.elements, value):
                prepared[element] = self._prepare(element, item)
        outputs = self._context.run(prepared)
        for sequence in self._model._output_sequences:
            outputs[sequence.name] = [outputs.pop(e) for e in sequence.elements]
        return outputs

    def _prepare(self, name, value):
        tensor_type = _torch_tensor_type()
        if tensor_type is not None and isinstance(value, tensor_type):
            if value.requires_grad:
                value = value.detach()
            if value.device.type != "cpu":
                if self._model.target != "cuda":
                    raise _sluice.InputError(
                        f"input '{name}' is on {value.device}, the bundle runs on the cpu "
                        f"(pass a cpu tensor: .cpu())")
                if value.device.type != "cuda" or value.dtype == sys.modules["torch"].bool:
                    # Not CUDA memory, or a bool tensor (torch 1.13 exports
                    # none through DLPack): one copy through the host.
                    value = value.cpu()
                # A CUDA tensor stays on the device: the context copies it
                # there at each run (sluice_context_bind_device_input), and
                # the runtime refuses another device's memory by name.
            if value.is_conj() or value.is_neg():
                value = value.resolve_conj().resolve_neg()
            value = value.contiguous()
            # torch 1.13 exports no bool tensor through DLPack; .numpy()
            # shares a cpu tensor's memory instead.
            return value.numpy() if value.dtype == sys.modules["torch"].bool else value
        if isinstance(value, np.ndarray):
            return np.asarray(value, order="C")  # keeps 0-d arrays 0-d
        if hasattr(value, "__dlpack__"):
            return value
        if hasattr(value, "__array__"):
            return np.asarray(value, order="C")
        # Lists and scalars carry no dtype of their own: take the input's.
        spec = self._model._input_by_name.get(name)
        dtype = spec.dtype if spec is not None else None
        return np.asarray(value, dtype=dtype, order="C")


class Model:
    """A bundle written by sluice-compile (or sluice.compile), loaded.

    `Model(path)` loads the bundle folder (BundleError with the runtime's
    message if it cannot). `inputs` / `outputs` describe its tensors,
    `run({name: array})` runs it, `context()` makes a context of one's own.
    """

    def __init__(self, path, *, threads: Optional[int] = None):
        self._path = os.fspath(path)
        self._model = _sluice.Model(self._path)
        variant_inputs = self._model.variant_inputs
        variant_outputs = self._model.variant_outputs
        self._inputs = [_info(e, [v[i] for v in variant_inputs])
                        for i, e in enumerate(self._model.inputs)]
        self._outputs = [_info(e, [v[i] for v in variant_outputs])
                         for i, e in enumerate(self._model.outputs)]
        self._variants = [{"inputs": [_info(e) for e in ins], "outputs": [_info(e) for e in outs]}
                          for ins, outs in zip(variant_inputs, variant_outputs)]
        self._input_by_name = {i.name: i for i in self._inputs}
        self._input_sequences = {q.name: q for q in _manifest_sequences(self._path, "inputs")}
        self._output_sequences = _manifest_sequences(self._path, "outputs")
        self._threads = threads
        # Idle contexts for run(): a thread takes one or makes a new one, so
        # concurrent calls never share a context.
        self._idle: List[Context] = []
        self._idle_lock = threading.Lock()

    def __repr__(self) -> str:
        ins = ", ".join(f"{i.name}: {i.dtype_name}{list(i.shape)}" for i in self._inputs)
        outs = ", ".join(f"{o.name}: {o.dtype_name}{list(o.shape)}" for o in self._outputs)
        return f"sluice.Model({self._path!r}, target={self.target!r}, ({ins}) -> ({outs}))"

    @property
    def path(self) -> str:
        """The bundle folder."""
        return self._path

    @property
    def inputs(self) -> List[TensorInfo]:
        """The inputs; in a bundle of shape variants `shape` is the first
        variant's and `shapes` lists every variant's."""
        return list(self._inputs)

    @property
    def variants(self) -> List[Dict[str, List[TensorInfo]]]:
        """Each shape variant's {"inputs": [...], "outputs": [...]} (one for a
        bundle without variants). run() runs the variant whose input shapes
        equal the given arrays'."""
        return [{"inputs": list(v["inputs"]), "outputs": list(v["outputs"])}
                for v in self._variants]

    @property
    def outputs(self) -> List[TensorInfo]:
        return list(self._outputs)

    @property
    def sequences(self) -> Dict[str, List[SequenceInfo]]:
        """The graph's sequence inputs and outputs ({"inputs": [...],
        "outputs": [...]}): run() takes and returns each as a list of arrays,
        its elements being the tensors listed in `inputs` / `outputs`."""
        return {"inputs": list(self._input_sequences.values()),
                "outputs": list(self._output_sequences)}

    @property
    def target(self) -> str:
        """"cpu" or "cuda"."""
        return self._model.target

    @property
    def name(self) -> str:
        """The model's name in the manifest ("" if absent)."""
        return self._model.name

    @property
    def version(self) -> str:
        """The version of sluice-compile that wrote the bundle."""
        return self._model.version

    @property
    def arena_bytes(self) -> int:
        return self._model.arena_bytes

    @property
    def weights_bytes(self) -> int:
        return self._model.weights_bytes

    @property
    def kernels(self) -> List[KernelInfo]:
        return [KernelInfo(*k) for k in self._model.kernels]

    def context(self, *, device: Optional[int] = None,
                threads: Optional[int] = None) -> Context:
        """A new context: its own arena and buffers, for one thread at a time.

        device: the CUDA device of a cuda bundle (default SLUICE_DEVICE, else
        0); threads: OpenMP threads per run (default the model's, else the
        hardware's).
        """
        return Context(self, device, self._threads if threads is None else threads)

    def run(self, inputs: Dict[str, object]) -> Dict[str, np.ndarray]:
        """Runs the model once (see Context.run); safe from several threads,
        each run using an idle context of the model's pool."""
        with self._idle_lock:
            context = self._idle.pop() if self._idle else None
        if context is None:
            context = self.context()
        try:
            return context.run(inputs)
        finally:
            with self._idle_lock:
                self._idle.append(context)

    def __call__(self, inputs: Dict[str, object] = None, **kwargs) -> Dict[str, np.ndarray]:
        """model(x=array) or model({"x": array}): the same as run()."""
        merged = dict(inputs or {})
        merged.update(kwargs)
        return self.run(merged)


def _remove_on_collect(model: Model, folder: str) -> None:
    """Removes `folder` (a temporary bundle sluice.compile made) once `model`
    is collected; the runtime's contexts keep what they mapped."""
    import shutil

    weakref.finalize(model, shutil.rmtree, folder, True)
