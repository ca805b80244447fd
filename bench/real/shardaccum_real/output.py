"""The runner's Google Benchmark JSON (spec C of issue 13): one entry per case, strict (no NaN or
Infinity), written atomically; accumulation costs A and B computed from the cases that ran."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path

# Counters a case result may carry, all numbers; one not measured is absent, never a fake 0.
COUNTERS = ("step_ms", "step_ms_median", "step_ms_min", "step_ms_max", "accum_cost_a_ms", "accum_cost_b_ms",
            "d2h_bytes", "h2d_bytes", "d2h_ms", "h2d_ms", "d2h_pageable_bytes", "param_h2d_bytes",
            "param_d2h_bytes", "param_h2d_ms", "meta_h2d_bytes", "reduce_scatter_ms", "all_gather_ms", "all_reduce_ms", "nccl_ms",
            "cpu_add_ms", "gpu_busy_ms", "profiled_step_ms", "peak_device_bytes", "device_baseline_bytes", "device_leftover_bytes",
            "peak_device_requested_bytes", "device_baseline_requested_bytes", "device_leftover_requested_bytes",
            "pinned_leftover_bytes",
            "peak_pinned_bytes", "correct",
            "max_rel_err", "err_bound", "k", "world_size", "tokens")


def net_of_leftover(counters: dict, leftover: int | None, pinned_leftover: int | None = None,
                    requested_leftover: int | None = None) -> dict:
    """The memory figures of one case net of what earlier cases of the process left allocated: device
    (`leftover`, bytes: torch.cuda.memory_allocated before the case built anything), pinned host
    (`pinned_leftover`: the caching host allocator's allocated_bytes.current then) and device in requested
    bytes (`requested_leftover`: memory_stats' requested_bytes.all.current then); None on the CPU.
    That memory belongs to dead objects (FSDP1's hooks, DeepSpeed's pinned buffers: bench/real/README.md)
    and stays allocated during the case, so peak - leftover is the case's own peak. The leftovers are
    kept as device_leftover_bytes, pinned_leftover_bytes and device_leftover_requested_bytes, so nothing is
    hidden. Returns a new dict."""
    out = dict(counters)
    for left, name, keys in ((leftover, "device_leftover_bytes", ("peak_device_bytes", "device_baseline_bytes")),
                             (pinned_leftover, "pinned_leftover_bytes", ("peak_pinned_bytes",)),
                             (requested_leftover, "device_leftover_requested_bytes",
                              ("peak_device_requested_bytes", "device_baseline_requested_bytes"))):
        if left is None:
            continue
        out[name] = left
        for key in keys:
            if out.get(key) is not None:
                out[key] = max(0, out[key] - left)
    return out


class OutputError(Exception):
    """A result that cannot be written as strict JSON (a non-finite or unknown counter)."""


def entry(case, counters: dict, iterations: int = 0, cpu_time_ms: float | None = None,
          error: str | None = None) -> dict:
    """One benchmark entry: iterations = measured steps, real_time = step_ms, cpu_time = host CPU ms of
    the process per step (0 when absent, as Google Benchmark needs the key). `counters` holds COUNTERS
    keys only (finite numbers; None = not measured and dropped); an `error` makes the entry
    error_occurred with that message. Raises OutputError."""
    e = {"name": case.name, "family_index": 0, "per_family_instance_index": 0, "run_name": case.name,
         "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1, "time_unit": "ms"}
    base = {"k": len(case.schedule), "world_size": case.world, "tokens": case.tokens}
    if error is not None:
        e.update(error_occurred=True, error_message=error, iterations=0, real_time=0, cpu_time=0, **base)
        return e
    for key, v in counters.items():
        if key not in COUNTERS:
            raise OutputError(f"{case.name}: unknown counter {key}")
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise OutputError(f"{case.name}: counter {key} = {v!r} is not a finite number")
        e[key] = v
    e.update(base, iterations=iterations)
    e["real_time"] = e.get("step_ms", 0)
    e["cpu_time"] = cpu_time_ms if cpu_time_ms is not None else 0
    e["label"] = f"real {case.system}; " + ("correct" if e.get("correct") == 1 else "WRONG")
    return e


def add_accum_costs(entries: list, cases: list) -> None:
    """A = step_ms - step_ms of case.baseline('none'); B = step_ms - step_ms of case.baseline(own offload);
    each only when that baseline ran without error in this run (`cases[i]` is the case of entries[i])."""
    step = {c.name: e["step_ms"] for c, e in zip(cases, entries) if not e.get("error_occurred") and "step_ms" in e}
    for c, e in zip(cases, entries):
        if c.name not in step:
            continue
        for key, offload in (("accum_cost_a_ms", "none"), ("accum_cost_b_ms", c.offload)):
            base = step.get(c.baseline(offload).name)
            if base is not None:
                e[key] = step[c.name] - base


def write_atomic(path: str, doc: dict) -> None:
    """Writes doc as strict JSON (ValueError on NaN/Inf) to a temporary file beside `path`, then
    os.replace: a reader sees the old file or the whole new one. The file's mode follows the umask."""
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    mask = os.umask(0)
    os.umask(mask)
    try:
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it 0600; the result is an ordinary file (umask applies)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def case_file_stem(name: str) -> str:
    """A case's name as a file name: every character outside [A-Za-z0-9._-] becomes '_'
    ('real/system:fsdp2/model:gpt2-xl/...' -> 'real_system_fsdp2_model_gpt2-xl_...')."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)
