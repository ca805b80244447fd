"""Runs of bench/real/run.py (cases real/...): read apart from the registry, strictly, and each real case
paired with its preset case by the registry (fixture: tests/fixtures/real_w2_uniform8x64K.json, provisional)."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, HOST_FIXTURE, load_doc, run_script, write_doc
from shardaccum_report.case import Strategy
from shardaccum_report.errors import InputError
from shardaccum_report.loading import load_inputs, load_run_file, load_runs
from shardaccum_report.pairing import NO_PRESET_CASE, no_offload_value, pair_cases
from shardaccum_report.real import RealKey

REAL_FIXTURE = FIXTURES / "real_w2_uniform8x64K.json"
NAME = "real/system:fsdp2/model:uniform:8x64K/world:2/schedule:SSSS/offload:cpu/dtype:fp32-fp32-fp32"


def _with_registry(doc: dict, edit) -> dict:
    """The suite doc with its context registry edited in place by edit(registry object)."""
    registry = json.loads(doc["context"]["registry"])
    edit(registry)
    doc["context"]["registry"] = json.dumps(registry)
    return doc


def test_real_cases_are_keyed_apart_and_not_checked_against_a_registry(tmp_path):
    doc = load_doc(REAL_FIXTURE)
    # A registry in a real run's context: offload 'cpu' is none of its values, and must not be refused for it.
    doc["context"]["registry"] = load_doc(HOST_FIXTURE)["context"]["registry"]
    f = load_run_file(write_doc(doc, tmp_path / "real.json"))
    assert f.kind == "real"
    assert len(f.cases) == len(doc["benchmarks"])
    assert all(isinstance(k, RealKey) for k in f.cases)
    assert {k.name for k in f.cases} == {e["name"] for e in doc["benchmarks"]}


@pytest.mark.parametrize("name, problem", [
    (NAME.replace("offload:cpu", "offload:gpu"), "offload 'gpu'"),
    (NAME.replace("/offload:cpu", ""), "lacks offload"),
    (NAME.replace("schedule:SSSS", "schedule:SSSn"), "schedule 'SSSn'"),
    (NAME.replace("world:2", "world:0"), "world size '0'"),
    (NAME + "/binding:data", "unknown key 'binding'"),
    (NAME + "/tokens:x", "tokens 'x'"),
])
def test_a_malformed_real_name_exits_2_naming_the_file_and_the_name(tmp_path, name, problem):
    doc = load_doc(REAL_FIXTURE)
    doc["benchmarks"][3]["name"] = doc["benchmarks"][3]["run_name"] = name
    path = write_doc(doc, tmp_path / "bad_real.json")
    proc = run_script("report.py", HOST_FIXTURE, path, "--name", "x", "--out-dir", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert str(path) in proc.stderr and repr(name) in proc.stderr and problem in proc.stderr


def test_strict_json_applies_to_real_runs(tmp_path):
    text = REAL_FIXTURE.read_text().replace('"max_rel_err": 0.0', '"max_rel_err": NaN', 1)
    path = tmp_path / "nan.json"
    path.write_text(text)
    proc = run_script("report.py", path, "--name", "x", "--out-dir", tmp_path / "out")
    assert proc.returncode == 2 and str(path) in proc.stderr and "NaN" in proc.stderr


def test_a_file_mixing_real_and_suite_cases_is_refused(tmp_path):
    doc = load_doc(REAL_FIXTURE)
    doc["benchmarks"].append(load_doc(HOST_FIXTURE)["benchmarks"][0])
    path = write_doc(doc, tmp_path / "mixed.json")
    with pytest.raises(InputError, match="mixes real-system cases") as e:
        load_run_file(path)
    assert e.value.path == str(path)


def test_accumulation_costs_may_be_negative_other_figures_may_not(tmp_path):
    doc = load_doc(REAL_FIXTURE)
    doc["benchmarks"][0]["accum_cost_b_ms"] = -0.25  # a difference of two measured times
    run = load_runs([write_doc(doc, tmp_path / "neg.json")])
    assert run.cases[[c.key.name for c in run.cases].index(doc["benchmarks"][0]["name"])].value(
        "accum_cost_b_ms") == -0.25
    doc["benchmarks"][0]["step_ms"] = -1.0
    with pytest.raises(InputError, match="is negative"):
        load_runs([write_doc(doc, tmp_path / "neg_step.json")])


def test_load_runs_refuses_the_two_kinds_load_inputs_splits_them():
    with pytest.raises(InputError, match="mix suite runs"):
        load_runs([HOST_FIXTURE, REAL_FIXTURE])
    suite, real = load_inputs([REAL_FIXTURE, HOST_FIXTURE])
    assert suite.kind == "suite" and real.kind == "real"
    assert [f.path for f in suite.files] == [str(HOST_FIXTURE)] and [f.path for f in real.files] == [str(REAL_FIXTURE)]


def test_every_real_case_finds_its_preset_by_the_registry():
    suite, real = load_inputs([REAL_FIXTURE, HOST_FIXTURE])
    pairs = pair_cases(real, suite)
    assert len(pairs) == len(real.cases)
    presets = {p.name: Strategy(**dict(p.axes), registry=suite.registry) for p in suite.registry.presets}
    none = no_offload_value(suite.registry)
    assert none is not None
    for p in pairs:
        assert p.why is None and p.preset is not None, p.key.name
        k = p.preset.key
        assert (k.model, k.world, k.schedule, k.dtype) == (p.key.model, p.key.world, p.key.schedule, p.key.dtype)
        want = presets[p.key.system]
        if p.key.offload == "none":
            assert k.strategy.offload == none
            assert [getattr(k.strategy, a) for a in ("binding", "mode", "division")] == \
                [getattr(want, a) for a in ("binding", "mode", "division")]
        else:
            assert k.strategy == want


def test_the_offload_mapping_is_the_registrys_not_a_copy(tmp_path):
    def move_fsdp2(registry):  # a registry whose fsdp2 preset means another strategy
        preset = next(p for p in registry["presets"] if p["name"] == "fsdp2")
        preset["axes"] = {"binding": "data", "offload": "copy", "mode": "shape", "division": "end"}
    suite_path = write_doc(_with_registry(load_doc(HOST_FIXTURE), move_fsdp2), tmp_path / "suite.json")
    suite, real = load_inputs([suite_path, REAL_FIXTURE])
    pairs = {(p.key.system, p.key.offload, p.key.schedule): p for p in pair_cases(real, suite)}
    assert pairs[("fsdp2", "cpu", "SSSS")].preset.key.strategy.label == "data/copy/shape"
    assert pairs[("fsdp2", "none", "SSSS")].preset.key.strategy.label == "data/none/shape"


def test_a_registry_without_the_preset_gives_no_preset_case(tmp_path):
    def drop_fsdp1(registry):
        registry["presets"] = [p for p in registry["presets"] if p["name"] != "fsdp1"]
    suite_path = write_doc(_with_registry(load_doc(HOST_FIXTURE), drop_fsdp1), tmp_path / "suite.json")
    suite, real = load_inputs([suite_path, REAL_FIXTURE])
    pairs = pair_cases(real, suite)
    fsdp1 = [p for p in pairs if p.key.system == "fsdp1"]
    assert fsdp1 and all(p.preset is None and p.why.startswith(NO_PRESET_CASE) and "'fsdp1'" in p.why
                         for p in fsdp1)
    assert all(p.preset is not None for p in pairs if p.key.system == "fsdp2")


def test_a_suite_run_without_the_case_gives_no_preset_case(tmp_path):
    doc = load_doc(HOST_FIXTURE)
    doc["benchmarks"] = [e for e in doc["benchmarks"] if "schedule:SSSS" not in e["name"]]
    suite, real = load_inputs([write_doc(doc, tmp_path / "suite.json"), REAL_FIXTURE])
    pairs = pair_cases(real, suite)
    assert {p.why for p in pairs if p.key.schedule == "SSSS"} == {NO_PRESET_CASE}
    assert all(p.preset is not None for p in pairs if p.key.schedule != "SSSS")


def test_a_real_case_offloaded_to_pageable_memory_stands_beside_no_preset(tmp_path):
    # Every preset offloads to pinned memory; FSDP2's pin_memory=False (and DeepSpeed's pin_memory false)
    # copies blocking into pageable memory from the first sync on, so the preset's case is another system.
    doc = load_doc(REAL_FIXTURE)
    pageable = [dict(e, name=e["name"].replace("/offload:cpu/", "/offload:cpu-pageable/"),
                     run_name=e["run_name"].replace("/offload:cpu/", "/offload:cpu-pageable/"))
                for e in doc["benchmarks"] if "/offload:cpu/" in e["name"]]
    assert pageable
    doc["benchmarks"] += pageable
    suite, real = load_inputs([write_doc(doc, tmp_path / "real.json"), HOST_FIXTURE])
    pairs = pair_cases(real, suite)
    unpinned = [p for p in pairs if p.key.offload == "cpu-pageable"]
    assert len(unpinned) == len(pageable)
    for p in unpinned:
        assert p.preset is None and p.preset_key is None
        assert p.why.startswith(NO_PRESET_CASE) and "pin_memory" in p.why and "pinned" in p.why, p.why
    # The pinned cases keep their presets.
    assert all(p.preset is not None for p in pairs if p.key.offload == "cpu")
