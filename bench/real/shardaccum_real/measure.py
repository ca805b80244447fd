"""Timed and profiled steps of one case. A step runs the schedule's micro-batches (forward, backward;
n inside the system's no-sync, S with sync) and ends when the gradients are final on the host: after
the last backward (whose final callback waits on FSDP's offload events) and a synchronize (and, at
world >= 2, a barrier, so the step is the slowest rank's). No optimizer. Needs torch."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

from . import memhist, output, trace

PINNED_STAT_KEY = "allocated_bytes.peak"  # torch.cuda.memory.host_memory_stats(): pinned blocks held
# torch.cuda.memory_stats(): the bytes the tensors asked for, before the caching allocator rounds each
# block up (to 512 B, and a large block not split when less than 1 MiB would remain: c10/cuda/
# CUDACachingAllocator.cpp `round_size`, `should_split`). max_memory_allocated counts the rounded blocks.
REQUESTED_PEAK_KEY = "requested_bytes.all.peak"


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def warm_cublas(device) -> None:
    """One small GEMM forward and backward before the first case, so that cuBLAS's workspaces (one per
    handle: the main thread's for the forward, autograd's device thread's for the backward; 32 MiB
    each on an H200 with torch 2.11, by the memory history of 2026-12-04) exist before any case reads
    what earlier cases left. Without it the first case of a run counted them in its baseline and
    peak and every later case subtracted them as leftover: a 64 MiB step between the first case
    (nnnS) and the rest in the peak deltas of the validation. Nothing on the CPU."""
    if device.type != "cuda":
        return
    a = torch.ones(8, 8, device=device, requires_grad=True)
    torch.mm(a, a).sum().backward()
    torch.cuda.synchronize(device)


def run_step(system, state, schedule: str, step: int, device, peaks: list | None = None) -> tuple:
    """One step; returns (wall ms, process CPU ms). system.zero_grad() runs before it, untimed (FSDP: the
    gradients set to None; DeepSpeed: the previous boundary's deferred engine.step()).

    peaks (CUDA): a list that gains this step's (device peak, pinned peak, requested device peak) in bytes
    (the requested peak None when torch does not report it), read over the step alone: the peaks are reset
    after zero_grad(), so DeepSpeed's deferred optimizer step is outside them as it is outside the time
    (with it inside, DeepSpeed's SSSS peaks without offload read 1.7-1.9 GB above the profiled step's own:
    bench/real/README.md)."""
    system.zero_grad()
    x = torch.ones(1, device=device, requires_grad=True)
    _sync(device)
    watch = peaks is not None and device.type == "cuda"
    if watch:
        torch.cuda.reset_peak_memory_stats(device)
        torch.cuda.memory.reset_peak_host_memory_stats()
    t0, c0 = time.perf_counter(), time.process_time()
    with system.step_context():
        for mb, letter in enumerate(schedule):
            state.step, state.mb = step, mb
            with system.micro_batch(letter == "S"):
                system.forward_backward(x)
            system.end_micro_batch(mb == len(schedule) - 1)
    _sync(device)
    wall, cpu = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
    if watch:
        peaks.append((torch.cuda.max_memory_allocated(device),
                      torch.cuda.memory.host_memory_stats().get(PINNED_STAT_KEY),
                      torch.cuda.memory_stats(device).get(REQUESTED_PEAK_KEY)))
    return wall, cpu


def timed_steps(system, state, schedule: str, first_step: int, warmup: int, steps: int, device, progress) -> dict:
    """warmup untimed steps, then `steps` timed ones (step indices first_step...); the step counters,
    cpu_time and the memory peaks (CUDA only: absent on the CPU): the greatest of the measured steps'
    peaks, each over its step alone (run_step), beside device_baseline_bytes, what was allocated before
    the first measured step; and the same two in the bytes the tensors requested
    (peak_device_requested_bytes, device_baseline_requested_bytes), where torch reports them."""
    for i in range(warmup):
        ms, _ = run_step(system, state, schedule, first_step + i, device)
        progress(f"warm-up step {i + 1}/{warmup}: {ms:.1f} ms")
    system.zero_grad()
    out: dict = {}
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        out["device_baseline_bytes"] = torch.cuda.memory_allocated(device)
        requested = device_requested(device)
        if requested is not None:
            out["device_baseline_requested_bytes"] = requested
    times, cpus, peaks = [], [], []
    for i in range(steps):
        ms, cpu = run_step(system, state, schedule, first_step + warmup + i, device, peaks)
        times.append(ms)
        cpus.append(cpu)
        progress(f"step {i + 1}/{steps}: {ms:.1f} ms")
    if peaks:
        out["peak_device_bytes"] = max(device_peak for device_peak, _, _ in peaks)
        pinned = [p for _, p, _ in peaks if p is not None]
        if pinned:
            out["peak_pinned_bytes"] = int(max(pinned))
        requested = [r for _, _, r in peaks if r is not None]
        if requested and "device_baseline_requested_bytes" in out:
            out["peak_device_requested_bytes"] = int(max(requested))
        _drop_requested_above_allocated(out)
    out.update(step_ms=statistics.fmean(times), step_ms_median=statistics.median(times), step_ms_min=min(times),
               step_ms_max=max(times))
    return {"counters": out, "cpu_time_ms": statistics.fmean(cpus), "last_step": first_step + warmup + steps - 1}


def profiled_step(system, state, schedule: str, step: int, device, keep: str | None = None,
                  history_from: int | None = None) -> dict:
    """One more step under torch.profiler (never timed as the case's step): trace.analyse of its Kineto
    events, with profiled_step_ms, that step's wall time under the profiler (ms; the profiler's own cost
    included), beside which gpu_busy_ms says how much of it the GPU worked. CUDA only ({} on the CPU:
    there are no device copies or kernels to attribute).

    keep (the runner's --profile-dir): a path prefix; the step's Kineto trace is kept as
    KEEP.trace.json.gz (open it in ui.perfetto.dev). history_from (with keep, when the runner records
    PyTorch's memory history, start_memory_history): torch.cuda.memory_allocated when that began (bytes);
    the step is then bracketed by memhist's markers and KEEP.memory.json says what held device memory at
    its start and at its peak (memhist.summarise), beside max_memory_allocated over the step."""
    if device.type != "cuda":
        return {}
    from torch.profiler import ProfilerActivity, profile

    system.zero_grad()  # outside the profile: DeepSpeed's deferred optimizer step runs here
    marked = keep is not None and history_from is not None
    if marked:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        _marker(memhist.STEP_BEGIN_BYTES, device)  # allocated and freed at once: a mark in the trace
    # With keep, the ops' input shapes too: the kept trace then says which parameter each add was.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=keep is not None) as prof:
        wall_ms, _ = run_step(system, state, schedule, step, device)
    if marked:
        _marker(memhist.STEP_END_BYTES, device)
        _keep_memory(keep + ".memory.json", device, history_from)
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            events = json.load(f).get("traceEvents", [])
        if keep is not None:
            try:  # a diagnosis file: its failure must not cost the case its counters
                _gzip_atomic(path, keep + ".trace.json.gz")
            except OSError as e:
                print(f"[real]   --profile-dir: trace not kept: {e}", file=sys.stderr, flush=True)
    finally:
        os.unlink(path)
    return dict(trace.analyse(events), profiled_step_ms=wall_ms)


HISTORY_MAX_ENTRIES = 2_000_000  # trace entries kept; a case's history from its start needs ~10^4-10^5


def start_memory_history(device) -> int | None:
    """Starts recording PyTorch's memory history (allocations with their python stacks) for the case
    about to be built; returns torch.cuda.memory_allocated then (bytes), or None on the CPU. Its cost
    (a stack capture per allocation) lands in the case's timings: a diagnosis run's, says the context."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    torch.cuda.memory._record_memory_history(max_entries=HISTORY_MAX_ENTRIES, stacks="python")
    return torch.cuda.memory_allocated(device)


def stop_memory_history(device) -> None:
    """Stops start_memory_history's recording; nothing on the CPU."""
    if device.type == "cuda":
        torch.cuda.memory._record_memory_history(enabled=None)


def _marker(nbytes: int, device):
    """An allocation of a size no layout tensor has: memhist finds the profiled step between two."""
    return torch.empty(nbytes, dtype=torch.uint8, device=device)


def _keep_memory(path: str, device, history_from: int) -> None:
    """memhist's summary of the step just bracketed, at `path`. A diagnosis file: what goes wrong is
    written in it ({"error": ...}) or, when even that fails, said on stderr; the case goes on."""
    torch.cuda.synchronize(device)
    try:
        traces = torch.cuda.memory._snapshot().get("device_traces", [])
        index = device.index or 0
        doc = memhist.summarise(traces[index] if index < len(traces) else [], history_from)
    except (ValueError, RuntimeError) as e:
        doc = {"error": f"{type(e).__name__}: {e}"}
    doc["max_memory_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
    doc["allocated_before_history_bytes"] = history_from
    try:
        output.write_atomic(path, doc)
    except OSError as e:
        print(f"[real]   --profile-dir: {path} not written: {e}", file=sys.stderr, flush=True)


def _gzip_atomic(src: str, dst: str) -> None:
    """src gzipped to dst through a temporary file beside it, so a reader never sees half a trace."""
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(dst) + ".", suffix=".tmp", dir=os.path.dirname(dst) or ".")
    mask = os.umask(0)
    os.umask(mask)
    try:
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it 0600; the kept trace is an ordinary file
        with open(src, "rb") as fin, os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as fout:
            shutil.copyfileobj(fin, fout)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def pinned_allocated(device) -> int | None:
    """Pinned host bytes the caching host allocator holds for live tensors now (host_memory_stats()
    'allocated_bytes.current', after a synchronize and torch._C._host_emptyCache()); None on the CPU or
    when torch does not report it."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    # Blocks freed while copies on them were pending are released only when the caching host allocator
    # next processes its events; emptying its cache does that, so what is counted is what is alive.
    if hasattr(torch._C, "_host_emptyCache"):
        torch._C._host_emptyCache()
    v = torch.cuda.memory.host_memory_stats().get(PINNED_STAT_KEY.replace(".peak", ".current"))
    return None if v is None else int(v)


def _drop_requested_above_allocated(out: dict) -> None:
    """Removes the requested-bytes figures from `out` where one exceeds its allocated figure, which the
    allocator's rounding cannot make: that counter did not follow the case's frees. With torch 2.11 on one
    H100, real FSDP1 (flat parameters whose storage is resized to 0 and back) read 15.5 GB requested against
    9.0 GB allocated at its baseline and 19.3 against 16.3 at its peak (reports/h100-validation-probes-1207);
    FSDP2's read below its allocated figures. A figure that cannot be true is not kept."""
    pairs = (("peak_device_requested_bytes", "peak_device_bytes"),
             ("device_baseline_requested_bytes", "device_baseline_bytes"))
    if any(out.get(r) is not None and out.get(a) is not None and out[r] > out[a] for r, a in pairs):
        for r, _ in pairs:
            out.pop(r, None)
        print("[real]   requested_bytes above allocated_bytes: the requested peaks are not kept",
              file=sys.stderr, flush=True)


def device_requested(device) -> int | None:
    """The bytes live tensors requested from the caching allocator now (torch.cuda.memory_stats()
    'requested_bytes.all.current', after a synchronize): memory_allocated before its blocks' rounding.
    None on the CPU or when torch does not report it."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    v = torch.cuda.memory_stats(device).get(REQUESTED_PEAK_KEY.replace(".peak", ".current"))
    return None if v is None else int(v)


def device_allocated(device) -> int | None:
    """torch.cuda.memory_allocated after a synchronize (bytes); None on the CPU."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    return torch.cuda.memory_allocated(device)


def release_storage(module) -> None:
    """Frees a finished case's parameters, gradients and FSDP1 flat-parameter buffers (_local_shard,
    _full_param_padded, _cpu_grad, ...): their storages resized to 0, then each parameter's __dict__
    cleared. The clear breaks a cycle seen with a bare FSDP1 on the CPU (torch 2.11): a FlatParameter
    keeps the modules that own it (_modules, _param_infos), a cycle through a tensor's __dict__ that gc
    did not collect (tests/py_torch/test_release_storage.py). On one H200 every FSDP1 case of the runner
    left its 4.3 GB of uniform:16x64M to the next; the runner's own path on the CPU leaves no flat
    parameter alive even without the clear, so that cycle is not shown to be the GPU leak's cause
    (bench/real/README.md). Storages that cannot be resized (pinned host blocks of the caching
    allocator) are freed with their objects."""
    seen = set()

    def free(t) -> None:
        if not isinstance(t, torch.Tensor):
            return
        t = getattr(t, "_local_tensor", t)  # a DTensor (FSDP2) holds its shard here
        try:
            st = t.untyped_storage()
            if st.data_ptr() in seen or st.nbytes() == 0:
                return
            seen.add(st.data_ptr())
            st.resize_(0)
        except (RuntimeError, TypeError):
            pass

    for p in list(module.parameters()):
        free(p.grad)
        p.grad = None
        for v in list(vars(p).values()):
            free(v)
        free(p)
        vars(p).clear()  # breaks FlatParameter -> owning modules -> FlatParameter
