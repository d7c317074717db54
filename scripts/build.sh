#!/usr/bin/env bash
# Configures and builds Sluice into build/ (Ninja, Release). Idempotent.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
jobs="${SLUICE_JOBS:-$(nproc)}"
if [ ! -f "$build/build.ninja" ]; then
  echo "[build] configuring $build"
  launcher=()
  # ccache makes rebuilds of unchanged files (and clean CI re-runs) cheap.
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
fi
echo "[build] building with $jobs jobs"
ninja -C "$build" -j "$jobs"
