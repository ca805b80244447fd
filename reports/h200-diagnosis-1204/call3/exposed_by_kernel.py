"""FSDP1's offload cases split by kernel class: per class, GPU time and the part with no copy beside it
(added 2026-12-05 to exposed.py's figures, from the same *.ops.csv.gz). Real side: the forward GEMM
is cuBLAS's `tn` kernel, the backward's the `nn` (data gradient) and SIMT (weight gradient) kernels;
suite side (its compute stream's CUPTI rows, tid 6): the `tn` and SIMT kernels are its two backward
GEMMs, it runs no forward GEMM. Then, at each micro-batch boundary of the four real offload traces,
when the forward's parameter copies start against the end of the backward before it.
Run: python3 exposed_by_kernel.py"""
import csv
import gzip


def rows(path):
    with gzip.open(path, "rt", newline="") as f:
        yield from csv.DictReader(f)


def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def no_copy_ms(iv, copies):
    """Time of the union of `iv` that no interval of `copies` covers, in ms."""
    cover, total = union(copies), 0.0
    for a, b in union(iv):
        x = a
        for c, d in cover:
            if d <= x:
                continue
            if c >= b:
                break
            total += max(0.0, c - x)
            x = max(x, d)
            if x >= b:
                break
        total += max(0.0, b - x)
    return total / 1e3


def kind(name, real):
    if "_tn_n" in name:
        return "forward GEMM (tn)" if real else "backward GEMM (tn)"
    if "nn_n" in name or "simt_sgemm" in name:
        return "backward GEMM"
    if "fill" in name or "generate" in name:
        return "generator/fill"
    return "other"


for sched in ("nnnS", "SSSS"):
    for side, path in (("real", f"fsdp1_model_uniform_16x64M_{sched}_offload_cpu.ops.csv.gz"),
                       ("suite", f"suite-fsdp1-{sched}.ops.csv.gz")):
        copies, kinds = [], {}
        for r in rows(path):
            a, d, n = float(r["ts_us"]), float(r["dur_us"]), r["name"]
            if "cat" in r:  # the real runner's Kineto rows
                if r["cat"] == "gpu_memcpy":
                    copies.append((a, a + d))
                if r["cat"] != "kernel":
                    continue
            else:  # the suite's trace
                if n.startswith("memcpy"):
                    copies.append((a, a + d))
                if r["tid"] != "6" or "copy_words" in n:
                    continue
            kinds.setdefault(kind(n, side == "real"), []).append((a, a + d))
        every = [x for v in kinds.values() for x in v]
        print(f"fsdp1 {sched} {side:5s}: kernels with no copy beside them {no_copy_ms(every, copies):5.1f} ms")
        for k, v in sorted(kinds.items()):
            busy = sum(b - a for a, b in v) / 1e3
            print(f"    {k:20s} {len(v):4d} kernels, busy {busy:6.1f} ms, no copy beside {no_copy_ms(v, copies):5.1f} ms")

# The micro-batch boundaries of the four real offload traces: per forward, the start of each H2D
# issued after the previous backward's last GEMM began, relative to that GEMM's end (ms). A copy of the
# next forward that ran beside the backward would start before it (a negative figure).
print("\nforward's H2D after the last GEMM of the backward before it (ms), per micro-batch boundary:")
for path in ("fsdp1_model_uniform_16x64M_nnnS_offload_cpu.ops.csv.gz",
             "fsdp1_model_uniform_16x64M_SSSS_offload_cpu.ops.csv.gz",
             "fsdp2_model_uniform_16x64M_nnnS_offload_cpu.ops.csv.gz",
             "fsdp2_model_uniform_16x64M_SnSS_offload_cpu.ops.csv.gz"):
    ev = sorted((float(r["ts_us"]), float(r["ts_us"]) + float(r["dur_us"]), r["cat"], r["name"])
                for r in rows(path) if r["cat"] in ("kernel", "gpu_memcpy"))
    starts, prev_forward = [], None
    for i, (a, _b, cat, name) in enumerate(ev):
        if cat != "kernel" or "gemm" not in name.lower():
            continue
        forward = "_tn_n" in name
        if forward and prev_forward is False:  # the first forward GEMM after a backward
            gemms = [e for e in ev[:i] if e[2] == "kernel" and "gemm" in e[3].lower() and "_tn_n" not in e[3]]
            end, begin = max(e[1] for e in gemms), max(e[0] for e in gemms)
            starts.append([round((e[0] - end) / 1e3, 3) for e in ev[:i]
                           if e[2] == "gpu_memcpy" and "HtoD" in e[3] and e[0] > begin])
        prev_forward = forward
    print(f"  {path.split('.ops')[0]}: {starts}")

# The suite's side (its FSDP1 nnnS trace): per micro-batch, the H2D copies started before its
# backward's last GEMM ended, against the 32 (16 forward, 16 backward) a micro-batch issues.
rs = list(rows("suite-fsdp1-nnnS.ops.csv.gz"))
h2d = sorted(float(r["ts_us"]) for r in rs if r["name"] == "memcpy HtoD")
gemms = sorted(float(r["ts_us"]) + float(r["dur_us"]) for r in rs if r["tid"] == "6" and "gemm" in r["name"].lower())
print("suite fsdp1 nnnS: H2D copies started before micro-batch m's last backward GEMM ended:",
      [(sum(1 for t in h2d if t < gemms[32 * m + 31]), 32 * (m + 1)) for m in range(4)])
