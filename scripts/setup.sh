#!/usr/bin/env bash
# Installs every dependency Sluice needs, idempotently: the Debian packages
# (LLVM/MLIR 22, ONNX, protobuf, OpenBLAS, OpenMPI, torch, scikit-learn for
# the quantization accuracy data, torchvision for the zoo, ninja, gtest) and a
# Python virtual environment (.venv) with onnx, onnxruntime and numpy that also
# sees Debian's torch (--system-site-packages), nanobind, scikit-build-core and
# pytest for the Python package, transformers (pinned, the zoo's models), and,
# where it installs,
# nvidia-cusparselt-cu13 (cuSPARSELt for the cuda target's 2:4 GEMMs).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debs=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libopenblas-dev libopenmpi-dev openmpi-bin
  python3-torch python3-torchvision python3-sklearn python3-venv ninja-build cmake g++ libgtest-dev ccache
  libdnnl-dev # oneDNN: the int8 GEMM benchmark's reference (bench/cpu)
  clang # libFuzzer, for scripts/fuzz.sh (test/fuzz)
)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[setup] Debian packages present"
fi

venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating $venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python" -c "import onnx, onnxruntime, numpy, torch" 2>/dev/null; then
  echo "[setup] installing Python packages into $venv"
  # torch 1.13 (Debian) is built against numpy 1.x.
  "$venv/bin/pip" install -q --disable-pip-version-check "numpy<2" "onnx" "onnxruntime"
fi
# The Python package sluice (runtime/python, docs/python.md): nanobind
# builds its extension with the project, scikit-build-core its wheel
# (pip wheel .), pytest runs its tests (ctest label python). scripts/build.sh
# then puts the built package on the .venv's path.
if ! "$venv/bin/python" -c "import nanobind, scikit_build_core, pytest" 2>/dev/null; then
  echo "[setup] installing nanobind, scikit-build-core and pytest into $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "nanobind==3.1.0" \
    "scikit-build-core==1.1.2" "pytest==9.2.0"
fi
# Hugging Face transformers for the zoo (test/zoo/make_zoo.py builds its
# architectures from configs, no downloads): pinned to a release that runs on
# Debian's torch 1.13 and numpy 1.x (4.38 still supports torch < 2 and exports
# its eager attention with torch.onnx).
if ! "$venv/bin/python" -c "import transformers; assert transformers.__version__ == '4.38.2'" 2>/dev/null; then
  echo "[setup] installing transformers 4.38.2 into $venv (the zoo's models)"
  "$venv/bin/pip" install -q --disable-pip-version-check "numpy<2" "transformers==4.38.2"
fi
# cuSPARSELt (docs/pruning.md): the cuda target's 2:4 GEMMs compile against its
# header and dlopen its library at run time (codegen/cuda/groups/Gemm.cpp,
# sluice_gen/cuda_sparse.cuh). Optional: where the package cannot be
# installed, bundles still build and run their 2:4 GEMMs dense, so a failure
# here is a note, not a failed setup.
if ! compgen -G "$venv/lib/python3*/site-packages/nvidia/*/include/cusparseLt.h" >/dev/null; then
  echo "[setup] installing nvidia-cusparselt-cu13 into $venv (optional: 2:4 GEMMs on cuda)"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps nvidia-cusparselt-cu13 ||
    echo "[setup] note: nvidia-cusparselt-cu13 is unavailable; cuda 2:4 GEMMs will run dense"
fi
echo "[setup] done"
