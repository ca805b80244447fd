"""report.py over suite and real runs (the section, its ratios, its plots), compare.py on real runs and
merge.py's refusal. The real fixture is provisional: its values are only ever compared with themselves."""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES, HOST_FIXTURE, load_doc, run_script, section, table_row, write_doc
from shardaccum_report.loading import load_inputs
from shardaccum_report.pairing import NO_PRESET_CASE, pair_cases
from shardaccum_report.report import build_report

REAL_FIXTURE = FIXTURES / "real_w2_uniform8x64K.json"
SECTION = "## Real systems beside their presets"
GROUP = "### uniform:8x64K · world 2 · K 4 · fp32-fp32-fp32"
PNG = b"\x89PNG\r\n\x1a\n"


def _cuda_suite(tmp_path):
    """The host fixture relabelled as a cuda run, so that its times count as GPU times for the ratios."""
    doc = load_doc(HOST_FIXTURE)
    doc["context"]["backend"] = "cuda"
    doc["context"]["time_domain"] = "GPU events"
    return write_doc(doc, tmp_path / "cuda_suite.json")


def _tables(text: str) -> tuple[str, str]:
    """The step-time and the bytes table of the fixture's group."""
    part = section(section(text, SECTION), GROUP)
    blocks = [b for b in part.split("\n\n") if b.startswith("| schedule")]
    assert len(blocks) == 2
    return blocks[0], blocks[1]


def _row(table: str, schedule: str, system: str, offload: str) -> dict[str, str]:
    headers = [c.strip() for c in table.splitlines()[0].strip("|").split(" | ")]
    return dict(zip(headers, table_row(table, schedule, system, offload)))


def _num(cell: str) -> float:
    return float(cell.replace(",", ""))


@pytest.fixture(scope="module")
def cuda_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    readme = build_report([REAL_FIXTURE, _cuda_suite(tmp)], "real", tmp / "out")
    return readme, readme.read_text(encoding="utf-8")


