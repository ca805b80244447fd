"""compare.py: ratios, the Mann-Whitney U test over repetitions, regressions and the exit status."""

from __future__ import annotations

import random

import pytest
from conftest import (HOST_FIXTURE, MODEL, entries_of, fixture_doc, plant_error, plant_slowdown, run_script, table_row,
                      write_doc)
from shardaccum_report.compare import compare_files, smallest_p_value

SLOW = f"accum/model:{MODEL}/world:2/schedule:nSnS/binding:data/offload:gpu-add/mode:flag/dtype:fp32-fp32-fp32"


def tiny_run(step_ms: dict[str, list[float]], correct: dict[str, float] | None = None) -> dict:
    """Hand-written Google Benchmark JSON: one entry per repetition, counters step_ms and correct."""
    entries = []
    for name, values in step_ms.items():
        for i, v in enumerate(values):
            entries.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(values),
                            "repetition_index": i, "iterations": 3, "real_time": v, "cpu_time": v,
                            "time_unit": "ms", "step_ms": v, "correct": (correct or {}).get(name, 1.0),
                            "max_rel_err": 0.0})
    return {"context": {"backend": "cuda", "time_domain": "gpu events", "machine": "2x NVIDIA H200"},
            "benchmarks": entries}


CASE = "accum/model:m/world:2/schedule:nS/binding:data/offload:none/mode:flag/dtype:fp32-fp32-fp32"


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    """The committed fixture with one case planted 2x slower."""
    return write_doc(plant_slowdown(fixture_doc(), SLOW, 2.0), tmp_path_factory.mktemp("cmp") / "slow.json")


def test_planted_2x_slowdown_is_a_regression_with_exit_1(slow_run):
    proc = run_script("compare.py", HOST_FIXTURE, slow_run)
    assert proc.returncode == 1, proc.stderr
    regressions = proc.stdout.split("## Regressions")[1].split("## All cases")[0]
    row = table_row(regressions, "nSnS", "data/gpu-add/flag")
    assert 1.9 < float(row[4]) < 2.1
    assert "slower" in row[6]
    rows = [line for line in regressions.splitlines() if line.startswith("| ")]
    assert len(rows) == 3  # header, rule, and only the planted case
    assert "1 regression in 64 cases" in proc.stdout


def test_unchanged_run_is_no_regression_with_exit_0():
    proc = run_script("compare.py", HOST_FIXTURE, HOST_FIXTURE)
    assert proc.returncode == 0, proc.stderr
    assert "no regression in 64 cases" in proc.stdout
    assert "## Regressions" not in proc.stdout


def test_noise_below_the_threshold_is_no_regression(tmp_path):
    doc = fixture_doc()
    rng = random.Random(7)
    for e in doc["benchmarks"]:
        for key, value in list(e.items()):
            if isinstance(value, float) and (key.endswith("_ms") or key in ("real_time", "cpu_time")):
                e[key] = value * (1 + rng.uniform(-0.02, 0.02))
    other = write_doc(doc, tmp_path / "rerun.json")
    result = compare_files(HOST_FIXTURE, other)
    assert result.regressions == []
    assert all(0.95 < r.ratio < 1.05 for r in result.rows)


def test_threshold_option_moves_the_line(slow_run):
    assert run_script("compare.py", HOST_FIXTURE, slow_run, "--threshold", "1.5").returncode == 0
    assert run_script("compare.py", HOST_FIXTURE, slow_run, "--threshold", "0.5").returncode == 1


def test_correct_flipping_to_0_is_a_regression(tmp_path):
    doc = fixture_doc()
    flipped = SLOW.replace("nSnS", "SSSS")
    for e in entries_of(doc, flipped, run_type=None):
        e["correct"], e["max_rel_err"] = 0.0, 0.5
    cand = write_doc(doc, tmp_path / "flipped.json")
    proc = run_script("compare.py", HOST_FIXTURE, cand)
    assert proc.returncode == 1
    row = table_row(proc.stdout.split("## Regressions")[1].split("## All cases")[0], "SSSS", "data/gpu-add/flag")
    assert "correct 1 → 0" in row[6]
    result = compare_files(HOST_FIXTURE, cand)
    assert [r.key.name for r in result.regressions] == [flipped]  # canonical name, whatever the suffixes
    assert result.regressions[0].verdict == "unchanged"  # the time did not move; correctness did


