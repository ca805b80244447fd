"""The real runner's --profile-dir: memhist's replay of a memory history (no torch needed) and the flag's
checks before torch starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "bench" / "real"
if str(REAL) not in sys.path:
    sys.path.insert(0, str(REAL))

from shardaccum_real import memhist  # noqa: E402
from test_real_runner import TINY_LAYOUT, run_cli  # noqa: E402

FSDP = [{"filename": "/x/site-packages/torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py", "line": 420,
         "name": "foreach_reduce"},
        {"filename": "/x/site-packages/torch/_ops.py", "line": 1, "name": "__call__"}]
MODEL = [{"filename": "/w/bench/real/shardaccum_real/model.py", "line": 72, "name": "backward"}]
OTHER = [{"filename": "/usr/lib/python3.12/contextlib.py", "line": 9, "name": "helper"}]


def alloc(addr, size, frames=MODEL):
    return {"action": "alloc", "addr": addr, "size": size, "frames": frames}


def free(addr, size):
    return {"action": "free_requested", "addr": addr, "size": size, "frames": []}


def marker(addr, size):
    return [alloc(addr, size, OTHER), free(addr, size), {"action": "free_completed", "addr": addr, "size": size}]


def test_peak_and_what_holds_it():
    """Hand-computed: 1000 B before the history, A=100 held over the step; in it B=500 and C=300 live
    together (peak 1000+100+500+300 = 1900), then B freed and D=50: the peak is at C's allocation."""
    trace = ([alloc(1, 100, FSDP)] + marker(9, memhist.STEP_BEGIN_BYTES)
             + [alloc(2, 500), alloc(3, 300, FSDP), free(2, 500), alloc(4, 50)]
             + marker(9, memhist.STEP_END_BYTES) + [alloc(5, 10**9)])  # after the step: not counted
    s = memhist.summarise(trace, allocated_before_history=1000)
    assert (s["start_bytes"], s["peak_bytes"], s["peak_over_start_bytes"]) == (1100, 1900, 800)
    fsdp_site = "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:420 foreach_reduce"
    model_site = "shardaccum_real/model.py:72 backward"
    assert {g["site"]: g["bytes"] for g in s["live_at_peak"]} == {memhist.BEFORE: 1000, fsdp_site: 400,
                                                                  model_site: 500}
    assert {g["site"]: g["bytes"] for g in s["live_at_start"]} == {memhist.BEFORE: 1000, fsdp_site: 100}
    assert s["growth_at_peak"] == [{"site": model_site, "bytes": 500}, {"site": fsdp_site, "bytes": 300}]
    assert s["unknown_frees_bytes"] == 0 and s["entries_in_step"] == 6


def test_a_step_that_allocates_nothing_peaks_at_its_start():
    trace = [alloc(1, 64)] + marker(9, memhist.STEP_BEGIN_BYTES) + marker(9, memhist.STEP_END_BYTES)
    s = memhist.summarise(trace)
    assert s["peak_bytes"] == s["start_bytes"] == 64 and s["growth_at_peak"] == []


def test_a_free_of_memory_from_before_the_history_lowers_that_block():
    trace = marker(9, memhist.STEP_BEGIN_BYTES) + [free(77, 400), alloc(1, 100)] + marker(9, memhist.STEP_END_BYTES)
    s = memhist.summarise(trace, allocated_before_history=1000)
    assert s["unknown_frees_bytes"] == 400 and s["peak_bytes"] == 1000  # the start: 1000 > 600 + 100
    s = memhist.summarise(marker(9, memhist.STEP_BEGIN_BYTES) + [free(77, 400), alloc(1, 500)]
                          + marker(9, memhist.STEP_END_BYTES), allocated_before_history=1000)
    assert s["peak_bytes"] == 1100 and {g["site"]: g["bytes"] for g in s["live_at_peak"]}[memhist.BEFORE] == 600


