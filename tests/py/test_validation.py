"""Presets against the real systems (issue 16's validation, scripts/shardaccum_report/validation.py):
hand-made real and suite cases whose every row is computed by hand here; the JSON's keys; the report's
section; no rows from a host-backend run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_doc
from shardaccum_report.loading import load_inputs
from shardaccum_report.pairing import preset_key
from shardaccum_report.real import parse_real_name
from shardaccum_report import registry as registry_module
from shardaccum_report.registry import Registry
from shardaccum_report.report import build_report
from shardaccum_report.validation import ALLOWED_OUTSIDE, rows_of

MODEL, DTYPE = "uniform:8x64K", "fp32-fp32-fp32"
ZERO = {"d2h_bytes": 0, "h2d_bytes": 0, "d2h_ms": 0.0, "h2d_ms": 0.0, "cpu_add_ms": 0.0, "correct": 1}
# real fsdp2 at world 1: (schedule, offload) -> counters. Peaks: parameters on the device without offload.
REAL = {
    ("nnnS", "none"): {**ZERO, "step_ms": 10.0, "peak_device_bytes": 10000, "accum_cost_b_ms": 0.0},
    ("SSSS", "none"): {**ZERO, "step_ms": 14.0, "peak_device_bytes": 10000, "accum_cost_b_ms": 4.0},
    ("nnnS", "cpu"): {**ZERO, "step_ms": 30.0, "peak_device_bytes": 6000, "accum_cost_b_ms": 0.0, "d2h_bytes": 400,
                      "d2h_ms": 5.0, "param_h2d_ms": 2.0, "param_h2d_bytes": 8000, "peak_pinned_bytes": 4096},
    ("SSSS", "cpu"): {**ZERO, "step_ms": 90.0, "peak_device_bytes": 3000, "accum_cost_b_ms": 60.0, "d2h_bytes": 1600,
                      "d2h_ms": 50.0, "cpu_add_ms": 20.0, "param_h2d_ms": 2.0, "param_h2d_bytes": 8000,
                      "peak_pinned_bytes": 4096},
}
# FSDP2 pins a little of its own without offload: never compared (no strategy holds it).
REAL[("SSSS", "none")]["peak_pinned_bytes"] = 512
# the preset's cases: no parameters without offload; with --param-traffic on one unit's at a time.
SUITE = {
    ("nnnS", "none"): {**ZERO, "step_ms": 9.0, "peak_device_bytes": 5000},
    ("SSSS", "none"): {**ZERO, "step_ms": 13.5, "peak_device_bytes": 5000},
    ("nnnS", "cpu"): {**ZERO, "step_ms": 28.0, "peak_device_bytes": 2100, "d2h_bytes": 400, "d2h_ms": 7.0,
                      "h2d_ms": 2.2, "param_h2d_bytes": 8000, "peak_pinned_bytes": 4000},
    ("SSSS", "cpu"): {**ZERO, "step_ms": 85.0, "peak_device_bytes": 100, "d2h_bytes": 1600, "d2h_ms": 45.0,
                      "h2d_ms": 2.2, "cpu_add_ms": 25.0, "param_h2d_bytes": 8000, "peak_pinned_bytes": 3000},
}
SUITE[("SSSS", "none")]["peak_pinned_bytes"] = 0


def _real_name(schedule: str, offload: str) -> str:
    return f"real/system:fsdp2/model:{MODEL}/world:1/schedule:{schedule}/offload:{offload}/dtype:{DTYPE}"


def _suite_name(schedule: str, offload: str) -> str:
    key, why = preset_key(parse_real_name(_real_name(schedule, offload)), Registry.committed())
    assert key is not None, why
    # The bench's own order (bench/case_matrix.cpp): the strategy's copy-in before the dtype, then
    # parameter traffic; the key's name has the dtype first.
    name = key.name.replace(f"/dtype:{DTYPE}", "") + f"/dtype:{DTYPE}"
    return name + ("/param-traffic:on" if offload == "cpu" else "")


def _entry(name: str, counters: dict) -> dict:
    return {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
            "threads": 1, "iterations": 2, "real_time": counters["step_ms"], "cpu_time": 1.0, "time_unit": "ms",
            "k": 4, "world_size": 1, **counters}


def _docs(tmp_path, backend: str = "cuda"):
    real = {"context": {"backend": "real", "time_domain": "GPU time", "executable": "bench/real/run.py"},
            "benchmarks": [_entry(_real_name(s, o), c) for (s, o), c in REAL.items()]}
    suite = {"context": {"backend": backend, "time_domain": "GPU events"},
             "benchmarks": [_entry(_suite_name(s, o), c) for (s, o), c in SUITE.items()]}
    return write_doc(real, tmp_path / "real.json"), write_doc(suite, tmp_path / "suite.json")


def _rows(tmp_path):
    suite, real = load_inputs(list(_docs(tmp_path)))
    rows, left = rows_of(real, suite)
    return {(r.case.split("/schedule:")[1].split("/dtype")[0], r.figure): r for r in rows}, left


def test_every_row_is_the_hand_computed_one(tmp_path):
    rows, left = _rows(tmp_path)
    assert left == []
    got = {k: (r.real, r.suite, r.passes) for k, r in rows.items()}
    want = {
        ("nnnS/offload:none", "correct"): (1, 1, True), ("SSSS/offload:none", "correct"): (1, 1, True),
        ("nnnS/offload:cpu", "correct"): (1, 1, True), ("SSSS/offload:cpu", "correct"): (1, 1, True),
        **{(f"{s}/offload:{o}", f): (b, b, True) for s, o, f, b in (
            ("nnnS", "none", "d2h_bytes", 0), ("SSSS", "none", "d2h_bytes", 0), ("nnnS", "cpu", "d2h_bytes", 400),
            ("SSSS", "cpu", "d2h_bytes", 1600), ("nnnS", "none", "h2d_bytes", 0), ("SSSS", "none", "h2d_bytes", 0),
            ("nnnS", "cpu", "h2d_bytes", 0), ("SSSS", "cpu", "h2d_bytes", 0))},
        # deltas to nnnS none; the suite's baseline gains the parameter shards, 8000 / (2·4) = 1000 B
        ("SSSS/offload:none", "peak_device_delta_bytes"): (0, 0, True),
        ("nnnS/offload:cpu", "peak_device_delta_bytes"): (-4000, 2100 - 6000, True),   # +2.5%
        ("SSSS/offload:cpu", "peak_device_delta_bytes"): (-7000, 100 - 6000, False),   # +15.7%
        # pinned peaks, offloaded cases only (SSSS none's 512 real bytes are not compared)
        ("nnnS/offload:cpu", "peak_pinned_bytes"): (4096, 4000, True),                # -2.3%
        ("SSSS/offload:cpu", "peak_pinned_bytes"): (4096, 3000, False),               # -26.8%
        ("nnnS/offload:cpu", "d2h_ms"): (5.0, 7.0, False),                             # +40%
        ("SSSS/offload:cpu", "d2h_ms"): (50.0, 45.0, True),                            # -10%
        # h2d with parameter traffic: the real gradient h2d plus its parameter copies, 0 + 2 ms
        ("nnnS/offload:cpu", "h2d_ms"): (2.0, 2.2, True), ("SSSS/offload:cpu", "h2d_ms"): (2.0, 2.2, True),
        ("SSSS/offload:cpu", "cpu_add_ms"): (20.0, 25.0, False),                       # +25%
        ("SSSS/offload:none", "accum_cost_b_ms"): (4.0, 4.5, True),                    # +12.5%
        ("SSSS/offload:cpu", "accum_cost_b_ms"): (60.0, 57.0, True),                   # -5%
    }
    assert got == want


def test_a_byte_or_verdict_that_differs_fails_whatever_its_size(tmp_path):
    SUITE[("SSSS", "cpu")]["d2h_bytes"] = 1601
    SUITE[("SSSS", "none")]["correct"] = 0
    try:
        rows, _ = _rows(tmp_path)
    finally:
        SUITE[("SSSS", "cpu")]["d2h_bytes"] = 1600
        SUITE[("SSSS", "none")]["correct"] = 1
    assert not rows[("SSSS/offload:cpu", "d2h_bytes")].passes
    assert not rows[("SSSS/offload:none", "correct")].passes
    assert rows[("nnnS/offload:cpu", "d2h_bytes")].passes


def test_the_report_writes_the_section_and_validation_json_with_the_issue_keys(tmp_path):
    readme = build_report(list(_docs(tmp_path)), "val", tmp_path / "out")
    text = readme.read_text(encoding="utf-8")
    part = text.split("## Presets against the real systems", 1)[1]
    assert "timing and memory: 8 of 12 within tolerance, 4 outside" in part
    assert f"at most {ALLOWED_OUTSIDE} may be" in part
    assert part.count("✗ **outside**") == 4
    rows = json.loads((readme.parent / "validation.json").read_text(encoding="utf-8"))
    assert len(rows) == 24
    assert all(set(r) == {"case", "preset_case", "figure", "real", "suite"} for r in rows)
    assert {r["figure"] for r in rows} == {"correct", "d2h_bytes", "h2d_bytes", "peak_device_delta_bytes",
                                          "peak_pinned_bytes", "d2h_ms", "h2d_ms", "cpu_add_ms", "accum_cost_b_ms"}
    assert all(r["preset_case"].startswith("accum/") and r["case"].startswith("real/") for r in rows)


def test_the_section_names_each_pair_once_and_lists_the_rows_outside_first(tmp_path):
    readme = build_report(list(_docs(tmp_path)), "val", tmp_path / "out")
    part = readme.read_text(encoding="utf-8").split("## Presets against the real systems", 1)[1]
    rows = json.loads((readme.parent / "validation.json").read_text(encoding="utf-8"))
    # each real and preset case name once (the pairs table), the figure rows by a short label
    for name in {r["case"] for r in rows} | {r["preset_case"] for r in rows}:
        assert part.count(f"`{name}`") == 1, name
    outside, every = part.split("Outside their tolerance (4):", 1)[1].split("Every figure:", 1)
    outside = outside.split("The pairs compared", 1)[0]
    assert outside.count("\n| fsdp2 · ") == 4 and "| fsdp2 · uniform:8x64K · SSSS · offload cpu | cpu_add_ms | 20.000 | 25.000 | +25.0% | ±20% |" in outside
    assert every.count("✗ **outside**") == 4


def test_a_host_run_gives_no_rows_and_says_why(tmp_path):
    readme = build_report(list(_docs(tmp_path, backend="host")), "val", tmp_path / "out")
    part = readme.read_text(encoding="utf-8").split("## Presets against the real systems", 1)[1]
    assert "**Not validated**" in part
    assert not (readme.parent / "validation.json").exists()



def _patch(monkeypatch, table: dict, key: tuple, **counters) -> None:
    monkeypatch.setitem(table, key, {**table[key], **counters})  # restored after the test


def test_a_b_row_outside_by_less_than_its_steps_spread_is_marked_but_still_outside(tmp_path, monkeypatch):
    # SSSS none: the suite's B 15.0 − 9.0 = 6.0 ms against the real 4.0 (+50%: outside ±20%, by 1.2 ms).
    # Spread: half-ranges 0.5 + 0.4 (real case and baseline) + 0.2 + 0.2 (suite's) = 1.3 ms ≥ 1.2.
    _patch(monkeypatch, REAL, ("nnnS", "none"), step_ms_min=9.5, step_ms_max=10.5, gpu_busy_ms=8.0)
    _patch(monkeypatch, REAL, ("SSSS", "none"), step_ms_min=13.6, step_ms_max=14.4, gpu_busy_ms=9.0)
    _patch(monkeypatch, SUITE, ("nnnS", "none"), step_ms_min=8.8, step_ms_max=9.2)
    _patch(monkeypatch, SUITE, ("SSSS", "none"), step_ms=15.0, step_ms_min=14.8, step_ms_max=15.2)
    rows, _ = _rows(tmp_path)
    b = rows[("SSSS/offload:none", "accum_cost_b_ms")]
    assert (b.real, b.suite, b.passes) == (4.0, 6.0, False)
    assert b.spread == pytest.approx(1.3) and b.within_spread and b.real_gpu_b == 1.0
    # the offloaded B has no min/max here: no spread, so never "within" it
    assert rows[("SSSS/offload:cpu", "accum_cost_b_ms")].spread is None
    readme = build_report(list(_docs(tmp_path)), "val", tmp_path / "out")
    part = readme.read_text(encoding="utf-8").split("## Presets against the real systems", 1)[1]
    assert "5 outside (1 of them by less than their steps' measured spread)" in part
    assert "spread ±1.3 ms (within it); real B on the GPU 1.0 ms" in part
    rows_json = json.loads((readme.parent / "validation.json").read_text(encoding="utf-8"))
    assert all(set(r) == {"case", "preset_case", "figure", "real", "suite"} for r in rows_json)


def test_a_b_row_outside_by_more_than_its_spread_is_not_marked(tmp_path, monkeypatch):
    _patch(monkeypatch, REAL, ("nnnS", "none"), step_ms_min=9.9, step_ms_max=10.1)
    _patch(monkeypatch, REAL, ("SSSS", "none"), step_ms_min=13.9, step_ms_max=14.1)
    _patch(monkeypatch, SUITE, ("nnnS", "none"), step_ms_min=9.0, step_ms_max=9.0)
    _patch(monkeypatch, SUITE, ("SSSS", "none"), step_ms=20.0, step_ms_min=20.0, step_ms_max=20.0)
    rows, _ = _rows(tmp_path)
    b = rows[("SSSS/offload:none", "accum_cost_b_ms")]
    assert not b.passes and b.spread == pytest.approx(0.2) and not b.within_spread
    assert b.real_gpu_b is None and not b.within_gpu_b  # no gpu_busy_ms in these real runs


def test_a_b_row_whose_suite_b_is_the_real_b_on_the_gpu_is_marked_but_still_outside(tmp_path, monkeypatch):
    # SSSS none: real B 14.0 − 10.0 = 4.0 ms on the host, 9.0 − 8.0 = 1.0 on the GPU (the rest host
    # time); the suite's B 10.1 − 9.0 = 1.1 ms: outside ±20% of 4.0 and its spread of 0, within ±20% of 1.0.
    _patch(monkeypatch, REAL, ("nnnS", "none"), step_ms_min=10.0, step_ms_max=10.0, gpu_busy_ms=8.0)
    _patch(monkeypatch, REAL, ("SSSS", "none"), step_ms_min=14.0, step_ms_max=14.0, gpu_busy_ms=9.0)
    _patch(monkeypatch, SUITE, ("nnnS", "none"), step_ms_min=9.0, step_ms_max=9.0)
    _patch(monkeypatch, SUITE, ("SSSS", "none"), step_ms=10.1, step_ms_min=10.1, step_ms_max=10.1)
    rows, _ = _rows(tmp_path)
    b = rows[("SSSS/offload:none", "accum_cost_b_ms")]
    assert (b.real, b.real_gpu_b, b.passes, b.within_spread) == (4.0, 1.0, False, False)
    assert b.suite == pytest.approx(1.1) and b.within_gpu_b
    readme = build_report(list(_docs(tmp_path)), "val", tmp_path / "out")
    part = readme.read_text(encoding="utf-8").split("## Presets against the real systems", 1)[1]
    assert "1 within tolerance of the real B on the GPU, the rest of the real B host time" in part
    assert "real B on the GPU 1.0 ms (the suite within tolerance of it)" in part
    # 1.3 ms on the suite's side would be outside the GPU's B too (+30%): not marked
    _patch(monkeypatch, SUITE, ("SSSS", "none"), step_ms=10.3, step_ms_min=10.3, step_ms_max=10.3)
    rows, _ = _rows(tmp_path)
    assert not rows[("SSSS/offload:none", "accum_cost_b_ms")].within_gpu_b


def test_a_peak_delta_row_within_the_real_delta_in_requested_bytes_is_marked_but_still_outside(tmp_path, monkeypatch):
    # SSSS cpu: real delta 3000 − 10000 = -7000 B of rounded blocks, the suite's -5900 (+15.7%: outside 10%).
    # In requested bytes the real delta is 3150 − 9000 = -5850: the suite within 10% of it (-0.9%).
    rows, _ = _rows(tmp_path)
    assert rows[("SSSS/offload:cpu", "peak_device_delta_bytes")].real_requested is None  # not recorded: no note
    _patch(monkeypatch, REAL, ("nnnS", "none"), peak_device_requested_bytes=9000)
    _patch(monkeypatch, REAL, ("SSSS", "cpu"), peak_device_requested_bytes=3150)
    rows, _ = _rows(tmp_path)
    p = rows[("SSSS/offload:cpu", "peak_device_delta_bytes")]
    assert (p.real, p.suite, p.real_requested, p.passes, p.within_requested) == (-7000, -5900, -5850, False, True)
    readme = build_report(list(_docs(tmp_path)), "val", tmp_path / "out")
    part = readme.read_text(encoding="utf-8").split("## Presets against the real systems", 1)[1]
    assert "4 outside (1 within tolerance of the real delta in requested bytes, the rest the caching allocator's" in part
    assert "(the suite within tolerance of it)" in part
    # a requested delta the suite is not within (-7000 requested: +15.7%) is given but not marked
    _patch(monkeypatch, REAL, ("SSSS", "cpu"), peak_device_requested_bytes=2000)
    rows, _ = _rows(tmp_path)
    p = rows[("SSSS/offload:cpu", "peak_device_delta_bytes")]
    assert p.real_requested == -7000 and not p.within_requested


def test_the_suite_case_with_autograds_accumulation_stands_beside_the_real_one(tmp_path):
    """A suite run with and without --grad-accumulation autograd: the real system accumulates as
    autograd does, so its rows are read from the autograd cases (pairing.suite_index)."""
    real, suite = _docs(tmp_path)
    doc = json.loads(suite.read_text())
    autograd = [dict(b, name=b["name"] + "/grad-accumulation:autograd", run_name=b["name"] + "/grad-accumulation:autograd",
                     real_time=b["real_time"] + 1.0, step_ms=b["step_ms"] + 1.0, peak_device_bytes=b["peak_device_bytes"] + 7)
                for b in doc["benchmarks"]]
    doc["benchmarks"] = autograd[:2] + doc["benchmarks"] + autograd[2:]  # either order
    write_doc(doc, suite)
    s, r = load_inputs([real, suite])
    rows, left = rows_of(r, s)
    assert left == [] and rows
    assert all(row.preset_case.endswith("/grad-accumulation:autograd") for row in rows)
    peak = next(row for row in rows if row.figure == "peak_device_delta_bytes" and "SSSS/offload:cpu" in row.case)
    assert peak.suite == (100 + 7) - (5000 + 7 + 1000)


def _preset_cases_among_variants(tmp_path, segment: str, variants: dict[str, int], registry: dict | None = None):
    """The validation rows' preset cases when the suite run holds its cases as they are and, for each
    value V of `variants`, again named `/SEGMENT:V` (peaks bumped by its number, so any mix-up shows),
    listed in the order given with the plain cases in the middle; `registry` into its context."""
    real, suite = _docs(tmp_path)
    doc = json.loads(suite.read_text())
    plain = doc["benchmarks"]

    def variant(value, bump):
        return [dict(b, name=b["name"] + f"/{segment}:{value}", run_name=b["name"] + f"/{segment}:{value}",
                     peak_device_bytes=b["peak_device_bytes"] + bump) for b in plain]

    values = list(variants.items())
    half = len(values) // 2
    doc["benchmarks"] = ([b for v in values[:half] for b in variant(*v)] + plain +
                         [b for v in values[half:] for b in variant(*v)])
    if registry is not None:
        doc["context"]["registry"] = registry
    write_doc(doc, suite)
    s, r = load_inputs([real, suite])
    rows, left = rows_of(r, s)
    assert left == [] and rows
    return [row.preset_case for row in rows]


def test_the_suite_case_with_pytorchs_device_add_grid_stands_beside_the_real_one(tmp_path):
    """A suite run with the same cases under --device-add-grid two-per-sm, auto (no segment) and torch:
    a real system's `+=` is PyTorch's full-grid kernel, so its rows are read from the torch cases, and
    without them from the auto ones, never from two-per-sm (pairing.suite_index)."""
    for variants, want in (({"two-per-sm": 3, "torch": 7}, "/device-add-grid:torch"), ({"two-per-sm": 3}, None)):
        for case in _preset_cases_among_variants(tmp_path, "device-add-grid", variants):
            assert case.endswith(want) if want else "device-add-grid" not in case, case


def test_deepspeeds_optimizer_partition_joins_the_suites_cases_without_offload(tmp_path):
    """DeepSpeed keeps its optimizer's fp32 master partition on the device without offload_optimizer
    (stage3.py 1172): the suite's zero3 cases without offload gain Σ P_u/N·4 bytes, here the baseline's
    reduce-scatter input 4000 B over N·b_r = 1·4, times 4: 4000 B. It cancels between cases without
    offload and comes off the offloaded cases' deltas."""
    registry = Registry.committed()
    real_peaks = {("nnnS", "none"): 20000, ("SSSS", "none"): 17600, ("nnnS", "cpu"): 11900, ("SSSS", "cpu"): 9800}
    suite_peaks = {("nnnS", "none"): 8700, ("SSSS", "none"): 6300, ("nnnS", "cpu"): 4600, ("SSSS", "cpu"): 1800}
    reals, suites = [], []
    for (schedule, offload), peak in real_peaks.items():
        name = f"real/system:zero3/model:{MODEL}/world:1/schedule:{schedule}/offload:{offload}/dtype:{DTYPE}"
        key, why = preset_key(parse_real_name(name), registry)
        assert key is not None, why
        reals.append(_entry(name, {**ZERO, "step_ms": 10.0, "peak_device_bytes": peak}))
        suite_name = key.name.replace(f"/dtype:{DTYPE}", "") + f"/dtype:{DTYPE}"
        suites.append(_entry(suite_name, {**ZERO, "step_ms": 10.0, "peak_device_bytes": suite_peaks[schedule, offload],
                                          "nccl_input_bytes": 4000 * (4 if schedule == "SSSS" else 1)}))
    real = write_doc({"context": {"backend": "real", "time_domain": "GPU time", "executable": "bench/real/run.py"},
                      "benchmarks": reals}, tmp_path / "real.json")
    suite = write_doc({"context": {"backend": "cuda", "time_domain": "GPU events"}, "benchmarks": suites},
                      tmp_path / "suite.json")
    s, r = load_inputs([real, suite])
    rows, left = rows_of(r, s)
    assert left == []
    deltas = {row.case.split("/schedule:")[1].split("/dtype")[0]: (row.real, row.suite, row.passes)
              for row in rows if row.figure == "peak_device_delta_bytes"}
    assert deltas == {
        "SSSS/offload:none": (-2400, (6300 + 4000) - (8700 + 4000), True),
        "nnnS/offload:cpu": (-8100, 4600 - (8700 + 4000), True),
        "SSSS/offload:cpu": (-10200, 1800 - (8700 + 4000), True),  # -6.9%; without the partition -32%
    }


