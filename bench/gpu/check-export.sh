#!/usr/bin/env bash
# Checks that bench_gpu.py's transformers exports (BERT, GPT-2) compile well
# on this machine, no GPU needed (bench/gpu/README.md "Export check"):
# installs transformers into the project's venv when it is missing (a
# version that works with torch 1.13; torch >= 2 machines take any), then runs
# check_export.py. Arguments go to check_export.py (--layers, --seq, ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${SLUICE_PYTHON:-.venv/bin/python}
if ! "$PY" -c "import transformers" 2>/dev/null; then
  if "$PY" -c "import torch, sys; sys.exit(int(torch.__version__.split('.')[0]) >= 2)"; then
    "$PY" -m pip install --quiet "transformers>=4.30,<4.37"
  else
    "$PY" -m pip install --quiet transformers
  fi
fi
exec "$PY" bench/gpu/check_export.py --bin "${SLUICE_BIN:-build/bin}" "$@"
