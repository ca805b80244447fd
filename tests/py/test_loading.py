"""Reading benchmark JSON: names, repetitions, medians, statuses, and clear errors for bad files."""

from __future__ import annotations

import json
import statistics

import pytest
from conftest import (GPU_RUN, HOST_FIXTURE, MODEL, entries_of, fixture_doc, iteration_entries, plant_error,
                      write_doc)
from shardaccum_report.case import CaseKey, Strategy, parse_case_name
from shardaccum_report.errors import InputError
from shardaccum_report.loading import load_run_file, load_runs
from shardaccum_report.registry import Registry

REGISTRY = Registry.committed()

NAME = ("accum/model:llama2-7b/world:2/schedule:nSnS/binding:data/offload:cpu-add/mode:flag/"
        "dtype:bf16-bf16-fp32")


def test_parse_case_name_reads_every_axis():
    key = parse_case_name(NAME)
    assert key == CaseKey("llama2-7b", 2, "nSnS", Strategy("data", "cpu-add", "flag"), "bf16-bf16-fp32")
    assert key.k == 4 and key.sync_count == 2
    assert key.name == NAME


def test_parse_case_name_ignores_google_benchmark_suffixes_and_keeps_unknown_axes():
    assert parse_case_name(NAME + "/iterations:3/repeats:2/manual_time") == parse_case_name(NAME)
    extra = parse_case_name(NAME + "/gen:random")
    assert extra.extra == (("gen", "random"),) and extra != parse_case_name(NAME)


def test_parse_case_name_other_families_and_malformed_names():
    assert parse_case_name("ceiling/h2d/bytes:1073741824") is None
    with pytest.raises(ValueError, match="lacks the axis mode"):
        parse_case_name("accum/model:m/world:2/schedule:nS/binding:data/offload:none")
    with pytest.raises(ValueError, match="must|ending in S"):
        parse_case_name("accum/model:m/world:2/schedule:SSn/binding:data/offload:none/mode:flag")
    with pytest.raises(ValueError, match="positive integer"):
        parse_case_name("accum/model:m/world:0/schedule:S/binding:data/offload:none/mode:flag")


def test_canonical_schedules_match_design_doc():
    assert [REGISTRY.canonical_schedule(n, 4) for n in ("no-sync", "sync", "interleaved-nosync-last",
                                               "interleaved-sync-last")] == ["nnnS", "SSSS", "nSnS", "SnSS"]
    assert REGISTRY.schedule_family("SnSS") == "interleaved-sync-last"
    assert REGISTRY.schedule_family("nnSnS") == "other"
    assert REGISTRY.preset_of(Strategy("data-free", "cpu-add-pageable", "flag", "collective",
                                       copy_in="chunk-cat")) == "fsdp2"
    assert REGISTRY.preset_of(Strategy("data-free", "gpu-add", "flag")) == "zero3"
    assert Strategy("data", "copy", "shape").display == "data/copy/shape (fairscale)"


def test_host_fixture_loads_as_16_strategies_by_4_schedules_with_2_repetitions():
    run = load_runs([HOST_FIXTURE])
    assert len(run.cases) == 64
    assert {c.key.schedule for c in run.cases} == {"nnnS", "SSSS", "nSnS", "SnSS"}
    assert len({c.key.strategy for c in run.cases}) == 16
    assert all(c.repetition_count == 2 for c in run.cases)
    assert run.is_host and run.time_label == "host wall-clock, not GPU time"
    assert run.files[0].context.ceilings == {}


def test_wrong_cells_are_exactly_the_offloaded_copy_and_shape_cells_with_two_or_more_syncs():
    run = load_runs([HOST_FIXTURE])
    for c in run.cases:
        s = c.key.strategy
        expect_wrong = s.offload != "none" and c.key.sync_count >= 2 and (s.offload == "copy" or s.mode == "shape")
        assert c.status == ("wrong" if expect_wrong else "correct"), c.key.name
    sync_copy = next(c for c in run.cases if c.key.schedule == "SSSS" and c.key.strategy.preset == "fsdp1")
    assert sync_copy.max_rel_err == pytest.approx(0.866, abs=0.01)  # docs/DESIGN.md §3: sqrt(3/4)


def test_case_value_is_the_median_over_repetitions(host_doc):
    run = load_runs([HOST_FIXTURE])
    case = run.cases[37]
    reps = iteration_entries(host_doc, case.key.name)
    assert len(reps) == 2
    for counter in ("step_ms", "backward_ms", "d2h_bytes"):
        assert case.value(counter) == statistics.median(e[counter] for e in reps)
    assert case.samples("step_ms") == [e["step_ms"] for e in reps]


