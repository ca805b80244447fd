"""What the host does while DeepSpeed ZeRO-3 flushes a reduce bucket (issue 16).

DeepSpeed issues a bucket's flush (__reduce_and_partition_ipg_grads, stage3.py 1648-1695: the
interleave, the reduce-scatter, then partition_grads' per-parameter copy-add-copy, 2006-2053) from the
gradient hook, inside autograd's AccumulateGrad node: while the host is there it issues no backward
work. Per real case (traces/*.trace.json.gz) this prints the AccumulateGrad nodes longer than 2 ms
(the flushes; the others are one parameter's hook), their host time (ms), the CUDA runtime calls
inside them (ms: the rest is Python, the dispatcher and the profiler), the host waits on streams
(cudaStreamSynchronize, ms: the epilogue's, stage3.py 1407-1414, and max_param_reduce_events', 1664-1667),
and, inside the flushes, how long the compute stream (7) and the other streams were busy (ms).
The traced steps ran with PyTorch's memory history on (the runner's --profile-dir), which records a
Python stack per allocation: their host times are longer than an unprofiled step's.
Run: python3 flush.py > flush.txt"""
import collections, glob, gzip, json


def union(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out


def busy_in(iv, lo, hi):
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in iv) / 1e3


for path in sorted(glob.glob("traces/real-*.trace.json.gz")):
    ev = json.load(gzip.open(path))["traceEvents"]
    gpu = [e for e in ev if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    compute = collections.Counter(e["tid"] for e in gpu).most_common(1)[0][0]
    on = {True: union([(e["ts"], e["ts"] + e["dur"]) for e in gpu if e["tid"] == compute]),
          False: union([(e["ts"], e["ts"] + e["dur"]) for e in gpu if e["tid"] != compute])}
    hooks = [e for e in ev if e["cat"] == "cpu_op" and e["name"] == "torch::autograd::AccumulateGrad"]
    flushes = [e for e in hooks if e["dur"] > 2000]
    waits = [e for e in ev if e["cat"] == "cuda_runtime" and e["name"] == "cudaStreamSynchronize"]
    runtime = sum(e["dur"] for e in ev if e["cat"] == "cuda_runtime" and any(
        f["ts"] <= e["ts"] < f["ts"] + f["dur"] for f in flushes)) / 1e3
    host = sum(e["dur"] for e in flushes) / 1e3
    comp = sum(busy_in(on[True], f["ts"], f["ts"] + f["dur"]) for f in flushes)
    other = sum(busy_in(on[False], f["ts"], f["ts"] + f["dur"]) for f in flushes)
    print(f"{path.split('/')[1].split('.')[0]:26s} flushes {len(flushes):3d}: host {host:6.1f} ms "
          f"(of it CUDA runtime calls {runtime:5.1f}), compute busy in them {comp:6.1f}, reduce stream {other:6.1f}; "
          f"stream waits {len(waits)}x {sum(e['dur'] for e in waits) / 1e3:6.1f} ms")