def test_a_case_that_now_fails_is_a_regression(tmp_path):
    doc = fixture_doc()
    failing = SLOW.replace("nSnS", "nnnS").replace("gpu-add", "none")
    for e in entries_of(doc, failing, run_type=None):
        for key in [k for k, v in e.items() if isinstance(v, float)]:
            del e[key]
        e.update({"error_occurred": True, "error_message": "NCCL timeout"})
    cand = write_doc(doc, tmp_path / "failing.json")
    result = compare_files(HOST_FIXTURE, cand)
    assert len(result.regressions) == 1
    assert result.regressions[0].correctness == "fails in candidate: NCCL timeout"


def test_u_test_decides_with_enough_repetitions(tmp_path):
    base = write_doc(tiny_run({CASE: [10.0, 10.1, 10.2, 10.3, 10.4]}), tmp_path / "b.json")
    clear = write_doc(tiny_run({CASE: [11.0, 11.1, 11.2, 11.3, 11.4]}), tmp_path / "c.json")
    r = compare_files(base, clear).rows[0]
    assert r.verdict == "regression" and r.p_value == pytest.approx(2 / 252) and "U test" in r.test_note
    # 8% slower in the median, but the repetitions overlap: the test calls it noise.
    noisy_slow = write_doc(tiny_run({CASE: [9.0, 9.5, 11.5, 30.0, 11.0]}), tmp_path / "ns.json")
    r = compare_files(base, noisy_slow).rows[0]
    assert r.ratio > 1.05 and r.p_value >= 0.05 and r.verdict == "not significant" and not r.regressed
    assert run_script("compare.py", base, noisy_slow).returncode == 0
    assert run_script("compare.py", base, clear).returncode == 1


def test_too_few_repetitions_fall_back_to_the_ratio_with_a_note(tmp_path):
    base = write_doc(tiny_run({CASE: [10.0]}), tmp_path / "b.json")
    cand = write_doc(tiny_run({CASE: [12.0]}), tmp_path / "c.json")
    r = compare_files(base, cand).rows[0]
    assert r.p_value is None and r.verdict == "regression"
    assert "no U test" in r.test_note and "ratio alone" in r.test_note
    assert smallest_p_value(2, 2) == pytest.approx(1 / 3) and smallest_p_value(4, 4) < 0.05


def test_higher_is_better_metrics_flip_the_direction(slow_run):
    result = compare_files(HOST_FIXTURE, slow_run, metric="nccl_busbw_gbps")
    names = [r.key.name for r in result.regressions]
    assert names == [SLOW]
    assert result.regressions[0].ratio == pytest.approx(0.5, abs=0.05)


def test_out_writes_the_markdown_and_prints_a_summary(tmp_path, slow_run):
    out = tmp_path / "cmp" / "result.md"
    proc = run_script("compare.py", HOST_FIXTURE, slow_run, "--out", out)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == ["1 regression in 64 cases: 1 worse by more than 5% in step_ms, "
                                        "0 lost correctness or now fail", str(out)]
    text = out.read_text()
    assert text.startswith("# shardaccum compare: step_ms") and "## Regressions" in text
    assert "host wall-clock, not GPU time" in text
    assert [p.name for p in out.parent.iterdir()] == ["result.md"]


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("", "empty file"),
    ('{"context": {}}', "no 'benchmarks' list"),
])
def test_bad_candidate_exits_2_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "cand.json"
    bad.write_text(content)
    proc = run_script("compare.py", HOST_FIXTURE, bad)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_common_case_and_unknown_metric_exit_2(tmp_path):
    other = write_doc(tiny_run({CASE: [1.0, 1.1]}), tmp_path / "other.json")
    proc = run_script("compare.py", HOST_FIXTURE, other)
    assert proc.returncode == 2 and "no case in common" in proc.stderr
    proc = run_script("compare.py", HOST_FIXTURE, HOST_FIXTURE, "--metric", "step_time")
    assert proc.returncode == 2 and "--metric step_time" in proc.stderr and "step_ms" in proc.stderr


