"""DeepSpeed ZeRO-3/ZeRO-2 in the real runner, the parts that need neither torch nor deepspeed: which
schedules DeepSpeed can run (the others are skipped, not errors), the config each case gets, the flag
checks, the trace attribution of copies DeepSpeed issues from the autograd thread, and the report's
reading of the cpu-pageable offload. The runs themselves: tests/py_torch/test_zero.py (CPU) and the GPU."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "bench" / "real"
for p in (REAL, ROOT / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from shardaccum_real import cases, dtypes, trace  # noqa: E402
from shardaccum_real.systems import zero_config  # noqa: E402

from test_real_runner import TINY_LAYOUT, _x, run_cli  # noqa: E402


@pytest.mark.parametrize("schedule, runs", [("S", True), ("SSSS", True), ("nnnS", True), ("nS", True),
                                            ("nSnS", False), ("SnSS", False), ("nnSS", False)])
def test_deepspeed_runs_only_sync_every_step_and_one_coalesced_reduction(schedule, runs):
    for system in ("zero3", "zero2"):
        why = cases.zero_skip_reason(system, schedule)
        assert (why is None) == runs
        if not runs:
            assert "no_sync() asserts" in why and system in why and schedule in why
    assert cases.zero_skip_reason("fsdp2", "nSnS") is None  # FSDP runs every schedule


def test_product_skips_what_deepspeed_cannot_run_with_the_reason():
    run, skipped = cases.product("zero3", ["m"], 1, ["nnnS", "SSSS", "nSnS", "SnSS"], ["cpu", "none"],
                                 ["fp32-fp32-fp32"], 0)
    assert [(c.schedule, c.offload) for c in run] == [("nnnS", "cpu"), ("SSSS", "cpu"), ("nnnS", "none"),
                                                      ("SSSS", "none")]
    assert [c.schedule for c, _ in skipped] == ["nSnS", "SnSS", "nSnS", "SnSS"]
    assert skipped[0][0].name == "real/system:zero3/model:m/world:1/schedule:nSnS/offload:cpu/dtype:fp32-fp32-fp32"


def test_config_per_case():
    sync = zero_config.config(3, "cpu", 4, coalesce=False)
    assert sync["gradient_accumulation_steps"] == 4 and sync["zero_optimization"] == {
        "stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True}}
    assert sync["zero_force_ds_cpu_optimizer"] is False  # the torch SGD, not the JIT-built DeepSpeedCPUAdam
    coalesced = zero_config.config(2, "cpu-pageable", 4, coalesce=True)
    assert coalesced["gradient_accumulation_steps"] == 1  # one coalesce_grad_reduction block = one step
    assert coalesced["zero_optimization"]["offload_optimizer"]["pin_memory"] is False
    assert zero_config.config(3, "none", 4, coalesce=False)["zero_optimization"] == {"stage": 3}
    # DeepSpeed's own defaults are not overridden: the JSON records what the engine chose
    assert not {"overlap_comm", "contiguous_gradients", "reduce_bucket_size"} & set(sync["zero_optimization"])


def test_deepspeed_maps_fp32_only():
    assert dtypes.plan("zero3", dtypes.parse("fp32-fp32-fp32")) == dtypes.Plan("fp32", None, None)
    for system in ("zero3", "zero2"):
        with pytest.raises(dtypes.Refused, match="fp32-fp32-fp32 only"):
            dtypes.plan(system, dtypes.parse("bf16-bf16-fp32"))


def test_fsdp1_refuses_pageable_offload(tmp_path):
    r = run_cli(tmp_path, "--system", "fsdp1", "--offload", "cpu-pageable")
    assert r.returncode == 2 and "--offload cpu-pageable" in r.stderr and "always pins" in r.stderr


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is not None, reason="deepspeed is installed here")
def test_zero_without_deepspeed_is_a_flag_error(tmp_path):
    r = run_cli(tmp_path, "--system", "zero3", "--out", "x.json", *TINY_LAYOUT)
    assert r.returncode == 2 and "needs deepspeed" in r.stderr and "prepare_deepspeed_deps.sh" in r.stderr


def test_zero_with_deepspeed_importable_goes_on_to_torch(tmp_path):
    """With a (planted) deepspeed on the path the flags pass and the run stops only at the missing torch."""
    fake = tmp_path / "block" / "deepspeed"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    r = run_cli(tmp_path, "--system", "zero2", "--offload", "all", "--out", "x.json", *TINY_LAYOUT)
    assert r.returncode == 1 and "needs torch" in r.stderr, r.stderr


def test_copies_from_the_autograd_thread_count_inside_deepspeeds_range():
    """The runner opens DeepSpeed::backward on the main thread; on CUDA DeepSpeed's hooks issue their
    copies from the autograd engine's thread: those count as gradient traffic, copies outside as not."""
    ev = [
        _x("user_annotation", zero_config.GRAD_BACKWARD, 100, 500, tid=1),
        _x("cuda_runtime", "cudaMemcpyAsync", 200, 5, tid=2, correlation=1),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 210, 100, tid=8, correlation=1, bytes=4096),
        _x("cuda_runtime", "cudaMemcpyAsync", 300, 5, tid=2, correlation=2),
        _x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 310, 100, tid=8, correlation=2, bytes=2048),
        _x("user_annotation", zero_config.GRAD_FLUSH, 700, 100, tid=1),
        _x("cuda_runtime", "cudaMemcpyAsync", 750, 5, tid=3, correlation=3),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 760, 100, tid=8, correlation=3, bytes=512),
        # after both ranges (the optimizer's H2D of updated parameters would be here): not gradient traffic
        _x("cuda_runtime", "cudaMemcpyAsync", 900, 5, tid=2, correlation=4),
        _x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 910, 100, tid=8, correlation=4, bytes=1024),
    ]
    got = trace.analyse(ev)
    assert got["d2h_bytes"] == 4096 + 512 and got["d2h_pageable_bytes"] == 512
    assert got["h2d_bytes"] == 2048 and got["param_h2d_bytes"] == 1024


