#!/usr/bin/env python3
"""gpt2-xl without offload, ZeRO-3: what the GPU does more in SSSS than in nnnS, by class of work, on both sides.
Real: DeepSpeed's traced steps of ../h100-zero3-profile-1206/traces/real-gpt2-xl-{SSSS,nnnS}-none.trace.json.gz
(every kernel and copy of one step); suite: this folder's suite-zero3-none-uniform_gpt2-xl.trace.json.gz (the first
measured step of each case, CUPTI records). Per case: the GPU's busy time (union, ms) and each class's summed time.
Run: python3 gpt2xl_busy.py > gpt2xl_busy.txt"""
import collections
import gzip
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def cls(name):
    n = name.lower()
    if re.search(r"gemm|cublas|cutlass", n):
        return "GEMM"
    if n.startswith("memcpy") or "copy" in n:
        return "device copy"
    if "generate" in n or "fill" in n:
        return "gradient fill"
    if "add" in n:
        return "add"
    if "scale" in n or "div" in n or "mul" in n:
        return "division"
    if "nccl" in n:
        return "nccl"
    return "other"


def union(iv):
    t, end = 0.0, -1.0
    for a, b in sorted(iv):
        if a > end:
            t += b - a
            end = b
        elif b > end:
            t += b - end
            end = b
    return t / 1e3


def show(name, rows):
    by = collections.Counter()
    for a, b, n in rows:
        by[cls(n)] += (b - a) / 1e3
    print(f"{name:14s} busy {union([(a, b) for a, b, _ in rows]):7.1f} ms | " +
          ", ".join(f"{k} {v:.1f}" for k, v in by.most_common()))
    return by


res = {}
for sched in ("nnnS", "SSSS"):
    ev = json.load(gzip.open(os.path.join(HERE, f"../h100-zero3-profile-1206/traces/real-gpt2-xl-{sched}-none.trace.json.gz")))
    rows = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev["traceEvents"]
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    res[("real", sched)] = show(f"real {sched}", rows)
ev = json.load(gzip.open(os.path.join(HERE, "suite-zero3-none-uniform_gpt2-xl.trace.json.gz")))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
for sched in ("nnnS", "SSSS"):
    rows = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
            if e.get("ph") == "X" and names.get(e.get("tid"), "").startswith("CUPTI")
            and "model:gpt2-xl/" in e["args"]["case"] and e["args"]["case"].split("schedule:")[1][:4] == sched
            and e["args"]["step"] == 1]
    res[("suite", sched)] = show(f"suite {sched}", rows)
for side in ("real", "suite"):
    d = {k: res[(side, "SSSS")][k] - res[(side, "nnnS")][k] for k in set(res[(side, "SSSS")]) | set(res[(side, "nnnS")])}
    print(f"{side} SSSS - nnnS by class: " + ", ".join(f"{k} {v:+.1f}" for k, v in sorted(d.items(), key=lambda x: -abs(x[1]))))
