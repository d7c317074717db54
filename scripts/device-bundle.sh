#!/usr/bin/env bash
# Packs what a GPU machine without LLVM needs to run Sluice's GPU checks into
# device-bundle/sluice-device.tar.xz (+ MANIFEST.txt): the tools linked
# against static LLVM/MLIR (that machine has none), the runtime libraries, the
# headers generated code includes, the shared libraries the tools need that a
# plain system lacks (onnx, protobuf), the test models, the gpu-labelled tests
# (built binaries, their fixtures and scripts), bench/gpu, the device
# scripts and a relocatable Open MPI (mpi/, for a machine without one).
# docs/device.md says how to build it, take it there and run its stages.
#
# usage: scripts/device-bundle.sh [--testdata] [--build-dir DIR] [--out DIR]
#                                 [--no-check] [-j N]
#   --testdata      add the ONNX backend test cases (libonnx-testdata) that
#                   the conformance stage runs
#   --zoo DIR[:A,B] add zoo models (folders made by test/zoo/make_zoo.py, e.g.
#                   build/test/zoo) that the zoo stage runs: the names after
#                   the colon, or by default the ones small enough for the
#                   bundle's size limit (the transformers,
#                   shufflenet_v2_x0_5, squeezenet1_1, swin_t)
#   --build-dir     the static build (default build-static/; configured with
#                   -DSLUICE_STATIC_MLIR=ON when it does not exist yet)
#   --out           where the tarball and MANIFEST.txt go (default device-bundle/)
#   --no-check      skip the check: extract into a temporary folder and, with
#                   only the bundle and the CUDA toolkit visible, compile a test
#                   model for the cuda target with the bundle's sluice-compile
#   -j N            ninja jobs (default 2)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build-static
out=$repo/device-bundle
testdata=0 check=1 jobs=2 zoo_dir='' zoo_names=''
# The bundle and the repository's tracked files together stay under 64 MiB,
# so that both travel to the GPU machine as one small copy.
limit=$((64 * 1024 * 1024))
data_dir=/usr/share/libonnx-testdata/data

die() { echo "device-bundle: error: $*" >&2; exit 2; }
say() { echo "[device-bundle] $*"; }
while [ $# -gt 0 ]; do
  case $1 in
    --testdata) testdata=1; shift ;;
    --zoo) zoo_dir=$(realpath -m "${2%%:*}"); [[ $2 == *:* ]] && zoo_names=${2#*:}; shift 2 ;;
    --build-dir) build=$(realpath -m "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --no-check) check=0; shift ;;
    -j) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# 1. The static build.
if [ ! -f "$build/CMakeCache.txt" ]; then
  say "configuring $build (SLUICE_STATIC_MLIR=ON)"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  python=python3
  [ -x "$repo/.venv/bin/python" ] && python=$repo/.venv/bin/python
  cmake -G Ninja -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSLUICE_STATIC_MLIR=ON \
    -DSLUICE_PYTHON="$python" "${launcher[@]}" >/dev/null
fi
grep -q '^SLUICE_STATIC_MLIR:BOOL=ON' "$build/CMakeCache.txt" ||
  die "$build is not a static build (configure it with -DSLUICE_STATIC_MLIR=ON)"
grep -q '^SLUICE_CUDA:BOOL=ON' "$build/CMakeCache.txt" ||
  die "$build has no cuda runtime module (SLUICE_CUDA is off: is the CUDA toolkit there?)"

