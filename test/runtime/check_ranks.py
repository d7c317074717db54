#!/usr/bin/env python3
"""Runs the multi-rank test bundles as real MPI ranks and checks what they say.

  check_ranks.py --sluice-run BIN --mpirun MPIRUN --bundle2 DIR --bundle3 DIR
                 --example BIN --work DIR CASE

Each CASE (test/runtime/CMakeLists.txt lists them) starts sluice-run (or the
C API example) as ranks, checks the exit status, the messages, and how long
it took, and prints what it ran. Exit 0 when every check holds.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

OUTPUTS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
           "send_recv", "broadcast", "all_reduce_i32"]

failures = []


def check(condition, what):
    print(("ok: " if condition else "FAILED: ") + what)
    if not condition:
        failures.append(what)


def mpi_env(extra=None):
    """Open MPI as root in a container: what a user of mpirun sets."""
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.update(extra or {})
    return env


def run(cmd, env=None, timeout=60):
    print("$ " + " ".join(cmd), flush=True)
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout,
                              text=True)
        rc, out = done.returncode, done.stdout
    except subprocess.TimeoutExpired as expired:
        rc, out = None, (expired.stdout or b"").decode() if isinstance(
            expired.stdout, bytes) else (expired.stdout or "")
    elapsed = time.monotonic() - start
    print(out.rstrip())
    print("(exit %s after %.1f s)" % (rc, elapsed), flush=True)
    return rc, out, elapsed


def expect(cmd, rc=0, patterns=(), absent=(), env=None, within=None):
    code, out, elapsed = run(cmd, env=env)
    if rc == "nonzero":
        check(code not in (0, None), "exits non-zero (got %s)" % code)
    else:
        check(code == rc, "exits %s (got %s)" % (rc, code))
    for pattern in patterns:
        check(re.search(pattern, out, re.M) is not None, "says /%s/" % pattern)
    for pattern in absent:
        check(re.search(pattern, out, re.M) is None, "does not say /%s/" % pattern)
    if within is not None:
        check(elapsed < within, "ends within %g s (%.1f s)" % (within, elapsed))
    return out


def expected_args(bundle):
    return ["%s/expected/%s.npy" % (bundle, name) for name in OUTPUTS]


def matches_all():
    return ["output '%s' .*: ok$" % name for name in OUTPUTS]


def private_copy(args, name, bundle):
    """A copy of `bundle` under the work folder: a path of its own (to find
    its ranks by), or files to remove."""
    target = os.path.join(args.work, name, os.path.basename(bundle))
    shutil.rmtree(os.path.dirname(target), ignore_errors=True)
    shutil.copytree(bundle, target)
    return target


def input_with_first(args, value):
    import numpy
    x = numpy.load(os.path.join(args.bundle2, "inputs", "x.npy"))
    x[0] = value
    path = os.path.join(args.work, "x-first-%g.npy" % value)
    os.makedirs(args.work, exist_ok=True)
    numpy.save(path, x)
    return path


def rank_pids(marker, rank):
    """Processes whose command line holds `marker` and that Open MPI started
    as rank `rank`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().decode(errors="replace")
            with open("/proc/%s/environ" % entry, "rb") as f:
                environ = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if marker in cmdline and "OMPI_COMM_WORLD_RANK=%d" % rank in environ:
            pids.append(int(entry))
    return pids


