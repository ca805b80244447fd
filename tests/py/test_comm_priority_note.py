"""The report's note on the comm stream's priority (report._comm_priority_text, from the context's
comm_priority and the registry's presets, bench/cli.cpp --comm-priority): under auto it names the
presets whose combinations ran at priority 0, under a named value that value, and a run from before
the flag has no such note."""

from __future__ import annotations

from conftest import notes_of


def _notes(tmp_path, priority: str | None, normal: tuple[str, ...] = ()) -> str:
    return notes_of(tmp_path, "comm_priority", priority, lambda name: "default" if name in normal else "greatest")


def test_auto_names_the_presets_at_priority_zero(tmp_path):
    notes = _notes(tmp_path, "auto", ("fsdp1", "zero3"))
    line = next(n for n in notes.splitlines() if "The comm stream" in n)
    assert "`--comm-priority auto`" in line and "division of fsdp1, zero3 (their systems'" in line, line
    assert "at the device's greatest for every other strategy" in line


def test_a_named_priority_is_said_for_every_strategy(tmp_path):
    notes = _notes(tmp_path, "default")
    assert "The comm stream at priority `default` (`--comm-priority`), whatever the strategy" in notes


def test_a_run_from_before_the_flag_has_no_note(tmp_path):
    assert "The comm stream" not in _notes(tmp_path, None)
