"""Shared fixtures: import paths, the committed host fixture, generated runs, and CLI runners."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
FIXTURES = ROOT / "tests" / "fixtures"
HOST_FIXTURE = FIXTURES / "host_w2_uniform8x1M.json"

for path in (SCRIPTS, FIXTURES):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import make_fixture  # noqa: E402


def run_script(script: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs scripts/<script> with this interpreter; returns the completed process (text output)."""
    return subprocess.run([sys.executable, str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=300)


def write_doc(doc: dict, path: Path) -> Path:
    make_fixture.write(doc, str(path))
    return path


def entries_of(doc: dict, name: str, run_type: str | None = "iteration") -> list[dict]:
    """The entries of one case, matched by its axes (so Google Benchmark suffixes such as /manual_time
    in a real run's names do not matter); run_type None gives iterations and aggregates."""
    from shardaccum_report.case import parse_case_name
    key = parse_case_name(name)
    found = []
    for e in doc["benchmarks"]:
        entry_name = e.get("run_name") or e["name"]
        if e.get("run_type") == "aggregate" and entry_name == e["name"]:
            entry_name = entry_name.removesuffix("_" + str(e.get("aggregate_name")))
        if (run_type is None or e.get("run_type", "iteration") == run_type) and parse_case_name(entry_name) == key:
            found.append(e)
    return found


iteration_entries = entries_of


def plant_slowdown(doc: dict, name: str, factor: float) -> dict:
    """Makes one case `factor` times slower in place: its times (ms) times factor, bandwidths divided."""
    entries = entries_of(doc, name, run_type=None)
    assert entries, name
    for e in entries:
        if e.get("aggregate_name") == "cv":
            continue
        for key, value in list(e.items()):
            if isinstance(value, float) and (key.endswith("_ms") or key in ("real_time", "cpu_time")):
                e[key] = value * factor
            elif isinstance(value, float) and key.endswith("_gbps"):
                e[key] = value / factor
    return doc


def fixture_doc() -> dict:
    """A fresh copy of the committed host fixture, to modify."""
    return json.loads(HOST_FIXTURE.read_text())


def section(text: str, heading: str) -> str:
    """The Markdown from a heading line (e.g. '### Peak memory') to the next heading of its level or higher."""
    lines = text.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    start = lines.index(heading)
    end = len(lines)
    for i in range(start + 1, len(lines)):
        stripped = lines[i]
        if stripped.startswith("#") and len(stripped) - len(stripped.lstrip("#")) <= level:
            end = i
            break
    return "\n".join(lines[start:end])


def table_row(text: str, *cells: str) -> list[str]:
    """The cells of the one table row whose first cells are `cells`; fails unless exactly one matches."""
    prefix = "| " + " | ".join(cells) + " |"
    rows = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(rows) == 1, f"expected one row starting {prefix!r}, found {len(rows)}"
    return [c.strip() for c in rows[0].strip().strip("|").split(" | ")]


@pytest.fixture(scope="session")
def host_doc() -> dict:
    return json.loads(HOST_FIXTURE.read_text())


@pytest.fixture(scope="session")
def host_report(tmp_path_factory) -> tuple[Path, str, subprocess.CompletedProcess]:
    """The committed host fixture turned into a report through the CLI: (README path, text, process)."""
    out = tmp_path_factory.mktemp("reports")
    proc = run_script("report.py", HOST_FIXTURE, "--name", "host-fixture", "--out-dir", out)
    assert proc.returncode == 0, proc.stderr
    readme = out / "host-fixture" / "README.md"
    return readme, readme.read_text(encoding="utf-8"), proc


@pytest.fixture(scope="session")
def cuda_runs(tmp_path_factory) -> list[Path]:
    """Three cuda runs: world 2 K 4, world 4 K 4, world 2 K 8 (one case failing), 4 repetitions each."""
    d = tmp_path_factory.mktemp("cuda")
    failing = {"schedule:SSSSSSSS/binding:data/offload:copy/mode:flag":
               "rank 1: checked add: unit 3 micro-batch 2: operands in different memory spaces (device | pinned)"}
    return [write_doc(make_fixture.make_run("cuda", 2, 4, repetitions=4, seed=11), d / "w2k4.json"),
            write_doc(make_fixture.make_run("cuda", 4, 4, repetitions=4, seed=12), d / "w4k4.json"),
            write_doc(make_fixture.make_run("cuda", 2, 8, repetitions=4, seed=13, errors=failing), d / "w2k8.json")]


@pytest.fixture(scope="session")
def cuda_report(tmp_path_factory, cuda_runs) -> tuple[Path, str]:
    from shardaccum_report.report import build_report
    readme = build_report(cuda_runs, "cuda-multi", tmp_path_factory.mktemp("reports"))
    return readme, readme.read_text(encoding="utf-8")
