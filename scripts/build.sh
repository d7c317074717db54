#!/usr/bin/env bash
# Configures and builds Sluice into build/ (Ninja, Release), then puts the
# Python package it built on the .venv's path. Idempotent.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
jobs="${SLUICE_JOBS:-$(nproc)}"
# Paths relative to the checkout in ccache's keys, so that other build
# folders of it (scripts/sanitize.sh --ci) reuse these objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
if [ ! -f "$build/build.ninja" ]; then
  echo "[build] configuring $build"
  launcher=()
  # ccache makes rebuilds of unchanged files (and clean CI re-runs) cheap.
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
fi
echo "[build] building with $jobs jobs"
ninja -C "$build" -j "$jobs"
# The Python package (runtime/python, docs/python.md): a development install
# of build/python into the project's .venv (SLUICE_VENV: another one), so
# that `.venv/bin/python -c "import sluice"` works after this build. A .pth
# file names the folder; the build keeps the package there current.
venv="${SLUICE_VENV:-$root/.venv}"
if [ -f "$build/python/sluice/__init__.py" ] && [ -x "$venv/bin/python" ]; then
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$build/python" > "$site/sluice-build.pth"
  echo "[build] Python package sluice: $build/python (via $site/sluice-build.pth)"
fi
