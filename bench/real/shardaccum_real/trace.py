"""Figures of one profiled step from its Kineto (Chrome trace) events; pure Python, so it is tested on
canned traces without torch.

Attribution: a GPU memcpy carries the correlation id of the runtime call that issued it
(cudaMemcpyAsync, on the CPU thread that ran the FSDP hook), and that call the External id of the aten
op (aten::copy_) that made it, when there is one; the innermost FSDP record_function range
around that op (else the call) on its thread decides its kind: a post-backward range (GRAD_RANGES) makes it gradient
traffic; anything else (all-gather copy-in, prefetch, pre-forward/pre-backward) parameter traffic.
Device->pinned and device->pageable come apart by the memcpy's name ("Memcpy DtoH (Device -> Pinned)")."""

from __future__ import annotations

from bisect import bisect_right

from .systems.zero_config import GRAD_BACKWARD, GRAD_FLUSH

# torch 2.11 record_function names (prefixes: FSDP2 appends " (fqn)"):
# FSDP2 _fully_shard/_fsdp_param_group.py FSDPParamGroup.post_backward; FSDP1 _runtime_utils.py
# _post_backward_hook (its D2H is _offload_grad, called inside it).
# DeepSpeed has no Kineto ranges on that path: systems/zero.py puts its own around engine.backward and the
# coalesce_grad_reduction() flush (with offload_optimizer the parameters never leave the GPU).
GRAD_RANGES = ("FSDP::post_backward_accumulate", "FSDP::post_backward_reshard", "FSDP::post_backward_reduce",
               "FullyShardedDataParallel._post_backward_hook", GRAD_BACKWARD, GRAD_FLUSH)
# Ranges inside which copies are parameter traffic even when nested in a post-backward range: FSDP1 runs
# its backward prefetch (an unshard: H2D of offloaded parameters) inside _post_backward_hook.
FSDP_PREFIXES = ("FSDP::", "FullyShardedDataParallel.", "DeepSpeed::")
# Ranges that hold for every thread of their process: the runner opens DeepSpeed's on the main thread,
# while on CUDA the autograd engine runs the backward (and DeepSpeed's gradient hooks) on its own thread.
PROCESS_WIDE_PREFIXES = ("DeepSpeed::",)
# Ops whose H2D copies inside a post-backward range are kernel metadata, not gradient data: FSDP2's
# reduce-scatter copy-in (_fsdp_collectives.py foreach_reduce_scatter_copy_in) runs torch._chunk_cat,
# whose CUDA launch uploads one int64 block index per 2048-byte block (kChunkCatBytesPerBlock = 128 * 16
# in ATen's chunk_cat) plus per-tensor arrays: numel/64 + a few dozen bytes for fp32, the size measured
# as "gradient H2D" on one H200 before this rule (reports/h200-reference, bench/real/README.md).
METADATA_OPS = ("chunk_cat",)
# analyse()'s key for where the gradient H2D bytes came from ({"range > aten op": bytes}): for the log,
# not a counter (the runner pops it).
SOURCES_KEY = "_grad_h2d_sources"


ANY_THREAD = "*"  # the thread key of PROCESS_WIDE_PREFIXES ranges


def _ranges_of(ranges: dict, where: tuple) -> list:
    """The ranges that hold on thread `where` = (pid, tid): its own and its process's, sorted by start."""
    wide = ranges.get((where[0], ANY_THREAD), [])
    own = ranges.get(where, [])
    return sorted(own + wide) if wide else own


def _is_grad_range(name: str) -> bool:
    return any(name == r or name.startswith(r + " ") for r in GRAD_RANGES)


def _innermost_fsdp(ranges: list, ts: float):
    """The name of the innermost FSDP range (latest start, containing ts) in ranges [(start, end, name)]
    sorted by start; None when no FSDP range contains ts."""
    best = None
    for start, end, name in ranges[:bisect_right([r[0] for r in ranges], ts)]:
        if start <= ts <= end and (best is None or start >= best[0]):
            best = (start, name)
    return best[1] if best else None


def _nccl_kind(name: str):
    n = name.lower().replace("_", "")
    if "nccl" not in n:
        return None
    for key, kind in (("reducescatter", "reduce_scatter"), ("allgather", "all_gather"), ("allreduce", "all_reduce")):
        if key in n:
            return kind
    return "other"


def busy_ms(intervals: list) -> float:
    """The length (ms) of the union of [start, start + dur) intervals given in µs as (start, dur): the time
    the GPU ran at least one kernel or copy, overlapping work on several streams counted once."""
    total, end = 0.0, float("-inf")
    for start, dur in sorted(intervals):
        stop = start + dur
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total / 1e3


