"""FSDP2's all-gather copy-out, from the real no-offload and offload traces of this folder (2026-12-05,
no device run): the 256 MiB device-to-device copies per stream, and on a sync after a sync (SnSS
without offload) what runs beside the compute stream's slow ones. Run: python3 copy_out.py

Kineto's `tid` of a GPU row is its stream. On every trace the compute stream (the GEMMs' stream)
makes one 256 MiB device copy per unshard (16 units x (forward + backward) x 4 micro-batches = 128):
FSDP2 copies each unit's all-gather output into its unsharded parameter on the current stream
(_fsdp_param_group.py FSDPParamGroup.wait_for_unshard -> _fsdp_collectives.py
foreach_all_gather_copy_out). The reduce-scatter stream makes one per sync (at world 1
foreach_reduce's `reduce_output.copy_(reduce_scatter_input)`) and the accumulation `+=` per later
sync (an elementwise kernel)."""
import collections
import csv
import gzip
import statistics

UNIT = "268435456"  # one unit's parameter or gradient, 64M fp32 elements


def rows(path):
    with gzip.open(path, "rt", newline="") as f:
        return [r for r in csv.DictReader(f) if r["cat"] in ("kernel", "gpu_memcpy")]


def span(r):
    a = float(r["ts_us"])
    return a, a + float(r["dur_us"])


for sched, off in (("nnnS", "none"), ("SnSS", "none"), ("nnnS", "cpu"), ("SnSS", "cpu")):
    rs = rows(f"fsdp2_model_uniform_16x64M_{sched}_offload_{off}.ops.csv.gz")
    compute = collections.Counter(r["tid"] for r in rs if "gemm" in r["name"]).most_common(1)[0][0]
    copies = collections.defaultdict(list)
    for r in rs:
        if r["cat"] == "gpu_memcpy" and "DtoD" in r["name"] and r["bytes"] == UNIT:
            copies["compute" if r["tid"] == compute else f"stream {r['tid']}"].append(float(r["dur_us"]))
    print(f"{sched} offload {off}: 256 MiB device copies " + ", ".join(
        f"{k} {len(v)} (median {statistics.median(v):.0f} us, {sum(v) / 1e3:.1f} ms)" for k, v in sorted(copies.items())))

# SnSS without offload: the compute stream's copies that take more than 300 us, and the other
# streams' work that overlaps them.
rs = rows("fsdp2_model_uniform_16x64M_SnSS_offload_none.ops.csv.gz")
compute = collections.Counter(r["tid"] for r in rs if "gemm" in r["name"]).most_common(1)[0][0]
slow = [r for r in rs if r["tid"] == compute and r["cat"] == "gpu_memcpy" and r["bytes"] == UNIT
        and float(r["dur_us"]) > 300]
beside = collections.Counter()
for s in slow:
    a, b = span(s)
    for r in rs:
        x, y = span(r)
        if r["tid"] != compute and x < b and y > a:
            beside[("memcpy " if r["cat"] == "gpu_memcpy" else "kernel ") + r["name"][:48]] += 1
print(f"\nSnSS offload none: {len(slow)} compute-stream copies over 300 us "
      f"(median {statistics.median(float(s['dur_us']) for s in slow):.0f} us); other streams' work beside them:")
for k, v in beside.most_common():
    print(f"  {v:3d} x {k}")

# Every compute-stream copy-out without offload, grouped by the other streams' work beside it
# (2026-12-05, later): alone it takes 126 us; beside the reduce-scatter stream's world-1 copy (a
# device-to-device memcpy of the same size) 252 us, the two sharing the device's bandwidth; beside
# that copy and the `+=` of a sync after a sync (PyTorch's vectorized_elementwise_kernel, ~191 us
# alone, on the reduce-scatter stream at the device's greatest priority) 436 us = 252 + ~184: the
# copy-out makes no progress while the `+=` runs, which takes every SM (CUDALoops.cuh
# launch_vectorized_kernel: one 128-thread block per block_work_size() elements).
print("\nCompute-stream copy-outs by what runs beside them (offload none):")
for sched in ("nnnS", "SnSS"):
    rs = rows(f"fsdp2_model_uniform_16x64M_{sched}_offload_none.ops.csv.gz")
    compute = collections.Counter(r["tid"] for r in rs if "gemm" in r["name"]).most_common(1)[0][0]
    groups = collections.defaultdict(list)
    for c in rs:
        if c["tid"] != compute or c["cat"] != "gpu_memcpy" or c["bytes"] != UNIT:
            continue
        a, b = span(c)
        kinds = set()
        for r in rs:
            x, y = span(r)
            if r["tid"] != compute and x < b and y > a:
                kinds.add("memcpy" if r["cat"] == "gpu_memcpy" else "kernel " + r["name"][:40])
        groups[tuple(sorted(kinds))].append(float(c["dur_us"]))
    for kinds, durs in sorted(groups.items(), key=lambda kv: len(kv[0])):
        print(f"  {sched}: {len(durs):3d} copies, median {statistics.median(durs):4.0f} us, beside "
              f"{' + '.join(kinds) or 'nothing'}")
    adds = [float(r["dur_us"]) for r in rs if r["tid"] != compute and "vectorized_elementwise" in r["name"]]
    if adds:
        print(f"  {sched}: the other streams' elementwise kernels: {len(adds)}, median {statistics.median(adds):.0f} us")
