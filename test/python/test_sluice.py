"""Tests of the Python package `sluice` (runtime/python, docs/python.md).

Run by ctest (`python-package`, label python) with the build's package on
PYTHONPATH and its sluice-compile; by hand:
    PYTHONPATH=build/python .venv/bin/python -m pytest test/python

Two test models (test/models): small_cnn compiled from its path, the BERT
encoder from an onnx.ModelProto; both run from NumPy arrays and torch
tensors, reloaded with sluice.Model, against ONNX Runtime at rtol 1e-3.
"""

import gc
import os
import threading

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

import sluice

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
CNN = os.path.join(MODELS, "small_cnn")
BERT = os.path.join(MODELS, "bert_encoder")
RTOL, ATOL = 1e-3, 1e-5


def load_inputs(folder, names):
    return {n: np.load(os.path.join(folder, "inputs", n + ".npy")) for n in names}


def onnxruntime_outputs(model, inputs):
    source = model if isinstance(model, str) else model.SerializeToString()
    session = onnxruntime.InferenceSession(source, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def assert_outputs(got, expected):
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        assert isinstance(got[name], np.ndarray), name
        assert got[name].dtype == value.dtype, name
        assert got[name].shape == value.shape, name
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL, err_msg=name)


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """small_cnn compiled from its path into a named folder."""
    path = os.path.join(CNN, "model.onnx")
    inputs = load_inputs(CNN, ["image"])
    bundle = str(tmp_path_factory.mktemp("cnn") / "small cnn.sluice")  # a space on purpose
    model = sluice.compile(path, bundle, shapes={"image": inputs["image"].shape})
    return model, inputs, onnxruntime_outputs(path, inputs)


@pytest.fixture(scope="module")
def bert():
    """The BERT encoder compiled from an onnx.ModelProto into a temporary bundle."""
    proto = onnx.load(os.path.join(BERT, "model.onnx"))
    inputs = load_inputs(BERT, ["input_ids", "attention_mask"])
    shapes = {name: value.shape for name, value in inputs.items()}
    model = sluice.compile(proto, shapes=shapes, target="cpu", precision="fp32")
    return model, inputs, onnxruntime_outputs(proto, inputs)


# ---- compile from a path and a ModelProto, run, reload --------------------


def test_path_model_from_numpy(cnn):
    model, inputs, expected = cnn
    assert model.target == "cpu"
    assert [(i.name, i.dtype, i.shape) for i in model.inputs] == [
        ("image", np.dtype("float32"), (3, 3, 16, 16))]
    assert [(o.name, o.dtype, o.shape) for o in model.outputs] == [
        ("logits", np.dtype("float32"), expected["logits"].shape)]
    assert_outputs(model.run(inputs), expected)
    # Non-contiguous and non-array values: made contiguous / converted.
    image = inputs["image"]
    strided = np.asfortranarray(image)
    assert not strided.flags.c_contiguous
    assert_outputs(model.run({"image": strided}), expected)
    assert_outputs(model.run({"image": image.tolist()}), expected)
    assert_outputs(model(image=image), expected)


def test_path_model_from_torch(cnn):
    model, inputs, expected = cnn
    image = torch.from_numpy(inputs["image"])
    assert_outputs(model.run({"image": image}), expected)
    # A tensor that needs grad, and a transposed (non-contiguous) view.
    assert_outputs(model.run({"image": image.clone().requires_grad_(True)}), expected)
    transposed = image.transpose(2, 3).contiguous().transpose(2, 3)
    assert not transposed.is_contiguous()
    assert_outputs(model.run({"image": transposed}), expected)


def test_reload_bundle(cnn):
    model, inputs, expected = cnn
    reloaded = sluice.Model(model.path)
    assert reloaded.path == model.path
    assert reloaded.inputs == model.inputs and reloaded.outputs == model.outputs
    assert reloaded.version == sluice.__version__
    assert reloaded.weights_bytes > 0 and reloaded.arena_bytes > 0
    assert reloaded.kernels and all(k.kind in ("kernel", "library") for k in reloaded.kernels)
    assert any(k.node for k in reloaded.kernels)
    assert_outputs(reloaded.run(inputs), expected)
    assert_outputs(reloaded.run({"image": torch.from_numpy(inputs["image"])}), expected)
    assert "image" in repr(reloaded)


