"""Running Sluice's tools (sluice-compile, sluice-run) from a check.

Every check takes the build's tool folder as --bin; `tool` names a tool in
it and `run` runs any command the one way the checks need: its output
captured (stdout, then stderr) and returned with the exit status and the
seconds it took, optionally echoed and shown as it was, with a timeout.
"""
import collections
import os
import signal
import subprocess
import sys
import time

# A finished command: exit status (None when `run(..., group=True)` hit its
# timeout), stdout followed by stderr (merged in order with group=True),
# and wall seconds.
Result = collections.namedtuple("Result", "rc out seconds")


def tool(bin_dir, name):
    """The path of tool `name` (sluice-compile, sluice-run, ...) in --bin."""
    return os.path.join(bin_dir, name)


def _run_group(cmd, timeout, env):
    """`cmd` in a process group of its own, killed whole on a timeout
    (sluice-run --ranks starts mpirun and the ranks under it)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return Result(proc.returncode, out, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return Result(None, out, time.monotonic() - start)


def run(cmd, *, echo=False, show=False, timeout=None, env=None, check=False, group=False):
    """Runs `cmd` (a list) and returns its Result.

    echo: print "+ CMD" first. show: write its stdout and stderr through
    after it ends. timeout: seconds; subprocess.TimeoutExpired propagates,
    except with group=True, where the process group is killed and rc is
    None. check: raise subprocess.CalledProcessError on a non-zero exit.
    env: the environment (default: this process's)."""
    if echo:
        print("+", " ".join(cmd), flush=True)
    if group:
        result = _run_group(cmd, timeout, env)
        stdout, stderr = result.out, ""
    else:
        start = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        stdout, stderr = proc.stdout, proc.stderr
        result = Result(proc.returncode, stdout + stderr, time.time() - start)
    if show:
        sys.stdout.write(stdout)
        sys.stderr.write(stderr)
    if check and result.rc != 0:
        raise subprocess.CalledProcessError(result.rc, cmd, stdout, stderr)
    return result


def compile_bundle(bin_dir, model, bundle, flags=(), **how):
    """sluice-compile MODEL -o BUNDLE FLAGS...; `how` as for `run`."""
    return run([tool(bin_dir, "sluice-compile"), model, "-o", bundle, *flags], **how)