def fault(args, name, sig, env_extra, patterns, within, absent=()):
    """Starts a long job of 2 ranks, sends `sig` to rank 1 once it runs, and
    checks that the job ends, non-zero, within `within` seconds, saying
    `patterns`."""
    bundle = private_copy(args, name, args.bundle2)
    cmd = [args.sluice_run, bundle, "--ranks=2", "--random-inputs",
           "--iters=1000000000"]
    print("$ " + " ".join(cmd), flush=True)
    job = subprocess.Popen(cmd, env=mpi_env(env_extra), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    victims = []
    deadline = time.monotonic() + 20
    while not victims and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.2)
        victims = rank_pids(bundle, 1)
    check(len(victims) == 1, "found rank 1 running (%s)" % victims)
    if len(victims) != 1:
        os.killpg(job.pid, signal.SIGKILL)
        print(job.communicate()[0])
        return
    time.sleep(1.5)  # well into its runs
    check(job.poll() is None, "the job is still running before the fault")
    os.kill(victims[0], sig)
    start = time.monotonic()
    try:
        out, _ = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, _ = job.communicate()
    elapsed = time.monotonic() - start
    print(out.rstrip())
    print("(exit %s %.1f s after the fault)" % (job.returncode, elapsed))
    check(job.returncode not in (0, None), "exits non-zero (got %s)" % job.returncode)
    check(elapsed < within, "ends within %g s of the fault (%.1f s)" % (within, elapsed))
    for pattern in patterns:
        check(re.search(pattern, out, re.M) is not None, "says /%s/" % pattern)
    for pattern in absent:
        check(re.search(pattern, out, re.M) is None, "does not say /%s/" % pattern)
    # No rank may be left behind, stopped or not.
    time.sleep(0.5)
    left = rank_pids(bundle, 0) + rank_pids(bundle, 1)
    check(not left, "no rank left running (%s)" % left)
    for pid in left:
        for s in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, s)
            except OSError:
                pass


