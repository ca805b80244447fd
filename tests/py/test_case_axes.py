"""A run with several K and world sizes (shardaccum_bench --k 2,4 --world-size 1,2): every entry carries
its case's `k` and `world_size`; loading groups by them, checks them against the name, and the report and
compare tools read such a run."""

from __future__ import annotations

import pytest
from conftest import run_script, write_doc
from shardaccum_report.errors import InputError
from shardaccum_report.loading import load_runs

STRATEGY = "binding:data-free/offload:cpu-add/mode:flag/dtype:fp32-fp32-fp32"
SCHEDULES = {2: "nS", 4: "nnnS"}


def name(world: int, k: int) -> str:
    return f"accum/model:uniform:4x1M/world:{world}/schedule:{SCHEDULES[k]}/{STRATEGY}"


def multi_axis_doc(overrides: dict[str, dict] | None = None) -> dict:
    """Four cases (world 1 and 2 x K 2 and 4), two repetitions each, as the binary writes them."""
    entries = []
    for world in (1, 2):
        for k in (2, 4):
            n = name(world, k)
            for rep in range(2):
                step = 1.0 + world + k / 10 + rep / 100  # distinct per case: a mix-up shows
                entry = {"name": n + "/iterations:3/manual_time", "run_name": n + "/iterations:3/manual_time",
                         "run_type": "iteration", "repetitions": 2, "repetition_index": rep, "iterations": 3,
                         "real_time": step, "cpu_time": step, "time_unit": "ms", "step_ms": step,
                         "correct": 1.0, "max_rel_err": 0.0, "k": float(k), "world_size": float(world)}
                entry.update((overrides or {}).get(n, {}))
                entries.append(entry)
    return {"context": {"backend": "host", "time_domain": "host wall-clock", "model": "uniform:4x1M",
                        "world_size": "1,2", "k": "2,4"}, "benchmarks": entries}


def test_cases_are_grouped_by_their_own_k_and_world_size(tmp_path):
    run = load_runs([write_doc(multi_axis_doc(), tmp_path / "run.json")])
    groups = run.groups()
    assert sorted((g.world, g.k) for g in groups) == [(1, 2), (1, 4), (2, 2), (2, 4)]
    for group, cases in groups.items():
        (case,) = cases
        assert case.value("step_ms") == pytest.approx(1.0 + group.world + group.k / 10 + 0.005)
        # identity, not a measure: k and world_size are not among the counters
        assert not case.has("k") and not case.has("world_size")


@pytest.mark.parametrize("field,value", [("k", 8.0), ("world_size", 4.0)])
def test_an_entry_whose_k_or_world_size_disagrees_with_its_name_is_refused(tmp_path, field, value):
    doc = multi_axis_doc({name(2, 4): {field: value}})
    with pytest.raises(InputError, match=f"'{field}' = {value:g} but the name says"):
        load_runs([write_doc(doc, tmp_path / "bad.json")])


def test_report_and_compare_read_a_run_of_several_k_and_world_sizes(tmp_path):
    path = write_doc(multi_axis_doc(), tmp_path / "run.json")
    proc = run_script("compare.py", path, path)
    assert proc.returncode == 0, proc.stderr
    assert "no regression in 4 cases" in proc.stdout
    proc = run_script("report.py", path, "--name", "axes", "--out-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "axes" / "README.md").read_text(encoding="utf-8")
    for world, k in ((1, 2), (1, 4), (2, 2), (2, 4)):
        assert f"world {world} · K {k}" in text, f"no section for world {world}, K {k}"


def test_compare_of_one_case_says_1_case(tmp_path):
    doc = multi_axis_doc()
    doc["benchmarks"] = [e for e in doc["benchmarks"] if e["run_name"].startswith(name(1, 2) + "/")]
    path = write_doc(doc, tmp_path / "one.json")
    proc = run_script("compare.py", path, path)
    assert proc.returncode == 0, proc.stderr
    assert "no regression in 1 case (" in proc.stdout, proc.stdout