def test_runs_apart_only_by_a_further_name_part_say_which(tmp_path):
    """The same case run under two --device-add-grid values: no case in common, and the error names the
    parts that keep them apart instead of leaving the reader to find them."""
    base = write_doc(tiny_run({CASE + "/device-add-grid:torch": [1.0, 1.1]}), tmp_path / "torch.json")
    cand = write_doc(tiny_run({CASE + "/device-add-grid:two-per-sm": [1.0, 1.1]}), tmp_path / "two.json")
    proc = run_script("compare.py", base, cand)
    assert proc.returncode == 2 and "no case in common" in proc.stderr
    assert "but for the name parts /device-add-grid:torch, /device-add-grid:two-per-sm" in proc.stderr, proc.stderr
    # cases that differ in their strategy as well get no such sentence
    other = write_doc(tiny_run({CASE.replace("offload:none", "offload:gpu-add") + "/device-add-grid:torch": [1.0, 1.1]}),
                      tmp_path / "other.json")
    proc = run_script("compare.py", other, cand)
    assert proc.returncode == 2 and "but for the name parts" not in proc.stderr


def test_bad_threshold_is_a_usage_error():
    proc = run_script("compare.py", HOST_FIXTURE, HOST_FIXTURE, "--threshold", "five")
    assert proc.returncode == 2 and "--threshold" in proc.stderr


# --- The gate on missing data (issue 11, item 11) ---------------------------------------------------

ZERO3 = f"accum/model:{MODEL}/world:2/schedule:SSSS/binding:data-free/offload:gpu-add/mode:flag/dtype:fp32-fp32-fp32"


def _without(doc: dict, name: str, counter: str, how: str) -> dict:
    """Removes a counter from every entry of one case (how='absent') or sets it to null (how='null')."""
    for e in entries_of(doc, name, run_type=None):
        if how == "absent":
            e.pop(counter, None)
        else:
            e[counter] = None
    return doc


def _missing_rows(stdout: str) -> str:
    assert "## Missing in candidate" in stdout, stdout[:3000]
    return stdout.split("## Missing in candidate")[1].split("## All cases")[0]


@pytest.mark.parametrize("how", ["absent", "null"])
@pytest.mark.parametrize("counter", ["step_ms", "correct"])
def test_a_candidate_case_without_step_ms_or_correct_fails_the_gate(tmp_path, counter, how):
    cand = write_doc(_without(fixture_doc(), ZERO3, counter, how), tmp_path / "cand.json")
    proc = run_script("compare.py", HOST_FIXTURE, cand)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    assert table_row(_missing_rows(proc.stdout), "SSSS", "data-free/gpu-add/flag (zero3)")[2] == f"`{counter}`"
    assert f"missing in candidate: 1 case without {counter}" in proc.stdout
    assert "no regression in 64 cases" not in proc.stdout