def analyse(events: list) -> dict:
    """Counters of spec C from one step's trace events (the 'traceEvents' list): gradient d2h/h2d bytes and
    ms, d2h_pageable_bytes, param_h2d/param_d2h bytes and param_h2d_ms, NCCL kernel ms by collective and
    nccl_ms, cpu_add_ms (aten::add_ in a post-backward range that launched no kernel: a CPU tensor's add),
    and gpu_busy_ms (busy_ms of every kernel, copy and memset: beside the profiled step's wall time it says
    how long the GPU waited for the host, e.g. for Python between FSDP's launches)."""
    ranges: dict = {}     # (pid, tid) -> [(start, end, name)] of FSDP user annotations
    runtime: dict = {}    # correlation -> (pid, tid, ts) of runtime calls
    launches: dict = {}   # (pid, tid) -> sorted ts of runtime calls (kernel launches and copies)
    ops: dict = {}        # External id -> (pid, tid, ts) of the aten op that made the runtime call
    adds, memcpys, kernels = [], [], []
    gpu_work: list = []   # (ts, dur) of every kernel, copy and memset, for gpu_busy_ms
    meta_ops: dict = {}   # (pid, tid) -> [(start, end)] of ops whose H2D copies are kernel metadata
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, name, ts, dur = e.get("cat", ""), e.get("name", ""), float(e.get("ts", 0)), float(e.get("dur", 0))
        where = (e.get("pid"), e.get("tid"))
        if cat == "user_annotation" and name.startswith(FSDP_PREFIXES):
            key = (where[0], ANY_THREAD) if name.startswith(PROCESS_WIDE_PREFIXES) else where
            ranges.setdefault(key, []).append((ts, ts + dur, name))
        elif cat in ("cuda_runtime", "cuda_driver"):
            args = e.get("args", {})
            runtime[args.get("correlation")] = (where, ts, args.get("External id"))
            launches.setdefault(where, []).append(ts)
        elif cat == "gpu_memcpy":
            memcpys.append(e)
            gpu_work.append((ts, dur))
        elif cat == "kernel":
            kernels.append(e)
            gpu_work.append((ts, dur))
        elif cat == "gpu_memset":
            gpu_work.append((ts, dur))
        elif cat == "cpu_op":
            ext = e.get("args", {}).get("External id")
            if ext is not None:
                ops[ext] = (where, ts, name)
            if name == "aten::add_":
                adds.append((where, ts, dur))
            if any(m in name for m in METADATA_OPS):
                meta_ops.setdefault(where, []).append((ts, ts + dur))
    for v in ranges.values():
        v.sort()
    for v in launches.values():
        v.sort()

    out = {k: 0 for k in ("d2h_bytes", "h2d_bytes", "d2h_pageable_bytes", "param_h2d_bytes", "param_d2h_bytes",
                          "meta_h2d_bytes")}
    out.update({k: 0.0 for k in ("d2h_ms", "h2d_ms", "param_h2d_ms", "reduce_scatter_ms", "all_gather_ms",
                                 "all_reduce_ms", "nccl_ms", "cpu_add_ms")})
    sources: dict = {}  # "range > aten op" -> bytes of gradient H2D (printed by the runner, not a counter)
    for m in memcpys:
        name, args = m.get("name", ""), m.get("args", {})
        d2h, h2d = "DtoH" in name, "HtoD" in name
        if not (d2h or h2d):
            continue
        call = runtime.get(args.get("correlation"))
        op = "runtime call"
        if call is not None and call[2] in ops:  # the issuing aten op's thread and time, where it has one
            call = ops[call[2]]
            op = call[2]
        inner = _innermost_fsdp(_ranges_of(ranges, call[0]), call[1]) if call else None
        grad = inner is not None and _is_grad_range(inner)
        nbytes, ms = int(args.get("bytes", 0)), float(m.get("dur", 0)) / 1e3
        if grad and d2h:
            out["d2h_bytes"] += nbytes
            out["d2h_ms"] += ms
            out["d2h_pageable_bytes"] += nbytes if "Pageable" in name else 0
        elif grad and call is not None and any(a <= call[1] <= b for a, b in meta_ops.get(call[0], [])):
            out["meta_h2d_bytes"] += nbytes  # kernel metadata (chunk_cat's block indices), not gradient
        elif grad:
            out["h2d_bytes"] += nbytes
            out["h2d_ms"] += ms
            where_from = f"{inner.split(' (')[0]} > {op}"
            sources[where_from] = sources.get(where_from, 0) + nbytes
        elif h2d:
            out["param_h2d_bytes"] += nbytes
            out["param_h2d_ms"] += ms
        else:
            out["param_d2h_bytes"] += nbytes
    for k in kernels:
        kind = _nccl_kind(k.get("name", ""))
        if kind is not None and kind != "other":  # nccl_ms is the sum of the three (spec C)
            ms = float(k.get("dur", 0)) / 1e3
            out["nccl_ms"] += ms
            out[f"{kind}_ms"] += ms
    for where, ts, dur in adds:
        inner = _innermost_fsdp(_ranges_of(ranges, where), ts)
        if inner is None or not _is_grad_range(inner):
            continue
        calls = launches.get(where, [])
        if bisect_right(calls, ts + dur) == bisect_right(calls, ts):  # launched nothing: a CPU add
            out["cpu_add_ms"] += dur / 1e3
    out["gpu_busy_ms"] = busy_ms(gpu_work)
    out[SOURCES_KEY] = sources
    return out
