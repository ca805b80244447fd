#!/usr/bin/env python3
"""Per traced step of suite-zero3-none-uniform.trace.json.gz: the compute stream's gaps (over 50 us between
two of its kernels or copies, CUPTI records), the comm stream's busy time inside them, and the comm
stream's busy time by kernel. Run: python3 compute_gaps.py > compute_gaps.txt"""
import collections
import gzip
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
COMM, COMPUTE = 5, 6  # the trace's CUPTI comm stream and CUPTI compute stream tracks (its thread_name rows)
ev = json.load(gzip.open(os.path.join(HERE, "suite-zero3-none-uniform.trace.json.gz")))["traceEvents"]


def records(tid, sched, step):
    return sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
                  if e.get("cat") in ("kernel", "memcpy") and e.get("tid") == tid
                  and e["args"]["case"].split("schedule:")[1][:4] == sched and e["args"]["step"] == step)


print("schedule step | span ms | compute gaps > 50 us: ms (count) | comm busy in them ms | comm busy ms by kernel")
for sched in ("SSSS", "nnnS"):
    for step in (1, 2):
        comp, comm = records(COMPUTE, sched, step), records(COMM, sched, step)
        t0 = min(comp[0][0], comm[0][0])
        t1 = max(max(x[1] for x in comp), max(x[1] for x in comm))
        gaps = [(a[1], b[0]) for a, b in zip(comp, comp[1:]) if b[0] - a[1] > 50]
        inside = sum(max(0, min(b, c[1]) - max(a, c[0])) for a, b in gaps for c in comm)
        by = collections.Counter()
        for c in comm:
            name = re.findall(r"(\w+)[<(]", c[2])
            by[name[0] if name else c[2]] += (c[1] - c[0]) / 1e3
        print(f"{sched} {step} | {(t1 - t0) / 1e3:.1f} | {sum(b - a for a, b in gaps) / 1e3:.1f} ({len(gaps)}) | "
              f"{inside / 1e3:.1f} | " + ", ".join(f"{k} {v:.1f}" for k, v in by.most_common()))
