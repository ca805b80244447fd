"""The plots and tables that answer the question (issue 18 item 4): accumulation cost, spread and ties,
the fastest correct strategy within a memory budget, one memory bar a case with mismatches marked,
the PCIe diagnosis with reduce-scatter bytes, Pareto markers set apart, the correctness bound."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import HOST_FIXTURE, fixture_doc, section, table_row, write_doc
from matplotlib.lines import Line2D
from shardaccum_report import analysis
from shardaccum_report.budget import DEFAULT_DEVICE_GB, DEFAULT_PINNED_GB, GB, Budget, choose
from shardaccum_report.cli import report_main
from shardaccum_report.counters import MEMORY_PAIRS, NCCL_INPUT, PEAK_DEVICE, TRAFFIC_PAIRS
from shardaccum_report.loading import load_runs
from shardaccum_report.plots import accum_cost, correctness, measured_predicted, pareto, phases
from shardaccum_report.spread import accumulation_costs, baseline_key, step_spread, tied

ROOT = Path(__file__).resolve().parents[2]
H200_RUN = ROOT / "reports" / "h200-reference" / "run.json"
NAME = "accum/model:m/world:2/schedule:{s}/binding:{b}/offload:{o}/mode:{m}/dtype:fp32-fp32-fp32"


def _entry(s="SSSS", b="data-free", o="none", m="flag", step=10.0, device=1e9, pinned=0.0, correct=1, rep=0,
           reps=1, **extra) -> dict:
    name = NAME.format(s=s, b=b, o=o, m=m)
    counters = {"step_ms": step, "peak_device_bytes": device, "model_peak_device_bytes": device,
                "peak_pinned_bytes": pinned, "model_peak_pinned_bytes": pinned, "correct": correct,
                "max_rel_err": 0.0 if correct else 0.866, "err_bound": 1e-6}
    counters.update(extra)
    return {"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps, "repetition_index": rep,
            "iterations": 2, "real_time": step, "cpu_time": step, "time_unit": "ms", **counters}


def _doc(*entries: dict, backend: str = "host") -> dict:
    return {"context": {"backend": backend, "time_domain": "host wall-clock"}, "benchmarks": list(entries)}


def _cases(tmp_path: Path, *entries: dict, backend: str = "host"):
    return load_runs([write_doc(_doc(*entries, backend=backend), tmp_path / "run.json")]).cases


def _by(cases, **axes):
    """The one case whose strategy has these axis values (and schedule, as s=...)."""
    schedule = axes.pop("s", None)
    found = [c for c in cases if (schedule is None or c.key.schedule == schedule)
             and all(getattr(c.key.strategy, a) == v for a, v in axes.items())]
    assert len(found) == 1, axes
    return found[0]


@pytest.fixture
def captured(monkeypatch):
    """Figures the plot modules would save, by module name, instead of rendering PNGs."""
    figures: dict[str, list] = {}
    for module in (accum_cost, correctness, measured_predicted, pareto, phases):
        def keep(fig, path, _name=module.__name__.rsplit(".", 1)[-1]):
            figures.setdefault(_name, []).append(fig)
            return path
        monkeypatch.setattr(module, "save", keep)
    return figures


def _texts(fig) -> list:
    return [t for ax in fig.axes for t in ax.texts]


# --- The fastest correct strategy within X GB of device and Y GB of pinned memory -----------------------

BUDGET_ENTRIES = (
    _entry(o="none", step=10.0, device=10e9, pinned=0.0),                   # fast, much device memory
    _entry(o="gpu-add", step=20.0, device=2e9, pinned=5e9),                 # middle
    _entry(o="cpu-add", step=30.0, device=1e9, pinned=12e9),                # slow, least device memory
    _entry(o="copy", step=5.0, device=0.5e9, pinned=1e9, correct=0),        # fastest and leanest, but WRONG
)


@pytest.mark.parametrize("device_gb,pinned_gb,pick", [(20, 20, "none"), (10, 0, "none"), (5, 20, "gpu-add"),
                                                      (5, 5, "gpu-add"), (1.5, 20, "cpu-add"), (1.5, 11.9, None),
                                                      (0.6, 100, None)])
def test_the_budget_table_picks_the_fastest_correct_case_that_fits(tmp_path, device_gb, pinned_gb, pick):
    cases = _cases(tmp_path, *BUDGET_ENTRIES)
    choice = choose(cases, Budget(device_gb, pinned_gb))
    assert (choice.pick.key.strategy.offload if choice.pick else None) == pick
    fits = [c for c in cases if c.status == "correct" and c.value("peak_device_bytes") <= device_gb * GB
            and c.value("peak_pinned_bytes") <= pinned_gb * GB]
    assert (choice.fitting, choice.correct) == (len(fits), 3)
    assert choice.leanest.key.strategy.offload == "cpu-add"  # the WRONG copy case is never offered


def test_report_flags_set_the_budget_table(tmp_path, capsys):
    run = write_doc(_doc(*BUDGET_ENTRIES), tmp_path / "run.json")
    code = report_main([str(run), "--name", "b", "--out-dir", str(tmp_path), "--device-gb", "5", "--pinned-gb", "20"])
    assert code == 0, capsys.readouterr().err
    text = (tmp_path / "b" / "README.md").read_text(encoding="utf-8")
    part = section(text, "## Fastest correct strategy within 5 GB of device and 20 GB of pinned memory")
    row = table_row(part, "SSSS (sync)")
    assert row[1] == "data-free/gpu-add/flag (zero3)" and row[3] == "2,000,000,000" and row[-1] == "2 of 3"


@pytest.mark.parametrize("flag", ["--device-gb", "--pinned-gb"])
@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", ""])
def test_bad_budgets_are_refused_naming_the_flag(tmp_path, capsys, flag, value):
    with pytest.raises(SystemExit) as exit_info:
        report_main([str(HOST_FIXTURE), "--name", "x", "--out-dir", str(tmp_path), f"{flag}={value}"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and repr(value) in err, err
    assert not (tmp_path / "x").exists()


def test_the_budget_defaults_are_stated_in_the_help(capsys):
    with pytest.raises(SystemExit):
        report_main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"(default {DEFAULT_DEVICE_GB:g}: an 80 GB GPU)" in out and f"(default {DEFAULT_PINNED_GB:g})" in out


def test_a_budget_built_by_hand_refuses_bad_values():
    with pytest.raises(ValueError, match="--pinned-gb"):
        Budget(80, -1)
    with pytest.raises(ValueError, match="--device-gb"):
        Budget(math.nan, 1)


# --- Spread and ties ---------------------------------------------------------------------------------

def test_spread_comes_from_repetitions_and_from_the_step_extremes(tmp_path):
    cases = _cases(tmp_path,
                   _entry(o="none", step=10.0, rep=0, reps=2), _entry(o="none", step=12.0, rep=1, reps=2),
                   _entry(o="gpu-add", step=20.0, step_ms_min=18.5, step_ms_max=23.0),
                   _entry(o="cpu-add", step=30.0))
    s = step_spread(_by(cases, offload="none"))
    assert (s.low, s.high, s.sources) == (10.0, 12.0, ("repetitions",))
    s = step_spread(_by(cases, offload="gpu-add"))
    assert (s.low, s.high, s.sources) == (18.5, 23.0, ("steps",))
    assert step_spread(_by(cases, offload="cpu-add")) is None  # one repetition, no extremes: no spread


def test_overlapping_spreads_are_ties_and_apart_ones_are_not(tmp_path):
    cases = _cases(tmp_path, _entry(o="none", step=10.0, step_ms_min=9.0, step_ms_max=11.0),
                   _entry(o="gpu-add", step=10.5, step_ms_min=10.8, step_ms_max=12.0),
                   _entry(o="cpu-add", step=14.0, step_ms_min=13.0, step_ms_max=15.0))
    a, b, c = (_by(cases, offload=o) for o in ("none", "gpu-add", "cpu-add"))
    assert tied(a, b) and not tied(a, c) and not tied(b, c)


def test_host_accumulation_costs_within_the_spread_are_drawn_as_ties(captured):
    run = load_runs([HOST_FIXTURE])
    assert run.is_host
    cases = next(iter(run.groups().values()))
    costs = accumulation_costs(cases)
    accum_cost.plot_accum_cost(cases, Path("unused.png"), "t", run.time_label)
    fig = captured["accum_cost"][0]
    rows = {t.get_text(): t for t in fig.axes[0].get_yticklabels()}
    tie_rows = set()
    for ax, schedule in zip(fig.axes, analysis.by_schedule(cases)):
        for t in ax.texts:
            if t.get_text() == accum_cost.TIE_LABEL:
                label = next(s for s, r in rows.items() if r.get_position()[1] == round(t.get_position()[1]))
                tie_rows.add((schedule, label))
    expected = {(c.key.schedule, c.key.strategy.display) for c in cases if costs[c.key] and costs[c.key].tie}
    assert expected and tie_rows == expected
    # A tie's range holds 0; a cost drawn as a bar without the label is outside its range.
    for c in cases:
        v = costs[c.key]
        if v is not None and not v.is_baseline and v.low is not None:
            assert (v.low <= 0 <= v.high) == ((c.key.schedule, c.key.strategy.display) in tie_rows)


def test_the_step_plot_marks_every_case_tied_with_the_fastest(tmp_path, captured):
    cases = _cases(tmp_path, _entry(o="none", step=10.0, step_ms_min=9.0, step_ms_max=11.0),
                   _entry(o="gpu-add", step=10.5, step_ms_min=10.8, step_ms_max=12.0),
                   _entry(o="cpu-add", step=14.0, step_ms_min=13.0, step_ms_max=15.0))
    phases.plot_step_phases(cases, Path("unused.png"), "t", "host wall-clock")
    labels = [t.get_text() for t in _texts(captured["phases"][0])]
    assert labels.count("tie for fastest") == 2 and "fastest" not in labels


def test_accumulation_cost_is_against_the_same_binding_and_mode_without_offload_on_nnns(tmp_path):
    cases = _cases(tmp_path, _entry(s="nnnS", o="none", m="shape", step=10.0),
                   _entry(s="SSSS", o="cpu-add", m="shape", step=25.0),
                   _entry(s="nnnS", o="none", m="flag", step=99.0))
    case = _by(cases, s="SSSS", offload="cpu-add")
    assert baseline_key(case.key) == _by(cases, s="nnnS", offload="none", mode="shape").key
    cost = accumulation_costs(cases)[case.key]
    assert cost.cost_ms == 15.0 and cost.low is None and not cost.tie


def test_the_accumulation_cost_legend_has_the_drawn_offloads_and_a_second_label_follows_the_first(tmp_path, captured):
    # copy/flag has no baseline (no none/flag on nnnS) and is WRONG: two texts on its row, the second
    # placed after the first's drawn extent (an annotation anchored to it), and copy is no colour drawn.
    cases = _cases(tmp_path, _entry(s="nnnS", o="none", m="shape", step=10.0),
                   _entry(s="SSSS", o="cpu-add", m="shape", step=25.0),
                   _entry(s="SSSS", o="copy", m="flag", step=12.0, correct=0))
    accum_cost.plot_accum_cost(cases, Path("unused.png"), "t", "host wall-clock")
    fig = captured["accum_cost"][0]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "offload cpu-add" in legend and "offload copy" not in legend and "offload none" not in legend
    texts = {t.get_text(): t for t in _texts(fig)}
    assert accum_cost.NO_BASELINE in texts and "WRONG" in texts
    wrong = texts["WRONG"]
    assert getattr(wrong, "xycoords", None) is texts[accum_cost.NO_BASELINE]


# --- Memory: one bar a case, mismatches marked -----------------------------------------------------------

def test_the_memory_plot_marks_exactly_the_mismatched_cases(tmp_path, captured):
    doc = fixture_doc()
    planted = {("SSSS", "data/gpu-add/flag"), ("nSnS", "data-free/none/shape")}
    from shardaccum_report.case import parse_case_name
    for e in doc["benchmarks"]:
        key = parse_case_name(e.get("run_name") or e["name"])
        if key and (key.schedule, key.strategy.label) in planted and "model_peak_device_bytes" in e:
            e["model_peak_device_bytes"] = e["model_peak_device_bytes"] * 1.5
    cases = load_runs([write_doc(doc, tmp_path / "run.json")]).cases
    measured_predicted.plot_measured_predicted(cases, MEMORY_PAIRS, Path("unused.png"), "t")
    fig = captured["measured_predicted"][0]
    schedules = list(analysis.by_schedule(cases))
    strategies = [s.label for s in analysis.strategies_of(cases)]
    marked = set()
    for i, ax in enumerate(fig.axes):
        for line in ax.get_lines():
            if line.get_marker() == "D":
                marked.add((schedules[i % len(schedules)], strategies[round(line.get_ydata()[0])]))
    assert marked == planted
    bars = [p for ax in fig.axes[:len(schedules)] for p in ax.patches]
    assert len(bars) == len(cases)  # one bar a case, no predicted twin
    assert measured_predicted.mismatch_marks(cases, MEMORY_PAIRS) == {
        (c.key, PEAK_DEVICE.counter) for c in cases if (c.key.schedule, c.key.strategy.label) in planted}


# --- PCIe: the diagnosis and reduce-scatter bytes -----------------------------------------------------

def test_pcie_diagnosis_names_the_blind_mode_and_the_plot_shows_reduce_scatter_bytes(captured):
    cases = [c for c in load_runs([H200_RUN]).cases if c.key.model == "gpt2-xl"]
    notes = analysis.blind_diagnosis(cases)
    diagnosed = {(k.schedule, k.strategy.label) for k, _ in notes}
    expected = {(c.key.schedule, c.key.strategy.label) for c in cases if c.status == "wrong"
                and c.key.strategy.mode == "shape" and c.key.strategy.offload in ("gpu-add", "cpu-add")}
    assert expected and diagnosed == expected  # copy is wrong in both modes: nothing to diagnose from bytes
    assert all("never saw the saved shard" in t and "flag moves" in t for t in notes.values())
    measured_predicted.plot_measured_predicted(cases, TRAFFIC_PAIRS + (NCCL_INPUT,), Path("unused.png"), "t", notes)
    fig = captured["measured_predicted"][0]
    titles = [ax.get_title() for ax in fig.axes]
    assert sum(t.startswith(NCCL_INPUT.label) for t in titles) == 4
    drawn = [t.get_text() for t in _texts(fig) if "never saw the saved shard" in t.get_text()]
    assert sorted(drawn) == sorted(f"WRONG: {t}" for t in notes.values())


# --- Pareto markers and the correctness bound -------------------------------------------------------------

def test_pareto_markers_on_one_spot_are_set_apart(captured):
    assert pareto.dodge_offsets([1.0, 1.0, 1.0, 5.0], [2.0, 2.0, 2.0, 9.0]) == [-pareto.DODGE_POINTS, 0.0,
                                                                                 pareto.DODGE_POINTS, 0.0]
    cases = [c for c in load_runs([H200_RUN]).cases if c.key.model == "gpt2-xl"]
    pareto.plot_pareto(cases, Path("unused.png"), "t", "gpu events")
    fig = captured["pareto"][0]
    fig.canvas.draw()
    drawn = 0
    for ax in fig.axes:
        # Every case's marker (wrong ones too; not the front's hollow rings nor its staircase).
        markers = [line for line in ax.get_lines() if len(line.get_xydata()) == 1
                   and line.get_markerfacecolor() != "none"]
        spots = [tuple(round(v, 1) for v in m.get_transform().transform(m.get_xydata()[0])) for m in markers]
        assert len(spots) == len(set(spots))  # no marker hides another
        drawn += len(markers)
    assert drawn == len(cases)


def test_the_correctness_plot_draws_each_cases_bound(captured):
    run = load_runs([HOST_FIXTURE])
    cases = next(iter(run.groups().values()))
    correctness.plot_correctness(cases, Path("unused.png"), "t")
    err_ax = captured["correctness"][0].axes[1]
    assert err_ax.get_xscale() == "log"
    bounds = sorted(x for line in err_ax.get_lines() for x in set(line.get_xdata())
                    if line.get_linewidth() == 2 and len(line.get_xdata()) == 2)
    assert bounds == sorted(c.value("err_bound") for c in cases)


def test_the_report_has_the_new_views_for_host_and_gpu_runs(host_report, tmp_path):
    readme, text, _ = host_report
    assert "### Accumulation cost" in text and "**tie**" in text
    assert (readme.parent / next(p.name for p in readme.parent.glob("*.accum_cost.png"))).stat().st_size > 0
    assert "## Fastest correct strategy within 80 GB of device and 64 GB of pinned memory" in text
    doc = json.loads(H200_RUN.read_text())
    doc["benchmarks"] = [e for e in doc["benchmarks"] if "gpt2-xl" in e["name"]]
    from shardaccum_report.report import build_report
    gpu = build_report([write_doc(doc, tmp_path / "gpu.json")], "gpu", tmp_path).read_text(encoding="utf-8")
    assert "**Diagnosis**" in gpu and "never saw the saved shard" in gpu
    assert "ties cannot be drawn" in gpu  # one repetition and no step extremes in that older run
