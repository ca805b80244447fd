"""scripts/run.sh builds the whole report in a new folder and swaps it in only on success: a failed rerun
leaves the older reports/NAME byte for byte as it was; --part I/N writes reports/NAME.part-I-of-N/."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from bench_build import ROOT, built_preset


def tiny(offload="none", steps="1"):
    """One case per offload, `steps` measured steps: seconds, most of them the report's plots."""
    return ["--model", "uniform:2x1K", "--schedule", "sync", "--offload", offload, "--binding", "data", "--mode", "flag",
            "--steps", steps, "--backend", "host"]


KEPT = ("run.json", "trace.json", "README.md")


def _run_sh(*args, python=sys.executable):
    preset, _ = built_preset()
    env = dict(os.environ, SHARDACCUM_PRESET=preset, SHARDACCUM_PYTHON=str(python), MPLBACKEND="Agg")
    return subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), "--no-install", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)


@pytest.fixture
def name():
    """A report name under reports/ that .gitignore covers (run-*), removed afterwards with its stages."""
    n = f"run-pytest-{os.getpid()}"
    yield n
    for d in (ROOT / "reports").glob(f"{n}*"):
        shutil.rmtree(d, ignore_errors=True)
    for d in (ROOT / "reports").glob(f".{n}*"):
        shutil.rmtree(d, ignore_errors=True)


def _snapshot(folder):
    """The bytes of the report's files (None for one that is missing)."""
    return {f: (folder / f).read_bytes() if (folder / f).is_file() else None for f in KEPT}


def _stages(name):
    return sorted(p.name for p in (ROOT / "reports").glob(f".{name}*"))


def test_a_failed_rerun_keeps_the_old_report_and_a_good_one_replaces_it(name):
    folder = ROOT / "reports" / name
    first = _run_sh("--name", name, "--", *tiny())
    assert first.returncode == 0, first.stderr
    before = _snapshot(folder)
    assert json.loads(before["run.json"])["context"]["measured_steps"] == "1"
    assert f"`reports/{name}/run.json`" in before["README.md"].decode()  # the report names where it ended up

    # The benchmark itself fails (no case matches the filter) after run.sh has started writing.
    failed = _run_sh("--name", name, "--", *tiny(), "--benchmark_filter=matches-nothing")
    assert failed.returncode != 0, failed.stdout
    now = _snapshot(folder)
    assert [f for f in KEPT if now[f] != before[f]] == [], "files of the old report changed or lost"
    assert f"reports/{name}/ is left as it was" in failed.stderr
    assert _stages(name) == []

    again = _run_sh("--name", name, "--", *tiny(steps="2"))
    assert again.returncode == 0, again.stderr
    after = _snapshot(folder)
    assert json.loads(after["run.json"])["context"]["measured_steps"] == "2"
    assert after["trace.json"] != before["trace.json"]
    assert _stages(name) == []


def test_a_failed_report_keeps_the_old_report_and_the_new_results_apart(name, tmp_path):
    folder = ROOT / "reports" / name
    first = _run_sh("--name", name, "--", *tiny())
    assert first.returncode == 0, first.stderr
    before = _snapshot(folder)
    # A Python whose report.py fails (exit 3, as on an internal error) and that runs everything else.
    broken = tmp_path / "python"
    broken.write_text(f'#!/bin/bash\ncase "$1" in */report.py) exit 3 ;; esac\nexec "{sys.executable}" "$@"\n')
    broken.chmod(0o755)
    failed = _run_sh("--name", name, "--", *tiny(steps="2"), python=broken)
    assert failed.returncode == 1, failed.stderr
    assert _snapshot(folder) == before
    kept = ROOT / "reports" / f".{name}.partial.{_stages(name)[0].rsplit('.', 1)[1]}" / "reports" / name
    assert f"kept in {kept.relative_to(ROOT)}/" in failed.stderr
    assert json.loads((kept / "run.json").read_text())["context"]["measured_steps"] == "2"
    # The next run of the name removes that stage (its run is over) and replaces the report.
    again = _run_sh("--name", name, "--", *tiny(steps="2"))
    assert again.returncode == 0, again.stderr
    assert _stages(name) == []
    assert json.loads((folder / "run.json").read_text())["context"]["measured_steps"] == "2"


