"""Prints the arrays FILE[KEY] of a JSON file one element per line, as
`KEY: ` and the element in compact JSON with the file's key order
(`inputs: {"name": "x", "dtype": "float32", "shape": [2, 6]}`), so that
FileCheck lines check entries whatever the file's layout.

usage: json_items.py FILE KEY...
"""
import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    document = json.load(f)
for key in sys.argv[2:]:
    for item in document[key]:
        print(f"{key}: {json.dumps(item)}")