def test_a_candidate_lacking_a_case_of_the_baseline_fails_the_gate(tmp_path):
    doc = fixture_doc()
    doc["benchmarks"] = [e for e in doc["benchmarks"] if e not in entries_of(doc, ZERO3, run_type=None)]
    cand = write_doc(doc, tmp_path / "cand.json")
    out = tmp_path / "cmp.md"
    proc = run_script("compare.py", HOST_FIXTURE, cand, "--out", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith("missing in candidate: 1 case of the baseline")
    text = out.read_text()
    assert table_row(_missing_rows(text), "SSSS", "data-free/gpu-add/flag (zero3)")[2] == "the whole case"
    assert f"`{ZERO3}`" in _missing_rows(text)


def test_new_cases_in_the_candidate_are_listed_and_do_not_fail(tmp_path):
    doc = fixture_doc()
    doc["benchmarks"] = [e for e in doc["benchmarks"] if e not in entries_of(doc, ZERO3, run_type=None)]
    base = write_doc(doc, tmp_path / "base.json")
    proc = run_script("compare.py", base, HOST_FIXTURE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "## Missing in candidate" not in proc.stdout
    new = proc.stdout.split("## New in candidate")[1]
    assert f"- `{ZERO3}`" in new and "do not fail the gate" in new


def test_a_case_failing_in_both_runs_is_noted_not_missing(tmp_path):
    base = write_doc(plant_error(fixture_doc(), ZERO3, "out of memory"), tmp_path / "base.json")
    cand = write_doc(plant_error(fixture_doc(), ZERO3, "out of memory"), tmp_path / "cand.json")
    proc = run_script("compare.py", base, cand)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 case failed in both runs" in proc.stdout and "## Missing in candidate" not in proc.stdout


def _labelled(tmp_path, base_label: str, cand_label: str, name: str = "ab"):
    """compare_files over one case whose every entry carries base_label, then cand_label."""
    base, cand = tiny_run({CASE: [10.0, 10.0]}), tiny_run({CASE: [10.0, 10.0]})
    for doc, label in ((base, base_label), (cand, cand_label)):
        for e in doc["benchmarks"]:
            e["label"] = label
    return compare_files(write_doc(base, tmp_path / f"{name}-a.json"), write_doc(cand, tmp_path / f"{name}-b.json"))


def _settings_note(result) -> str | None:
    return next((n for n in result.notes if "settings their name does not carry" in n), None)


def test_a_name_that_ran_under_other_unnamed_settings_gets_a_note(tmp_path):
    # A preset changed between commits (fairscale left data/copy/shape on 2026-12-05): the same name
    # then ran at another default lookahead and device add grid, which only the label says.
    before = "gpu events; lookahead unbounded; device add grid torch"
    note = _settings_note(_labelled(tmp_path, before, "gpu events; lookahead 1; device add grid two-per-sm"))
    assert "lookahead unbounded; device add grid torch → lookahead 1; device add grid two-per-sm" in note
    assert "1 case ran" in note
    assert _settings_note(_labelled(tmp_path, before, before, "same")) is None


def test_the_cpu_adds_threads_of_a_label_are_among_the_unnamed_settings(tmp_path):
    # --host-threads auto gives fsdp2's cpu-add-pageable torchrun's 1 thread at 2+ ranks a node; a run
    # with --host-threads 0 keeps the rank's share under the same name: the label tells them apart.
    note = _settings_note(_labelled(
        tmp_path, "correct; lookahead 1; device add grid torch; host threads 1 (torchrun); bound by host memory",
        "correct; lookahead 1; device add grid torch; host threads rank's share; bound by host memory"))
    assert "`: host threads 1 (torchrun) → host threads rank's share" in note  # only what differs
    assert "--host-threads" in note


def test_the_host_time_per_unit_of_a_label_is_among_the_unnamed_settings(tmp_path):
    # --hook-host-us auto gives fsdp1's combination its measured host time per unit (since 2026-12-07),
    # under the same name as before: the label's `hook host N us` tells the runs apart.
    old = "correct; lookahead unbounded; device add grid torch; comm priority default; bound by copy engines"
    note = _settings_note(_labelled(
        tmp_path, old, "correct; lookahead unbounded; device add grid torch; comm priority default; "
                       "hook host 290 us; bound by copy engines"))
    assert "`: (not said) → hook host 290 us" in note, note
    assert "--hook-host-us" in note


def test_a_label_from_before_the_comm_priority_reads_as_the_greatest(tmp_path):
    # Labels between --device-add-grid and --comm-priority (2026-12-05/06) name no priority: every comm
    # stream ran at the device's greatest then. Against a run at the greatest: no note; at 0: that change.
    old = "correct; lookahead unbounded; device add grid torch; bound by copy engines"
    assert _settings_note(_labelled(
        tmp_path, old, "correct; lookahead unbounded; device add grid torch; comm priority greatest; "
                       "bound by copy engines")) is None
    note = _settings_note(_labelled(
        tmp_path, old, "correct; lookahead unbounded; device add grid torch; comm priority default; "
                       "bound by copy engines", "moved"))
    assert "`: comm priority greatest → comm priority default" in note, note
    assert "--comm-priority" in note


def test_the_rank_share_with_or_without_its_number_is_one_setting(tmp_path):
    # Labels before 2026-12-06 said "host threads rank's share"; since then the number of the machine's
    # share is given. Both are --host-threads 0: no note, whatever the two machines' shares.
    old = "correct; lookahead 1; device add grid torch; host threads rank's share; bound by host memory"
    for new in ("correct; lookahead 1; device add grid torch; host threads 16 (the rank's share); bound by host memory",
                "correct; lookahead 1; device add grid torch; host threads 2 (the rank's share); bound by host memory"):
        assert _settings_note(_labelled(tmp_path, old, new)) is None
    # torchrun's 1 thread is still another setting than the rank's share of 1
    note = _settings_note(_labelled(
        tmp_path, "correct; lookahead 1; device add grid torch; host threads 1 (torchrun); bound by host memory",
        "correct; lookahead 1; device add grid torch; host threads 1 (the rank's share); bound by host memory"))
    assert note is not None and "host threads 1 (torchrun) →" in note