def test_live_blocks_sum_to_the_total_even_without_a_known_baseline():
    """A free of memory from before the history with no baseline given: the peak's blocks still sum
    to the replayed total (-400 + 500), the before-the-history block going negative to say so."""
    s = memhist.summarise(marker(9, memhist.STEP_BEGIN_BYTES) + [free(77, 400), alloc(1, 500)]
                          + marker(9, memhist.STEP_END_BYTES))
    assert s["peak_bytes"] == 100 and s["unknown_frees_bytes"] == 400
    assert {g["site"]: g["bytes"] for g in s["live_at_peak"]}[memhist.BEFORE] == -400


@pytest.mark.parametrize("trace", [[alloc(1, 5)], marker(9, memhist.STEP_BEGIN_BYTES),
                                   marker(9, memhist.STEP_END_BYTES) + marker(9, memhist.STEP_BEGIN_BYTES)])
def test_no_complete_step_is_an_error_naming_the_markers(trace):
    with pytest.raises(ValueError, match=str(memhist.STEP_BEGIN_BYTES)):
        memhist.summarise(trace)


def test_site_of_prefers_the_systems_and_the_runners_frames():
    assert memhist.site_of(FSDP + MODEL) == ("torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:420 "
                                             "foreach_reduce < shardaccum_real/model.py:72 backward")
    assert memhist.site_of(OTHER) == "/usr/lib/python3.12/contextlib.py:9 helper"  # nothing better: the first
    assert memhist.site_of([]) == "(no python frame)"
    assert memhist.site_of(None) == memhist.BEFORE


def test_site_of_names_deepspeeds_frames_carried_or_installed():
    carried = [{"filename": "/r/.deps/deepspeed/site/deepspeed/runtime/zero/stage3.py", "line": 781,
                "name": "__init__"}]
    assert memhist.site_of(OTHER + carried) == "deepspeed/runtime/zero/stage3.py:781 __init__"
    installed = [{"filename": "/x/site-packages/deepspeed/runtime/zero/stage3.py", "line": 2027,
                  "name": "partition_grads"}]
    assert memhist.site_of(installed + MODEL) == ("deepspeed/runtime/zero/stage3.py:2027 partition_grads"
                                                  " < shardaccum_real/model.py:72 backward")


def test_markers_are_sizes_no_fp32_or_bf16_tensor_has():
    assert memhist.STEP_BEGIN_BYTES % 2 and memhist.STEP_END_BYTES % 2
    assert memhist.STEP_BEGIN_BYTES != memhist.STEP_END_BYTES


def test_case_file_stem_is_a_plain_file_name():
    from shardaccum_real.output import case_file_stem
    assert case_file_stem("real/system:fsdp2/model:uniform:16x64M/schedule:SSSS") == \
        "real_system_fsdp2_model_uniform_16x64M_schedule_SSSS"


def test_profile_dir_is_checked_before_torch(tmp_path):
    (tmp_path / "afile").write_text("")
    for value, want in ((str(tmp_path / "afile"), "is a file"), (str(tmp_path / "no" / "such"), "parent folder"),
                        ("", "--profile-dir ''")):
        r = run_cli(tmp_path, "--system", "fsdp2", *TINY_LAYOUT, "--profile-dir", value)
        assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr, (value, r.stderr)
    # a bad flag after it must not leave a folder behind; a good one creates it and reaches torch
    r = run_cli(tmp_path, "--system", "fsdp2", *TINY_LAYOUT, "--steps", "0", "--profile-dir", str(tmp_path / "p"))
    assert r.returncode == 2 and not (tmp_path / "p").exists()
    r = run_cli(tmp_path, "--system", "fsdp2", *TINY_LAYOUT, "--profile-dir", str(tmp_path / "p"))
    assert r.returncode == 1 and "torch" in r.stderr and (tmp_path / "p").is_dir()


def test_memory_history_flag_is_checked_before_the_profile_dir_is_made(tmp_path):
    for args, want in ((("--memory-history", "maybe"), "give on or off"),
                       (("--memory-history", "off"), "only with --profile-dir")):
        r = run_cli(tmp_path, "--system", "fsdp2", *TINY_LAYOUT, *args)
        assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    r = run_cli(tmp_path, "--system", "fsdp2", *TINY_LAYOUT, "--memory-history", "maybe", "--profile-dir",
                str(tmp_path / "q"))
    assert r.returncode == 2 and not (tmp_path / "q").exists()