# The gpu-labelled tests other than the models and the conformance run
# (device-tests.sh runs those itself): name, labels, command, and the files
# and folders they use.
mkdir -p "$out"
tests_json=$out/gpu-tests.json
ctest --test-dir "$build" -L gpu --show-only=json-v1 >"$tests_json" 2>/dev/null
targets=(sluice-compile sluice-run sluice-opt SluiceRuntime SluiceRuntimeCuda)
mapfile -t extra < <(python3 - "$build" "$tests_json" <<'EOF'
import glob, json, os, re, sys
build = sys.argv[1]
# ctest leaves "command" out for a test whose executable is not built yet (a
# fresh build folder): take the program from the CTestTestfile.cmake lines.
programs = {}
for f in glob.glob(os.path.join(build, "**", "CTestTestfile.cmake"), recursive=True):
    for m in re.finditer(r'add_test\(\[=\[(.*?)\]=\] "([^"]+)"', open(f).read()):
        programs[m.group(1)] = m.group(2)
for t in json.load(open(sys.argv[2]))["tests"]:
    labels = next((p["value"] for p in t.get("properties", []) if p["name"] == "LABELS"), [])
    if t["name"].startswith("model-") or "conformance" in labels:
        continue
    command = t.get("command") or [programs.get(t["name"], "")]
    for arg in command:
        tool = os.path.basename(arg)
        if arg.startswith(build + "/bin/") and tool not in ("sluice-compile", "sluice-run"):
            print(tool)
EOF
)
targets+=(${extra[@]+"${extra[@]}"})
# Fixtures the tests read from the build tree (the computing fake bundle).
# (grep reads all of ninja's list: with -q it could exit first and, under
# pipefail, ninja's SIGPIPE would fail the test.)
if ninja -C "$build" -t targets all 2>/dev/null | grep -c '^sluice_fake_cuda_gpu_model:' >/dev/null; then
  targets+=(sluice_fake_cuda_gpu_model)
fi
say "building ${targets[*]}"
ninja -C "$build" -j "$jobs" "${targets[@]}" >/dev/null
# Now that they are built, ctest knows every test's full command.
ctest --test-dir "$build" -L gpu --show-only=json-v1 >"$tests_json" 2>/dev/null

# 2. Stage the bundle.
stage=$out/stage
root=$stage/sluice-device
rm -rf "$stage"
mkdir -p "$root/bin" "$root/lib" "$root/test"
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null | grep -c . || true)

for tool in sluice-compile sluice-run sluice-opt ${extra[@]+"${extra[@]}"}; do
  cp "$build/bin/$tool" "$root/bin/"
