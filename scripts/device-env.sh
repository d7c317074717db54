# shellcheck shell=bash
# Sourced on a GPU machine without LLVM/MLIR: points PATH,
# LD_LIBRARY_PATH and the SLUICE_* variables at an extracted device bundle
# (scripts/device-bundle.sh) and at the machine's CUDA toolkit and cuDNN.
#
#   source SLUICE_DEVICE_ROOT/scripts/device-env.sh
#
# SLUICE_DEVICE_ROOT defaults to the folder above this script (the bundle's
# root). Prints one line per thing it could not find; returns 0 regardless,
# so that a caller can still log what is there.

if [ -n "${BASH_SOURCE:-}" ]; then
  _sluice_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
else
  _sluice_here=$(pwd)/scripts
fi
export SLUICE_DEVICE_ROOT="${SLUICE_DEVICE_ROOT:-$(cd "$_sluice_here/.." && pwd)}"
_sluice_root=$SLUICE_DEVICE_ROOT

# The CUDA toolkit: $CUDA_HOME, else nvcc's folder, else /usr/local/cuda.
if [ -z "${CUDA_HOME:-}" ]; then
  if command -v nvcc >/dev/null 2>&1; then
    CUDA_HOME=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
  else
    CUDA_HOME=/usr/local/cuda
  fi
fi
export CUDA_HOME
[ -x "$CUDA_HOME/bin/nvcc" ] || echo "device-env: no nvcc under $CUDA_HOME" >&2

# Python: the GPU machine's python3 is expected to hold torch, onnx and
# onnxruntime.
export SLUICE_PYTHON="${SLUICE_PYTHON:-python3}"

# Folders holding a file matching $1 (first hit per candidate, in order).
_sluice_find_dir() {
  _pat=$1
  shift
  for _d in "$@"; do
    for _f in "$_d"/$_pat; do
      if [ -e "$_f" ]; then
        echo "$_d"
        return 0
      fi
    done
  done
  return 1
}

# Python's nvidia-* wheels (cuDNN, cuBLAS) live in site-packages/nvidia/...
_sluice_site=$("$SLUICE_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
_sluice_wheels=""
if [ -n "$_sluice_site" ] && [ -d "$_sluice_site/nvidia" ]; then
  _sluice_wheels=$(ls -d "$_sluice_site"/nvidia/*/include "$_sluice_site"/nvidia/*/lib \
                     "$_sluice_site"/nvidia/*/*/include "$_sluice_site"/nvidia/*/*/lib 2>/dev/null | tr '\n' ' ')
fi

# cuDNN: PyTorch's wheel first, so that the bundles and PyTorch (the
# benchmark's peer, which refuses another cuDNN on LD_LIBRARY_PATH) load the
# same one.
_sluice_inc=$(_sluice_find_dir 'cudnn.h' $_sluice_wheels "$CUDA_HOME/include" /usr/include \
  /usr/include/x86_64-linux-gnu /usr/local/include) ||
  echo "device-env: cudnn.h not found (cuda bundles with convolutions will not build)" >&2
_sluice_cudnn=$(_sluice_find_dir 'libcudnn.so*' $_sluice_wheels "$CUDA_HOME/lib64" \
  "$CUDA_HOME/lib" /usr/lib/x86_64-linux-gnu /usr/local/lib) ||
  echo "device-env: libcudnn.so not found" >&2
_sluice_cublas=$(_sluice_find_dir 'libcublasLt.so*' "$CUDA_HOME/lib64" "$CUDA_HOME/lib" \
  "$CUDA_HOME/targets/x86_64-linux/lib" /usr/lib/x86_64-linux-gnu $_sluice_wheels) ||
  echo "device-env: libcublasLt.so not found" >&2
_sluice_nccl=$(_sluice_find_dir 'libnccl.so*' "$CUDA_HOME/lib64" "$CUDA_HOME/lib" \
  /usr/lib/x86_64-linux-gnu /usr/local/lib $_sluice_wheels) ||
  echo "device-env: libnccl.so not found (multi-rank cuda bundles will not load)" >&2

# nvcc links generated bundles with -lcudnn -lcublasLt -lcublas: where a
# folder has only the versioned files (the wheels' layout), give the linker
# unversioned names in a folder of our own.
_sluice_links="${TMPDIR:-/tmp}/sluice-linkdir-$(id -u)"
mkdir -p "$_sluice_links" 2>/dev/null || true
for _lib in cudnn cublasLt cublas; do
  for _d in $_sluice_cudnn $_sluice_cublas; do
    if [ ! -e "$_d/lib$_lib.so" ]; then
      _v=$(ls "$_d"/lib$_lib.so.[0-9]* 2>/dev/null | sort | head -n 1)
      [ -n "$_v" ] && ln -sf "$_v" "$_sluice_links/lib$_lib.so"
    fi
  done
done

_sluice_flags=""
[ -n "$_sluice_inc" ] && [ "$_sluice_inc" != "$CUDA_HOME/include" ] && _sluice_flags="-I$_sluice_inc"
for _d in $_sluice_cudnn $_sluice_cublas "$_sluice_links" "$_sluice_root/blas/lib"; do
  case " $_sluice_flags " in *" -L$_d "*) ;; *) _sluice_flags="$_sluice_flags -L$_d" ;; esac
