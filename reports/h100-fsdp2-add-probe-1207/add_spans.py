#!/usr/bin/env python3
"""Per CPU add of FSDP2's accumulating copy, from the suite's trace and the real runner's Kineto
traces: its duration (ms), its rate (3 x bytes moved per add / duration, GB/s) and how much of it a
host-to-device or device-to-host copy overlapped (ms). Usage: add_spans.py SUITE_TRACE... -- REAL_TRACE..."""
import gzip, json, statistics, sys, collections

def load(p):
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d

def overlap(a0, a1, spans):
    return sum(max(0.0, min(a1, s1) - max(a0, s0)) for s0, s1 in spans)

def summary(label, adds, h2d, d2h, nbytes):
    if not adds:
        print(f"{label}: no adds"); return
    durs = [d for _, d in adds]
    ov_h = [overlap(t, t + d, h2d) for t, d in adds]
    ov_d = [overlap(t, t + d, d2h) for t, d in adds]
    rate = [3 * nbytes / (d * 1e3) for d in durs]  # bytes / us -> /1e3 = GB/s
    print(f"{label}: {len(adds)} adds, ms median {statistics.median(durs)/1e3:.2f} min {min(durs)/1e3:.2f} "
          f"max {max(durs)/1e3:.2f} sum {sum(durs)/1e3:.1f}; GB/s median {statistics.median(rate):.1f}; "
          f"H2D overlap {sum(ov_h)/1e3:.1f} ms, D2H overlap {sum(ov_d)/1e3:.1f} ms")
    print("   per add ms:", " ".join(f"{d/1e3:.1f}" for d in durs))

def suite(path, nbytes):
    ev = [e for e in load(path) if e.get("ph") == "X"]
    adds = collections.defaultdict(list)  # per case (the add's args.case)
    for e in ev:
        if e.get("cat") == "host" and e.get("name") == "cpu_add":
            adds[(e.get("args") or {}).get("case")].append((e["ts"], e["dur"]))
    # The copies (CUPTI rows, on the trace's one clock) of every case: an add overlaps only its own.
    h2d = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "memcpy" and "HtoD" in e.get("name", "")]
    d2h = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "memcpy" and "DtoH" in e.get("name", "")]
    for case, spans in adds.items():
        summary(f"suite {path.split('/')[-1]} {str(case).split('schedule:')[-1][:4]}", spans, h2d, d2h, nbytes)


def real(path, nbytes):
    ev = [e for e in load(path) if e.get("ph") == "X"]
    adds = [(e["ts"], e["dur"]) for e in ev if e.get("cat") == "cpu_op" and e.get("name") == "aten::add_" and e["dur"] > 1000]
    h2d = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "gpu_memcpy" and "HtoD" in e.get("name", "")]
    d2h = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "gpu_memcpy" and "DtoH" in e.get("name", "")]
    sched = path.split("schedule_")[-1][:4]
    summary(f"real {sched}", adds, h2d, d2h, nbytes)

if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--") if "--" in args else len(args)
    nbytes = 64 * 2**20 * 4
    for p in args[:cut]: suite(p, nbytes)
    for p in args[cut + 1:]: real(p, nbytes)
