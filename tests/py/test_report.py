"""The report: its tables hold the JSON's values, every plot is written, and the page says what it is."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from conftest import (FAILING_MESSAGE, GPU_RUN, GPU_RUN_W1, HOST_FIXTURE, HOST_K8_FIXTURE, MODEL, drop_counters,
                      fixture_doc, iteration_entries, load_doc, run_script, section, table_row, write_doc)
from shardaccum_report import analysis
from shardaccum_report.loading import load_runs
from shardaccum_report.report import build_report

GROUP = f"## {MODEL} · world 2 · K 4 · fp32-fp32-fp32"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _images(text: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)


def _median(entries: list[dict], counter: str) -> float:
    return statistics.median(e[counter] for e in entries)


def test_cli_prints_the_readme_path(host_report):
    readme, _, proc = host_report
    assert proc.stdout.strip().splitlines()[-1] == str(readme)
    assert readme.is_file()


def test_banner_and_run_identity(host_report, host_doc):
    _, text, _ = host_report
    head = text.split("## Run")[0]
    assert "host wall-clock, not GPU time" in head
    ctx = host_doc["context"]
    for key in ("machine", "backend", "model", "git_commit", "bytes_source"):
        assert ctx[key] in text, key
    assert f"```sh\n{ctx['command']}\n```" in text


def test_every_plot_is_written_non_empty_and_linked_relatively(host_report):
    readme, text, _ = host_report
    links = _images(text)
    kinds = {"step_phases", "accum_cost", "memory", "pcie", "pareto", "correctness"}
    assert {link.split(".")[-2] for link in links} == kinds
    for link in links:
        assert "/" not in link and not link.startswith("http"), link
        data = (readme.parent / link).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000, link
    on_disk = {p.name for p in readme.parent.glob("*.png")}
    assert on_disk == set(links)


def test_host_times_are_labelled_in_the_text(host_report):
    _, text, _ = host_report
    phases = section(text, "### Step time by phase")
    assert "host wall-clock, not GPU time" in phases


def test_phase_table_holds_the_medians_of_the_json(host_report, host_doc):
    _, text, _ = host_report
    table = section(text, "### Step time by phase")
    checked = 0
    for schedule, strategy, display in (("SSSS", "binding:data-free/offload:cpu-add/mode:flag",
                                         "data-free/cpu-add/flag (fsdp2)"),
                                        ("nSnS", "binding:data/offload:gpu-add/mode:flag", "data/gpu-add/flag"),
                                        ("SnSS", "binding:data/offload:copy/mode:shape",
                                         "data/copy/shape (fairscale)")):
        name = f"accum/model:{MODEL}/world:2/schedule:{schedule}/{strategy}/dtype:fp32-fp32-fp32"
        reps = iteration_entries(host_doc, name)
        row = table_row(table, schedule, display)
        step = _median(reps, "step_ms")
        phases = [_median(reps, c) for c in ("backward_ms", "nccl_ms", "accumulate_ms", "h2d_ms", "d2h_ms",
                                             "cpu_add_ms", "finalize_ms")]
        assert row[2] == f"{step:.3f}"
        assert row[3:10] == [f"{v:.3f}" for v in phases]
        assert row[10] == f"{max(0.0, step - sum(phases)):.3f}"
        assert row[11] == "2"
        wrong = any(e["correct"] == 0 for e in reps)
        assert ("WRONG" in row[12]) == wrong
        if wrong:
            assert row[13] == f"{max(e['max_rel_err'] for e in reps):.3f}"
        checked += 1
    assert checked == 3


def test_memory_and_traffic_tables_hold_exact_bytes(host_report, host_doc):
    _, text, _ = host_report
    name = (f"accum/model:{MODEL}/world:2/schedule:SSSS/binding:data-free/offload:gpu-add/mode:flag/"
            "dtype:fp32-fp32-fp32")
    reps = iteration_entries(host_doc, name)
    b = lambda counter: f"{round(_median(reps, counter)):,}"  # noqa: E731
    memory = table_row(section(text, "### Peak memory"), "SSSS", "data-free/gpu-add/flag (zero3)")
    assert memory[2:4] == [b("peak_device_bytes"), b("model_peak_device_bytes")]
    assert memory[5:7] == [b("peak_pinned_bytes"), b("model_peak_pinned_bytes")]
    traffic = table_row(section(text, "### PCIe traffic"), "SSSS", "data-free/gpu-add/flag (zero3)")
    assert traffic[2:4] == [b("h2d_bytes"), b("model_h2d_bytes")]
    assert traffic[5:7] == [b("d2h_bytes"), b("model_d2h_bytes")]
    assert traffic[8:10] == [b("nccl_input_bytes"), b("model_nccl_input_bytes")]
    # docs/DESIGN.md §3, gpu-add, fp32, N = 2, s = 4: NCCL input s·P·4, D2H s·(P/N)·4, H2D (s−1)·(P/N)·4.
    nccl = round(_median(reps, "model_nccl_input_bytes"))
    assert traffic[5] == f"{nccl // 2:,}" and traffic[2] == f"{nccl // 2 * 3 // 4:,}"


def test_correctness_matrix_marks_wrong_cells_with_their_error(host_report, host_doc):
    _, text, _ = host_report
    grid = section(text, "### Correctness")
    header = next(line for line in grid.splitlines() if line.startswith("| strategy |"))
    assert "nnnS (no-sync)" in header and "SnSS (interleaved-sync-last)" in header
    row = table_row(grid, "data-free/copy/shape (fsdp1)")
    errs = {}
    for schedule in ("nnnS", "SSSS", "nSnS", "SnSS"):
        name = (f"accum/model:{MODEL}/world:2/schedule:{schedule}/binding:data-free/offload:copy/mode:shape/"
                "dtype:fp32-fp32-fp32")
        errs[schedule] = max(e["max_rel_err"] for e in iteration_entries(host_doc, name))
    assert row[1] == "✓ 0"
    assert row[2:] == [f"✗ **WRONG** {errs[s]:.3f}" for s in ("SSSS", "nSnS", "SnSS")]
    assert table_row(grid, "data-free/cpu-add/flag (fsdp2)")[1:] == ["✓ 0"] * 4


def test_summary_counts_and_fastest_correct(host_report):
    _, text, _ = host_report
    summary = section(text, "## Summary")
    assert "64 cases in 1 group: 40 correct, 24 WRONG, 0 failed with an error" in summary
    run = load_runs([HOST_FIXTURE])
    sync = [c for c in run.cases if c.key.schedule == "SSSS" and c.status == "correct"]
    fastest = min(sync, key=lambda c: c.value("step_ms"))
    row = table_row(summary, "SSSS (sync)")
    assert row[1] == fastest.key.strategy.display and row[2] == f"{fastest.value('step_ms'):.3f}"
    assert row[5] == "8 of 16"
    # The least peak: exact bytes, so a tie is counted in the cell (it named one of 4 silently).
    peak = min(c.value("peak_device_bytes") for c in sync)
    ties = [c for c in sync if c.value("peak_device_bytes") == peak]
    leanest = min(ties, key=lambda c: c.value("step_ms"))
    assert len(ties) > 1
    assert row[3] == f"{leanest.key.strategy.display} (+{len(ties) - 1} more at this peak)"


def test_host_report_skips_ceilings_and_scaling_with_reasons(host_report):
    _, text, _ = host_report
    assert "Skipped: the host backend measures no hardware ceilings" in section(text,
                                                                                 "### Phases against measured ceilings")
    assert "Skipped: every case has K 4" in section(text, "### Scaling with K")
    assert "Skipped: every case has world size 2" in section(text, "### Scaling with world size")


def test_pareto_front_excludes_wrong_cases_and_dominated_ones():
    run = load_runs([HOST_FIXTURE])
    sync = [c for c in run.cases if c.key.schedule == "SSSS"]
    front = analysis.pareto_front(sync)
    assert front and all(p.case.status == "correct" for p in front)
    mems = [p.memory_bytes for p in front]
    steps = [p.step_ms for p in front]
    assert mems == sorted(mems) and steps == sorted(steps, reverse=True)
    for c in sync:
        if c.status != "correct":
            continue
        # every correct case is dominated by (or is) a front point
        assert any(p.memory_bytes <= c.value("peak_device_bytes") and p.step_ms <= c.value("step_ms") for p in front)


def test_phase_breakdown_clips_other_at_zero():
    run = load_runs([HOST_FIXTURE])
    case = run.cases[0]
    case.repetitions[0].counters["step_ms"] = case.repetitions[1].counters["step_ms"] = 1.0
    assert analysis.phase_breakdown(case)["other"] == 0.0


def test_cuda_report_has_ceilings_scaling_and_the_failed_case(cuda_report):
    readme, text = cuda_report
    assert "host wall-clock" not in text
    links = _images(text)
    assert sum(link.endswith(".ceilings.png") for link in links) == 2  # one per group: world 1 and 2
    assert any(link.startswith("scaling_world.") for link in links)
    for link in links:
        data = (readme.parent / link).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000, link
    busbw = float(load_doc(GPU_RUN)["context"]["ceiling_reduce_scatter_busbw_gbps"])
    assert f"| `ceiling_reduce_scatter_busbw_gbps` | reduce-scatter bus bandwidth | {busbw:,.1f} |" in text
    w1 = section(text, "## llama2-7b · world 1 · K 4 · fp32-fp32-fp32")
    assert FAILING_MESSAGE.replace("|", "\\|") in w1  # pipe escaped in the table
    assert table_row(section(w1, "### Correctness"), "data-free/copy/flag")[1] == "⚠ error"
    scaling = section(text, "#### llama2-7b · K 4 · fp32-fp32-fp32")
    assert "world=1 (ms)" in scaling and "world=2 (ms)" in scaling
    assert "Skipped: every case has K 4" in section(text, "### Scaling with K")


def test_host_runs_at_two_k_are_drawn_as_scaling_with_k(tmp_path):
    # The K 4 run cut to the K 8 fixture's strategies (the presets): the rows scaling draws, a quarter
    # of the plots to make.
    presets = ("binding:data-free/offload:copy/mode:shape/", "binding:data-free/offload:cpu-add/mode:flag/",
               "binding:data-free/offload:gpu-add/mode:flag/", "binding:data/offload:copy/mode:shape/")
    k4 = load_doc(HOST_FIXTURE)
    k4["benchmarks"] = [e for e in k4["benchmarks"] if any(p in e["name"] for p in presets)]
    readme = build_report([write_doc(k4, tmp_path / "k4.json"), HOST_K8_FIXTURE], "k", tmp_path / "out")
    text = readme.read_text(encoding="utf-8")
    links = [link for link in _images(text) if link.startswith("scaling_k.")]
    assert len(links) == 1 and (readme.parent / links[0]).read_bytes().startswith(PNG_SIGNATURE)
    scaling = section(text, f"#### {MODEL} · world 2 · fp32-fp32-fp32")
    assert "K=4 (ms)" in scaling and "K=8 (ms)" in scaling
    k8 = {c.key.strategy: c for c in load_runs([HOST_K8_FIXTURE]).cases if c.key.schedule == "S" * 8}
    fsdp1 = next(s for s in k8 if s.preset == "fsdp1")
    row = table_row(scaling, "sync", "data-free/copy/shape (fsdp1)")
    assert row[-1] == f"{k8[fsdp1].value('step_ms'):.3f} ✗"  # the wrong cell marked at K 8 too


def test_missing_counters_are_tolerated_and_named(tmp_path):
    doc = drop_counters(fixture_doc(), "nccl_ms", "model_peak_pinned_bytes", "h2d_bytes")
    readme = build_report([write_doc(doc, tmp_path / "sparse.json")], "sparse", tmp_path / "out")
    text = readme.read_text()
    assert "`nccl_ms` is in none of the cases: not shown." in text
    assert "`model_peak_pinned_bytes` is in none of the cases: not shown." in text
    assert "`h2d_bytes` is in none of the cases: not shown." in text
    assert "reduce-scatter (ms)" not in section(text, "### Step time by phase")
    for link in _images(text):
        assert (readme.parent / link).stat().st_size > 10_000


def test_report_replaces_an_old_one_and_a_failure_leaves_it_intact(tmp_path, monkeypatch):
    small = HOST_K8_FIXTURE
    out = tmp_path / "reports"
    readme = build_report([small], "r", out)
    (readme.parent / "stale.png").write_bytes(b"old")
    build_report([small], "r", out)
    assert not (readme.parent / "stale.png").exists()
    before = readme.read_text()

    import shardaccum_report.report as report_module

    def boom(*args, **kwargs):
        raise RuntimeError("plot failed")

    monkeypatch.setattr(report_module, "plot_pareto", boom)
    with pytest.raises(RuntimeError):
        build_report([small], "r", out)
    assert readme.read_text() == before
    assert sorted(p.name for p in out.iterdir()) == ["r"]  # no temporary left behind


@pytest.mark.parametrize("name", ["../escape", ".hidden", "a/b", ""])
def test_bad_report_names_exit_2(tmp_path, name):
    proc = run_script("report.py", HOST_FIXTURE, "--name", name, "--out-dir", tmp_path)
    assert proc.returncode == 2
    assert "--name" in proc.stderr and "Traceback" not in proc.stderr
    assert list(Path(tmp_path).iterdir()) == []


def test_an_empty_out_dir_is_refused(tmp_path):
    """--out-dir "" was Path(""), the current folder: the report landed in ./NAME."""
    proc = run_script("report.py", HOST_FIXTURE, "--name", "r", "--out-dir", "", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "--out-dir: is empty" in proc.stderr and "Traceback" not in proc.stderr
    assert list(Path(tmp_path).iterdir()) == []


@pytest.mark.parametrize("where", ["proc", "long-name"])
def test_a_report_folder_that_cannot_be_made_names_the_flags_and_the_folder(tmp_path, where):
    out, name = ("/proc", "r") if where == "proc" else (tmp_path, "a" * 300)
    proc = run_script("report.py", HOST_FIXTURE, "--name", name, "--out-dir", out)
    assert proc.returncode == 2, proc.stderr
    assert "--out-dir/--name: cannot make the report folder" in proc.stderr and f"{out}/{name[:50]}" in proc.stderr
    assert ".tmp-" not in proc.stderr and ".probe-" not in proc.stderr and "Traceback" not in proc.stderr
    if where == "long-name":
        assert list(Path(tmp_path).iterdir()) == []


def test_pareto_labels_of_front_points_on_one_spot_are_merged(monkeypatch):
    from types import SimpleNamespace

    from shardaccum_report.plots import pareto

    monkeypatch.setattr(pareto, "_short", lambda c: c)
    front = [SimpleNamespace(case=name) for name in ("a", "b", "c")]
    groups = pareto._label_groups(front, [1.0, 1.01, 5.0], [100.0, 100.5, 40.0])
    assert [names for names, _, _ in groups] == [["a", "b"], ["c"]]
    assert groups[1][1:] == (5.0, 40.0)


def test_left_out_cases_are_named_with_their_reason(tmp_path):
    # bench/case_matrix.hpp leave_out_unrunnable: the context's left_out_cases, a JSON list of {case, reason}.
    doc = load_doc(HOST_K8_FIXTURE)
    name = "accum/model:uniform:8x64K/world:2/schedule:SnSS/binding:data-free/offload:gpu-add-zero3/mode:flag"
    doc["context"]["left_out_cases"] = json.dumps([{"case": name, "reason": "zero3 runs S^K and n^(K-1)S only"}])
    readme = build_report([write_doc(doc, tmp_path / "left.json")], "left", tmp_path / "out")
    run = section(readme.read_text(), "## Run")
    assert "Left out when the matrix was built (1 case" in run
    assert f"`{name}`" in run and "zero3 runs S^K and n^(K-1)S only" in run
    # Without the key the section says nothing of it; a malformed one is refused by name.
    assert "Left out" not in section(build_report([HOST_K8_FIXTURE], "k8", tmp_path / "o2").read_text(), "## Run")
    doc["context"]["left_out_cases"] = "[{\"case\": 1}]"
    proc = run_script("report.py", write_doc(doc, tmp_path / "bad.json"), "--name", "bad", "--out-dir", tmp_path)
    assert proc.returncode == 2 and "left_out_cases" in proc.stderr and "Traceback" not in proc.stderr