def resumed_rank(args, pauses=16, pause=1.8, timeout=1.5):
    """A rank stopped for longer than its own timeout and resumed while its
    peer still waits for it (the peer's timeout is long) must carry on: the
    pause is its own, not the peer's silence. Stopped at random points, some
    pauses fall inside a collective's polling loop, between its reading of
    the clock and its check of the deadline, the window in which a resumed
    rank used to find its deadline passed and blame (or give up on) the
    waiting peer: the mpi-stopped-rank flake. About one pause in 25 fell
    there (measured), so 16 pauses catch that loop about half the time; a
    rank's timeout of 1.5 s is beyond the ranks' start-up skew (slow-rank)."""
    bundle = private_copy(args, "resumed", args.bundle2)
    program = [args.sluice_run, bundle, "--random-inputs",
               "--iters=1000000000"]
    # One timeout per rank (env runs sluice-run in its place, so the rank's
    # process is sluice-run's): rank 1's is shorter than its pauses.
    cmd = ([args.mpirun, "--oversubscribe", "-np", "1", "env",
            "SLUICE_COMM_TIMEOUT=60"] + program +
           [":", "-np", "1", "env", "SLUICE_COMM_TIMEOUT=%g" % timeout] +
           program)
    print("$ " + " ".join(cmd), flush=True)
    job = subprocess.Popen(cmd, env=mpi_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    victims = []
    deadline = time.monotonic() + 20
    while not victims and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.2)
        victims = rank_pids(bundle, 1)
    check(len(victims) == 1, "found rank 1 running (%s)" % victims)
    if len(victims) == 1:
        time.sleep(1.5)  # well into its runs
        done = 0
        for _ in range(pauses):
            try:
                os.kill(victims[0], signal.SIGSTOP)
                time.sleep(pause)
                os.kill(victims[0], signal.SIGCONT)
            except ProcessLookupError:  # the job ended: said below
                break
            done += 1
            time.sleep(0.3)
            if job.poll() is not None:
                break
        print("rank 1 paused and resumed %d times" % done)
        # A rank that gave up fails the job within a fraction of a second.
        time.sleep(1.5)
        check(job.poll() is None, "both ranks still run after %d pauses of "
              "rank 1, each %g s, longer than its timeout of %g s" %
              (pauses, pause, timeout))
    if job.poll() is None:
        os.killpg(job.pid, signal.SIGTERM)
    try:
        out, _ = job.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, _ = job.communicate()
    print(out.rstrip())
    print("(exit %s)" % job.returncode)
    for pattern in (r"no answer from", r"this rank was paused",
                    r"sluice-run: error: rank \d"):
        check(re.search(pattern, out, re.M) is None,
              "does not say /%s/" % pattern)
    time.sleep(0.5)
    left = rank_pids(bundle, 0) + rank_pids(bundle, 1)
    check(not left, "no rank left running (%s)" % left)
    for pid in left:
        for s in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, s)
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--sluice-run", "--mpirun", "--bundle2", "--bundle3",
                 "--example", "--work"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--api-test", required=True)
    parser.add_argument("--cuda-bundle")
    parser.add_argument("--sim-cudart")
    parser.add_argument("case")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    b2, b3, run_ = args.bundle2, args.bundle3, args.sluice_run
    x2 = os.path.join(b2, "inputs", "x.npy")
    case = args.case

    if case == "ranks-2":
        expect([run_, b2, x2, "--ranks=2", "--expect"] + expected_args(b2),
               patterns=matches_all(), absent=["MISMATCH"], within=30)
        # A mismatch at rank 0 is sluice-run's 1, through mpirun.
        expect([run_, b2, x2, "--ranks=2", "--expect",
                "broadcast=" + os.path.join(b2, "expected", "send_recv.npy")],
               rc=1, patterns=[r"^output 'broadcast': got f32\[4\], expected "
                               r"f32\[2x4\]: MISMATCH$"],
               absent=["did not all finish"], within=30)
    elif case == "ranks-3":  # more ranks than this machine may have cores
        expect([run_, b3, os.path.join(b3, "inputs", "x.npy"), "--ranks=3",
                "--expect"] + expected_args(b3),
               patterns=matches_all(), absent=["MISMATCH"], within=30)
    elif case == "mpirun-2":
        mpirun = [args.mpirun, "-np", "2", "--oversubscribe"]
        expect(mpirun + [run_, b2, x2, "--expect"] + expected_args(b2),
               env=mpi_env(), patterns=matches_all(), within=30)
        # --ranks inside the job must agree with it.
        expect(mpirun + [run_, b2, x2, "--ranks=2", "--expect"] +
               expected_args(b2), env=mpi_env(), patterns=matches_all())
    elif case == "c-api-example":
        with open(os.path.join(b2, "expected", "ones-all_reduce.txt")) as f:
            ones = f.read().strip()
        mpirun = [args.mpirun, "-np", "2", "--oversubscribe"]
        expect(mpirun + [args.example, b2], env=mpi_env(),
               patterns=[r"^rank 0 of 2 \(mpi\):$",
                         r"^output 'all_reduce': %s$" % re.escape(ones)],
               within=30)
        # A rank whose weights are missing stops every rank at the
        # agreement, without waiting for a timeout.
        broken = private_copy(args, "example-missing", b2)
        os.remove(os.path.join(broken, "weights.rank1.bin"))
        expect(mpirun + [args.example, broken], env=mpi_env(), rc="nonzero",
               patterns=[r"run_rank: rank 1: .*weights\.rank1\.bin: cannot "
                         r"open rank 1's weights: No such file or directory"],
               within=8)
    elif case == "api-checks":
        for world, bundle in ((2, b2), (3, b3)):
            expect([args.mpirun, "-np", str(world), "--oversubscribe",
                    args.api_test, bundle, "--transport=mpi"], env=mpi_env(),
                   patterns=["^rank %d of %d: every check holds" % (r, world)
                             for r in range(world)],
                   absent=["FAILED"], within=30)
    elif case == "cuda-staged":
        cuda_staged(args)
    elif case == "iters-random":
        saved = os.path.join(args.work, "saved")
        trace = os.path.join(args.work, "trace.json")
        shutil.rmtree(saved, ignore_errors=True)
        if os.path.exists(trace):
            os.remove(trace)
        expect([run_, b2, "--ranks=2", "--random-inputs", "--iters=50",
                "--warmup=2", "--save-outputs=" + saved, "--trace=" + trace],
               patterns=[r"latency over 50 runs \(cpu target, 2 ranks \(mpi\), "
                         r"\d+ threads per rank\)"] +
               ["output '%s' " % name for name in OUTPUTS], within=30)
        for name in OUTPUTS:
            check(os.path.exists(os.path.join(saved, name + ".npy")),
                  "rank 0 saved %s.npy" % name)
        with open(trace) as f:
            check('"k1_all_reduce"' in f.read(), "rank 0 wrote the trace")
    elif case == "slow-rank":
        slow = input_with_first(args, -777)
        # A rank 3 s late is slow, not dead: the default timeout waits. A
        # timeout of 1.5 s (more than the ranks' start-up skew) names it.
        expect([run_, b2, slow, "--ranks=2"],
               patterns=["output 'all_reduce' "], within=30)
        expect([run_, b2, slow, "--ranks=2"], rc=2,
               env=mpi_env({"SLUICE_COMM_TIMEOUT": "1.5"}),
               patterns=[r"sluice-run: error: rank 0: bundle '.*': run failed: "
                         r"k1_all_reduce: all_reduce: no answer from rank 1 "
                         r"within 1\.5 s$",
                         r"did not all finish: mpirun exited with status 2"],
               within=15)
    elif case == "rank-fails":
        expect([run_, b2, input_with_first(args, -12345), "--ranks=2"], rc=2,
               patterns=[r"sluice-run: error: rank 1: bundle '.*': run failed: "
                         r"k1_all_reduce: refused the magic input -12345$"],
               within=20)
    elif case == "killed-rank":
        fault(args, "killed", signal.SIGKILL, {},
              [r"rank 1 .*exited on signal 9",
               r"did not all finish: mpirun exited with status"], within=30)
    elif case == "stopped-rank":
        # A rank that hangs (stopped): the others name it after the timeout.
        # The stopped rank, resumed by the teardown, must not blame rank 0
        # for its own pause.
        fault(args, "stopped", signal.SIGSTOP, {"SLUICE_COMM_TIMEOUT": "3"},
              [r"sluice-run: error: rank 0: .*no answer from rank 1 within 3 s"],
              within=30, absent=[r"no answer from rank 0"])
    elif case == "resumed-rank":
        resumed_rank(args)
    elif case == "bad-launch":
        bad_launch(args, b2, x2)
    else:
        sys.exit("unknown case " + case)

    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


