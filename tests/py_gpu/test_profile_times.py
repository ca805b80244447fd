"""scripts/profile.sh on one small case on the GPU (world 1, cpu-add, SSSS): the bytes and the
times check pass and NAME.times.json has every figure. Needs the CUDA build (cmake --preset default
&& cmake --build --preset default -j), Nsight Systems, and NSYS_DEPS naming the libdw/libelf carry
made by scripts/nsys-deps.sh DIR (the GPU machines' nsys importer needs it); skips loudly without.

Run on the GPU machine:  NSYS_DEPS=$PWD/.deps/nsys python3 -m pytest tests/py_gpu/test_profile_times.py -q
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "build" / "bench" / "shardaccum_bench"
FIGURES = ["nccl", "backward", "h2d", "d2h", "cpu_add", "step"]


def _skip(why: str):
    warnings.warn(f"SKIPPED the nsys time check: {why}")  # in pytest's summary, not only with -rs
    pytest.skip(why, allow_module_level=True)


def _nsys() -> str | None:
    if os.environ.get("NSYS"):
        return os.environ["NSYS"]
    found = shutil.which("nsys") or next(iter(sorted(glob.glob("/opt/nvidia/nsight-systems/*/bin/nsys")) + sorted(
        glob.glob("/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys"))), None)
    return found


if shutil.which("nvidia-smi") is None or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
    _skip("no GPU (nvidia-smi lists none)")
if _nsys() is None:
    _skip("Nsight Systems (nsys) not found: set NSYS=/path/to/nsys")
if not os.environ.get("NSYS_DEPS"):
    _skip("NSYS_DEPS is unset: make the libdw carry with scripts/nsys-deps.sh DIR and set NSYS_DEPS=DIR")


def test_profile_sh_times_check_passes_on_a_small_case(tmp_path):
    assert BENCH.is_file(), f"no {BENCH}: cmake --preset default && cmake --build --preset default -j"
    # A copy of scripts/: profile.sh writes under its root's reports/profiles/, not the checkout's.
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts", ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    cmd = ["bash", str(tmp_path / "scripts" / "profile.sh"), "--filter", "binding:data/offload:cpu-add/mode:flag",
           "--name", "gpu-times", "--bench", str(BENCH), "--", "--model", "uniform:4x16M", "--world-size", "1",
           "--schedule", "SSSS"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ, NSYS=_nsys()))
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-6000:]}\n{proc.stderr[-4000:]}"
    rows = json.loads((tmp_path / "reports" / "profiles" / "gpu-times.times.json").read_text())
    cases = {r["case"] for r in rows}
    assert len(cases) == 1
    for case in cases:
        assert [r["figure"] for r in rows if r["case"] == case] == FIGURES
    assert all(r["ok"] and r["suite_ms"] is not None for r in rows), rows
