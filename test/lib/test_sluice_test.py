#!/usr/bin/env python3
"""Unit tests of sluice_test, the helpers the Python checks share (ctest
test-lib): each helper on made-up commands, folders and arrays, with a fake
tool folder and a fake nvidia-smi on PATH, so that no check can pass because
a helper saw nothing."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sluice_test as st  # noqa: E402


def write_script(folder, name, body):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


class RunTest(unittest.TestCase):
    def test_captures_status_and_both_streams(self):
        r = st.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual(r.rc, 3)
        self.assertEqual(r.out, "out\nerr\n")
        self.assertGreaterEqual(r.seconds, 0.0)

    def test_echo_and_show(self):
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            r = st.run(["sh", "-c", "echo out; echo err >&2"], echo=True, show=True)
        self.assertEqual(r.rc, 0)
        self.assertEqual(stdout.getvalue(), "+ sh -c echo out; echo err >&2\nout\n")
        self.assertEqual(stderr.getvalue(), "err\n")

    def test_quiet_by_default(self):
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            st.run(["sh", "-c", "echo out"])
        self.assertEqual(stdout.getvalue(), "")

    def test_timeout_raises(self):
        with self.assertRaises(subprocess.TimeoutExpired):
            st.run(["sleep", "5"], timeout=0.2)

    def test_group_timeout_kills_and_returns_none(self):
        r = st.run(["sh", "-c", "echo started; sleep 5 & sleep 5"], timeout=0.5, group=True)
        self.assertIsNone(r.rc)
        self.assertEqual(r.out, "started\n")
        self.assertLess(r.seconds, 4)

    def test_group_merges_streams(self):
        r = st.run(["sh", "-c", "echo a; echo b >&2; echo c"], group=True)
        self.assertEqual((r.rc, r.out), (0, "a\nb\nc\n"))

    def test_check_raises_on_failure(self):
        with self.assertRaises(subprocess.CalledProcessError) as caught:
            st.run(["sh", "-c", "echo why >&2; exit 2"], check=True)
        self.assertEqual(caught.exception.returncode, 2)
        self.assertEqual(caught.exception.stderr, "why\n")
        self.assertEqual(st.run(["true"], check=True).rc, 0)

    def test_env(self):
        r = st.run(["sh", "-c", "echo $SLUICE_TEST_VALUE"], env={"SLUICE_TEST_VALUE": "x"})
        self.assertEqual(r.out, "x\n")


class ToolsTest(unittest.TestCase):
    def test_compile_bundle_command(self):
        with tempfile.TemporaryDirectory() as bin_dir:
            write_script(bin_dir, "sluice-compile", 'echo "$@"')
            self.assertEqual(st.tool(bin_dir, "sluice-run"), os.path.join(bin_dir, "sluice-run"))
            r = st.compile_bundle(bin_dir, "m.onnx", "b.sluice", ["--quiet", "--target=cpu"])
            self.assertEqual((r.rc, r.out), (0, "m.onnx -o b.sluice --quiet --target=cpu\n"))


class GpuTest(unittest.TestCase):
    def present_with(self, script):
        with tempfile.TemporaryDirectory() as folder:
            if script is not None:
                write_script(folder, "nvidia-smi", script)
            with mock.patch.dict(os.environ, {"PATH": folder}):
                return st.gpu_present()

    def test_gpu_present(self):
        self.assertTrue(self.present_with('echo "GPU 0: NVIDIA H200 (UUID: GPU-0)"'))
        self.assertFalse(self.present_with("echo 'No devices were found'; exit 6"))
        self.assertFalse(self.present_with("echo"))
        self.assertFalse(self.present_with(None))
        self.assertEqual(st.SKIPPED, 77)


class FoldersTest(unittest.TestCase):
    def test_model_folder(self):
        with tempfile.TemporaryDirectory() as folder:
            os.makedirs(os.path.join(folder, "inputs"))
            with open(os.path.join(folder, "manifest.json"), "w") as f:
                f.write('{"inputs": ["x", "y"], "outputs": ["z"]}')
            np.save(os.path.join(folder, "inputs", "x.npy"), np.arange(3, dtype=np.float32))
            np.save(os.path.join(folder, "inputs", "y.npy"), np.ones(2, dtype=np.int64))
            manifest = st.read_manifest(folder)
            self.assertEqual(manifest["inputs"], ["x", "y"])
            x = os.path.join(folder, "inputs", "x.npy")
            self.assertEqual(st.tensor_path(folder, "inputs", "x"), x)
            self.assertEqual(st.tensor_paths(folder, "inputs", ["x"]), [x])
            self.assertEqual(st.tensor_args(folder, "expected", ["z"]),
                             ["z=" + os.path.join(folder, "expected", "z.npy")])
            feeds = st.load_tensors(folder, "inputs", manifest["inputs"])
            self.assertEqual(sorted(feeds), ["x", "y"])
            np.testing.assert_array_equal(feeds["x"], [0, 1, 2])
            self.assertEqual(feeds["y"].dtype, np.int64)


class JudgeTest(unittest.TestCase):
    def test_outside(self):
        want = np.array([1.0, 100.0, 0.0], dtype=np.float32)
        got = np.array([1.0005, 100.05, 2e-5], dtype=np.float32)
        bad, err = st.outside(got, want, rtol=1e-3, atol=1e-5)
        self.assertEqual(bad.tolist(), [False, False, True])
        self.assertEqual(err.dtype, np.float64)
        self.assertAlmostEqual(float(err.max()), 0.05, places=4)
        self.assertFalse(st.outside(want, want, 0.0, 0.0)[0].any())

    def test_finish(self):
        for problems, passed, failed, text, status in (
                ([], "PASS", None, "PASS\n", 0),
                (["a", "b"], "PASS", None, "FAIL: a\nFAIL: b\n", 1),
                (["a"], "check: ok", "check: FAILED", "FAIL: a\ncheck: FAILED\n", 1),
                ([], "check: ok", "check: FAILED", "check: ok\n", 0),
                ([], None, None, "", 0),
                (["a"], None, None, "FAIL: a\n", 1)):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                got = st.finish(problems, passed, failed)
            self.assertEqual((out.getvalue(), got), (text, status))


if __name__ == "__main__":
    unittest.main()