def cuda_staged(args):
    """Two ranks on the simulated runtime's one GPU: the multi-rank cuda
    context, the staged transport (chosen because the ranks share the GPU),
    its collectives captured into a graph and replayed."""
    bundle = args.cuda_bundle
    sim = mpi_env({"LD_PRELOAD": args.sim_cudart})
    staged = "mpi, staged through pinned host memory (ranks share a GPU)"
    expect([args.mpirun, "-np", "2", "--oversubscribe", args.api_test, bundle,
            "--transport=" + staged, "--graph"], env=sim,
           patterns=["^rank %d of 2: every check holds" % r for r in range(2)],
           absent=["FAILED"], within=30)
    x = os.path.join(bundle, "inputs", "x.npy")
    expect([args.sluice_run, bundle, x, "--ranks=2", "--iters=3", "--expect"] +
           expected_args(bundle), env=sim,
           patterns=matches_all() +
           [r"latency over 3 runs \(cuda target, 2 ranks \(%s\), rank 0 on "
            r"Simulated GPU 0 \(sm_90, device 0\)\): .*cuda graph: replayed"
            % re.escape(staged)], within=30)
    # A rank that does not answer: the staged collective fails in its stream
    # host function, and the run reports it, naming the rank.
    slow = input_with_first(args, -777)
    expect([args.sluice_run, bundle, slow, "--ranks=2"], rc=2,
           env=dict(sim, SLUICE_COMM_TIMEOUT="1.5"),
           patterns=[r"sluice-run: error: rank 0: bundle '.*': run failed: "
                     r"all_reduce: no answer from rank 1 within 1\.5 s$"],
           within=15)


