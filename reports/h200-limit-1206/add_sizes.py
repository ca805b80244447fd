#!/usr/bin/env python3
"""The CPU adds of this folder's synthetic run, case by case: how many adds a step, their bytes and rates.

Written for issue 17's open question: on gpt2-xl, cpu-add-pipelined's adds (division collective) took
520-522 ms a step against cpu-add's 465-479, in the same run. This prints, for every cpu-add and
cpu-add-pipelined case of `run-synthetic.json` and its trace, per traced step: the number of `cpu_add`
events (one per call of the CPU add: a unit's shard, or for cpu-add-pipelined every chunk landed by then),
their bytes (the trace's `bytes`, the added operand's) and time, and the median rate of the adds
(bytes / duration, the operand's bytes: 12 bytes of host traffic an fp32 element are 3x this).

    python3 reports/h200-limit-1206/add_sizes.py > reports/h200-limit-1206/add_sizes.txt
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    trace = json.load(gzip.open(os.path.join(HERE, "trace-synthetic.json.gz")))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    adds: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if e.get("name") == "cpu_add":
            a = e["args"]
            adds[a["case"]][a["step"]].append((int(a["bytes"]), e["dur"] / 1e3))
    print("case | step | adds | operand bytes | add ms | median add (MB, ms, GB/s of operand)")
    for case in sorted(adds):
        if "/offload:cpu-add/" not in case and "/offload:cpu-add-pipelined/" not in case:
            continue
        short = case.split("model:")[1].replace("/world:1/schedule:SSSS/binding:data-free", "")
        short = short.replace("/mode:flag", "").replace("/dtype:fp32-fp32-fp32", "")
        for step, rows in sorted(adds[case].items()):
            total_b, total_ms = sum(b for b, _ in rows), sum(d for _, d in rows)
            med_b = statistics.median(b for b, _ in rows) / 1e6
            med_ms = statistics.median(d for _, d in rows)
            med_rate = statistics.median(b / (d * 1e6) for b, d in rows if d > 0)
            print(f"{short:45s} | {step} | {len(rows):4d} | {total_b:14,d} | {total_ms:6.1f} | "
                  f"{med_b:7.1f} MB, {med_ms:5.2f} ms, {med_rate:5.1f} GB/s")


if __name__ == "__main__":
    main()
