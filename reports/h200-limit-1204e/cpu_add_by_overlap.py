#!/usr/bin/env python3
"""The CPU adds of this run's traces, alone and beside D2Hs (docs/DESIGN.md §6, cpu_add_frac_shared_ceiling).

For each cpu-add / cpu-add-pipelined case of a run and its trace (the second and later measured steps
that the trace holds): the add's time, its time beside D2Hs (union of the CPU adds' host intervals
intersected with the D2Hs' GPU-op intervals, both on the trace's host clock), its fraction of the host add
ceiling alone (as cpu_add_frac_ceiling) and of the two ceilings weighed by those times (as
cpu_add_frac_shared_ceiling). For `cpu-add` on `uniform:16x64M`, whose every add is one 64M-element unit
(12 bytes an element: 805,306,368 bytes), it also prints the medians of the adds' own rates by whether
more than half of an add ran beside a D2H.

    python3 reports/h200-limit-1204e/cpu_add_by_overlap.py reports/h200-limit-1204e/run-synthetic.json \
        reports/h200-limit-1204e/trace-synthetic.json.gz
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from collections import defaultdict

UNIT_ADD_BYTES = 12 * 64 * 2**20  # one unit of uniform:16x64M: src + 2 x dst, fp32


def union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(a, b):
    i = j = 0
    t = 0.0
    while i < len(a) and j < len(b):
        t += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return t


def main(run_path: str, trace_path: str) -> None:
    run = json.load(open(run_path, encoding="utf-8"))
    trace = json.load(gzip.open(trace_path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    alone_c = float(run["context"]["ceiling_host_add_gbps"])
    beside_c = float(run["context"]["ceiling_host_add_during_d2h_gbps"])
    print(f"ceilings: host add {alone_c:.1f} GB/s alone, {beside_c:.1f} beside D2Hs")
    adds, d2h = defaultdict(lambda: defaultdict(list)), defaultdict(lambda: defaultdict(list))
    for e in events:
        a = e.get("args", {})
        if e.get("name") == "cpu_add":
            adds[a["case"]][a["step"]].append((e["ts"], e["ts"] + e["dur"]))
        elif e.get("cat") == "gpu op" and e.get("name") == "d2h":
            d2h[a["case"]][a["step"]].append((e["ts"], e["ts"] + e["dur"]))
    for b in run["benchmarks"]:
        case = b["name"].split("/iterations:")[0]
        if case not in adds:
            continue
        short = case.split("model:")[1].replace("/world:1/schedule:SSSS/binding:data-free", "")
        per_add = {"alone": [], "beside": []}
        for step, intervals in sorted(adds[case].items()):
            a, d = union(intervals), union(d2h[case][step])
            add_ms = sum(e - s for s, e in a) / 1e3
            beside_ms = overlap(a, d) / 1e3
            alone_frac = b["cpu_add_bytes"] / (add_ms * 1e6) / alone_c
            shared = b["cpu_add_bytes"] / (((add_ms - beside_ms) * alone_c + beside_ms * beside_c) * 1e6)
            print(f"{short:70s} step {step}: add {add_ms:6.1f} ms, beside D2Hs {beside_ms:6.1f}; "
                  f"of the alone ceiling {alone_frac:.3f}, of the shared {shared:.3f}")
            for s, e in intervals:
                dur = (e - s) / 1e3
                side = "beside" if overlap([[s, e]], d) > 0.5 * (e - s) else "alone"
                per_add[side].append(UNIT_ADD_BYTES / (dur * 1e6))
        if "uniform:16x64M" in case and "/offload:cpu-add/" in case:
            for side, rates in per_add.items():
                if rates:
                    print(f"    adds {side}: {len(rates)}, median {statistics.median(rates):.1f} GB/s")


if __name__ == "__main__":
    main(*sys.argv[1:3])
