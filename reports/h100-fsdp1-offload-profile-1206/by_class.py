"""Where FSDP1's offloaded gpt2-xl step spends GPU time the preset does not (issue 16, ninth pass).

Reads the real runner's Kineto traces (`bench/real/run.py --profile-dir DIR`, one traced step per
case: *.trace.json.gz) and the suite's trace (`--trace F --trace-steps 1 --cupti kernels`, one step
per case), and prints per case: the GPU busy time (union of every kernel, copy and memset, ms), and
per class of GPU work its count, its time (ms) and the part of it no other class covers (ms). The
difference of a synced schedule against nnnS, class by class, says what the extra syncs add.
It also writes each case's GPU rows to OUT/NAME.ops.csv.gz (ts_us, dur_us, cls, stream, name).
Run: python3 by_class.py OUT REAL_DIR SUITE_TRACE.json[.gz] (here: by_class.py ops traces suite.trace.json.gz)"""
import collections, csv, glob, gzip, json, os, sys


def cls(name):
    n = name.lower()
    if "htod" in n: return "H2D"
    if "dtoh" in n: return "D2H"
    if "dtod" in n: return "DtoD"
    if "memset" in n: return "memset"
    if "_tn_n" in n: return "GEMM tn"
    if "gemm" in n: return "GEMM other"
    if "fill" in n or "generat" in n: return "fill"
    if "reduce" in n and "kernel" in n: return "reduce kernel"
    if "elementwise" in n: return "elementwise"
    return "other kernel"


def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out


def uncovered(iv, cover):
    cover, total = union(cover), 0.0
    for a, b in union(iv):
        x = a
        for c, d in cover:
            if d <= x: continue
            if c >= b: break
            total += max(0.0, c - x); x = max(x, d)
            if x >= b: break
        total += max(0.0, b - x)
    return total / 1e3


def report(name, rows, out):
    with gzip.open(os.path.join(out, name + ".ops.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f); w.writerow(["ts_us", "dur_us", "cls", "stream", "name"])
        for r in sorted(rows): w.writerow([f"{r[0]:.3f}", f"{r[1]:.3f}", r[2], r[3], r[4][:100]])
    iv = [(a, a + d) for a, d, *_ in rows]
    print(f"{name}: GPU busy {sum(b - a for a, b in union(iv)) / 1e3:.1f} ms, span {(max(b for _, b in iv) - min(a for a, _ in iv)) / 1e3:.1f} ms")
    by = collections.defaultdict(list)
    for a, d, c, *_ in rows: by[c].append((a, a + d))
    for c in sorted(by):
        others = [x for k, v in by.items() if k != c for x in v]
        print(f"    {c:14s} {len(by[c]):6d}x {sum(b - a for a, b in by[c]) / 1e3:9.1f} ms, alone {uncovered(by[c], others):8.1f} ms")


out, real_dir, suite = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
for path in sorted(glob.glob(os.path.join(real_dir, "*.trace.json.gz"))):
    ev = json.load(gzip.open(path))["traceEvents"]
    rows = [(e["ts"], e["dur"], cls(e["name"]), e.get("tid"), e["name"]) for e in ev
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    sched = path.split("schedule_")[1][:4]
    report(f"real-{sched}", rows, out)
if os.path.exists(suite):
    d = json.load(gzip.open(suite) if suite.endswith(".gz") else open(suite)); ev = d["traceEvents"] if isinstance(d, dict) else d
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
    cases = collections.defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and names.get(e.get("tid"), "").startswith("CUPTI"):
            cases[e["args"]["case"]].append((e["ts"], e["dur"], cls(e["name"]), names[e["tid"]], e["name"]))
    for case, rows in sorted(cases.items()):
        report("suite-" + case.split("schedule:")[1][:4], rows, out)
