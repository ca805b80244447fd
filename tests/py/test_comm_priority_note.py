"""The report's note on the comm stream's priority (report._comm_priority_text, from the context's
comm_priority and the registry's presets, bench/cli.cpp --comm-priority): under auto it names the
presets whose combinations ran at priority 0, under a named value that value, and a run from before
the flag has no such note."""

from __future__ import annotations

import json

from conftest import fixture_doc, notes_of, section, write_doc
from shardaccum_report.report import build_report


def _notes(tmp_path, priority: str | None, normal: tuple[str, ...] = ()) -> str:
    return notes_of(tmp_path, "comm_priority", priority, lambda name: "default" if name in normal else "greatest")


def test_auto_names_the_presets_at_priority_zero(tmp_path):
    notes = _notes(tmp_path, "auto", ("fsdp1", "zero3"))
    line = next(n for n in notes.splitlines() if "The comm stream" in n)
    assert "`--comm-priority auto`" in line and "division of fsdp1, zero3 (their systems'" in line, line
    assert "at the device's greatest for every other strategy" in line
    assert "At priority 0 a case's `nccl_ms` also counts its collectives' wait" in line
    # with no preset at 0 and none named, no case ran at 0: no such warning
    (tmp_path / "greatest").mkdir()
    assert "`nccl_ms`" not in _notes(tmp_path / "greatest", "auto", ())


def test_a_named_priority_is_said_for_every_strategy(tmp_path):
    notes = _notes(tmp_path, "default")
    assert "The comm stream at priority `default` for every strategy of the runs with `--comm-priority default`." \
        in notes
    line = next(n for n in notes.splitlines() if "The comm stream" in n)
    assert "before `--comm-priority`" not in line and "auto" not in line, line


def test_a_run_from_before_the_flag_has_no_note(tmp_path):
    assert "The comm stream" not in _notes(tmp_path, None)


def test_runs_of_several_settings_each_get_their_sentence(tmp_path):
    """auto beside a named value and a run from before the flag: none of them is said to hold for the others."""
    paths = []
    for i, (priority, names) in enumerate((("auto", ("fsdp1",)), ("greatest", ()), (None, ()))):
        doc = fixture_doc()
        if priority is not None:
            doc["context"]["comm_priority"] = priority
        registry = doc["context"]["registry"]
        registry = json.loads(registry) if isinstance(registry, str) else registry
        for p in registry["presets"]:
            p["comm_priority"] = "default" if p["name"] in names else "greatest"
        doc["context"]["registry"] = registry
        for b in doc["benchmarks"]:  # other models: one run of each case
            b["name"] = b["name"].replace("/world:", f"-{i}/world:")
            b["run_name"] = b["name"]
        paths.append(write_doc(doc, tmp_path / f"run{i}.json"))
    readme = build_report(paths, "mixed", tmp_path / "out")
    line = next(n for n in section(readme.read_text(encoding="utf-8"), "## Notes").splitlines() if "The comm stream" in n)
    assert "(`--comm-priority auto`, in the runs that gave it): at CUDA's default priority 0" in line, line
    assert "at priority `greatest` for every strategy of the runs with `--comm-priority greatest`" in line, line
    assert "The runs from before `--comm-priority` ran every strategy's comm stream at the device's greatest" in line
    assert "whatever the strategy" not in line
