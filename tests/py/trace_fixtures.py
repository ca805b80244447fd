"""Hand-built traces in the issue 15 format (profiling/trace.*: `gpu step`, stream tracks, `host
tasks`, CUPTI records) and the run JSON beside them, for check_trace.py and the timeline tests."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import HOST_FIXTURE, load_doc, write_doc

RUN_ID = "5d2c8a64-0d7e-4b8e-9d1e-0123456789ab"
TRACKS = {1: "phases", 2: "compute stream", 3: "comm stream", 4: "copy stream", 5: "host tasks", 6: "step",
          7: "CUPTI compute", 8: "CUPTI copy"}


def case_names(n: int = 2) -> list[str]:
    """The first n case names of the committed host run, as the trace names cases (without Google
    Benchmark's /iterations:N/manual_time)."""
    doc = load_doc(HOST_FIXTURE)
    names = list(dict.fromkeys(b["run_name"].split("/iterations:")[0] for b in doc["benchmarks"]
                               if b.get("run_type") == "iteration"))
    return names[:n]


def step_events(case: str, step: int, t0: float, ms: float, pid: int = 0, cupti: bool = True,
                cupti_ms: float | None = None, step_ms: float | None = None) -> list[dict]:
    """One traced step of `case` starting at t0 µs: backward, reduce-scatter, d2h and a host task
    filling `ms`, its `gpu step`, and CUPTI records spanning `cupti_ms` (default: the same ms)."""
    us = ms * 1e3
    args = {"case": case, "step": step, "source": "CUDA events"}

    def x(tid, name, cat, ts, dur, extra=None):
        return {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "ts": ts, "dur": dur,
                "args": {**args, **(extra or {})}}
    ev = [x(1, f"step {step} {case}", "step", t0, us * 0.1),
          x(2, "backward", "gpu op", t0, us * 0.4),
          x(3, "reduce_scatter", "gpu op", t0 + us * 0.3, us * 0.3),
          x(4, "d2h", "gpu op", t0 + us * 0.6, us * 0.2),
          x(5, "cpu_add", "host", t0 + us * 0.8, us * 0.2),
          x(6, f"step {step} {case}", "gpu step", t0, us, {"step_ms": ms if step_ms is None else step_ms})]
    if cupti:
        # The host task ends the step; CUPTI sees the GPU part (the kernel and copies) only.
        c_us = (ms if cupti_ms is None else cupti_ms) * 1e3
        ev += [x(7, "generate_kernel", "kernel", t0, us * 0.4),
               x(8, "memcpy dtoh", "memcpy", t0 + us * 0.6, us * 0.2)]
        ev[4]["ts"], ev[4]["dur"] = t0 + c_us - us * 0.2, us * 0.2  # the host task at the clock's end
    for e in ev:
        if e["cat"] in ("kernel", "memcpy", "step", "gpu step"):
            del e["args"]["source"]
    return ev


def trace_doc(events: list[dict], run_id: str | None = RUN_ID, ranks=(0,)) -> dict:
    meta = []
    for pid in ranks:
        meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"rank {pid}"}})
        meta += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": t, "args": {"name": n}} for t, n in TRACKS.items()]
    other = {"backend": "cuda", "time_domain": "GPU ops from CUDA events mapped onto the host steady clock"}
    if run_id:
        other["run_id"] = run_id
    return {"traceEvents": meta + events, "otherData": other}


def run_doc(step_ms: dict[str, float], run_id: str | None = RUN_ID) -> dict:
    """The committed host run cut to the given cases (first repetition), their step_ms set (one step)."""
    doc = load_doc(HOST_FIXTURE)
    kept, seen = [], set()
    for b in doc["benchmarks"]:
        name = b["run_name"].split("/iterations:")[0]
        if b.get("run_type") == "iteration" and name in step_ms and name not in seen:
            seen.add(name)
            b["step_ms"] = b["step_ms_min"] = b["step_ms_max"] = step_ms[name]
            kept.append(b)
    doc["benchmarks"] = kept
    doc["context"]["backend"] = "cuda"
    doc["context"].pop("run_id", None)
    if run_id:
        doc["context"]["run_id"] = run_id
    return doc


def write(tmp: Path, trace: dict, run: dict) -> tuple[Path, Path]:
    t = tmp / "trace.json"
    t.write_text(json.dumps(trace))
    return write_doc(run, tmp / "run.json"), t
