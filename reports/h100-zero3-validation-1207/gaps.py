#!/usr/bin/env python3
"""The suite's zero3-none trace (suite-zero3-none-uniform_gpt2-xl.trace.json.gz, the first measured step of each
case, CUPTI records) after the GEMM operands stopped being refilled per unit (581dd6f): per case the span, the
compute stream's busy time and gaps over 50 us, its operand fills, and the comm stream's device copies with the
part of them that ran beside a GEMM. The same figures before the change: ../h100-validation-probes-1207/fill_gaps.txt.
Run: python3 gaps.py > gaps.txt"""
import gzip
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ev = json.load(gzip.open(os.path.join(HERE, "suite-zero3-none-uniform_gpt2-xl.trace.json.gz")))["traceEvents"]
tid = {e["args"]["name"]: e["tid"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}


def short(n):
    m = re.search(r"namespace\)::(\w+)", n)
    if m:
        return m.group(1)
    if n.lower().startswith("memcpy"):
        return "memcpy DtoD"
    return "GEMM" if re.search(r"gemm|sgemm|cublas", n) else n[:30]


def rec(track, model, sched):
    return sorted((e["ts"], e["ts"] + e["dur"], short(e["name"])) for e in ev
                  if e.get("cat") in ("kernel", "memcpy") and e.get("tid") == tid[track]
                  and f"model:{model}/" in e["args"]["case"]
                  and e["args"]["case"].split("schedule:")[1][:4] == sched and e["args"]["step"] == 1)


for model in ("uniform:16x64M", "gpt2-xl"):
    for sched in ("SSSS", "nnnS"):
        comp, comm = rec("CUPTI compute stream", model, sched), rec("CUPTI comm stream", model, sched)
        gaps = [(a, b) for a, b in zip(comp, comp[1:]) if b[0] - a[1] > 50]
        span = (max(x[1] for x in comp + comm) - min(x[0] for x in comp + comm)) / 1e3
        gemms = [c for c in comp if c[2] == "GEMM"]
        copies = [c for c in comm if c[2] == "memcpy DtoD"]
        beside = sum(max(0, min(c[1], g[1]) - max(c[0], g[0])) for c in copies for g in gemms) / 1e3
        print(f"{model:15s} {sched}: span {span:6.1f} ms, compute busy {sum(b - a for a, b, _ in comp) / 1e3:6.1f}, "
              f"gaps > 50 us {sum(b[0] - a[1] for a, b in gaps) / 1e3:5.1f} ms in {len(gaps):3d}, "
              f"operand fills {sum(1 for c in comp if c[2] == 'fill_operand'):2d}; comm device copies "
              f"{sum(c[1] - c[0] for c in copies) / 1e3:5.1f} ms, {beside:5.1f} of it beside a GEMM")
