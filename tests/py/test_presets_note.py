"""The report's note that spells out each preset (report._presets_text, from the run's registry): a
preset's copy-in is part of its combination (docs/PRESETS.md "Per preset"), so the note names it as
the report's tables name the preset's cases."""

from __future__ import annotations

import json

from conftest import fixture_doc, section, write_doc
from shardaccum_report.report import build_report


def test_each_preset_is_spelled_with_its_copy_in(tmp_path):
    doc = fixture_doc()
    registry = doc["context"]["registry"]
    registry = json.loads(registry) if isinstance(registry, str) else registry
    for p in registry["presets"]:
        if p["name"] == "fsdp2":
            p["copy_in"] = "chunk-cat"
        if p["name"] == "zero3":
            p["copy_in"] = "none"  # the default: not spelled
    doc["context"]["registry"] = registry
    readme = build_report([write_doc(doc, tmp_path / "run.json")], "presets", tmp_path / "out")
    line = next(n for n in section(readme.read_text(encoding="utf-8"), "## Notes").splitlines()
                if "presets:" in n)
    fsdp2 = next(part for part in line.split(", ") if part.lstrip("- ").split(" = ")[0].endswith("fsdp2"))
    assert fsdp2.endswith("/chunk-cat"), line
    zero3 = next(part for part in line.split(", ") if part.startswith("zero3 = "))
    assert "none" not in zero3.split(" = ")[1].split("/")[3:], line
