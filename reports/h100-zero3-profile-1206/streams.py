"""Where DeepSpeed ZeRO-3's offloaded step loses the overlap the `zero3` preset has (issue 16).

Reads the real runner's slimmed Kineto traces (traces/real-MODEL-SCHED-OFFLOAD.trace.json.gz: one
traced step per case, `bench/real/run.py --profile-dir`) and the suite's traces (suite-MODEL.trace.json.gz,
`--trace F --trace-steps 1 --cupti kernels`: one step per case), and prints per case the step's GPU
span and busy time (union of every kernel, copy and memset, ms), each stream's busy time (ms), and the
time the two busiest streams run at once (ms). The real side's streams are CUDA stream ids: 7 is the
compute stream, the other is DeepSpeed's reduce_and_partition_stream (stage3.py 340-341), which runs
the bucket copy, the interleave, the division, the reduce-scatter and the offload's copies and add.
Run: python3 streams.py > streams.txt"""
import collections, glob, gzip, json


def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out


def total(iv):
    return sum(b - a for a, b in union(iv)) / 1e3


def overlap(x, y):
    x, y, i, j, t = union(x), union(y), 0, 0, 0.0
    while i < len(x) and j < len(y):
        lo, hi = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if hi > lo: t += hi - lo
        if x[i][1] < y[j][1]: i += 1
        else: j += 1
    return t / 1e3


def show(name, rows):
    by = collections.defaultdict(list)
    for a, d, s in rows: by[s].append((a, a + d))
    every = [x for v in by.values() for x in v]
    span = (max(b for _, b in every) - min(a for a, _ in every)) / 1e3
    order = sorted(by, key=lambda s: -total(by[s]))
    both = overlap(by[order[0]], by[order[1]]) if len(order) > 1 else 0.0
    print(f"{name:28s} span {span:7.1f}  busy {total(every):7.1f}  " +
          "  ".join(f"[{s}] {total(by[s]):7.1f}" for s in order) + f"  two busiest at once {both:6.1f}")


for path in sorted(glob.glob("traces/real-*.trace.json.gz")):
    ev = json.load(gzip.open(path))["traceEvents"]
    rows = [(e["ts"], e["dur"], e["tid"]) for e in ev if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    show(path.split("/")[1].split(".")[0], rows)
for path in sorted(glob.glob("suite-*.trace.json.gz")):
    d = json.load(gzip.open(path)); ev = d["traceEvents"] if isinstance(d, dict) else d
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    cases = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and names.get(e.get("tid"), "").startswith("CUPTI"):
            cases[e["args"]["case"]].append((e["ts"], e["dur"], names[e["tid"]].replace("CUPTI ", "")))
    model = path[len("suite-"):].split(".")[0]
    for case, rows in sorted(cases.items()):
        show(f"suite-{model}-{case.split('schedule:')[1][:4]}-cpu", rows)
