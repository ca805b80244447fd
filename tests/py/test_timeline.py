"""The timeline of one step per case, drawn from the trace of shardaccum_bench --trace.

The fixture tests/fixtures/host_trace/ is real output of the host backend (run.json and trace.json
beside it, as scripts/run.sh writes them; the run_id both carry was added by hand, as the binary
writes it since issue 11), made with

    cd tests/fixtures/host_trace && ../../../build-host/bench/shardaccum_bench --backend host \
        --model uniform:2x64K --preset all --schedule nSnS,sync --steps 1 \
        --trace trace.json --benchmark_out=run.json --benchmark_out_format=json
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES, MODEL, ROOT, run_script, section
from shardaccum_report.trace import load_trace

TRACE_DIR = FIXTURES / "host_trace"
RUN = TRACE_DIR / "run.json"
TRACE = TRACE_DIR / "trace.json"
GPU_TRACE = ROOT / "reports" / "h200x2-session" / "trace_fsdp2.json"
GPU_RUN = ROOT / "reports" / "h200x2-session" / "trace_fsdp2.bench.json"
GROUP = "## uniform:2x64K · world 2 · K 4 · fp32-fp32-fp32"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ZERO3_SSSS = ("accum/model:uniform:2x64K/world:2/schedule:SSSS/binding:data-free/offload:gpu-add/mode:flag/"
              "dtype:fp32-fp32-fp32")


def _images(text: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)


def _timeline(text: str, heading: str = GROUP) -> str:
    return section(section(text, heading), "### Timeline of one step")


def _assert_png(folder: Path, link: str) -> None:
    assert "/" not in link, link
    data = (folder / link).read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 20_000, link


def _report(tmp_path: Path, *args) -> tuple[Path, str]:
    out = tmp_path / "reports"
    proc = run_script("report.py", *args, "--name", "t", "--out-dir", out)
    assert proc.returncode == 0, proc.stderr
    readme = out / "t" / "README.md"
    assert proc.stdout.strip().splitlines()[-1] == str(readme)
    return readme, readme.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory) -> tuple[Path, str]:
    """The committed host run with its trace.json beside it: found without --trace."""
    return _report(tmp_path_factory.mktemp("timeline"), RUN)


def test_fixture_is_small():
    assert TRACE.stat().st_size < 300_000 and RUN.stat().st_size < 100_000


def test_trace_beside_the_input_is_found_and_drawn(fixture_report):
    readme, text = fixture_report
    part = _timeline(text)
    links = _images(part)
    assert links == ["uniform-2x64K-w2-k4-fp32-fp32-fp32.timeline.png"]  # 8 cases: one picture
    _assert_png(readme.parent, links[0])
    assert "(found beside the input)" in part
    assert str(Path("tests/fixtures/host_trace/trace.json")) in part or str(TRACE) in part
    assert "host wall-clock, not GPU time" in part
    assert "ui.perfetto.dev" in part
    # Regenerating needs no --trace: the trace is found again.
    assert "--trace" not in section(text, "## Notes")


def test_the_drawn_steps_are_listed_with_their_results(fixture_report):
    _, text = fixture_report
    part = _timeline(text)
    rows = [line for line in part.splitlines() if line.startswith("| SSSS (sync) |") or
            line.startswith("| nSnS (interleaved-nosync-last) |")]
    assert len(rows) == 8
    # Recorded when fsdp1 was data-free/copy/shape; the committed registry's fsdp1 is copy-fsdp1 now.
    fsdp1 = next(r for r in rows if r.startswith("| SSSS (sync) | data-free/copy/shape |"))
    assert "WRONG" in fsdp1
    zero3 = next(r for r in rows if r.startswith("| SSSS (sync) | data-free/gpu-add/flag (zero3) |"))
    cells = [c.strip() for c in zero3.strip("|").split("|")]
    trace = load_trace(TRACE)
    step = trace.steps[ZERO3_SSSS]
    assert cells[2:5] == [str(step.step), "0", f"{step.dur_ms:.3f}"]
    assert "correct" in cells[6]


def test_explicit_trace_and_the_regenerate_line(tmp_path):
    run = shutil.copy(RUN, tmp_path / "elsewhere.json")
    trace = shutil.copy(TRACE, tmp_path / "my-trace.json")
    readme, text = _report(tmp_path, run, "--trace", trace)
    part = _timeline(text)
    assert "found beside" not in part and "my-trace.json" in part
    _assert_png(readme.parent, _images(part)[0])
    notes = section(text, "## Notes")
    assert f"--trace {trace}" in notes
    # tmp_path is outside the repository: the reader is told the trace is not there to be had.
    assert f"The trace `{trace}` is not in the repository" in notes


def test_a_trace_inside_the_repository_is_not_called_missing(tmp_path):
    inside = Path(__file__).resolve().parent / "_inside_trace_for_test.json"
    shutil.copy(TRACE, inside)
    try:
        _, text = _report(tmp_path, shutil.copy(RUN, tmp_path / "elsewhere.json"), "--trace", inside)
    finally:
        inside.unlink()
    notes = section(text, "## Notes")
    assert f"--trace {inside}" in notes and "is not in the repository" not in notes


def test_without_a_trace_the_section_says_how_to_get_one(host_report):
    _, text, _ = host_report
    part = _timeline(text, f"## {MODEL} · world 2 · K 4 · fp32-fp32-fp32")
    assert "No trace given" in part
    assert "scripts/run.sh" in part and "--trace" in part
    assert not _images(part)


def _drop_case(doc: dict, name: str) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["benchmarks"] = [b for b in doc["benchmarks"] if not b["name"].startswith(name + "/")]
    return doc


def test_a_traced_case_missing_from_the_json_is_still_drawn(tmp_path):
    doc = _drop_case(json.loads(RUN.read_text()), ZERO3_SSSS)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(doc))
    shutil.copy(TRACE, tmp_path / "trace.json")
    readme, text = _report(tmp_path, run)
    part = _timeline(text)
    _assert_png(readme.parent, _images(part)[0])
    assert "1 case of the trace is not in the run JSON" in part
    assert "| SSSS (sync) | data-free/gpu-add/flag (zero3) | 1 | 0 |" in part
    row = next(line for line in part.splitlines() if "data-free/gpu-add/flag (zero3) | 1" in line and "SSSS" in line)
    assert row.rstrip().endswith("| not in the run JSON |")


def test_a_json_case_missing_from_the_trace_is_named(tmp_path):
    doc = json.loads(TRACE.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("args", {}).get("case") != ZERO3_SSSS]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(doc))
    readme, text = _report(tmp_path, RUN, "--trace", trace)
    part = _timeline(text)
    assert "1 case of the run JSON is not in the trace: SSSS data-free/gpu-add/flag (zero3)" in part
    _assert_png(readme.parent, _images(part)[0])


def test_a_group_only_in_the_trace_gets_its_own_section(tmp_path):
    text = TRACE.read_text().replace("world:2/schedule:SSSS/binding:data-free/offload:gpu-add",
                                     "world:4/schedule:SSSS/binding:data-free/offload:gpu-add")
    trace = tmp_path / "trace.json"
    trace.write_text(text)
    readme, text = _report(tmp_path, RUN, "--trace", trace)
    heading = "## uniform:2x64K · world 4 · K 4 · fp32-fp32-fp32 (only in the trace)"
    assert heading in text
    part = _timeline(text, heading)
    links = _images(part)
    assert links == ["uniform-2x64K-w4-k4-fp32-fp32-fp32.timeline.png"]
    _assert_png(readme.parent, links[0])


def test_many_cases_give_one_picture_per_schedule(tmp_path, monkeypatch):
    import shardaccum_report.report as report_module
    monkeypatch.setattr(report_module, "ROWS_PER_FIGURE", 4)
    readme = report_module.build_report([RUN], "split", tmp_path)
    part = _timeline(readme.read_text(encoding="utf-8"))
    links = _images(part)
    assert links == ["uniform-2x64K-w2-k4-fp32-fp32-fp32.timeline-SSSS.png",
                     "uniform-2x64K-w2-k4-fp32-fp32-fp32.timeline-nSnS.png"]
    for link in links:
        _assert_png(readme.parent, link)


@pytest.mark.parametrize("content, message", [
    ('{"traceEvents": [{"name": "step 1 accum/x", "ph": "X"', "not valid JSON"),
    ("", "empty file"),
    ('{"otherData": {}}', "no 'traceEvents' list"),
    ('[1, 2]', "traceEvents[0] is a JSON number"),
    ('{"traceEvents": [{"name": "backward", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 1}]}', "no step events"),
    ('{"traceEvents": [{"name": "step 1 a", "ph": "X", "ts": "soon", "dur": 2, "pid": 0, "tid": 1}]}',
     "'ts' is not a number"),
])
def test_a_bad_trace_exits_2_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "bad-trace.json"
    bad.write_text(content)
    out = tmp_path / "reports"
    proc = run_script("report.py", RUN, "--trace", bad, "--name", "x", "--out-dir", out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"report.py: error: {bad}: "), proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (out / "x").exists()


def test_a_bad_trace_beside_the_input_exits_2_too(tmp_path):
    run = shutil.copy(RUN, tmp_path / "run.json")
    bad = tmp_path / "trace.json"
    bad.write_text(TRACE.read_text()[:5000])  # cut off, as a killed run would leave it
    proc = run_script("report.py", run, "--name", "x", "--out-dir", tmp_path / "reports")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"report.py: error: {bad}: not valid JSON")


def test_a_missing_trace_exits_2(tmp_path):
    proc = run_script("report.py", RUN, "--trace", tmp_path / "absent.json", "--name", "x", "--out-dir", tmp_path)
    assert proc.returncode == 2 and "absent.json: no such file" in proc.stderr


def test_gpu_trace_first_measured_step_of_rank_0():
    trace = load_trace(GPU_TRACE)
    assert trace.backend == "cuda" and "CUPTI" in trace.time_label
    (step,) = trace.steps.values()
    assert step.rank == 0 and step.step == 1  # steps 1..3 are measured; step 0 (warm-up) is not traced
    tracks = {e.track for e in step.events}
    # GPU ops from the backend's CUDA events (compute, comm), copies from CUPTI's MEMCPY records,
    # the CPU adds and the pinned finalize on the host track.
    assert tracks == {"phases", "compute stream", "comm stream", "copy stream", "host"}
    assert len(step.on("phases", "micro-batch")) == 4 and len(step.on("phases", "unit")) == 64
    assert all(0 <= e.start_ms <= step.dur_ms for e in step.events)

    from shardaccum_report.plots.timeline import phase_of
    kinds = {(e.track, phase_of(e).label) for e in step.events if e.track != "phases"}
    assert {("compute stream", "backward"), ("comm stream", "reduce-scatter"), ("copy stream", "D2H")} <= kinds
    assert {label for track, label in kinds if track == "host"} == {"CPU add", "finalize"}


def _with_run_id(src: Path, dst: Path, where: str, run_id: str) -> Path:
    """A copy of a JSON file with run_id set in its `where` object (context, otherData)."""
    doc = json.loads(src.read_text())
    doc[where]["run_id"] = run_id
    dst.write_text(json.dumps(doc))
    return dst


def test_gpu_report_labels_its_time_domain(tmp_path):
    # The committed GPU files predate run ids: copies with one matching run_id are drawn.
    run = _with_run_id(GPU_RUN, tmp_path / "gpu.json", "context", "0f9e2d4c-1b3a-4c5d-8e7f-6a5b4c3d2e1f")
    trace = _with_run_id(GPU_TRACE, tmp_path / "gpu-trace.json", "otherData", "0f9e2d4c-1b3a-4c5d-8e7f-6a5b4c3d2e1f")
    readme, text = _report(tmp_path, run, "--trace", trace)
    part = _timeline(text, "## uniform:16x64M · world 2 · K 4 · fp32-fp32-fp32")
    assert "GPU activity from CUPTI mapped onto it" in part
    assert "host wall-clock" not in part
    _assert_png(readme.parent, _images(part)[0])


def _report_with_stderr(tmp_path: Path, *args) -> tuple[str, str]:
    out = tmp_path / "reports"
    proc = run_script("report.py", *args, "--name", "t", "--out-dir", out)
    assert proc.returncode == 0, proc.stderr
    return (out / "t" / "README.md").read_text(encoding="utf-8"), proc.stderr


@pytest.mark.parametrize("beside", [True, False])
def test_a_trace_of_another_run_is_not_drawn(tmp_path, beside):
    other = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
    run = shutil.copy(RUN, tmp_path / "run.json")
    trace = _with_run_id(TRACE, tmp_path / ("trace.json" if beside else "other-trace.json"), "otherData", other)
    text, err = _report_with_stderr(tmp_path, run, *([] if beside else ["--trace", trace]))
    part = _timeline(text)
    own = json.loads(RUN.read_text())["context"]["run_id"]
    why = f"{trace}: not drawn: it is of another run (its run_id {other}, the run JSON's {own})"
    assert part.startswith("### Timeline of one step\n\nNo trace drawn: " + why)
    assert not _images(part) and not list((tmp_path / "reports" / "t").glob("*timeline*.png"))
    assert f"report.py: warning: {why}" in err
    assert why in section(text, "## Notes")


def test_a_trace_without_run_id_is_not_drawn(tmp_path):
    doc = json.loads(TRACE.read_text())
    del doc["otherData"]["run_id"]
    (tmp_path / "trace.json").write_text(json.dumps(doc))
    run = shutil.copy(RUN, tmp_path / "run.json")
    text, err = _report_with_stderr(tmp_path, run)
    part = _timeline(text)
    assert "No trace drawn" in part and "the trace has no run_id" in part and not _images(part)
    assert "report.py: warning: " in err and "has no run_id" in err


def test_the_fixture_trace_and_run_share_their_run_id():
    run_id = json.loads(RUN.read_text())["context"]["run_id"]
    assert json.loads(TRACE.read_text())["otherData"]["run_id"] == run_id
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", run_id)


def test_run_sh_help_documents_the_trace_options():
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    for word in ("--no-trace", "--full-trace", "reports/NAME/trace.json"):
        assert word in proc.stdout, word
