"""The preset's GPU idle after each blocking D2H, split by what the host does in it (issue 16, H1).

Reads a suite trace (`--trace F --cupti kernels`: CUPTI's GPU rows and the NVTX phases per rank) and
prints, for each gpt2-xl SSSS case, medians in µs over its D2H copies: from the copy's end to the next
`host hooks` range (the --hook-host-us spin; absent before it existed), that range's length, from its
end to the next GPU op; from the copy's end to the next `backward` range, from that start to the next
GPU op; and the whole gap (copy's end to the next GPU op).
Run: python3 issue_latency.py TRACE.json[.gz] (here on the gpt2-xl cases of this folder's
suite-fsdp1-uniform_gpt2-xl.trace.json.gz, and on ../h100-fsdp1-offload-profile-1206/suite.trace.json.gz)."""
import bisect, gzip, json, statistics as st, sys


def med(xs):
    return f"{st.median(xs):6.1f}" if xs else "     -"


path = sys.argv[1]
d = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
ev = d["traceEvents"] if isinstance(d, dict) else d
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
for case in sorted({e.get("args", {}).get("case") for e in ev if e.get("args", {}).get("case")}):
    if "gpt2-xl" not in case or "/schedule:SSSS/" not in case:
        continue
    X = [e for e in ev if e.get("ph") == "X" and e.get("args", {}).get("case") == case]
    gpu = sorted((e["ts"], e["ts"] + e["dur"]) for e in X if names.get(e["tid"], "").startswith("CUPTI"))
    d2h = [(e["ts"], e["ts"] + e["dur"]) for e in X
           if names.get(e["tid"], "").startswith("CUPTI") and "dtoh" in e["name"].lower()]
    host = [e for e in X if not names.get(e["tid"], "").startswith("CUPTI")]
    hooks = sorted((e["ts"], e["ts"] + e["dur"]) for e in host if e["name"] == "host hooks")
    bw = sorted(e["ts"] for e in host if e["name"].startswith("backward"))
    gst = [g[0] for g in gpu]
    cols = {k: [] for k in ("to_hook", "hook", "hook_to_gpu", "to_backward", "backward_to_gpu", "gap")}
    for _, end in d2h:
        k = bisect.bisect_left(gst, end)
        if k == len(gpu):
            continue
        nxt = gpu[k][0]
        cols["gap"].append(nxt - end)
        j = bisect.bisect_left(hooks, (end, end))
        if j < len(hooks) and hooks[j][1] <= nxt:
            cols["to_hook"].append(hooks[j][0] - end)
            cols["hook"].append(hooks[j][1] - hooks[j][0])
            cols["hook_to_gpu"].append(nxt - hooks[j][1])
        b = bisect.bisect_left(bw, end)
        if b < len(bw) and bw[b] <= nxt:
            cols["to_backward"].append(bw[b] - end)
            cols["backward_to_gpu"].append(nxt - bw[b])
    print(f"{case.split('/binding')[0]}: {len(d2h)} D2H; medians (µs): " +
          ", ".join(f"{k} {med(v).strip()}" for k, v in cols.items()))
