"""The report's note on the host time spent before each unit's backward (report._hook_host_text, from the
context's hook_host_us and the registry's presets, bench/cli.cpp --hook-host-us), the registry's reading of
each preset's hook_host_us, and the label's `hook host N us` among a case's unnamed settings."""

from __future__ import annotations

import json

import pytest
from conftest import fixture_doc, notes_of
from shardaccum_report.registry import Registry


def _notes(tmp_path, value: str | None) -> str:
    return notes_of(tmp_path, "hook_host_us", value, lambda name: 290 if name == "fsdp1" else 0)


def test_auto_names_the_presets_with_a_measured_host_time(tmp_path):
    line = next(n for n in _notes(tmp_path, "auto").splitlines() if "Host time before each unit's backward" in n)
    assert "(`--hook-host-us auto`)" in line and "fsdp1 290 µs for the strategies" in line, line
    assert "fsdp2" not in line.split("for the strategies")[0], line  # 0: not named
    assert "A case name ending `/hook-host-us:N` ran N" in line


def test_a_named_value_is_said_for_every_strategy_and_a_run_from_before_has_no_note(tmp_path):
    notes = _notes(tmp_path, "5")
    assert "Host time of `5` µs before each unit's backward for every strategy of the runs with " \
           "`--hook-host-us 5`." in notes
    (tmp_path / "before").mkdir()
    assert "Host time" not in _notes(tmp_path / "before", None)


def _registry_with(hook) -> dict:
    doc = fixture_doc()
    registry = doc["context"]["registry"]
    registry = json.loads(registry) if isinstance(registry, str) else registry
    for p in registry["presets"]:
        p["hook_host_us"] = hook if p["name"] == "fsdp1" else 0
    return registry


def test_the_registry_reads_each_presets_host_time():
    presets = {p.name: p.hook_host_us for p in Registry.from_json(_registry_with(290)).presets}
    assert presets["fsdp1"] == 290 and presets["fsdp2"] == 0
    older = fixture_doc()["context"]["registry"]
    older = json.loads(older) if isinstance(older, str) else older
    for p in older["presets"]:
        p.pop("hook_host_us", None)
    assert {p.hook_host_us for p in Registry.from_json(older).presets} == {None}


@pytest.mark.parametrize("bad", [-1, "290", 2.5, True])
def test_a_registry_with_a_bad_host_time_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match=r"hook_host_us = .* is not a count of µs"):
        Registry.from_json(_registry_with(bad))
