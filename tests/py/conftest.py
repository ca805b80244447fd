"""Shared fixtures: import paths, the committed runs (host fixtures recorded from the binary by
tests/fixtures/regenerate.sh, GPU runs under reports/), edits planted into copies, and CLI runners."""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
FIXTURES = ROOT / "tests" / "fixtures"
# Real output of the host backend: the whole matrix at K 4 (2 repetitions), and the presets at K 8.
HOST_FIXTURE = FIXTURES / "host_w2_uniform8x64K.json"
HOST_K8_FIXTURE = FIXTURES / "host_w2k8_uniform8x64K.json"
MODEL = "uniform:8x64K"
# Real GPU runs (2x H200): llama2-7b at world 2 (all 16 strategies) and at world 1 (data-free/flag).
GPU_RUN = ROOT / "reports" / "h200x2-llama2-7b" / "run.json"
GPU_RUN_W1 = ROOT / "reports" / "h200-reliability" / "check_every.json"

if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))


# run_script runs the tools inside this process: a new interpreter importing numpy, scipy and
# matplotlib cost about a second for each of ~80 calls, half the suite's time. 1: a process each.
SUBPROCESS = os.environ.get("SHARDACCUM_TEST_SUBPROCESS") == "1"


def run_script(script: str, *args: str, cwd: Path | None = None, own_process: bool = False) -> subprocess.CompletedProcess:
    """Runs scripts/<script> as `python scripts/<script> ARGS` from `cwd` (default ROOT) would: its exit
    status (SystemExit's code; 1 and a traceback on stderr for an uncaught exception), stdout and stderr
    as text, in a CompletedProcess. In this process (the tools use no global state: their plots are
    pyplot-free Figures) unless SHARDACCUM_TEST_SUBPROCESS=1 or own_process (a test of what the tool
    does to its process's file descriptors, such as --out /proc/self/fd/1)."""
    argv = [str(SCRIPTS / script), *map(str, args)]
    if SUBPROCESS or own_process:
        return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd or ROOT, timeout=300)
    out, err, code = io.StringIO(), io.StringIO(), 0
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    try:
        sys.argv = argv
        os.chdir(cwd or ROOT)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                runpy.run_path(argv[0], run_name="__main__")
            except SystemExit as e:  # as the interpreter turns it into an exit status
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
            except Exception:  # noqa: BLE001  (an uncaught exception: the interpreter prints it, exits 1)
                traceback.print_exc()
                code = 1
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    return subprocess.CompletedProcess([sys.executable, *argv], code, out.getvalue(), err.getvalue())


def write_doc(doc: dict, path: Path) -> Path:
    """Writes a benchmark document as strict JSON (no NaN/Infinity), as shardaccum_bench does."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, allow_nan=False)
        f.write("\n")
    return path


def load_doc(path: Path) -> dict:
    """A fresh copy of a committed run, to modify."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


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


def plant_error(doc: dict, name: str, message: str) -> dict:
    """Makes one case end with `message` in place, as Google Benchmark writes a SkipWithError: each
    repetition an entry with error_occurred, no counters; no aggregates."""
    entries = entries_of(doc, name, run_type=None)
    assert entries, name
    benchmarks, done = [], False
    for e in doc["benchmarks"]:
        if not any(e is x for x in entries):
            benchmarks.append(e)
        elif not done:
            done = True
            for rep in range(int(e.get("repetitions", 1))):
                benchmarks.append({key: e[key] for key in ("name", "family_index", "per_family_instance_index",
                                                            "run_name", "repetitions", "threads") if key in e}
                                  | {"name": e.get("run_name", e["name"]), "run_type": "iteration",
                                     "repetition_index": rep, "iterations": 0, "real_time": 0.0, "cpu_time": 0.0,
                                     "time_unit": "ms", "error_occurred": True, "error_message": message})
    doc["benchmarks"] = benchmarks
    return doc


def drop_counters(doc: dict, *counters: str) -> dict:
    """Leaves `counters` out of every entry, in place (a binary that does not write them)."""
    for e in doc["benchmarks"]:
        for counter in counters:
            e.pop(counter, None)
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


def notes_of(tmp_path: Path, setting: str, value: str | None, preset_value) -> str:
    """The '## Notes' of a report on the host fixture whose context gives `setting` = `value` (left
    out when None) and whose registry's presets each carry `setting` = preset_value(name): how a
    per-system setting's note (--device-add-grid, --comm-priority) reads."""
    from shardaccum_report.report import build_report

    doc = fixture_doc()
    if value is not None:
        doc["context"][setting] = value
    registry = doc["context"]["registry"]
    registry = json.loads(registry) if isinstance(registry, str) else registry
    for p in registry["presets"]:
        p[setting] = preset_value(p["name"])
    doc["context"]["registry"] = registry
    readme = build_report([write_doc(doc, tmp_path / "run.json")], "notes", tmp_path / "out")
    return section(readme.read_text(encoding="utf-8"), "## Notes")


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


FAILING_W1 = ("accum/model:llama2-7b/world:1/schedule:SSSS/binding:data-free/offload:copy/mode:flag/"
              "dtype:fp32-fp32-fp32")
FAILING_MESSAGE = "rank 0: checked add: unit 3 micro-batch 2: operands in different memory spaces (device | pinned)"


@pytest.fixture(scope="session")
def cuda_runs(tmp_path_factory) -> list[Path]:
    """Two real cuda runs of llama2-7b at K 4: world 2 (all strategies) and world 1 (data-free/flag),
    one case of the world-1 run planted failing."""
    d = tmp_path_factory.mktemp("cuda")
    return [write_doc(load_doc(GPU_RUN), d / "w2k4.json"),
            write_doc(plant_error(load_doc(GPU_RUN_W1), FAILING_W1, FAILING_MESSAGE), d / "w1k4.json")]


@pytest.fixture(scope="session")
def cuda_report(tmp_path_factory, cuda_runs) -> tuple[Path, str]:
    from shardaccum_report.report import build_report
    readme = build_report(cuda_runs, "cuda-multi", tmp_path_factory.mktemp("reports"))
    return readme, readme.read_text(encoding="utf-8")