def bad_launch(args, b2, x2):
    run_ = args.sluice_run
    expect([run_, b2, x2], rc=2,
           patterns=[r"^sluice-run: error: bundle '.*' is planned for 2 ranks: "
                     r"run it with --ranks=2 .*mpirun -np 2 sluice-run"])
    expect([run_, b2, x2, "--ranks=3"], rc=2,
           patterns=[r"^sluice-run: error: --ranks=3 does not match: bundle "
                     r"'.*' is planned for 2 ranks \(its world_size\)$"])
    expect([run_, b2, x2, "--ranks=2", "--device=0"], rc=2,
           patterns=[r"^sluice-run: error: --device applies to single-rank runs"])
    # One clear error for a missing rank weights file, without a timeout.
    missing = private_copy(args, "missing", b2)
    os.remove(os.path.join(missing, "weights.rank1.bin"))
    out = expect([run_, missing, x2, "--ranks=2"], rc=2,
                 patterns=[r"^sluice-run: error: rank 1: .*/weights\.rank1\.bin: "
                           r"cannot open rank 1's weights: No such file or "
                           r"directory$"], within=10)
    check(len(re.findall(r"sluice-run: error: rank", out)) == 1,
          "only the rank at fault reports")
    # No mpirun to start the ranks with.
    expect([run_, b2, x2, "--ranks=2"], rc=2,
           env=dict(os.environ, SLUICE_MPIRUN="/nonexistent/mpirun"),
           patterns=[r"^sluice-run: error: --ranks=2 starts the ranks with "
                     r"/nonexistent/mpirun, which does not exist"])
    expect([run_, b2, x2, "--ranks=2"], rc=2,
           env=dict(os.environ, PATH="/nonexistent"),
           patterns=[r"^sluice-run: error: --ranks=2 starts the ranks with "
                     r"mpirun, which is not on PATH"])
    # An mpirun that cannot start every rank: rank 1's program is missing.
    fake = os.path.join(args.work, "mpirun-rank1-missing")
    with open(fake, "w") as f:
        f.write("""#!%s
import os, sys
real = %r
args = sys.argv[1:]
if args[:1] == ["--version"]:
    os.execv(real, [real, "--version"])
n, rest = int(args[1]), args[2:]
at = next(i for i, a in enumerate(rest) if a.endswith("/sluice-run"))
options, tail = rest[:at], rest[at + 1:]
os.execv(real, [real, "-np", "1"] + options + [rest[at]] + tail + [":", "-np",
         str(n - 1)] + options + ["/nonexistent/sluice-run"] + tail)
""" % (sys.executable, args.mpirun))
    os.chmod(fake, 0o755)
    expect([run_, b2, x2, "--ranks=2"], rc=2,
           env=dict(os.environ, SLUICE_MPIRUN=fake),
           patterns=[r"sluice-run: error: the 2 ranks of '.*' did not all "
                     r"finish: mpirun exited with status \d+ \(a rank was "
                     r"killed or could not start"], within=20)
    # The job and the bundle disagree.
    mpirun = [args.mpirun, "-np", "3", "--oversubscribe"]
    out = expect(mpirun + [run_, b2, x2], rc="nonzero", env=mpi_env(),
                 patterns=[r"^sluice-run: error: bundle '.*' is planned for 2 "
                           r"ranks; this job has 3"])
    check(len(re.findall(r"is planned for 2 ranks; this job has 3", out)) == 1,
          "said once, by rank 0")
    expect([args.mpirun, "-np", "2", "--oversubscribe", run_, b2, x2,
            "--ranks=3"], rc="nonzero", env=mpi_env(),
           patterns=[r"^sluice-run: error: --ranks=3 but this job has 2 ranks"])
    expect([run_, b2, x2, "--ranks=2"], rc=2,
           env=dict(os.environ, SLUICE_COMM_TIMEOUT="abc"),
           patterns=[r"^sluice-run: error: SLUICE_COMM_TIMEOUT='abc' is not a "
                     r"number of seconds > 0$"], within=2)
    # Under mpirun each rank reads it (libsluice_comm.so).
    expect([args.mpirun, "-np", "2", "--oversubscribe", run_, b2, x2],
           rc="nonzero", env=mpi_env({"SLUICE_COMM_TIMEOUT": "-1"}),
           patterns=[r"^sluice-run: error: rank 0: SLUICE_COMM_TIMEOUT='-1' is "
                     r"not a number of seconds > 0$"])


if __name__ == "__main__":
    main()
