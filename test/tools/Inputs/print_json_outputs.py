"""Reads a --report, a bundle's manifest.json and a --trace with json.load
(invalid JSON fails the test) and prints, for FileCheck, the values that hold
paths and the JSON type of the numbers other tools rely on.

usage: print_json_outputs.py REPORT MANIFEST TRACE
"""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def types(obj, keys):
    return " ".join(f"{key}={type(obj[key]).__name__}" for key in keys)


report, manifest, trace = (load(path) for path in sys.argv[1:4])
print("report model:", report["model"])
print("report bundle:", report["bundle"])
print("report types:", types(report, ["kernels", "library_calls", "arena_bytes",
                                      "weights_bytes", "launches", "remarks", "steps"]),
      types(report["phases"][0], ["name", "ms"]))
print("manifest model:", manifest["model"])
print("manifest types:", types(manifest, ["abi", "arena_bytes", "world_size",
                                          "gpu_architectures"]),
      types(manifest["weights"], ["bytes", "alignment"]),
      "shape=" + ",".join(type(d).__name__ for d in manifest["inputs"][0]["shape"]))
run = trace["traceEvents"][0]
print("trace bundle:", run["args"]["bundle"])
print("trace types:", types(run, ["ts", "dur", "pid"]))