def test_model_proto_from_numpy_and_torch(bert):
    model, inputs, expected = bert
    assert [(i.name, i.dtype) for i in model.inputs] == [
        ("input_ids", np.dtype("int64")), ("attention_mask", np.dtype("int64"))]
    assert_outputs(model.run(inputs), expected)
    assert_outputs(model.run({k: torch.from_numpy(v) for k, v in inputs.items()}), expected)
    # Reloaded from the temporary folder sluice.compile made.
    assert_outputs(sluice.Model(model.path).run(inputs), expected)


def test_temporary_bundle_removed_with_its_model(bert):
    model, inputs, _ = bert
    folder = os.path.dirname(model.path)
    assert os.path.isdir(model.path)
    # A bundle compiled without output= lives as long as its Model.
    proto = onnx.load(os.path.join(CNN, "model.onnx"))
    temporary = sluice.compile(proto, shapes={"image": (1, 3, 16, 16)})
    temporary_folder = os.path.dirname(temporary.path)
    assert os.path.isfile(os.path.join(temporary.path, "manifest.json"))
    out = temporary.run({"image": np.zeros((1, 3, 16, 16), np.float32)})
    assert out["logits"].shape[0] == 1
    del temporary, out
    gc.collect()
    assert not os.path.exists(temporary_folder)
    assert os.path.isdir(folder)


def test_outputs_are_copies(cnn):
    model, inputs, expected = cnn
    context = model.context()
    first = context.run(inputs)["logits"]
    context.run({"image": np.zeros_like(inputs["image"])})
    np.testing.assert_allclose(first, expected["logits"], rtol=RTOL, atol=ATOL)


