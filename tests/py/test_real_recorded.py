"""The runner's JSON from a recorded run on one H200 (reports/h200-reference: the suite's run.json and
bench/real/run.py's real-*.json, commit ad33d6249ea3) is read by the report tools: every real case is
strict JSON, parses, and finds its preset case in the suite run of the same job; the gradient D2H the
profiler attributed to FSDP's post-backward ranges is the preset's modelled D2H where the system's
offload is the one its preset models (both systems copy one whole gradient per S micro-batch)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from bench_build import built_preset
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


def _chunk_cat_metadata_bytes(layout: dict, world: int = 1) -> int:
    """What one sync's torch._chunk_cat uploads per step of a layout, by ATen's launch_chunk_cat: an int64
    block index per 2048-byte block (kChunkCatBytesPerBlock = 128 * 16) of each fp32 parameter's chunk,
    six int64 arrays per tensor (48 B) and 16 B per call (one call per unit)."""
    total = 0
    for u in layout["units"]:
        blocks = sum(math.ceil(math.prod(p["shape"]) * 4 / world / 2048) for p in u["params"])
        total += 8 * blocks + 48 * len(u["params"]) + 16
    return total


def test_fsdp2s_post_backward_h2d_is_chunk_cats_metadata_to_the_byte(pairs):
    """The recorded run counted these bytes as gradient H2D (it predates trace.METADATA_OPS); that they
    equal the chunk_cat formula per sync for both layouts is the evidence for the rule."""
    _, bench = built_preset()
    real, _ = pairs
    layouts = {m: json.loads(subprocess.run([str(bench), "--describe-layout", "--model", m], capture_output=True,
                                            text=True, check=True).stdout) for m in ("uniform:16x64M", "gpt2-xl")}
    seen = 0
    for c in real.cases:
        if c.key.system != "fsdp2":
            continue
        syncs = c.key.schedule.count("S")
        assert c.value("h2d_bytes") == syncs * _chunk_cat_metadata_bytes(layouts[c.key.model]), c.key.name
        seen += 1
    assert seen == 16
