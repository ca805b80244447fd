"""The suite's zero3 axes without offload on uniform:16x64M at comm priority 0, traced (issue 16): per
schedule, the GPU time of each stream and its largest kernels (CUPTI), the traced step's GPU span (first
to last kernel or copy) and its gaps on the compute stream, beside the step times of the run's JSON.
Run: python3 gpu_span.py > gpu_span.txt"""
import collections
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
d = json.load(gzip.open(os.path.join(HERE, "suite-uniform-none-p0.trace.json.gz")))
ev = d["traceEvents"] if isinstance(d, dict) else d
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
run = json.load(open(os.path.join(HERE, "suite-uniform-none-p0.json"), encoding="utf-8"))
for sched in ("SSSS", "nnnS"):
    gpu = [e for e in ev if e.get("ph") == "X" and names.get(e.get("tid"), "").startswith("CUPTI")
           and f"schedule:{sched}" in e["args"].get("case", "")]
    per, streams = collections.defaultdict(lambda: [0, 0.0]), collections.defaultdict(float)
    for e in gpu:
        s = names[e["tid"]].replace("CUPTI ", "")
        per[(s, e["name"][:60])][0] += 1
        per[(s, e["name"][:60])][1] += e["dur"] / 1e3
        streams[s] += e["dur"] / 1e3
    t0, t1 = min(e["ts"] for e in gpu), max(e["ts"] + e["dur"] for e in gpu)
    compute = sorted((e for e in gpu if names[e["tid"]] == "CUPTI compute stream"), key=lambda e: e["ts"])
    gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(compute, compute[1:])]
    b = next(x for x in run["benchmarks"] if f"schedule:{sched}" in x["name"])
    print(f"{sched}: traced step's GPU span {(t1 - t0) / 1e3:.1f} ms; per stream (kernels and copies): "
          + ", ".join(f"{s} {t:.1f}" for s, t in sorted(streams.items(), key=lambda x: -x[1]))
          + f"; compute-stream gaps over 0.2 ms: {sum(g > 200 for g in gaps)}, {sum(g for g in gaps if g > 200) / 1e3:.1f} ms")
    print(f"  run JSON: step_ms {b['step_ms']:.1f} (the two measured steps {b['step_ms_min']:.1f} and "
          f"{b['step_ms_max']:.1f}; step 1 is the traced one)")
    for (s, n), (c, ms) in sorted(per.items(), key=lambda x: -x[1][1])[:7]:
        print(f"  {s:16s} {ms:7.1f} ms {c:4d}x  {n}")
