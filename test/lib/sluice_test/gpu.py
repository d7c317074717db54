"""ctest's skip code and whether a GPU is here.

Checks of the cuda target that need a GPU exit with SKIPPED where there is
none; their ctest entries set SKIP_RETURN_CODE 77, so ctest reports them as
skipped, not passed (test/CMakeLists.txt, label gpu).
"""
import subprocess

# ctest SKIP_RETURN_CODE: the check did not run here.
SKIPPED = 77

# What a check prints before it returns SKIPPED for want of a GPU.
NO_GPU = "no GPU here (nvidia-smi -L lists none): skipped"


def gpu_present():
    """Whether an NVIDIA GPU is visible (nvidia-smi lists one). A missing
    or hanging nvidia-smi means no GPU."""
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "GPU" in proc.stdout