def _stop_run_sh(name, tmp_path, wrap, wait_for, extra_env=None):
    """Starts run.sh --name NAME on tiny(steps=2) in its own process group, with `wrap` ({tool: bash body})
    as wrapper scripts ahead on PATH (and SHARDACCUM_PYTHON when it wraps python), waits until its output
    shows `wait_for`, and sends TERM to the group as `timeout` does. Returns (exit code, output, pid)."""
    preset, _ = built_preset()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, body in wrap.items():
        (bin_dir / tool).write_text("#!/bin/bash\n" + body)
        (bin_dir / tool).chmod(0o755)
    out = tmp_path / "output"
    env = dict(os.environ, SHARDACCUM_PRESET=preset, MPLBACKEND="Agg", PATH=f"{bin_dir}:{os.environ['PATH']}",
               SHARDACCUM_PYTHON=str(bin_dir / "python") if "python" in wrap else sys.executable, **(extra_env or {}))
    with open(out, "w") as f:
        proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "run.sh"), "--no-install", "--name", name, "--",
                                 *tiny(steps="2")], cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        for _ in range(1200):  # up to 120 s for the build check and the benchmark
            if wait_for in out.read_text() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert wait_for in out.read_text(), out.read_text()
        os.killpg(proc.pid, signal.SIGTERM)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return rc, out.read_text(), proc.pid


def test_a_report_stopped_by_a_signal_keeps_the_finished_results(name, tmp_path):
    """`timeout` signals run.sh's whole process group: once the benchmark has written run.json, a TERM in the
    report (minutes for a GPU job with a trace) keeps the results instead of deleting them with the stage."""
    slow_report = f'case "$1" in */report.py) echo "report.py started" >&2; exec sleep 120 ;; esac\nexec "{sys.executable}" "$@"\n'
    rc, out, pid = _stop_run_sh(name, tmp_path, {"python": slow_report}, "report.py started")
    assert rc == 143, out
    kept = ROOT / "reports" / f".{name}.partial.{pid}" / "reports" / name
    assert f"finished results are kept in {kept.relative_to(ROOT)}/ until the next run with --name {name}" in out
    assert json.loads((kept / "run.json").read_text())["context"]["measured_steps"] == "2"
    assert not (ROOT / "reports" / name).exists()  # nothing half-written took the report's place


def test_a_signal_during_the_swap_waits_until_the_new_report_is_in_place(name, tmp_path):
    """Between the swap's two renames reports/NAME is absent: a TERM there is held until both are done."""
    first = _run_sh("--name", name, "--", *tiny())
    assert first.returncode == 0, first.stderr
    # mv sleeps after moving the older report aside, the window the signal is sent in; it ignores the
    # signal itself, as a real mv (a few microseconds) would be past it.
    slow_mv = ('trap "" TERM INT HUP\nset -e\n/bin/mv "$@"\n'
               'case "${@: -1}" in */old) echo "older report moved aside"; sleep 3 ;; esac\n')
    rc, out, pid = _stop_run_sh(name, tmp_path, {"mv": slow_mv}, "older report moved aside")
    assert rc == 143, out
    assert f"the new report had replaced reports/{name}/: it is whole there" in out
    assert json.loads((ROOT / "reports" / name / "run.json").read_text())["context"]["measured_steps"] == "2"
    assert "kept in" not in out and _stages(name) == []


def test_only_this_names_dead_stages_are_removed(name):
    """reports/.NAME.partial.PID of a dead PID is this name's leftover; .NAME.partial.1.partial.PID is the
    stage of the name NAME.partial.1, which a run of NAME leaves alone."""
    dead = 2**22 + 7  # above the largest pid_max Linux allows (2**22): no live process has it
    assert subprocess.run(["kill", "-0", str(dead)], capture_output=True).returncode != 0
    own = ROOT / "reports" / f".{name}.partial.{dead}"
    other = ROOT / "reports" / f".{name}.partial.1.partial.{dead}"
    for d in (own, other):
        (d / "reports").mkdir(parents=True)
    proc = _run_sh("--name", name, "--", *tiny())
    assert proc.returncode == 0, proc.stderr
    assert not own.exists() and other.exists()


