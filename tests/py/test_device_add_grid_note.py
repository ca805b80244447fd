"""The report's note on how a run's device adds launched (report._device_add_grid_text, from the
context's device_add_grid and the registry's presets, bench/cli.cpp --device-add-grid): under auto it
names the presets whose combinations ran on PyTorch's full grid, under a named value that value, and a
run from before the flag has no such note."""

from __future__ import annotations

from conftest import notes_of


def _notes(tmp_path, grid: str | None, torch_presets: tuple[str, ...] = ()) -> str:
    return notes_of(tmp_path, "device_add_grid", grid, lambda name: "torch" if name in torch_presets else "two-per-sm")


def test_auto_names_the_presets_on_pytorchs_grid(tmp_path):
    notes = _notes(tmp_path, "auto", ("fsdp1", "fsdp2"))
    line = next(n for n in notes.splitlines() if "Device adds" in n)
    assert "`--device-add-grid auto`" in line and "of fsdp1, fsdp2 (the real systems)" in line, line
    assert "two blocks per SM for every other strategy" in line


def test_a_named_grid_is_said_for_every_strategy(tmp_path):
    notes = _notes(tmp_path, "torch")
    assert "Device adds on the grid `torch` for every strategy of the runs with `--device-add-grid torch`." in notes
    assert "whatever the strategy" not in notes


def test_a_run_from_before_the_flag_has_no_note(tmp_path):
    assert "Device adds" not in _notes(tmp_path, None)