@pytest.mark.parametrize("fsdp2_priority, want", [("greatest", "/comm-priority:greatest"),
                                                  ("default", "/comm-priority:default"),
                                                  (None, None)])
def test_the_suite_case_at_the_systems_stream_priority_stands_beside_the_real_one(tmp_path, fsdp2_priority, want):
    """A suite run with the same cases under --comm-priority auto (no segment), default and greatest:
    the rows are read from the cases at the priority of the system the real case ran (the registry's
    preset comm_priority), and from the auto ones where the registry does not say (pairing.suite_index,
    system_priority), never from another priority."""
    registry = json.loads(Path(registry_module.__file__).with_name("registry.json").read_text(encoding="utf-8"))
    for p in registry["presets"]:
        if fsdp2_priority is not None:
            p["comm_priority"] = fsdp2_priority if p["name"] == "fsdp2" else "default"
    for case in _preset_cases_among_variants(tmp_path, "comm-priority", {"default": 3, "greatest": 7}, registry):
        assert case.endswith(want) if want else "comm-priority" not in case, case


def test_the_suite_case_at_the_presets_own_host_time_stands_beside_the_real_one(tmp_path):
    """A suite run with the same cases under --hook-host-us auto (no segment: the preset's measured host time
    per unit) and named values: the rows are read from the auto ones, never from a named value
    (pairing.suite_index); with only named ones, the first of them (nothing better to stand beside)."""
    for case in _preset_cases_among_variants(tmp_path, "hook-host-us", {"0": 3, "1000": 7}):
        assert "hook-host-us" not in case, case
