# lit configuration for Sluice: FileCheck tests of the importer (.onnxtxt),
# the dialect (.mlir round trips and invalid IR), passes and tools.
import os

import lit.formats

config.name = "Sluice"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.join(config.sluice_src_root, "test")
config.test_exec_root = os.path.join(config.sluice_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs",
                   "unit", "conformance", "models"]
config.environment["PATH"] = os.pathsep.join(
    [config.sluice_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# No compile cache (docs/tools.md, "Compile cache"): every RUN line compiles,
# and no test writes the user's ~/.cache/sluice.
config.environment["SLUICE_CACHE_DIR"] = "none"
# The generated code's precompiled headers (docs/tools.md, "Precompiled
# headers"): one folder per build tree, shared by its tests.
config.environment["SLUICE_PCH_DIR"] = os.path.join(config.sluice_obj_root, "pch")
config.substitutions.append(("%python", config.python_executable))
# The exported test models (test/models/*/model.onnx, inputs/, expected/).
config.substitutions.append(("%models", os.path.join(config.sluice_src_root, "test", "models")))
config.substitutions.append(("%testdata", "/usr/share/libonnx-testdata/data"))
# The hand-written bundle of test/unit/fixtures (its path has a space: quote
# it in RUN lines).
config.substitutions.append(("%fake_bundle", config.sluice_fake_bundle))
# Its cuda stand-in (no device code).
config.substitutions.append(("%fake_cuda_bundle", config.sluice_fake_cuda_bundle))
# "cuda-module": libsluice_runtime_cuda.so was built.
if config.sluice_cuda_module.upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("cuda-module")
# "dnnl": the compiler was built with oneDNN (cpu convolutions run as oneDNN
# primitives, sluice_gen/cpu_nn_dnnl.h).
if getattr(config, "sluice_dnnl", "0") == "1":
    config.available_features.add("dnnl")

# The cuda target: `nvcc` when the CUDA toolkit can build bundles here,
# `gpu` when a GPU can run them (tests run their GPU lines under %if gpu).
import shutil
import subprocess

if shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"):
    config.available_features.add("nvcc")
try:
    _smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    if _smi.returncode == 0 and "GPU" in _smi.stdout:
        config.available_features.add("gpu")
except (OSError, subprocess.TimeoutExpired):
    pass

# "f16c": this x86 host has F16C, which -march=native bundles use for f16
# conversions (codegen/include/sluice_gen/scalar.h).
# "sgemm": this host's bundles have sluice_gen/cpu_gemm.h's kernel (AVX-512F,
# or AVX2 + FMA), so f32 GEMM weights are stored packed for it.
try:
    with open("/proc/cpuinfo") as _cpuinfo:
        _flags = _cpuinfo.read()
        if " f16c" in _flags:
            config.available_features.add("f16c")
        if " avx512f" in _flags or (" avx2" in _flags and " fma" in _flags):
            config.available_features.add("sgemm")
except OSError:
    pass
