"""A run written with --benchmark_report_aggregates_only (Google Benchmark's mean/median/stddev/cv
entries, no repetition): report.py and compare.py say how many repetitions the aggregates summarise and
that there is no per-repetition value, instead of '0 repetitions', and the report says its max_rel_err
is a mean. Made by the real binary (two host cases, a second or so)."""

from __future__ import annotations

import json
import subprocess

import pytest

from bench_build import built_preset
from conftest import run_script

TINY = ["--backend", "host", "--model", "uniform:2x1000", "--schedule", "SSSS", "--offload", "none,copy",
        "--binding", "data", "--mode", "flag", "--steps", "1", "--warmup", "0", "--benchmark_repetitions=3",
        "--benchmark_out_format=json"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    _, exe = built_preset()
    d = tmp_path_factory.mktemp("agg")
    out = {}
    for name, extra in (("agg", ["--benchmark_report_aggregates_only=true"]), ("reps", [])):
        path = d / f"{name}.json"
        proc = subprocess.run([str(exe), *TINY, *extra, f"--benchmark_out={path}"], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        out[name] = path
    doc = json.loads(out["agg"].read_text())
    assert doc["benchmarks"] and all(e["run_type"] == "aggregate" for e in doc["benchmarks"])
    out["dir"] = d
    return out


def test_the_report_counts_the_repetitions_the_aggregates_summarise(runs):
    proc = run_script("report.py", runs["agg"], "--name", "agg", "--out-dir", runs["dir"] / "reports")
    assert proc.returncode == 0, proc.stderr
    text = (runs["dir"] / "reports" / "agg" / "README.md").read_text()
    assert "3 repetitions per case" in text and "0 repetitions" not in text
    assert "2 of these cases are Google Benchmark's aggregates only" in text
    assert "`max_rel_err` is the mean over repetitions, not the largest" in text
    assert "Median over 3 repetitions" in text
    # No spread is shown or used: mean and median of the repetitions' fastest steps are not the fastest.
    assert "unknown: the JSON shows no spread of it" in text
    assert "the largest over repetitions (the mean, for aggregates only)" in text


def test_compare_says_aggregates_not_zero_repetitions(runs):
    proc = run_script("compare.py", runs["agg"], runs["reps"])
    assert proc.returncode in (0, 1), proc.stderr  # 1: a host time moved by more than 5% (not asserted on)
    assert "baseline aggregates only (--benchmark_report_aggregates_only): no per-repetition values, no U test" \
        in proc.stdout
    assert "0 vs 3 repetitions" not in proc.stdout