def test_bool_bfloat16_and_data_dependent_outputs():
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        [helper.make_node("Not", ["b"], ["not_b"]),
         helper.make_node("NonZero", ["b"], ["nonzero"]),
         helper.make_node("Cast", ["h"], ["h_float"], to=TensorProto.FLOAT),
         helper.make_node("Identity", ["h"], ["h_same"])],
        "dtypes", [value("b", TensorProto.BOOL, [4]), value("h", TensorProto.BFLOAT16, [3])],
        [value("not_b", TensorProto.BOOL, [4]), value("nonzero", TensorProto.INT64, None),
         value("h_float", TensorProto.FLOAT, [3]), value("h_same", TensorProto.BFLOAT16, [3])])
    model = sluice.compile(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    info = {i.name: i for i in model.inputs + model.outputs}
    assert info["b"].dtype == np.bool_ and info["h"].dtype_name == "bfloat16"
    assert info["h"].dtype == np.uint16 and info["nonzero"].shape == (1, -1)
    b = np.array([True, False, True, True])
    h = torch.tensor([1.5, -2, 3.25], dtype=torch.bfloat16)
    for given in ({"b": b, "h": h}, {"b": torch.from_numpy(b), "h": h},
                  {"b": [1, 0, 1, 1], "h": h.view(torch.int16).numpy().view(np.uint16)}):
        out = model.run(given)
        np.testing.assert_array_equal(out["not_b"], ~b)
        assert out["not_b"].dtype == np.bool_
        np.testing.assert_array_equal(out["nonzero"], [[0, 2, 3]])  # its actual extent
        np.testing.assert_array_equal(out["h_float"], [1.5, -2, 3.25])
        assert out["h_same"].dtype == np.uint16
        same = torch.from_numpy(out["h_same"].view(np.int16)).view(torch.bfloat16)
        assert torch.equal(same, h)
    with pytest.raises(sluice.InputError, match="has dtype float32, the bundle expects bfloat16"):
        model.run({"b": b, "h": h.float()})


# ---- errors as exceptions -------------------------------------------------


def test_wrong_input_name(cnn):
    model, inputs, _ = cnn
    with pytest.raises(sluice.InputError, match=r"no input named 'img' \(its inputs: 'image'\)"):
        model.run({"img": inputs["image"]})


def test_wrong_dtype(cnn, bert):
    model, inputs, _ = cnn
    with pytest.raises(sluice.InputError,
                       match="input 'image' has dtype float64, the bundle expects float32"):
        model.run({"image": inputs["image"].astype(np.float64)})
    with pytest.raises(sluice.InputError, match="has dtype int32, the bundle expects float32"):
        model.run({"image": torch.zeros(3, 3, 16, 16, dtype=torch.int32)})
    bert_model, bert_inputs, _ = bert
    wrong = dict(bert_inputs, input_ids=bert_inputs["input_ids"].astype(np.float32))
    with pytest.raises(ValueError, match="'input_ids' has dtype float32, the bundle expects int64"):
        bert_model.run(wrong)


def test_wrong_shape(cnn):
    model, inputs, _ = cnn
    with pytest.raises(sluice.InputError,
                       match="input 'image' has shape 1x3x16x16, the bundle expects 3x3x16x16"):
        model.run({"image": inputs["image"][:1]})
    with pytest.raises(sluice.InputError, match="has shape scalar"):
        model.run({"image": np.float32(1)})


def test_missing_input(bert):
    model, inputs, _ = bert
    with pytest.raises(sluice.InputError, match="input 'attention_mask' not given"):
        model.run({"input_ids": inputs["input_ids"]})
    with pytest.raises(TypeError, match="dict"):
        model.run([inputs["input_ids"]])


def test_errors_are_exception_classes():
    assert issubclass(sluice.InputError, ValueError)
    assert issubclass(sluice.InputError, sluice.Error)
    for error in (sluice.CompileError, sluice.BundleError, sluice.RunError, sluice.DeviceError):
        assert issubclass(error, sluice.Error) and issubclass(error, RuntimeError)


def test_bad_bundle_path(tmp_path):
    with pytest.raises(sluice.BundleError, match="no-such.sluice") as info:
        sluice.Model(str(tmp_path / "no-such.sluice"))
    assert info.value.status == "SLUICE_ERROR_BUNDLE"


def test_bad_model_path(tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(sluice.CompileError, match="missing.onnx") as info:
        sluice.compile(missing, str(tmp_path / "out.sluice"))
    assert info.value.returncode != 0
    assert not os.path.exists(tmp_path / "out.sluice")


def test_bad_options(tmp_path):
    path = os.path.join(CNN, "model.onnx")
    with pytest.raises(TypeError, match=r"unknown option quantise=.*\bquantize\b.*\btp\b"):
        sluice.compile(path, quantise="int8")
    with pytest.raises(TypeError, match="is a switch"):
        sluice.compile(path, no_recognize="yes")
    with pytest.raises(TypeError, match="takes a value"):
        sluice.compile(path, quantize=True)
    with pytest.raises(TypeError, match="model must be a path or an onnx.ModelProto"):
        sluice.compile(42)


def test_compiler_errors(tmp_path):
    path = os.path.join(CNN, "model.onnx")
    with pytest.raises(sluice.CompileError, match="needs --calibration=DIR"):
        sluice.compile(path, str(tmp_path / "q.sluice"), shapes={"image": (1, 3, 16, 16)},
                       quantize="int8")
    with pytest.raises(sluice.CompileError, match="bad --prune fraction '1.5' for heads"):
        sluice.compile(path, str(tmp_path / "p.sluice"), prune={"heads": 1.5},
                       calibration=str(tmp_path))
    with pytest.raises(sluice.CompileError, match="precision"):
        sluice.compile(path, str(tmp_path / "h.sluice"), precision="fp7")


def test_compiler_warnings(tmp_path):
    """A compile that does less than asked warns (sluice.CompileWarning)."""
    path = os.path.join(CNN, "model.onnx")
    inputs = load_inputs(CNN, ["image"])
    calibration = tmp_path / "calibration"
    calibration.mkdir()
    np.save(calibration / "image.npy", inputs["image"])
    # Budget 0: any pruning moves the outputs, so the guard spares every group.
    with pytest.warns(sluice.CompileWarning, match="would allow the request"):
        model = sluice.compile(path, str(tmp_path / "w.sluice"),
                               shapes={"image": inputs["image"].shape},
                               prune={"channels": 0.5}, calibration=str(calibration),
                               accuracy_metric="rel-l2", accuracy_budget=0, no_cache=True)
    assert model.run(inputs)  # the unpruned model, compiled and loaded


def test_compiler_options_mirror_flags():
    options = sluice.compiler_options()
    for name in ("quantize", "calibration", "tp", "pp", "prune", "sparsity", "gpu_arch",
                 "accuracy_budget", "accuracy_metric", "bind", "report"):
        assert options[name] == "value", name
    for name in ("sp", "auto", "no_recognize"):
        assert options[name] == "flag", name
    assert options["smooth_quant"] == "optional"
    for name in ("o", "target", "shape", "precision", "emit", "stop_after", "quiet", "help"):
        assert name not in options


def test_options_reach_the_compiler(tmp_path, capfd):
    path = os.path.join(CNN, "model.onnx")
    report = tmp_path / "report.json"
    model = sluice.compile(path, str(tmp_path / "n.sluice"), shapes={"image": "2x3x16x16"},
                           fusion="none", no_recognize=True, report=report, verbose=True)
    import json

    steps = json.loads(report.read_text())["steps"]
    assert all(len(step["ops"]) == 1 for step in steps)  # --fusion=none: one op a launch
    assert model.inputs[0].shape == (2, 3, 16, 16)
    assert "sluice-compile: built in" in capfd.readouterr().err  # verbose: its progress lines


def test_model_proto_with_external_data_it_does_not_hold():
    proto = onnx.load(os.path.join(CNN, "model.onnx"))
    weight = proto.graph.initializer[0]
    weight.ClearField("raw_data")
    weight.data_location = onnx.TensorProto.EXTERNAL
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    with pytest.raises(ValueError, match=f"tensor '{weight.name}' refers to external data "
                                         "\\('weights.bin'\\)"):
        sluice.compile(proto)


# ---- contexts on threads --------------------------------------------------


def test_two_contexts_on_two_threads(cnn):
    model, inputs, expected = cnn
    image = inputs["image"]
    doubled = model.run({"image": image * 2})
    results, errors = {}, []

    def worker(key, value, want):
        try:
            context = model.context(threads=1)
            assert context.device == "cpu"
            for _ in range(20):
                assert_outputs(context.run({"image": value}), want)
            results[key] = context.last_run_ms
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=worker, args=("a", image, expected)),
               threading.Thread(target=worker, args=("b", torch.from_numpy(image * 2), doubled))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(results) == ["a", "b"] and all(ms > 0 for ms in results.values())


def test_model_run_from_threads(cnn):
    model, inputs, expected = cnn
    errors = []

    def worker():
        try:
            for _ in range(10):
                assert_outputs(model.run(inputs), expected)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# ---- sequences ------------------------------------------------------------


def test_sequence_input_and_output():
    """A sequence input compiled for its element shapes takes a list of
    arrays; a returned sequence comes back as a list (manifest "sequences")."""
    data = "/usr/share/libonnx-testdata/data/node/test_identity_sequence"
    if not os.path.isdir(data):
        pytest.skip("libonnx-testdata is not installed")
    model = sluice.compile(os.path.join(data, "model.onnx"), shapes={"x": [(2, 3), (4,)]})
    assert [i.name for i in model.inputs] == ["x.0", "x.1"]
    assert model.sequences == {"inputs": [sluice.SequenceInfo("x", ("x.0", "x.1"))],
                               "outputs": [sluice.SequenceInfo("y", ("y.0", "y.1"))]}
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 2, 3, 4], dtype=np.float32)
    for given in ({"x": [a, b]}, {"x": (a, b)}, {"x.0": a, "x.1": b}):
        out = model.run(given)
        assert list(out) == ["y"] and isinstance(out["y"], list) and len(out["y"]) == 2
        np.testing.assert_array_equal(out["y"][0], a)
        np.testing.assert_array_equal(out["y"][1], b)
    with pytest.raises(sluice.InputError, match="input 'x' is a sequence of 1 elements, the "
                                                "bundle takes 2"):
        model.run({"x": [a]})
    with pytest.raises(sluice.InputError, match="input 'x' is a sequence of 2: pass a list"):
        model.run({"x": a})
    with pytest.raises(sluice.InputError, match="'x.1' has shape 2x3, the bundle expects 4"):
        model.run({"x": [a, a]})


