#!/usr/bin/env python3
"""Where the suite's zero3-none compute stream idles in SSSS on uniform:16x64M (suite-zero3-none-uniform.trace.json.gz,
its first measured step), by the pair of compute kernels around each gap over 50 us, beside what DeepSpeed's own
compute stream does around its bucket copies (../h100-zero3-profile-1206/traces/real-uniform-SSSS-none.trace.json.gz:
stream 7 compute, 52 reduce). Run: python3 fill_gaps.py > fill_gaps.txt"""
import collections
import gzip
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def short(name):
    m = re.search(r"namespace\)::(\w+)", name)
    if m:
        return m.group(1)
    if name.startswith("Memcpy") or name.startswith("memcpy"):
        return "memcpy DtoD"
    return "cuBLAS/CUTLASS GEMM" if re.search(r"gemm|sgemm|cublas", name) else re.sub(r"\(.*", "", name)[-30:]


def gaps_by_pair(comp):
    by, n = collections.Counter(), collections.Counter()
    for a, b in zip(comp, comp[1:]):
        if b[0] - a[1] > 50:
            by[(a[2], b[2])] += (b[0] - a[1]) / 1e3
            n[(a[2], b[2])] += 1
    return by, n


def report(title, comp, other, other_name):
    by, n = gaps_by_pair(comp)
    print(f"{title}: compute gaps over 50 us {sum(by.values()):.1f} ms in {sum(n.values())}")
    for k, v in by.most_common(5):
        print(f"  {v:6.1f} ms in {n[k]:3d}  after {k[0]} before {k[1]}")
    # the other stream's copies: how much of each runs while the compute stream runs a GEMM
    gemms = [c for c in comp if c[2] == "cuBLAS/CUTLASS GEMM"]
    copies = [c for c in other if c[2] == "memcpy DtoD"]
    beside = sum(max(0, min(c[1], g[1]) - max(c[0], g[0])) for c in copies for g in gemms)
    total = sum(c[1] - c[0] for c in copies)
    print(f"  {other_name} device copies: {len(copies)}, {total / 1e3:.1f} ms, {beside / 1e3:.1f} ms of it beside a GEMM")


ev = json.load(gzip.open(os.path.join(HERE, "suite-zero3-none-uniform.trace.json.gz")))["traceEvents"]


def suite(tid):
    return sorted((e["ts"], e["ts"] + e["dur"], short(e["name"])) for e in ev
                  if e.get("cat") in ("kernel", "memcpy") and e.get("tid") == tid
                  and e["args"]["case"].split("schedule:")[1][:4] == "SSSS" and e["args"]["step"] == 1)


report("suite SSSS step 1", suite(6), suite(5), "comm stream")
real = json.load(gzip.open(os.path.join(HERE, "../h100-zero3-profile-1206/traces/real-uniform-SSSS-none.trace.json.gz")))
rev = [e for e in real["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy")]


def rstream(tid):
    return sorted((e["ts"], e["ts"] + e["dur"], short(e["name"])) for e in rev if e.get("tid") == tid)


report("DeepSpeed SSSS (traced step)", rstream(7), rstream(52), "reduce stream")
