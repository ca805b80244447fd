"""Where real FSDP1's no-offload `SnSS` step spends its extra GPU time (issue 16, eighth pass).

Reads the Kineto traces of `bench/real/run.py --system fsdp1 --offload none --schedule
nnnS,nSnS,SnSS --profile-dir .` (one traced step each, uniform:16x64M, world 1, K=4) and prints,
per case: the GPU time and count of each kernel or copy class (ms), and the GEMMs' time per
micro-batch (ms; 48 GEMMs each: 16 units x the three GEMMs of `--backward gemm`). Equal counts
of the gradient path's copies and adds, and GEMMs slower in every micro-batch alike, say the
difference is the GEMMs' rate on that run, not gradient work. Run: python3 gemm_by_microbatch.py
"""
import collections
import glob
import gzip
import json

for path in sorted(glob.glob("*.trace.json.gz")):
    events = json.load(gzip.open(path))["traceEvents"]
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    total, count = collections.defaultdict(float), collections.Counter()
    for e in gpu:
        total[e["name"][:60]] += e["dur"] / 1e3
        count[e["name"][:60]] += 1
    schedule = path.split("schedule_")[1][:4]
    print(f"{schedule}: GPU busy {sum(total.values()):.2f} ms")
    for name, ms in sorted(total.items(), key=lambda kv: -kv[1])[:6]:
        print(f"  {ms:8.2f} ms {count[name]:4d}x  {name}")
    gemms = sorted((e for e in gpu if "gemm" in e["name"]), key=lambda e: e["ts"])
    per_mb = [sum(e["dur"] for e in gemms[i * 48:(i + 1) * 48]) / 1e3 for i in range(4)]
    print("  GEMMs per micro-batch (ms):", " ".join(f"{x:.2f}" for x in per_mb))