done
export SLUICE_NVCC_FLAGS="${SLUICE_NVCC_FLAGS:-} $_sluice_flags"

# The bundle's libraries first (runtime, onnx, protobuf), then CUDA's.
# cuDNN's folder comes before the toolkit's, which may hold another cuDNN.
_sluice_ld="$_sluice_root/lib:$_sluice_root/blas/lib"
[ -n "$_sluice_cudnn" ] && _sluice_ld="$_sluice_ld:$_sluice_cudnn"
_sluice_ld="$_sluice_ld:$CUDA_HOME/lib64:$CUDA_HOME/lib"
for _d in $_sluice_cublas $_sluice_nccl; do _sluice_ld="$_sluice_ld:$_d"; done
export LD_LIBRARY_PATH="$_sluice_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$_sluice_root/bin:$CUDA_HOME/bin:$PATH"

# Open MPI: the machine's where it has one (an mpirun on PATH that runs),
# else the bundle's mpi/ (device-bundle.sh); SLUICE_MPI=bundle or =system
# chooses.
# The bundle's is relocated whole, so that nothing of another Open MPI or
# PMIx on the machine is read: OPAL_PREFIX and OPAL_SYSCONFDIR (plugins, help
# files, mca-params.conf), PMIX_LIBDIR, PMIX_DATADIR and PMIX_SYSCONFDIR (its
# external PMIx has them absolute; the machine's pmix-mca-params.conf would
# point PMIx at the machine's plugins), its libraries first.
_sluice_mpi=${SLUICE_MPI:-auto}
if [ "$_sluice_mpi" = auto ]; then
  _sluice_mpi=bundle
  _m=$(command -v mpirun 2>/dev/null)
  case $_m in
    "" | "$_sluice_root"/mpi/*) ;;
    *) "$_m" --version >/dev/null 2>&1 && _sluice_mpi=system ;;
  esac
fi
if [ "$_sluice_mpi" = bundle ] && [ -x "$_sluice_root/mpi/bin/mpirun" ]; then
  export OPAL_PREFIX="$_sluice_root/mpi" OPAL_SYSCONFDIR="$_sluice_root/mpi/etc"
  if [ -d "$_sluice_root/mpi/pmix" ]; then
    export PMIX_PREFIX="$_sluice_root/mpi/pmix" PMIX_LIBDIR="$_sluice_root/mpi/pmix/lib" \
      PMIX_DATADIR="$_sluice_root/mpi/pmix/share" PMIX_SYSCONFDIR="$_sluice_root/mpi/pmix/share" \
      PMIX_MCA_mca_base_component_path="$_sluice_root/mpi/pmix/lib/pmix"
  fi
  export PATH="$_sluice_root/mpi/bin:$PATH"
  export LD_LIBRARY_PATH="$_sluice_root/mpi/lib:$LD_LIBRARY_PATH"
elif [ "$_sluice_mpi" = bundle ]; then
  echo "device-env: SLUICE_MPI=bundle but the bundle has no mpi/: multi-rank bundles will not run" >&2
elif ! command -v mpirun >/dev/null 2>&1; then
  echo "device-env: no mpirun (neither the machine's nor the bundle's mpi/): multi-rank bundles will not run" >&2
fi
# Either Open MPI on one machine: mpirun starts the ranks itself (plm
# isolated: no ssh to look for), shared memory between them (vader; tcp as a
# fallback) and ob1 (no UCX or libfabric needed); as root, which GPU
# containers often are. A setting already in the environment wins.
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
export OMPI_MCA_plm="${OMPI_MCA_plm:-isolated}"
export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader,tcp}"
export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}"
export OMPI_MCA_btl_base_warn_component_unused="${OMPI_MCA_btl_base_warn_component_unused:-0}"
# Containers' seccomp denies the ptrace that vader's CMA copies need.
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"

# Generated code includes sluice_gen/*.h and sluice/*.h (and host steps
# cblas.h) from the bundle.
export SLUICE_INCLUDE_DIRS="$_sluice_root/codegen/include:$_sluice_root/include:$_sluice_root/blas/include"

# One architecture to build for: the GPU's own (nvcc time per bundle).
if [ -z "${SLUICE_GPU_ARCH:-}" ] && command -v nvidia-smi >/dev/null 2>&1; then
  _cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  [ -n "$_cc" ] && SLUICE_GPU_ARCH="sm_$_cc"
fi
export SLUICE_GPU_ARCH="${SLUICE_GPU_ARCH:-sm_90}"

unset _sluice_here _sluice_root _sluice_site _sluice_wheels _sluice_inc _sluice_cudnn \
  _sluice_cublas _sluice_nccl _sluice_links _sluice_flags _sluice_ld _sluice_mpi _m _lib _d _v _f _pat _cc
unset -f _sluice_find_dir