def test_report_over_suite_and_real_writes_the_section_and_its_plots(tmp_path):
    proc = run_script("report.py", REAL_FIXTURE, _small_suite(tmp_path), "--name", "both", "--out-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    readme = tmp_path / "both" / "README.md"
    text = readme.read_text(encoding="utf-8")
    part = section(text, SECTION)
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", part)
    assert sorted(link.split(".")[-2] for link in links) == ["d2h", "step"]
    for link in links:
        assert (readme.parent / link).read_bytes().startswith(PNG)
    # The suite's own sections stay, and the intro names each real run's context.
    assert "### Step time by phase" in text
    ctx = load_doc(REAL_FIXTURE)["context"]
    intro = section(text, "## Real systems")
    for key in ("torch_version", "gpu", "cuda_version"):
        assert ctx[key] in intro, key
    for system, settings in json.loads(ctx["systems"]).items():
        assert f"**{system}**: {json.dumps(settings, sort_keys=True)}" in intro
    assert f"```sh\n{ctx['command']}\n```" in intro


def test_every_real_case_has_a_row_beside_its_preset(cuda_report):
    _, text = cuda_report
    steps, traffic = _tables(text)
    for e in load_doc(REAL_FIXTURE)["benchmarks"]:
        parts = dict(p.split(":", 1) for p in e["name"].split("/")[1:])
        for table in (steps, traffic):
            row = _row(table, parts["schedule"], parts["system"], parts["offload"])
            assert NO_PRESET_CASE not in row["preset case"]


def test_the_ratios_are_the_quotients_of_the_inputs(cuda_report, tmp_path):
    _, text = cuda_report
    steps, traffic = _tables(text)
    suite, real = load_inputs([REAL_FIXTURE, _cuda_suite(tmp_path)])
    checked = 0
    for p in pair_cases(real, suite):
        k = p.key
        row = _row(steps, k.schedule, k.system, k.offload)
        assert _num(row["real step mean (ms)"]) == pytest.approx(p.real.value("step_ms"), abs=5e-4)
        assert _num(row["preset step (ms)"]) == pytest.approx(p.preset.value("step_ms"), abs=5e-4)
        assert row["step ratio"] == f"{p.real.value('step_ms') / p.preset.value('step_ms'):.3f}"
        row = _row(traffic, k.schedule, k.system, k.offload)
        for what, counter in (("D2H", "d2h_bytes"), ("H2D", "h2d_bytes")):
            real_b, preset_b = p.real.value(counter), p.preset.value(counter)
            assert _num(row[f"grad {what} real (B)"]) == real_b and _num(row[f"grad {what} preset (B)"]) == preset_b
            if preset_b:
                assert row[f"{what} ratio"] == f"{real_b / preset_b:.3f}"
                checked += 1
            else:
                assert row[f"{what} ratio"] == ("both 0" if real_b == 0 else "preset 0")
        peak = p.real.value("peak_device_bytes") / p.preset.value("peak_device_bytes")
        assert row["peak ratio"] == f"{peak:.3f}"
        assert _num(row["device baseline real (B)"]) == p.real.value("device_baseline_bytes")
    assert checked > 0


def _small_suite(tmp_path, drop: str = "") -> str:
    """The host fixture's data-free cases (the presets' binding; half the matrix, so half the plots)."""
    doc = load_doc(HOST_FIXTURE)
    doc["benchmarks"] = [e for e in doc["benchmarks"] if "binding:data-free" in e["name"]
                         and not (drop and drop in e["name"])]
    return write_doc(doc, tmp_path / "suite.json")


def test_a_host_suite_run_gives_no_time_ratios_and_says_why(tmp_path):
    text = build_report([_small_suite(tmp_path), REAL_FIXTURE], "host", tmp_path).read_text(encoding="utf-8")
    part = section(text, SECTION)
    warning = next(line for line in part.splitlines() if "**No time ratios**" in line)
    assert "host backend" in warning and "host wall-clock, not GPU time" in warning
    steps, traffic = _tables(text)
    cells = [line.split(" | ")[7] for line in steps.splitlines()[2:]]
    assert cells and set(cells) == {"not shown"}
    assert "1.000" in traffic  # byte ratios do not depend on a time domain


def test_a_real_case_without_its_preset_case_keeps_its_row(tmp_path):
    text = build_report([_small_suite(tmp_path, drop="schedule:SSSS"), REAL_FIXTURE], "gap", tmp_path).read_text()
    steps, traffic = _tables(text)
    for system in ("fsdp1", "fsdp2"):
        for offload in ("cpu", "none"):
            for table in (steps, traffic):
                assert NO_PRESET_CASE in _row(table, "SSSS", system, offload)["preset case"]
            assert _row(steps, "nnnS", system, offload)["preset step (ms)"] != "–"


def test_real_runs_alone_make_a_report_of_their_cases(tmp_path):
    proc = run_script("report.py", REAL_FIXTURE, "--name", "alone", "--out-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "alone" / "README.md").read_text(encoding="utf-8")
    steps, _ = _tables(text)
    assert len(steps.splitlines()) - 2 == len(load_doc(REAL_FIXTURE)["benchmarks"])
    assert "no suite run is given" in text


def _slower(doc: dict, name: str, factor: float) -> dict:
    for e in doc["benchmarks"]:
        if e["name"] == name:
            for key in ("step_ms", "step_ms_median", "real_time"):
                e[key] *= factor
    return doc


def test_compare_matches_two_real_runs_by_name(tmp_path):
    name = load_doc(REAL_FIXTURE)["benchmarks"][2]["name"]
    cand = write_doc(_slower(load_doc(REAL_FIXTURE), name, 2.0), tmp_path / "cand.json")
    proc = run_script("compare.py", REAL_FIXTURE, cand)
    assert proc.returncode == 1, proc.stderr
    parts = dict(p.split(":", 1) for p in name.split("/")[1:])
    regressions = section(proc.stdout, "## Regressions")
    row = table_row(regressions, parts["schedule"], f"real {parts['system']}, offload {parts['offload']}")
    assert row[4] == "2.000"
    assert section(proc.stdout, "## All cases").splitlines()[2].startswith("| schedule | system |")
    assert "1 regression in 16 cases" in proc.stdout


def test_compare_real_against_suite_says_they_share_no_case(tmp_path):
    for base, cand in ((REAL_FIXTURE, HOST_FIXTURE), (HOST_FIXTURE, REAL_FIXTURE)):
        proc = run_script("compare.py", base, cand)
        assert proc.returncode == 2, proc.stderr
        assert "no case in common" in proc.stderr and "real-system run" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_merge_refuses_real_runs_alone_or_with_suite_parts(tmp_path):
    other = write_doc(load_doc(REAL_FIXTURE), tmp_path / "real2.json")
    proc = run_script("merge.py", REAL_FIXTURE, other, "--out", tmp_path / "m.json")
    assert proc.returncode == 2 and "not --part slices" in proc.stderr and str(other) in proc.stderr
    proc = run_script("merge.py", HOST_FIXTURE, REAL_FIXTURE, "--out", tmp_path / "m.json")
    assert proc.returncode == 2 and "different kinds are never merged" in proc.stderr
    assert str(REAL_FIXTURE) in proc.stderr and str(HOST_FIXTURE) in proc.stderr
    assert not (tmp_path / "m.json").exists()


def test_an_unfinished_run_its_skipped_cases_and_its_errors_are_said(tmp_path):
    """The runner rewrites its JSON after every case: a report of such a file says it is unfinished,
    lists what the runner skipped with the reason, and prints each errored case's message."""
    doc = load_doc(REAL_FIXTURE)
    doc["context"]["partial"] = "3 of 8 cases: the run had not finished"
    doc["context"]["skipped_cases"] = [
        {"name": "real/system:zero3/model:m/world:2/schedule:nSnS/offload:cpu/dtype:fp32-fp32-fp32",
         "reason": "zero3 cannot run nSnS: engine.no_sync() asserts"}]
    bad = doc["benchmarks"][0]
    bad.update(error_occurred=True, error_message="RuntimeError: the gradient pieces do not cover the layout")
    path = write_doc(doc, tmp_path / "partial.json")
    proc = run_script("report.py", path, "--name", "p", "--out-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "p" / "README.md").read_text(encoding="utf-8")
    assert "**Unfinished run**" in text and "3 of 8 cases: the run had not finished" in text
    assert "Skipped by the runner" in text and "schedule:nSnS" in text and "engine.no_sync() asserts" in text
    assert f"Error of `{bad['name']}`: RuntimeError: the gradient pieces do not cover the layout" in text
