"""The runner's JSON from recorded runs on one H200 (reports/h200-reference: the suite's run.json and
bench/real/run.py's real-*.json: FSDP at commit ad33d6249ea3, DeepSpeed 0.19.8 at 5258d07..059e0cb) is
read by the report tools: every real case is strict JSON, parses, and finds its preset case in the suite
run of the same job (zero2 has none); the gradient D2H the profiler attributed to FSDP's post-backward
ranges is the preset's modelled D2H where the system's offload is the one its preset models (both
systems copy one whole gradient per S micro-batch); DeepSpeed's copies are what its sources say, to
the byte, and one more each way than the zero3 preset models."""

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


FSDP = ("fsdp1", "fsdp2")
ZERO = ("zero3", "zero2")
# Elements of the two layouts (uniform:16x64M = 16 * 2^26; GPT-2 XL's published count): at world 1 and
# fp32 a gradient is 4 bytes an element.
NUMEL = {"uniform:16x64M": 16 * 2**26, "gpt2-xl": 1_557_611_200}
PARAMS = {"uniform:16x64M": 16, "gpt2-xl": 580}  # named parameters (--describe-layout)


def test_the_recorded_run_has_every_system_on_both_layouts(pairs):
    real, _ = pairs
    got = {(c.key.system, c.key.model) for c in real.cases}
    assert got == {(s, m) for s in FSDP + ZERO for m in NUMEL}
    fsdp = [c for c in real.cases if c.key.system in FSDP]
    zero = [c for c in real.cases if c.key.system in ZERO]
    assert len(fsdp) == 32  # 2 systems x 2 layouts x 4 schedules x offload cpu/none
    assert len(zero) == 24  # 2 systems x 2 layouts x (SSSS, nnnS) x offload cpu/cpu-pageable/none
    assert {c.key.schedule for c in zero} == {"SSSS", "nnnS"} and all(c.value("correct") == 1 for c in zero)


def test_every_recorded_real_case_finds_its_preset_case(pairs):
    """zero2 has no preset (the faithful-presets issue may add one): its reason says so. DeepSpeed with
    pin_memory false (offload cpu-pageable) stands beside no preset either: every preset offloads to
    pinned memory (PRESETS Z6), and pairing it with zero3's would compare another system."""
    _, ps = pairs
    for p in ps:
        if p.key.system == "zero2":
            assert p.preset is None and "no preset 'zero2'" in p.why, p.key.name
        elif p.key.offload == "cpu-pageable":
            assert p.preset is None and "pin_memory" in p.why, p.key.name
        else:
            assert p.why is None and p.preset is not None, p.key.name


def test_recorded_gradient_d2h_is_the_presets_modelled_d2h(pairs):
    _, ps = pairs
    for p in ps:
        if p.key.offload != "cpu" or p.key.system not in FSDP:
            continue
        real_d2h = p.real.value("d2h_bytes")
        assert real_d2h > 0 and real_d2h == p.preset.value("model_d2h_bytes"), p.key.name


def _zero_copies(system: str, schedule: str) -> tuple[int, int]:
    """(D2H, H2D) gradient copies of one step, in whole gradients, DeepSpeed 0.19.8 with offload_optimizer
    at world 1. r = reductions per step (K on S^K, 1 for the coalesce_grad_reduction block).
    ZeRO-3 (stage3.py partition_grads): every reduction copies the partition out; the first of a step
    then copies it straight back (.to(device)), the others copy the buffer in, add, copy out; the
    boundary copies the sum into the optimizer's fp32 gradient once more: D2H r + 1, H2D r.
    ZeRO-2 (stage_1_and_2.py copy_grads_in_partition): the CPU round trip of
    async_accumulate_grad_in_cpu_via_gpu runs on every micro-step unless it is the step's only backward
    (copy out each time, in after the first), then the boundary's fp32 copy: D2H a + 1, H2D a - 1; and
    at the boundary one byte a parameter more (update_offload_overflow_tracker: `if
    _has_inf_or_nan(grad)` reads a GPU bool on the host, a D2H and a stall per parameter)."""
    r = len(schedule) if schedule == "S" * len(schedule) else 1
    if system == "zero3":
        return r + 1, r
    a = r if r > 1 else 0
    return a + 1, max(a - 1, 0)


def test_recorded_deepspeed_copies_are_its_sources_to_the_byte(pairs):
    _, ps = pairs
    seen = 0
    for p in ps:
        k, v = p.key, p.real.value
        if k.system not in ZERO:
            continue
        grad = 4 * NUMEL[k.model]
        d2h, h2d = _zero_copies(k.system, k.schedule) if k.offload != "none" else (0, 0)
        flags = PARAMS[k.model] if k.system == "zero2" and k.offload != "none" else 0
        assert (v("d2h_bytes"), v("h2d_bytes")) == (d2h * grad + flags, h2d * grad), k.name
        # pin_memory false: every gradient D2H lands in pageable memory (the flags' bytes do not: torch
        # reads a bool through its own staging); true: none does
        assert v("d2h_pageable_bytes") == (d2h * grad if k.offload == "cpu-pageable" else 0), k.name
        seen += 1
    assert seen == 24


def test_the_zero3_preset_models_one_copy_less_each_way_than_deepspeed(pairs):
    """A finding for the faithful-presets issue, pinned down: the zero3 preset (gpu-add) moves S whole
    gradients D2H and S - 1 H2D a step; DeepSpeed ZeRO-3 moves one more each way (the first reduction's
    round trip, the boundary's fp32 copy)."""
    _, ps = pairs
    for p in ps:
        if p.key.system != "zero3" or p.key.offload != "cpu":
            continue
        grad = 4 * NUMEL[p.key.model]
        assert p.real.value("d2h_bytes") - p.preset.value("model_d2h_bytes") == grad, p.key.name
        assert p.real.value("h2d_bytes") - p.preset.value("model_h2d_bytes") == grad, p.key.name


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
