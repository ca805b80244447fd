"""The runner's JSON from a recorded run on one H200 (reports/h200-reference: the suite's run.json and
bench/real/run.py's real-*.json, commit ad33d6249ea3) is read by the report tools: every real case is
strict JSON, parses, and finds its preset case in the suite run of the same job; the gradient D2H the
profiler attributed to FSDP's post-backward ranges is the preset's modelled D2H where the system's
offload is the one its preset models (both systems copy one whole gradient per S micro-batch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardaccum_report.loading import load_inputs
from shardaccum_report.pairing import pair_cases

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "reports" / "h200-reference"
REAL = sorted(REF.glob("real-*.json"))


@pytest.fixture(scope="module")
def pairs():
    suite, real = load_inputs([REF / "run.json", *REAL])
    assert suite is not None and real is not None
    return real, pair_cases(real, suite)


def test_the_recorded_run_has_both_systems_on_both_layouts(pairs):
    real, _ = pairs
    got = {(c.key.system, c.key.model) for c in real.cases}
    assert got == {(s, m) for s in ("fsdp1", "fsdp2") for m in ("uniform:16x64M", "gpt2-xl")}
    assert len(real.cases) == 32  # 2 systems x 2 layouts x 4 schedules x offload cpu/none


def test_every_recorded_real_case_finds_its_preset_case(pairs):
    _, ps = pairs
    for p in ps:
        assert p.why is None and p.preset is not None, p.key.name


def test_recorded_gradient_d2h_is_the_presets_modelled_d2h(pairs):
    _, ps = pairs
    for p in ps:
        if p.key.offload != "cpu":
            continue
        real_d2h = p.real.value("d2h_bytes")
        assert real_d2h > 0 and real_d2h == p.preset.value("model_d2h_bytes"), p.key.name