def test_part_goes_to_its_own_folder_and_needs_a_name(name):
    two = tiny(offload="none,copy")  # 2 cases
    proc = _run_sh("--name", name, "--part", "2/2", "--", *two)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((ROOT / "reports" / f"{name}.part-2-of-2" / "run.json").read_text())
    assert doc["context"]["part"] == "2/2" and doc["context"]["matrix_cases"] == "2"
    assert len(doc["benchmarks"]) == 1
    assert "scripts/merge.py" in proc.stdout
    assert not (ROOT / "reports" / name).exists()
    for bad in (["--part", "1/2"], ["--name", name, "--part", "two"], ["--name", name, "--", "--part", "1/2"]):
        proc = _run_sh(*bad, "--", *two)
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "--part" in proc.stderr


@pytest.mark.parametrize("args", [["--name", ""], ["--name="]])
def test_an_empty_name_is_refused(args):
    """run.sh --name "" used to run under a timestamped name, exit 0: an empty value is bad input."""
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), "--no-install", *args], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "--name" in proc.stderr and "folder name" in proc.stderr


def _refused_before_build(*args):
    """run.sh with `args`, expected to stop with exit 2 on its own argument check (no build needed)."""
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), "--no-install", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2, (args, proc.stderr)
    assert "building" not in proc.stderr, proc.stderr
    return proc.stderr


@pytest.mark.parametrize("part", ["0/2", "3/2", "01/2", "1/0", "1/02", "2/2x"])
def test_a_part_out_of_range_is_refused_before_the_build(part):
    """--part 0/2 and 3/2 passed run.sh's pattern and were refused by the benchmark only after the install
    and the build; 01/2 ran and named its folder NAME.part-01-of-2."""
    assert f"--part '{part}'" in _refused_before_build("--name", "x", "--part", part)


@pytest.mark.parametrize("args,says", [
    (["--name", "a", "--name", "b"], "--name is given twice"),
    (["--part", "1/2", "--name", "a", "--part=2/2"], "--part is given twice"),
    (["--no-trace", "--full-trace"], "--no-trace and --full-trace: give one of them"),
    (["--full-trace", "--no-trace"], "--full-trace and --no-trace: give one of them"),
    (["--no-trace", "--", "--trace", "/tmp/t.json"], "--no-trace and --trace"),
])
def test_conflicting_options_are_refused(args, says):
    """The last one used to win, silently."""
    assert says in _refused_before_build(*args)


def test_a_trace_inside_the_replaced_folder_is_refused(name):
    """reports/NAME is replaced by the stage at the end: a --trace written inside it was deleted while the new
    README linked it (exit 0)."""
    for trace in (f"reports/{name}/t.json", str(ROOT / "reports" / name / "sub" / "t.json")):
        err = _refused_before_build("--name", name, "--", "--trace", trace)
        assert f"inside reports/{name}/" in err, err


def test_the_users_trace_steps_is_kept(name):
    """run.sh added its own --trace-steps 1 beside the user's, which the benchmark refused as given twice."""
    proc = _run_sh("--name", name, "--no-real", "--", *tiny(steps="2"), "--warmup", "0", "--trace-steps", "2")
    assert proc.returncode == 0, proc.stderr
    trace = json.loads((ROOT / "reports" / name / "trace.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    steps = {e["args"]["step"] for e in events if isinstance(e.get("args"), dict) and "step" in e["args"]}
    assert steps == {0, 1}


@pytest.mark.parametrize("flag", ["--describe-registry", "--benchmark_list_tests=true"])
def test_information_flags_print_without_a_run(name, flag):
    """--describe-registry was refused (run.sh added --backend, which it takes none of); --benchmark_list_tests
    listed the cases, then failed for want of a run.json."""
    proc = _run_sh("--name", name, "--", flag, *(tiny() if "list" in flag else []))
    assert proc.returncode == 0, proc.stderr
    assert ("accum/" in proc.stdout) if "list" in flag else ('"axes"' in proc.stdout)
    assert not (ROOT / "reports" / name).exists()