done
cp "$build/lib/libsluice_runtime.so" "$build/lib/libsluice_runtime_cuda.so" "$root/lib/"
# The communication libraries of multi-rank bundles (MPI; NCCL for cuda).
for f in "$build"/lib/libsluice_comm*.so; do [ -f "$f" ] && cp "$f" "$root/lib/"; done
strip --strip-unneeded "$root"/bin/* "$root"/lib/*.so

# Shared libraries a plain system lacks: everything the tools and runtime
# need except the C/C++ runtime, zlib/zstd, OpenMP and CUDA's own libraries
# (the GPU machine's toolkit provides those, in its own version). NCCL
# (218 MiB, over the size limit below) comes from the GPU machine's
# nvidia-nccl wheel or toolkit: device-env.sh puts its folder on
# LD_LIBRARY_PATH. Open MPI too: the GPU machine's image has its own (4.1.6, with mpirun), whose plugins live
# where Debian's would, so a carried libmpi of another version would load
# them and fail; libmpi.so.40 is the same ABI.
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libz|libzstd|libgomp|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc|libnvJitLink|libnccl|libmpi|libopen-pal|libopen-rte|libhwloc|libevent[a-z_]*-[0-9.]*|libudev|libpmix)\.so'
for f in "$root"/bin/* "$root"/lib/*.so; do
  ldd "$f" | awk '/=>/ { print $1, $3 }'
done | sort -u | while read -r name path; do
  case $name in
    libLLVM*|libMLIR*) die "$name is needed by a tool: the static build still links LLVM/MLIR shared" ;;
  esac
  if [[ ! $name =~ $system ]] && [ ! -e "$root/lib/$name" ]; then
    [ -f "$path" ] || die "$name is needed but not found ($path)"
    cp -L "$path" "$root/lib/$name"
  fi
done

# OpenBLAS for host steps that call it (a cuda bundle links -lopenblas when
# one of its host steps is a GEMM the cpu emitter gives to BLAS): the GPU
# machine's image has no OpenBLAS, so its library, the libraries it needs and cblas.h
# travel in blas/ (device-env.sh puts blas/lib on -L and LD_LIBRARY_PATH and
# blas/include on SLUICE_INCLUDE_DIRS). About 4 MiB compressed.
blas_lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libopenblas.so.0)
blas_inc=$(dirname "$(readlink -f /usr/include/x86_64-linux-gnu/cblas.h)")
[ -f "$blas_lib" ] && [ -f "$blas_inc/cblas.h" ] || die "no OpenBLAS (install libopenblas-dev: scripts/setup.sh)"
mkdir -p "$root/blas/lib" "$root/blas/include"
cp -L "$blas_lib" "$root/blas/lib/libopenblas.so.0"
ln -sf libopenblas.so.0 "$root/blas/lib/libopenblas.so"
ldd "$blas_lib" | awk '/=>/ { print $1, $3 }' | while read -r name path; do
  case $name in libgfortran*|libquadmath*) cp -L "$path" "$root/blas/lib/$name" ;; esac
done
cp -L "$blas_inc/cblas.h" "$blas_inc/openblas_config.h" "$root/blas/include/"

# Open MPI for multi-rank bundles (sluice-run --ranks starts mpirun), for a
# machine that has none (or SLUICE_MPI=bundle; device-env.sh uses a machine's
# own otherwise): this machine's travels whole in mpi/, laid out as under its
# prefix so that OPAL_PREFIX relocates it (bin/, the MCA plugins at
# pkglibdir, the help files at pkgdatadir; etc/ for OPAL_SYSCONFDIR), its
# external PMIx under mpi/pmix (PMIX_LIBDIR, PMIX_DATADIR, PMIX_SYSCONFDIR:
# Debian's PMIx has them absolute, PMIX_PREFIX alone moves nothing), the
# libraries they need in mpi/lib. Plugins for fabrics the GPU machine lacks (UCX,
# libfabric, verbs, PSM), OpenSHMEM and netlink stay behind: a plugin that
# fails to load is skipped, but it would drag in megabytes of libraries.
mpi_dropped=() mpi=0
if compgen -G "$build/lib/libsluice_comm*.so" >/dev/null; then
  command -v ompi_info >/dev/null || die "no ompi_info: the comm libraries need Open MPI (scripts/setup.sh)"
  mpi_path() { ompi_info --parsable --path "$1" | sed -n "s|^path:$1:||p" | head -n 1; }
  mpi_prefix=$(mpi_path prefix)
  mpi_rel() { # $1 relative to the prefix (relocation keeps it there)
    local p
    p=$(mpi_path "$1")
    [[ $p == "$mpi_prefix"/* ]] || die "Open MPI's $1 ($p) is not under its prefix $mpi_prefix"
    echo "${p#"$mpi_prefix"/}"
  }
  mpi_bin=$(mpi_rel bindir) mpi_plugins=$(mpi_rel pkglibdir) mpi_data=$(mpi_rel pkgdatadir)
  mkdir -p "$root/mpi/$mpi_bin" "$root/mpi/$mpi_plugins" "$root/mpi/$mpi_data"
  for tool in orterun orted ompi_info; do
    [ -x "$mpi_prefix/$mpi_bin/$tool" ] || die "no $mpi_prefix/$mpi_bin/$tool"
    cp -L "$mpi_prefix/$mpi_bin/$tool" "$root/mpi/$mpi_bin/"
  done
  ln -s orterun "$root/mpi/$mpi_bin/mpirun"
  unwanted='^(liboshmem|libuc[pstm]|libfabric|libibverbs|librdmacm|libefa|libpsm|libinfinipath|libnl-|libmca_common_(ucx|ofi|verbs|cuda)|libcuda)'
  for f in "$mpi_prefix/$mpi_plugins"/*.so; do
    if ldd "$f" | awk '/=>/ { print $1 }' | grep -qE "$unwanted"; then
      mpi_dropped+=("$(basename "$f" .so)")
    else
      cp "$f" "$root/mpi/$mpi_plugins/"
    fi
  done
  cp -r "$mpi_prefix/$mpi_data"/help-*.txt "$mpi_prefix/$mpi_data"/amca-param-sets "$root/mpi/$mpi_data/"
  # PMIx: the one mca_pmix_ext3x.so loads (pkg-config knows its folders).
  pmix_lib=$(ldd "$mpi_prefix/$mpi_plugins/mca_pmix_ext3x.so" 2>/dev/null | awk '$1 ~ /^libpmix/ { print $3 }')
  if [ -n "$pmix_lib" ]; then
    pmix_prefix=$(pkg-config --variable=prefix pmix) && pmix_libdir=$(pkg-config --variable=libdir pmix) ||
      die "Open MPI uses an external PMIx ($pmix_lib) that pkg-config does not know (libpmix-dev)"
    [ -d "$pmix_libdir/pmix" ] && [ -d "$pmix_prefix/share/pmix" ] ||
      die "no PMIx plugins or help files under $pmix_libdir/pmix, $pmix_prefix/share/pmix"
    mkdir -p "$root/mpi/pmix/lib/pmix" "$root/mpi/pmix/share/pmix"
    cp "$pmix_libdir"/pmix/*.so "$root/mpi/pmix/lib/pmix/"
    cp "$pmix_prefix"/share/pmix/help-*.txt "$root/mpi/pmix/share/pmix/"
  fi
  # Its configuration (sysconfdir, relocated by OPAL_SYSCONFDIR: the
  # machine's /etc/openmpi may belong to another Open MPI).
  mkdir -p "$root/mpi/etc"
  for f in openmpi-mca-params.conf openmpi-default-hostfile; do
    if [ -f "$(mpi_path sysconfdir)/$f" ]; then cp "$(mpi_path sysconfdir)/$f" "$root/mpi/etc/"; else : >"$root/mpi/etc/$f"; fi
  done
  # What they need, but the C/C++ runtime and zlib, in mpi/lib: libmpi and
  # the rest of Open MPI's closure go with its programs and plugins (a
  # machine with its own Open MPI keeps using its own: device-env.sh).
  mkdir -p "$root/mpi/lib"
  mpi_system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libz)\.so'
  for f in "$root/mpi/$mpi_bin"/orte* "$root/mpi/$mpi_bin"/ompi_info "$root/mpi/$mpi_plugins"/*.so \
    "$root"/mpi/pmix/lib/pmix/*.so; do
    [ -f "$f" ] && ldd "$f" | awk '/=>/ { print $1, $3 }'
  done | sort -u | while read -r name path; do
    if [[ ! $name =~ $mpi_system ]]; then
      [ -f "$path" ] || die "$name is needed by Open MPI but not found ($path)"
      cp -L "$path" "$root/mpi/lib/$name"
    fi
  done
  for name in $(ldd "$root"/lib/libsluice_comm*.so | awk '$1 ~ /^lib(mpi|open-)/ { print $1 }' | sort -u); do
    [ -f "$root/mpi/lib/$name" ] || die "the comm libraries need $name, which Open MPI's closure lacks"
  done
  mpi=1
  say "$(ompi_info --version | head -n 1) in mpi/ ($(du -sk "$root/mpi" | cut -f1) KiB, $(find "$root/mpi/$mpi_plugins" -name '*.so' | wc -l) plugins; left out: ${mpi_dropped[*]:-none})"
else
  say "no comm libraries in $build: no Open MPI in the bundle (multi-rank bundles will not run)"
fi

# Sources the generated code and the checks need, at their repository paths.
copy_src() {
  local p
  for p in "$@"; do
    mkdir -p "$root/$(dirname "$p")"
    cp -r "$repo/$p" "$root/$p"
  done
}
copy_src codegen/include include bench/gpu scripts/device-env.sh scripts/device-tests.sh \
  test/models test/parallel test/moe test/quant test/conformance/run_conformance.py test/gpu test/common \
  test/lib
[ -f "$repo/docs/device.md" ] && copy_src docs/device.md
find "$root" -name __pycache__ -prune -exec rm -rf {} +

# The gpu tests' list, each command with @ROOT@ for the bundle root and
# @PYTHON@ for the GPU machine's python; files they name are copied (source tree
# paths as they are, build tree paths under build/).
python3 - "$repo" "$build" "$root" "$tests_json" <<'EOF'
import json, os, re, shutil, sys
repo, build, root = sys.argv[1:4]
lines = []
for t in json.load(open(sys.argv[4]))["tests"]:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    labels = props.get("LABELS", [])
    if t["name"].startswith("model-") or "conformance" in labels:
        continue
    if props.get("SKIP_RETURN_CODE") != 77:
        sys.exit(f"device-bundle: gpu test {t['name']} has no SKIP_RETURN_CODE 77")
    cmd = []
    python = None
    for arg in t["command"]:
        if " " in arg or "\t" in arg:
            sys.exit(f"device-bundle: gpu test {t['name']}: argument with a blank: {arg!r}")
        # The build's python (often the repository's .venv) is the device's.
        if re.fullmatch(r"python[0-9.]*", os.path.basename(arg)) and os.access(arg, os.X_OK):
            cmd.append("@PYTHON@")
            continue
        if arg.startswith(build + "/bin/"):
            cmd.append("@ROOT@/bin/" + os.path.basename(arg))
            continue
        for base, dest in ((build, "build"), (repo, "")):
            if arg.startswith(base + "/"):
                rel = os.path.relpath(arg, base)
                target = os.path.join(root, dest, rel)
                if os.path.isdir(arg):
                    shutil.copytree(arg, target, dirs_exist_ok=True)
                elif os.path.isfile(arg):
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    shutil.copy2(arg, target)
                # else: an output path the test creates
                cmd.append("@ROOT@/" + os.path.join(dest, rel) if dest else "@ROOT@/" + rel)
                break
        else:
            cmd.append(arg)
    lines.append("\t".join([t["name"], ";".join(labels), " ".join(cmd)]))
with open(os.path.join(root, "test", "gpu-tests.tsv"), "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"[device-bundle] {len(lines)} gpu tests: " + ", ".join(l.split("\t")[0] for l in lines))
EOF

if [ $testdata -eq 1 ]; then
  [ -d "$data_dir" ] || die "no $data_dir (install libonnx-testdata: scripts/setup.sh)"
  mkdir -p "$root/testdata"
  for suite in node pytorch-converted pytorch-operator simple; do
    cp -r "$data_dir/$suite" "$root/testdata/"
  done
fi

if [ -n "$zoo_dir" ]; then
  [ -n "$zoo_names" ] || zoo_names=bert,distilbert,roberta,gpt2,opt,gpt_neox,llama,llama_gqa,mistral,t5_encoder,vit,shufflenet_v2_x0_5,squeezenet1_1,swin_t
  mkdir -p "$root/test/zoo"
  for name in ${zoo_names//,/ }; do
    [ -f "$zoo_dir/$name/manifest.json" ] || die "no zoo model $zoo_dir/$name (make it with test/zoo/make_zoo.py)"
    cp -r "$zoo_dir/$name" "$root/test/zoo/"
  done
fi

# 3. MANIFEST.txt (inside the tarball too) and the tarball.
{
  echo "sluice device bundle"
  echo "commit: $commit$([ "$dirty" != 0 ] && echo " (+$dirty modified files)")"
  echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME"), $(c++ --version | head -n 1)"
  echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
  echo "testdata: $([ $testdata -eq 1 ] && echo "yes ($data_dir)" || echo no)"
  # The GPU machine's C and C++ runtimes must be at least these.
  echo "needs: $(for f in "$root"/bin/* "$root"/lib/*.so* $(find "$root/mpi" -type f \( -name '*.so' -o -path '*/bin/*' \) 2>/dev/null); do objdump -T "$f"; done |
    grep -o 'GLIBC_2\.[0-9]*\|GLIBCXX_3\.4\.[0-9]*' | sort -V -u |
    awk -F_ '{ v[$1] = $0 } END { print v["GLIBC"], v["GLIBCXX"] }')"
  echo
  echo "## ldd (libraries under lib/ travel in the bundle)"
  for f in "$root"/bin/* "$root"/lib/*.so* "$root"/mpi/bin/orte*; do
    [ -f "$f" ] && echo "${f#"$root"/}: $(ldd "$f" | awk '/=>/ { print $1 }' | tr '\n' ' ')"
  done
  echo
  echo "## files"
  (cd "$root" && find . -type f ! -path './testdata/*' -printf '%s\t%P\n' | sort -k2)
  [ $testdata -eq 1 ] && echo "$(find "$root/testdata" -type f | wc -l) files under testdata/"
} >"$root/MANIFEST.txt"
mkdir -p "$out"
rm -f "$out/sluice-device.tar.xz"
XZ_OPT="-6 -T${jobs}" tar -C "$stage" -cJf "$out/sluice-device.tar.xz" sluice-device
cp "$root/MANIFEST.txt" "$out/MANIFEST.txt"
size=$(stat -c %s "$out/sluice-device.tar.xz")
repo_size=$(git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 stat -c %s 2>/dev/null) |
  awk '{ s += $1 } END { print s + 0 }')
say "$out/sluice-device.tar.xz: $((size / 1024)) KiB (unpacked $(du -sk "$root" | cut -f1) KiB); with the repository's tracked files ($((repo_size / 1024)) KiB) $(((size + repo_size) / 1024)) KiB of at most $((limit / 1024))"
{
  echo
  echo "## size"
  echo "tarball: $size bytes; repository tracked files: $repo_size bytes; limit with the repository: $limit bytes"
} >>"$out/MANIFEST.txt"
[ $((size + repo_size)) -lt $limit ] || die "the bundle and the repository exceed $((limit / 1024 / 1024)) MiB"

# 4. The check: no LLVM/MLIR needed, and a cuda compile from the extracted
# bundle in a clean environment.
if [ $check -eq 1 ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  tar -xJf "$out/sluice-device.tar.xz" -C "$tmp"
  if ldd "$tmp"/sluice-device/bin/* "$tmp"/sluice-device/lib/*.so | grep -E 'libLLVM|libMLIR|not found'; then
    die "the extracted bundle needs LLVM/MLIR or a missing library (above)"
  fi
  # With Open MPI: in the namespace below, with this machine's Open MPI and
  # PMIx hidden, the bundle's mpirun starts two cpu ranks of a tensor
  # parallel model (the cuda target needs a GPU); every MPI binary and
  # plugin resolves its libraries from the bundle.
  mpi_check=""
  if [ $mpi -eq 1 ]; then
    python=python3
    [ -x "$repo/.venv/bin/python" ] && python=$repo/.venv/bin/python
    cat >"$tmp/mpi-check.sh" <<EOF
if ldd \$(find sluice-device/mpi -type f \( -name '*.so' -o -path '*/bin/*' \)) sluice-device/lib/*.so* |
  grep 'not found'; then
  echo "[device-bundle] check: the bundle's Open MPI lacks a library (above)"
  exit 1
fi
echo "[device-bundle] check: \$(command -v mpirun): \$(mpirun --version | head -n 1)"
[ "\$(command -v mpirun)" = "\$PWD/sluice-device/mpi/bin/mpirun" ] ||
  { echo "[device-bundle] check: mpirun is not the bundle's"; exit 1; }
# Silent: a help file or plugin Open MPI or PMIx looks for at its build's
# paths shows as a "Sorry!" notice, not as a failure.
out=\$(mpirun -np 1 true 2>&1) && [ -z "\$out" ] ||
  { echo "\$out"; echo "[device-bundle] check: mpirun -np 1 true failed or warned (above)"; exit 1; }
$python sluice-device/test/parallel/check_parallel.py --bin sluice-device/bin --target cpu \\
  --tp 2 sluice-device/test/models/bert_encoder
EOF
    mpi_check="source mpi-check.sh"
  fi
  shapes=$(python3 -c 'import json,sys; print(" ".join("--shape=" + s for s in json.load(open(sys.argv[1]))["shapes"]))' \
    "$tmp/sluice-device/test/models/small_cnn/manifest.json")
  inner="set -e; unset LD_LIBRARY_PATH; source sluice-device/scripts/device-env.sh;
    echo \"[device-bundle] check: \$(command -v sluice-compile)\";
    sluice-compile sluice-device/test/models/small_cnn/model.onnx -o small_cnn.sluice --target=cuda \
      --gpu-arch=sm_90 --quiet $shapes --report=report.json;
    sluice-run sluice-device/test/models/small_cnn/model.onnx --reference $shapes \
      image=sluice-device/test/models/small_cnn/inputs/image.npy \
      --expect logits=sluice-device/test/models/small_cnn/expected/logits.npy --rtol=1e-4 --atol=1e-5;
    $mpi_check"
  clean_env=(env -i "HOME=$tmp" "PATH=/usr/local/bin:/usr/bin:/bin" "CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}")
  # Hide LLVM's folder when this machine lets us (a private mount namespace).
  llvm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v llvm-config-22 2>/dev/null ||
    echo /usr/lib/llvm-22/bin/llvm-config)")")")
  hide="mkdir -p $tmp/empty && mount --bind $tmp/empty $llvm_dir && "
  for f in /usr/lib/x86_64-linux-gnu/libLLVM*.so* /usr/lib/x86_64-linux-gnu/libMLIR*.so*; do
    [ -f "$f" ] && [ ! -L "$f" ] && hide+="mount --bind /dev/null $f && "
  done
  # And this machine's Open MPI: its programs, every system copy of a library
  # the bundle's lib/ holds (so that none is found but there), then its
  # folders (some of those copies live in them).
  if [ $mpi -eq 1 ]; then
    declare -A hidden=()
    for f in "$mpi_prefix/$mpi_bin"/{mpirun,mpiexec,orterun,orted,ompi_info}* /usr/lib/x86_64-linux-gnu/*.so*; do
      case $f in
        */lib/*) [ -e "$root/lib/$(basename "$f")" ] || [ -e "$root/mpi/lib/$(basename "$f")" ] || continue ;;
      esac
      f=$(readlink -f "$f")
      if [ -f "$f" ] && [ -z "${hidden[$f]:-}" ]; then
        hidden[$f]=1
        hide+="mount --bind /dev/null $f && "
      fi
    done
    for d in "$(mpi_path libdir)" "$mpi_prefix/$mpi_data"; do
      [ -d "$d" ] && hide+="mount --bind $tmp/empty $d && "
    done
    # Where another Open MPI or PMIx keeps its configuration, decoys that
    # break the bundle's if it read them (a component path that does not
    # exist): on the GPU machine those files belong to the machine's own.
    decoy="mca_base_component_path = /nonexistent/decoy"
    mkdir -p "$tmp/decoy-etc" "$tmp/decoy-pmix/share" "$tmp/decoy-pmix/etc"
    echo "$decoy" >"$tmp/decoy-etc/openmpi-mca-params.conf"
    echo "$decoy" >"$tmp/decoy-pmix/share/pmix-mca-params.conf" # Debian's sysconfdir
    echo "$decoy" >"$tmp/decoy-pmix/etc/pmix-mca-params.conf"
    [ -d "$(mpi_path sysconfdir)" ] && hide+="mount --bind $tmp/decoy-etc $(mpi_path sysconfdir) && "
    [ -n "${pmix_prefix:-}" ] && [ -d "$pmix_prefix" ] && hide+="mount --bind $tmp/decoy-pmix $pmix_prefix && "
  fi
  if (cd "$tmp" && "${clean_env[@]}" unshare -m true) 2>/dev/null; then
    # A namespace but a mount that fails: a path above is wrong, say so.
    (cd "$tmp" && "${clean_env[@]}" unshare -m bash -c "${hide}true") ||
      die "cannot hide LLVM$([ $mpi -eq 1 ] && echo " and Open MPI") in a mount namespace (above)"
    say "check: LLVM/MLIR libraries hidden ($llvm_dir and libLLVM*.so* bind-mounted over)$([ $mpi -eq 1 ] &&
      echo ", and Open MPI (its folders and ${#hidden[@]} programs and libraries; decoy configuration files)")"
    (cd "$tmp" && "${clean_env[@]}" unshare -m bash -c "${hide}$inner") || die "the check failed"
  else
    say "check: cannot hide LLVM here (no mount namespace); ldd above shows it is not needed"
    (cd "$tmp" && "${clean_env[@]}" bash -c "$inner") || die "the check failed"
  fi
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("[device-bundle] check: small_cnn compiled for cuda by the bundle: %d kernels, %d library calls" % (r["kernels"], r["library_calls"]))' "$tmp/report.json"
  lib=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"library\"])" "$tmp/small_cnn.sluice/manifest.json")
  [ -f "$tmp/small_cnn.sluice/$lib" ] || die "the check's bundle has no library ($lib)"
fi
rm -rf "$stage" "$tests_json"
say "done: $out/sluice-device.tar.xz, $out/MANIFEST.txt"