def test_report_reads_pageable_offload_cases():
    from shardaccum_report.real import parse_real_name
    key = parse_real_name("real/system:zero3/model:gpt2-xl/world:1/schedule:nnnS/offload:cpu-pageable/"
                          "dtype:fp32-fp32-fp32")
    assert key.system == "zero3" and key.offload == "cpu-pageable" and key.name.endswith("offload:cpu-pageable/"
                                                                                      "dtype:fp32-fp32-fp32")
    with pytest.raises(ValueError, match="offload 'gpu'"):
        parse_real_name("real/system:zero3/model:m/world:1/schedule:S/offload:gpu/dtype:fp32-fp32-fp32")


def test_run_real_sh_takes_the_deepspeed_systems(tmp_path):
    """zero3/zero2 are accepted (the run then stops at the missing CUDA torch, exit 3); others exit 2."""
    run = ROOT / "tests" / "fixtures" / "host_w2_uniform8x64K.json"
    bench = tmp_path / "bench"
    bench.write_text("#!/bin/sh\nexit 0\n")
    bench.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "SHARDACCUM_TORCH_PYTHON": "/bin/false"}
    sh = ROOT / "scripts" / "run_real.sh"
    ok = subprocess.run(["bash", str(sh), "--systems", "zero3,zero2", "--bench", str(bench), str(run),
                         str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 3, ok.stderr
    bad = subprocess.run(["bash", str(sh), "--systems", "zero1", "--bench", str(bench), str(run),
                          str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "zero3 or zero2" in bad.stderr


def test_the_commit_comes_from_the_environment_when_set(monkeypatch):
    """On a GPU machine the tree's .git is not the commit that ran: SHARDACCUM_GIT_COMMIT says it, as for
    shardaccum_bench (the recorded DeepSpeed JSONs read 73c19f5-dirty for want of this)."""
    from shardaccum_real import context
    monkeypatch.setenv("SHARDACCUM_GIT_COMMIT", "0123abc")
    assert context.git_commit() == "0123abc"
    monkeypatch.delenv("SHARDACCUM_GIT_COMMIT")
    assert context.git_commit() != "0123abc"


@pytest.mark.parametrize("args, flag", [
    (["--system", "zero2", "--schedule", "nSnS,SnSS"], "--schedule"),   # every case would be skipped
    (["--system", "fsdp2", "--k", "4_0"], "--k"),                      # int() would take 40
    (["--system", "fsdp2", "--steps", "+2"], "--steps"),
    (["--system", "fsdp2", "--seed", " 1"], "--seed"),
    (["--system", "fsdp2", "--mod", "x"], "--mod"),                    # no prefix abbreviation of --model
])
def test_more_flag_errors_exit_2_before_torch(tmp_path, args, flag):
    r = run_cli(tmp_path, *args)
    assert r.returncode == 2 and flag in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_an_unknown_model_or_a_missing_bench_is_a_flag_error_before_torch(tmp_path):
    """--describe-layout needs no torch: what it refuses is refused before torch and deepspeed start."""
    r = run_cli(tmp_path, "--system", "fsdp2", "--model", "no-such-model", "--bench", "/nonexistent/shardaccum_bench")
    assert r.returncode == 2 and "--bench /nonexistent/shardaccum_bench: no such file" in r.stderr, r.stderr
    bench = tmp_path / "bench"
    bench.write_text("#!/bin/sh\necho \"--model $3: unknown model name\" >&2; exit 2\n")
    bench.chmod(0o755)
    r = run_cli(tmp_path, "--system", "fsdp2", "--model", "no-such-model", "--bench", str(bench))
    assert r.returncode == 2 and "--model no-such-model: unknown model name" in r.stderr, r.stderr


def test_out_under_a_regular_file_says_so(tmp_path):
    (tmp_path / "afile").write_text("")
    r = run_cli(tmp_path, "--system", "fsdp2", "--out", str(tmp_path / "afile" / "x.json"), *TINY_LAYOUT)
    assert r.returncode == 2 and "is a file, not a folder" in r.stderr, r.stderr
