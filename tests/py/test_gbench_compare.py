"""Google Benchmark's own compare.py reads what shardaccum_bench writes with repetitions.

Repetitions give a `_cv` aggregate that is 0/0 = NaN for a counter that is always 0; the suite writes
it as null so the file is strict JSON (and is written at all: it used to be refused as incomplete).
compare.py comes with Debian's libbenchmark-tools (scripts/install_deps.sh installs it for tests).
The binary is $SHARDACCUM_BENCH, else the newest of build/ and build-host/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

COMPARE_CANDIDATES = [Path("/usr/share/benchmark/compare.py"), Path("/usr/local/share/benchmark/compare.py")]
CASE = ["--backend", "host", "--model", "uniform:2x1000", "--schedule", "nnnS,SSSS", "--binding", "data",
        "--offload", "none", "--mode", "flag", "--steps", "1", "--warmup", "0", "--benchmark_repetitions=3"]


def _compare_py() -> Path:
    for p in COMPARE_CANDIDATES:
        if p.is_file():
            return p
    pytest.skip("Google Benchmark's compare.py is not installed (apt-get install libbenchmark-tools, or "
                "scripts/install_deps.sh --for test)")


def _bench() -> Path:
    if os.environ.get("SHARDACCUM_BENCH"):
        return Path(os.environ["SHARDACCUM_BENCH"])
    built = [p for p in (ROOT / "build" / "bench" / "shardaccum_bench", ROOT / "build-host" / "bench" / "shardaccum_bench")
             if p.is_file()]
    assert built, "shardaccum_bench is not built: cmake --preset host && cmake --build --preset host (or scripts/test.sh)"
    return max(built, key=lambda p: p.stat().st_mtime)


def _strict(text: str) -> dict:
    def refuse(token: str):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def _run(bench: Path, out: Path) -> dict:
    proc = subprocess.run([str(bench), *CASE, f"--benchmark_out={out}", "--benchmark_out_format=json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return _strict(out.read_text())


def test_compare_py_reads_two_runs_with_repetitions(tmp_path: Path) -> None:
    compare = _compare_py()
    bench = _bench()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    doc = _run(bench, a)
    _run(bench, b)
    # --offload none moves nothing host<->device: h2d_bytes is 0 in every repetition, its cv 0/0.
    cv = [e for e in doc["benchmarks"] if e.get("aggregate_name") == "cv"]
    assert len(cv) == 2 and all(e["h2d_bytes"] is None for e in cv), cv

    proc = subprocess.run([sys.executable, str(compare), "benchmarks", str(a), str(b)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for schedule in ("nnnS", "SSSS"):
        assert f"schedule:{schedule}" in proc.stdout, proc.stdout
    assert "_mean" in proc.stdout and "_cv" in proc.stdout, proc.stdout