# ---- shape variants (sluice-compile --shapes) -------------------------------


def test_shape_variants(tmp_path):
    """variants= compiles one bundle with a program per batch size; Model
    lists every variant's shapes, run() picks the variant of the inputs'
    shapes (checked against ONNX Runtime) and refuses another shape with the
    list."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "variants", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(w, "w")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    model = sluice.compile(proto, str(tmp_path / "v.sluice"),
                           variants={"x": [(1, 16), "8x16", (32, 16)]})
    assert model.inputs[0].shape == (1, 16)
    assert model.inputs[0].shapes == ((1, 16), (8, 16), (32, 16))
    assert model.outputs[0].shapes == ((1, 8), (8, 8), (32, 8))
    assert [v["inputs"][0].shape for v in model.variants] == [(1, 16), (8, 16), (32, 16)]
    for batch in (32, 1, 8):
        x = rng.standard_normal((batch, 16)).astype(np.float32)
        assert_outputs(model.run({"x": x}), onnxruntime_outputs(proto, {"x": x}))
    with pytest.raises(sluice.InputError, match="has shape 4x16, the bundle expects "
                                                "1x16 [|] 8x16 [|] 32x16"):
        model.run({"x": np.zeros((4, 16), np.float32)})
    # A bundle of one shape lists its one shape.
    single = sluice.compile(proto, str(tmp_path / "one.sluice"), shapes={"x": (8, 16)})
    assert single.inputs[0].shapes == ((8, 16),) and len(single.variants) == 1
