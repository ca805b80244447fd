"""What the GPU waits for after each of FSDP1's blocking gradient copies (issue 16, ninth pass).

At world size 1 FSDP1 is NO_SHARD and `_offload_grad` copies with non_blocking=False
(torch/distributed/fsdp/_runtime_utils.py `_offload_grad`, docs/PRESETS.md G5): the host sits in
cudaStreamSynchronize until the D2H ends, and the GPU has no work queued behind it. This reads the
real runner's Kineto traces (`--profile-dir`, *.trace.json.gz, gpt2-xl, world 1, offload cpu) and
the suite's GPU rows (by_class.py's suite-*.ops.csv.gz) and prints, per case: the D2H copies, the
GPU idle time right after them (from a D2H's end to the next kernel, copy or memset on any stream;
ms in all and per copy), and, on the real side, the host's annotated ranges inside those gaps (ms
per gap: which Python hook the GPU waits for). Run: python3 host_gap.py TRACE_DIR OPS_DIR"""
import bisect, collections, csv, glob, gzip, json, os, sys

GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def gaps_after_d2h(rows):
    """rows: (start, end, is_d2h) in µs. The (d2h_end, next_start) of each D2H followed by GPU idle."""
    rows = sorted(rows)
    starts = [r[0] for r in rows]
    busy_until, out = [], []
    hi = float("-inf")
    for r in rows:  # the furthest end of any row started at or before each row's start
        hi = max(hi, r[1]); busy_until.append(hi)
    for i, (a, b, d2h) in enumerate(rows):
        if not d2h: continue
        j = bisect.bisect_right(starts, b)  # first row starting after the copy's end
        covered = busy_until[j - 1] > b if j else False
        if j < len(rows) and not covered:
            out.append((b, rows[j][0]))
    return out


def show(name, gaps, host=None):
    n = len(gaps); idle = sum(b - a for a, b in gaps) / 1e3
    print(f"{name}: {n} D2H copies followed by idle GPU, idle {idle:.1f} ms in all, {idle / max(n, 1) * 1e3:.0f} µs per copy")
    if host:
        for k, v in sorted(host.items(), key=lambda kv: -kv[1])[:8]:
            print(f"    {v / 1e3 / max(n, 1) * 1e3:6.0f} µs per gap  {k}")


trace_dir, ops_dir = sys.argv[1:3]
for path in sorted(glob.glob(os.path.join(trace_dir, "real_system_*.trace.json.gz"))):
    ev = json.load(gzip.open(path))["traceEvents"]
    rows = [(e["ts"], e["ts"] + e["dur"], "DtoH" in e["name"]) for e in ev if e.get("ph") == "X" and e.get("cat") in GPU]
    gaps = gaps_after_d2h(rows)
    ann = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
                 if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op", "cuda_runtime")
                 and ("FullyShardedDataParallel" in e["name"] or e["name"].startswith("autograd::engine")
                      or e["name"] in ("cudaStreamSynchronize", "aten::empty_strided", "cudaMemcpyAsync")))
    host = collections.Counter()
    for a, b in gaps:
        for s, t, name in ann:
            if s < b and t > a:
                host[name.replace("autograd::engine::evaluate_function: ", "autograd: ")] += min(t, b) - max(s, a)
    show("real " + path.split("schedule_")[1][:4], gaps, host)
for path in sorted(glob.glob(os.path.join(ops_dir, "suite-*.ops.csv.gz"))):
    with gzip.open(path, "rt", newline="") as f:
        rows = [(float(r["ts_us"]), float(r["ts_us"]) + float(r["dur_us"]), r["cls"] == "D2H") for r in csv.DictReader(f)]
    show("suite " + os.path.basename(path)[6:10], gaps_after_d2h(rows))
