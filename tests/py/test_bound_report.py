"""The bound in the report (docs/DESIGN.md §6): bound_ratio per strategy and schedule, from a run JSON
with bound_ms, bound_ratio and a label naming the term; nothing without bound_ms."""

from __future__ import annotations

from conftest import fixture_doc, section, write_doc
from shardaccum_report.loading import load_runs
from shardaccum_report.plots import plot_bound_ratio
from shardaccum_report.report import build_report

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PRESETS = ("binding:data-free/offload:cpu-add/mode:flag/", "binding:data-free/offload:gpu-add/mode:flag/")


def _bounded_doc() -> dict:
    """The host fixture cut to two presets, each iteration given a bound by hand: cpu-add 2.5× by host
    memory, gpu-add 1.25× by the copy engines."""
    doc = fixture_doc()
    doc["benchmarks"] = [e for e in doc["benchmarks"] if any(p in e["name"] for p in PRESETS)]
    for e in doc["benchmarks"]:
        if e.get("run_type", "iteration") != "iteration" or e.get("error_occurred"):
            continue
        cpu = "cpu-add" in e["name"]
        e["bound_ratio"] = 2.5 if cpu else 1.25
        e["bound_ms"] = e["step_ms"] / e["bound_ratio"]
        e["label"] = e.get("label", "") + ("; bound by host memory" if cpu else "; bound by copy engines")
    return doc


def test_cases_carry_bound_by_from_the_label(tmp_path):
    run = load_runs([write_doc(_bounded_doc(), tmp_path / "b.json")])
    assert run.cases
    for c in run.cases:
        cpu = c.key.strategy.offload == "cpu-add"
        assert c.bound_by == ("host memory" if cpu else "copy engines")
        assert c.value("bound_ratio") == (2.5 if cpu else 1.25)
    # A label without the phrase (the committed fixture) names no term.
    assert all(c.bound_by is None for c in load_runs([write_doc(fixture_doc(), tmp_path / "f.json")]).cases)


def test_report_draws_the_ratio_only_for_a_run_with_bound_ms(tmp_path):
    readme = build_report([write_doc(_bounded_doc(), tmp_path / "b.json")], "bound", tmp_path / "out")
    text = readme.read_text(encoding="utf-8")
    part = section(text, "### Step time against the bound")
    link = next(line.split("(")[1].rstrip(")") for line in part.splitlines() if line.startswith("!["))
    assert link.endswith(".bound.png")
    assert (readme.parent / link).read_bytes().startswith(PNG_SIGNATURE)
    plain = build_report([write_doc(fixture_doc(), tmp_path / "f.json")], "plain", tmp_path / "out2")
    assert "### Step time against the bound" not in plain.read_text(encoding="utf-8")
    assert plot_bound_ratio(load_runs([tmp_path / "f.json"]).cases, tmp_path / "none.png", "t") is None
