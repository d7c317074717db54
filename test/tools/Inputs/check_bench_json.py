"""Checks a `sluice-run --json` file (docs/tools.md, sluice-run): the keys,
latency statistics in order (min <= median <= p90 <= p99 <= max, mean within
min..max), and the profile's steps (shares summing to 1, slowest first).

usage: check_bench_json.py FILE ITERS TARGET [--profile]
Prints one summary line for FileCheck; exits 1 naming the first problem.
"""

import json
import sys


def fail(message):
    print(f"check_bench_json: {message}")
    sys.exit(1)


def main():
    path, iters, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    profiled = "--profile" in sys.argv[4:]
    with open(path) as f:
        d = json.load(f)
    keys = {"model", "target", "device", "iters", "warmup", "latency_ms",
            "throughput_runs_per_s", "cuda_graph", "split_ms", "profile"}
    if set(d) != keys:
        fail(f"keys {sorted(d)}, want {sorted(keys)}")
    if d["iters"] != iters or d["target"] != target:
        fail(f"iters {d['iters']} target {d['target']}")
    lat = d["latency_ms"]
    order = [lat[k] for k in ("min", "median", "p90", "p99", "max")]
    if order != sorted(order) or not (lat["min"] <= lat["mean"] <= lat["max"]):
        fail(f"latency out of order: {lat}")
    if lat["min"] <= 0 or d["throughput_runs_per_s"] <= 0:
        fail(f"non-positive latency or throughput: {d}")
    # The throughput is the runs over their summed time: 1000 / mean.
    if abs(d["throughput_runs_per_s"] * lat["mean"] / 1000 - 1) > 1e-2:
        fail(f"throughput {d['throughput_runs_per_s']} vs mean {lat['mean']}")
    # The split is cuda's alone; a cpu run has only compute.
    if target == "cpu" and (d["split_ms"] is not None or d["cuda_graph"] is not None):
        fail("cpu run with a split or a cuda graph")
    if target == "cuda":
        split = d["split_ms"]
        if not split or set(split) != {"host_to_device", "compute", "device_to_host"}:
            fail(f"cuda run without a split: {split}")
        if min(split.values()) < 0 or sum(split.values()) > lat["max"] * 1.01 + 1e-3:
            fail(f"split {split} does not fit in the runs ({lat['max']} ms)")
        if not isinstance(d["cuda_graph"], str):
            fail(f"cuda_graph {d['cuda_graph']}")
    steps = 0
    if profiled:
        p = d["profile"]
        if p is None or p["runs"] != iters:
            fail(f"profile {p}")
        steps = len(p["steps"])
        times = [s["ms_per_run"] for s in p["steps"]]
        if times != sorted(times, reverse=True):
            fail("steps not slowest first")
        if [s["rank"] for s in p["steps"]] != list(range(1, steps + 1)):
            fail("ranks not 1..n")
        share = sum(s["share"] for s in p["steps"])
        if steps and abs(share - 1) > 1e-3:
            fail(f"shares sum to {share}")
        total = sum(times)
        # Times are written with 6 decimals (ms): each is off by up to 5e-7,
        # which the simulated GPU's sub-microsecond steps make visible.
        rounding = (steps + 1) * 5e-7
        if steps and abs(total - p["step_ms_per_run"]) > 1e-3 * total + rounding:
            fail(f"step times sum to {total}, step_ms_per_run {p['step_ms_per_run']}")
        by_op = p["by_op"]
        if sum(o["steps"] for o in by_op) != steps:
            fail("by_op does not count every step once")
        if steps and abs(sum(o["share"] for o in by_op) - 1) > 1e-3:
            fail("by_op shares do not sum to 1")
        for o in by_op:
            mine = sum(s["ms_per_run"] for s in p["steps"] if (s["op"] or "-") == o["op"])
            if abs(mine - o["ms_per_run"]) > 1e-5 + 1e-4 * mine:
                fail(f"by_op {o['op']}: {o['ms_per_run']} ms, its steps {mine}")
        for s in p["steps"]:
            if abs(s["ms_per_call"] * s["calls_per_run"] - s["ms_per_run"]) > 1e-5:
                fail(f"step {s['name']}: ms_per_call * calls != ms_per_run")
    elif d["profile"] is not None:
        fail("a profile without --profile")
    print(f"bench json ok: {target}, {iters} iters, {steps} profiled steps")


if __name__ == "__main__":
    main()
