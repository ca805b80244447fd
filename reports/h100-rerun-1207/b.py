#!/usr/bin/env python3
"""B (the step time over the same case's nnnS, ms) of each case in this folder's JSONs, both sides, with each
side's min-max over the 2 measured steps. Run: python3 b.py > b.txt"""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def steps(name):
    """schedule -> (step_ms, min, max) of every case in one JSON (the suite's and the real runner's alike)."""
    out = {}
    for b in json.load(open(os.path.join(HERE, name)))["benchmarks"]:
        s = re.search(r"schedule:(\w{4})", b["name"]).group(1)
        out[s] = (b["step_ms"], b["step_ms_min"], b["step_ms_max"])
    return out


for system, s, r in (("fsdp1 (NO_SHARD) without offload", "suite-fsdp1-none.json", "real-fsdp1-none.json"),
                     ("fsdp2 without offload", "suite-fsdp2-none.json", "real-fsdp2-none.json")):
    a, b = steps(s), steps(r)
    for sched in a:
        if sched == "nnnS":
            continue
        bs, br = a[sched][0] - a["nnnS"][0], b[sched][0] - b["nnnS"][0]
        print(f"{system:34s} uniform:16x64M {sched}: B suite {bs:6.2f} ms (steps {a[sched][1]:.2f}-{a[sched][2]:.2f}, "
              f"nnnS {a['nnnS'][1]:.2f}-{a['nnnS'][2]:.2f}), real {br:6.2f} ms (steps {b[sched][1]:.2f}-{b[sched][2]:.2f}, "
              f"nnnS {b['nnnS'][1]:.2f}-{b['nnnS'][2]:.2f})")