def test_aggregates_only_file_uses_the_median_aggregate(tmp_path, host_doc):
    doc = {"context": host_doc["context"],
           "benchmarks": [e for e in host_doc["benchmarks"] if e["run_type"] == "aggregate"]}
    run = load_runs([write_doc(doc, tmp_path / "agg.json")])
    case = run.cases[0]
    median = next(e for e in entries_of(doc, case.key.name, run_type="aggregate") if e["aggregate_name"] == "median")
    assert case.samples("step_ms") == []
    assert case.value("step_ms") == median["step_ms"]


def test_failed_case_is_an_error_with_its_message(tmp_path):
    name = f"accum/model:{MODEL}/world:2/schedule:SSSS/binding:data/offload:none/mode:flag/dtype:fp32-fp32-fp32"
    doc = plant_error(fixture_doc(), name, "rank 0: out of memory")
    run = load_runs([write_doc(doc, tmp_path / "err.json")])
    failed = [c for c in run.cases if c.status == "error"]
    assert len(failed) == 1 and failed[0].error == "rank 0: out of memory"
    assert failed[0].value("step_ms") is None


@pytest.mark.parametrize("field, value", [("step_ms", "fast"), ("step_ms", "12"), ("d2h_bytes", True),
                                          ("correct", "yes"), ("step_ms_rank1", [1.0])])
def test_a_counter_holding_text_is_an_input_error_naming_it(tmp_path, host_doc, field, value):
    # Read as missing, a text step_ms once drew its spread without a step (a TypeError in a plot).
    doc = json.loads(json.dumps(host_doc))
    doc["benchmarks"][3][field] = value
    path = write_doc(doc, tmp_path / "text.json")
    with pytest.raises(InputError) as e:
        load_runs([path])
    assert str(path) in str(e.value) and f"'{field}' = " in str(e.value) and "is not a number" in str(e.value)
    assert doc["benchmarks"][3]["name"] in str(e.value)


def test_other_benchmark_families_are_left_out_with_a_note(tmp_path, host_doc):
    doc = json.loads(json.dumps(host_doc))
    doc["benchmarks"].append({"name": "ceiling/h2d", "run_name": "ceiling/h2d", "run_type": "iteration",
                              "real_time": 1.0, "time_unit": "ms"})
    f = load_run_file(write_doc(doc, tmp_path / "mixed.json"))
    assert len(f.cases) == 64
    assert any("not accumulation cases" in n for n in f.notes)


@pytest.mark.parametrize("content, message", [
    ("", "empty file"),
    ("   \n", "empty file"),
    ('{"context": {}, "benchmarks": [', "not valid JSON"),
    ("[1, 2]", "top level is a JSON array"),
    ("null", "top level is a JSON null"),
    ('{"context": {}, "benchmarks": {}}', "'benchmarks' is a JSON object, expected an array"),
    ('{"context": {"a": 1, "a": 2}, "benchmarks": []}', "names the key 'a' twice in one object"),
    ('{"context": {}}', "no 'benchmarks' list"),
    ('{"context": {}, "benchmarks": []}', "'benchmarks' is empty"),
    ('{"benchmarks": [{"run_type": "iteration"}]}', "has no 'name'"),
    ('{"benchmarks": [{"name": "BM_memcpy/64"}]}', "none of the 1 benchmarks is an accumulation case"),
    ('{"benchmarks": [{"name": "accum/model:m/world:2"}]}', "lacks the axis"),
])
def test_bad_files_raise_input_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError) as e:
        load_runs([path])
    assert str(path) in str(e.value)
    assert message in str(e.value)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_runs([tmp_path / "absent.json"])


def test_the_same_case_in_two_files_is_an_error_pointing_to_compare(tmp_path):
    a = write_doc(fixture_doc(), tmp_path / "a.json")
    b = write_doc(fixture_doc(), tmp_path / "b.json")
    with pytest.raises(InputError, match=r"also in .*a\.json.*compare\.py"):
        load_runs([a, b])


def test_files_of_different_backends_do_not_mix(tmp_path):
    a = write_doc(fixture_doc(), tmp_path / "host.json")
    with pytest.raises(InputError, match="mix backends"):
        load_runs([a, GPU_RUN])
