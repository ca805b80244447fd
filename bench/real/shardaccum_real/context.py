"""The JSON's context: Google Benchmark's keys plus the runner's (spec C of issue 13). Torch facts are
passed in, so this module imports no torch."""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TIME_DOMAIN = {"cuda": "wall-clock around torch.cuda.synchronize(): GPU time",
               "cpu": "host wall-clock (--device cpu development mode on gloo): host times, not GPU times"}


def git_commit() -> str:
    """SHARDACCUM_GIT_COMMIT when set (as shardaccum_bench reads it, bench/run_context.cpp: a copy of the
    tree whose .git is not its commit, e.g. on a GPU machine), else HEAD of the checkout the runner lives
    in, '-dirty' appended when it has changes; 'unknown' without git."""
    if os.environ.get("SHARDACCUM_GIT_COMMIT"):
        return os.environ["SHARDACCUM_GIT_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("-dirty" if dirty else "")) if head else "unknown"


def _mhz() -> int:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return int(float(line.split(":")[1]))
    except (OSError, ValueError):
        pass
    return 0


def merge_settings(per_case: list) -> dict:
    """{system: settings} of the cases that ran, a key whose value differs between cases given as the
    list of its distinct values (in first-seen order)."""
    out: dict = {}
    for system, settings in per_case:
        acc = out.setdefault(system, {})
        for k, v in settings.items():
            vals = acc.setdefault(k, [])
            if v not in vals:
                vals.append(v)
    return {s: {k: v[0] if len(v) == 1 else v for k, v in acc.items()} for s, acc in out.items()}


def build(opts, world: int, torch_facts: dict, generator_path: str, layout_sources: dict, settings: list,
          dtype_mapping: str, pinned_key: str) -> dict:
    """The context dict; every value a string (as the suite's), numbers only where Google Benchmark has them."""
    ctx = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "host_name": socket.gethostname(), "executable": sys.argv[0], "num_cpus": os.cpu_count() or 0,
           "mhz_per_cpu": _mhz(), "cpu_scaling_enabled": False, "caches": [],
           "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else [],
           "library_build_type": "release", "backend": "real", "run_id": str(uuid.uuid4()),
           "git_commit": git_commit(), "command": " ".join(sys.argv),
           "machine": f"{platform.node()} ({platform.platform()})", "time_domain": TIME_DOMAIN[opts.device],
           "systems": json.dumps(merge_settings(settings), sort_keys=True), "tf32": "off",
           "dtype_mapping": dtype_mapping, "layout_source": json.dumps(layout_sources, sort_keys=True),
           "generator": generator_path, "pinned_stat_key": f"torch.cuda.memory.host_memory_stats()['{pinned_key}']",
           "world_size": str(world), "seed": str(opts.seed), "warmup_steps": str(opts.warmup),
           "measured_steps": str(opts.steps), "profiled_steps": "1" if opts.device == "cuda" else "0"}
    ctx.update({k: str(v) for k, v in torch_facts.items()})
    return ctx
