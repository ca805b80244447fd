"""The figures of this folder's README from its *.ops.csv.gz: per step, the GPU time covered by copies,
by anything (copies or kernels), and their difference (compute with no copy beside it), for FSDP1's
offload cases on both sides; and the CPU adds of FSDP2's SnSS. Run: python3 exposed.py"""
import csv
import gzip


def union_ms(iv):
    iv.sort()
    total, end = 0.0, None
    for a, b in iv:
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total / 1e3


def rows(path):
    with gzip.open(path, "rt", newline="") as f:
        yield from csv.DictReader(f)


def intervals(path):
    copies, anything = [], []
    for r in rows(path):
        a, d, n = float(r["ts_us"]), float(r["dur_us"]), r["name"]
        if "cat" in r:  # the real runner's Kineto rows
            is_copy, is_gpu = r["cat"] == "gpu_memcpy", r["cat"] in ("gpu_memcpy", "kernel")
        else:  # the suite's trace: CUPTI copy and kernel rows
            is_copy = n.startswith("memcpy")
            is_gpu = is_copy or "kernel" in n.lower() or "gemm" in n or "shardaccum::cuda" in n
        if is_gpu:
            anything.append((a, a + d))
        if is_copy:
            copies.append((a, a + d))
    return copies, anything


for sched in ("nnnS", "SSSS"):
    for side, path in (("real", f"fsdp1_model_uniform_16x64M_{sched}_offload_cpu.ops.csv.gz"),
                       ("suite", f"suite-fsdp1-{sched}.ops.csv.gz")):
        c, a = intervals(path)
        print(f"fsdp1 {sched} {side:5s}: copies {union_ms(c):6.1f} ms, GPU busy {union_ms(a):6.1f} ms, "
              f"compute with no copy {union_ms(a) - union_ms(c):5.1f} ms")
real = [float(r["dur_us"]) for r in rows("fsdp2_model_uniform_16x64M_SnSS_offload_cpu.ops.csv.gz")
        if r["cat"] == "cpu_op" and r["name"] == "aten::add_" and float(r["dur_us"]) > 1000]
suite = [float(r["dur_us"]) for r in rows("suite-fsdp2-SnSS.ops.csv.gz") if r["name"] == "cpu_add"]
for side, v in (("real", real), ("suite", suite)):
    print(f"fsdp2 SnSS {side:5s}: {len(v)} CPU adds of 256 MiB, {sum(v) / 1e3:.1f} ms, "
          f"{min(v) / 1e3:.1f}-{max(v) / 1e3:.1f} ms each")
