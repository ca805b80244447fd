"""bench/real (the real-systems runner) without torch, as CI runs it: --help and flag errors, the
launch environment (torchrun, srun, mpirun, the NVLS refusal), schedules, the dtype mapping and its
refusals, case names, the JSON writer and accumulation costs A/B, the layout document parser and the
profiled step's attribution on a canned trace."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "bench" / "real"
RUN = REAL / "run.py"
FIX = ROOT / "tests" / "fixtures" / "real"
if str(REAL) not in sys.path:
    sys.path.insert(0, str(REAL))

from shardaccum_real import cases, dtypes, launch, layout, output, schedule, trace  # noqa: E402


# A saved --describe-layout document, so a test of the flags needs no built shardaccum_bench.
TINY_LAYOUT = ("--layout-json", str(FIX / "layout_uniform4x64K.json"), "--model", "uniform:4x64K")


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """run.py with a `torch` that cannot be imported (a planted torch.py raising ImportError first on the
    path), so a pass proves the path taken needs no torch."""
    block = tmp_path / "block"
    block.mkdir(exist_ok=True)
    (block / "torch.py").write_text("raise ImportError('torch is blocked in this test')\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(block)}
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)


def test_help_needs_no_torch(tmp_path):
    r = run_cli(tmp_path, "--help")
    assert r.returncode == 0, r.stderr
    for word in ("--system", "--schedule", "Needs torch", "Exit status", "NCCL_NVLS_ENABLE=0"):
        assert word in r.stdout


@pytest.mark.parametrize("args, flag", [
    (["--model", "x"], "--system"),
    (["--system", "deepspeed"], "--system"),
    (["--system", "fsdp2", "--schedule", "nnSn"], "--schedule"),
    (["--system", "fsdp2", "--schedule", "sync", "--k", "2"], "--k"),
    (["--system", "fsdp2", "--schedule", "all,SSSS"], "--schedule"),
    (["--system", "fsdp2", "--dtype", "fp16-fp32-fp32"], "--dtype"),
    (["--system", "fsdp2", "--offload", "copy"], "--offload"),
    (["--system", "fsdp2", "--steps", "0"], "--steps"),
    (["--system", "fsdp2", "--warmup", "x"], "--warmup"),
    (["--system", "fsdp2", "--tokens", "-1"], "--tokens"),
    (["--system", "fsdp2", "--model", "a,,b"], "--model"),
    (["--system", "fsdp2", "--out", "/nonexistent/dir/x.json"], "--out"),
    (["--system", "fsdp2", "--layout-json", "/nonexistent.json"], "--layout-json"),
    (["--system", "fsdp1", "--device", "cpu", "--offload", "cpu,none"], "--offload cpu"),
    (["--system", "fsdp2", "--bogus"], "--bogus"),
])
def test_bad_flags_exit_2_naming_the_flag(tmp_path, args, flag):
    r = run_cli(tmp_path, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert flag in r.stderr and "Traceback" not in r.stderr


def test_good_flags_reach_torch_and_say_it_is_missing(tmp_path):
    r = run_cli(tmp_path, "--system", "fsdp2", "--out", "x.json", *TINY_LAYOUT)
    assert r.returncode == 1 and "needs torch" in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_nvls_refusal_under_torchrun_world_2(tmp_path):
    block = tmp_path / "block"
    block.mkdir()
    (block / "torch.py").write_text("raise ImportError('blocked')\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(block), "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    r = subprocess.run([sys.executable, str(RUN), "--system", "fsdp2"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 2 and "NCCL_NVLS_ENABLE=0" in r.stderr
    env.update(launch.NVLS_OFF)
    r = subprocess.run([sys.executable, str(RUN), "--system", "fsdp2"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 1 and "needs torch" in r.stderr  # past the refusal


@pytest.mark.parametrize("env, expect", [
    ({}, ("plain", 0, 1, 0)),
    ({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}, ("torchrun", 3, 4, 1)),
    ({"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1"}, ("srun", 5, 8, 1)),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, ("srun", 0, 1, None)),
    ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"},
     ("mpirun", 2, 4, 0)),
    ({"PMI_RANK": "1", "PMI_SIZE": "2"}, ("mpirun", 1, 2, None)),
    ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1"}, ("mpirun", 1, 2, 1)),
    # torchrun's variables win over a surrounding allocation's
    ({"RANK": "0", "WORLD_SIZE": "2", "SLURM_PROCID": "7", "SLURM_NTASKS": "16"}, ("torchrun", 0, 2, None)),
])
def test_launch_detect(env, expect):
    ln = launch.detect(env)
    assert (ln.launcher, ln.rank, ln.world, ln.local_rank) == expect


@pytest.mark.parametrize("env, words", [
    ({"RANK": "0"}, "WORLD_SIZE"),
    ({"WORLD_SIZE": "2"}, "RANK"),
    ({"RANK": "2", "WORLD_SIZE": "2"}, "not below"),
    ({"RANK": "x", "WORLD_SIZE": "2"}, "not an integer"),
    ({"OMPI_COMM_WORLD_RANK": "0"}, "OMPI_COMM_WORLD_SIZE"),
    ({"PMI_RANK": "0", "PMI_SIZE": "0"}, "not below"),
])
def test_launch_detect_refuses_inconsistent_env(env, words):
    with pytest.raises(launch.LaunchError, match=words):
        launch.detect(env)


def test_nvls_refusal_rules():
    assert launch.nvls_refusal({}, 1) is None
    msg = launch.nvls_refusal({"NCCL_NVLS_ENABLE": "0"}, 2)
    assert "TORCH_SYMM_MEM_DISABLE_MULTICAST" in msg and "NVSHMEM_DISABLE_NVLS" in msg and "NCCL_NVLS_ENABLE," not in msg
    assert launch.nvls_refusal({**launch.NVLS_OFF, "NCCL_NVLS_ENABLE": "1"}, 8) is not None
    assert launch.nvls_refusal(dict(launch.NVLS_OFF), 2) is None


def test_rendezvous_env():
    plain = launch.rendezvous_env({}, launch.detect({}))
    assert plain == {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}
    srun = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "1"}
    with pytest.raises(launch.LaunchError, match="MASTER_ADDR and MASTER_PORT"):
        launch.rendezvous_env(srun, launch.detect(srun))
    srun.update(MASTER_ADDR="n0", MASTER_PORT="1234")
    assert launch.rendezvous_env(srun, launch.detect(srun)) == {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}


def test_schedules_as_the_suite_spells_them():
    assert schedule.parse_list(["all"], 4) == ["nnnS", "SSSS", "nSnS", "SnSS"]
    assert schedule.parse_list(["all"], 5) == ["nnnnS", "SSSSS", "SnSnS", "nSnSS"]
    assert schedule.parse_list(["no-sync", "nnnS", "nS"], 4) == ["nnnS", "nS"]
    for bad, words in (("Sn", "must end in S"), ("", "empty"), ("syncc", "not a canonical name"),
                       ("S" * 4097, "above the limit")):
        with pytest.raises(ValueError, match=words):
            schedule.parse(bad, 4)
    with pytest.raises(ValueError, match="--k >= 3.*such as 'nS' or 'SS'"):
        schedule.parse("interleaved-sync-last", 2)


def test_dtype_mapping_and_refusals():
    t = dtypes.parse_list(["all"])
    assert [x.name for x in t] == list(dtypes.SUITE_TRIPLES)
    for system in ("fsdp2", "fsdp1"):
        assert dtypes.plan(system, dtypes.parse("fp32-fp32-fp32")) == dtypes.Plan("fp32", None, None)
        assert dtypes.plan(system, dtypes.parse("bf16-bf16-fp32")) == dtypes.Plan("fp32", "bf16", None)
        assert dtypes.plan(system, dtypes.parse("bf16-bf16-bf16")) == dtypes.Plan("bf16", None, None)
    # FSDP2's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), the suite's --copy-in chunk-cat.
    assert dtypes.plan("fsdp2", dtypes.parse("bf16-fp32-fp32")) == dtypes.Plan("fp32", "bf16", "fp32")
    with pytest.raises(dtypes.Refused, match="grad != reduce is FSDP2's"):
        dtypes.plan("fsdp1", dtypes.parse("bf16-fp32-fp32"))
    with pytest.raises(dtypes.Refused, match="not a triple of the suite"):
        dtypes.plan("fsdp2", dtypes.parse("fp32-bf16-fp32"))
    with pytest.raises(ValueError, match="--dtype"):
        dtypes.parse("fp32-fp32")


def test_case_names_and_product():
    c = cases.Case("fsdp2", "uniform:16x64M", 1, "SSSS", "cpu", "fp32-fp32-fp32", 0)
    assert c.name == "real/system:fsdp2/model:uniform:16x64M/world:1/schedule:SSSS/offload:cpu/dtype:fp32-fp32-fp32"
    assert cases.Case("fsdp1", "gpt2-xl", 2, "nS", "none", "bf16-bf16-fp32", 512).name.endswith(
        "/schedule:nS/offload:none/dtype:bf16-bf16-fp32/tokens:512")
    assert c.baseline("none").name == c.name.replace("SSSS", "nnnS").replace("offload:cpu", "offload:none")
    p, skipped = cases.product("fsdp1", ["a", "b"], 1, ["nnnS", "SSSS"], ["cpu", "none"], ["fp32-fp32-fp32"], 0)
    assert len(p) == 8 and len({x.name for x in p}) == 8 and p[0].model == "a" and p[1].schedule == "SSSS"
    assert skipped == []


def _results():
    """Synthetic results: step_ms by (schedule, offload)."""
    steps = {("nnnS", "none"): 100.0, ("SSSS", "none"): 130.0, ("nnnS", "cpu"): 700.0, ("SSSS", "cpu"): 9700.0}
    cs = [cases.Case("fsdp2", "m", 1, s, o, "fp32-fp32-fp32", 0) for s, o in steps]
    es = [output.entry(c, {"step_ms": steps[(c.schedule, c.offload)], "correct": 1}, iterations=2) for c in cs]
    return cs, es


def test_accum_costs_a_and_b():
    cs, es = _results()
    output.add_accum_costs(es, cs)
    by = {(c.schedule, c.offload): e for c, e in zip(cs, es)}
    assert by[("SSSS", "cpu")]["accum_cost_a_ms"] == 9600.0 and by[("SSSS", "cpu")]["accum_cost_b_ms"] == 9000.0
    assert by[("nnnS", "cpu")]["accum_cost_a_ms"] == 600.0 and by[("nnnS", "cpu")]["accum_cost_b_ms"] == 0.0
    assert by[("SSSS", "none")]["accum_cost_a_ms"] == 30.0 == by[("SSSS", "none")]["accum_cost_b_ms"]


def test_accum_costs_absent_without_their_baseline():
    cs, es = _results()
    es[0] = output.entry(cs[0], {}, error="refused")  # nnnS/none errored: no A anywhere
    keep = [(c, e) for c, e in zip(cs, es) if c.schedule != "nnnS" or c.offload != "cpu"]  # nnnS/cpu did not run
    cs2, es2 = [c for c, _ in keep], [e for _, e in keep]
    output.add_accum_costs(es2, cs2)
    for e in es2:
        assert "accum_cost_a_ms" not in e and "accum_cost_b_ms" not in e


def test_entry_fields_and_errors():
    c = cases.Case("fsdp1", "m", 1, "SSSS", "cpu", "fp32-fp32-fp32", 0)
    e = output.entry(c, {"step_ms": 5.0, "correct": 0, "max_rel_err": 0.87, "d2h_bytes": None}, iterations=2,
                     cpu_time_ms=1.5)
    assert e["label"] == "real fsdp1; WRONG" and e["real_time"] == 5.0 and e["cpu_time"] == 1.5
    assert e["iterations"] == 2 and e["run_type"] == "iteration" and e["repetitions"] == 1 and e["threads"] == 1
    assert "d2h_bytes" not in e and e["k"] == 4 and e["world_size"] == 1 and e["tokens"] == 0
    err = output.entry(c, {}, error="Refused: why")
    assert err["error_occurred"] is True and err["error_message"] == "Refused: why" and "step_ms" not in err
    for bad in ({"step_ms": math.nan}, {"step_ms": math.inf}, {"bogus_ms": 1.0}, {"correct": True}):
        with pytest.raises(output.OutputError):
            output.entry(c, bad)


def test_write_atomic_is_strict_and_replaces_whole(tmp_path):
    path = tmp_path / "r.json"
    output.write_atomic(str(path), {"context": {}, "benchmarks": [1]})
    assert json.loads(path.read_text()) == {"context": {}, "benchmarks": [1]}
    with pytest.raises(ValueError):
        output.write_atomic(str(path), {"benchmarks": [math.nan]})
    assert json.loads(path.read_text()) == {"context": {}, "benchmarks": [1]}  # the old file, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary left behind


def test_layout_parser_on_canned_documents():
    u = layout.load_file(str(FIX / "layout_uniform4x64K.json"))
    assert u.family == "uniform" and len(u.units) == 4 and u.units[2].params[0].shape == (8192, 8)
    t = layout.load_file(str(FIX / "layout_tiny_multi.json"))
    p = t.units[1].params
    assert [x.name for x in p] == ["blk1.ln.weight", "blk1.proj.weight", "blk1.proj.bias"]
    assert [x.offset for x in p] == [0, 9, 33] and t.units[1].numel == 36


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.update(schema="x"), "not a shardaccum.layout/1"),
    (lambda d: d["units"][1]["params"][1].update(offset=8), "running sum"),
    (lambda d: d["units"][0].update(numel=1), "sum to"),
    (lambda d: d["units"][0].update(index=3), "index"),
    (lambda d: d.update(total_numel=1), "total_numel"),
    (lambda d: d["units"][0]["params"][0].update(shape=[0, 5]), "positive"),
    (lambda d: d["units"][0]["params"][0].pop("name"), "'name'"),
])
def test_layout_parser_refuses_broken_documents(edit, words):
    doc = json.loads((FIX / "layout_tiny_multi.json").read_text())
    edit(doc)
    with pytest.raises(layout.LayoutError, match=words):
        layout.parse(doc)


def test_describe_without_the_binary_says_how_to_build(tmp_path):
    with pytest.raises(layout.LayoutError, match="cmake --build --preset default --target shardaccum_bench"):
        layout.describe(str(tmp_path / "none"), "uniform:4x64K")


def _x(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def canned_trace():
    """A step's Kineto events in the Chrome-trace form torch.profiler exports (categories user_annotation,
    cuda_runtime, gpu_memcpy, kernel, cpu_op; memcpys carry correlation and bytes)."""
    ev = [
        # FSDP2: all-gather copy-in of offloaded parameters (parameter traffic)
        _x("user_annotation", "FSDP::all_gather (units.1)", 0, 100),
        _x("cuda_runtime", "cudaMemcpyAsync", 10, 5, correlation=1),
        _x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 20, 2000, tid=7, correlation=1, bytes=1000),
        # FSDP2 post-backward: first S pinned, then a blocking pageable copy and the CPU add
        _x("user_annotation", "FSDP::post_backward_reduce (units.1)", 200, 500),
        _x("cuda_runtime", "cudaMemcpyAsync", 210, 5, correlation=2),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 220, 3000, tid=8, correlation=2, bytes=400),
        _x("cuda_runtime", "cudaMemcpyAsync", 300, 5, correlation=3),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 310, 4000, tid=8, correlation=3, bytes=400),
        _x("cpu_op", "aten::add_", 400, 250),                           # CPU add: launches nothing
        _x("cpu_op", "aten::add_", 660, 20),                            # GPU add: launches a kernel
        _x("cuda_runtime", "cudaLaunchKernel", 665, 3, correlation=4),
        _x("kernel", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 230, 1500,
           tid=9, correlation=5),
        _x("kernel", "ncclDevKernel_AllGather_RING_LL(x)", 30, 500, tid=9, correlation=6),
        _x("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", 40, 250, tid=9, correlation=7),
        _x("kernel", "ncclDevKernel_Broadcast_RING_LL(x)", 50, 100, tid=9, correlation=8),
        _x("kernel", "void at::native::vectorized_elementwise_kernel<4>(x)", 60, 900, tid=7, correlation=9),
        # FSDP1: the hook's D2H is gradient traffic, its nested prefetch's H2D parameter traffic
        _x("user_annotation", "FullyShardedDataParallel._post_backward_hook", 1000, 400),
        _x("user_annotation", "FullyShardedDataParallel._post_backward_prefetch", 1100, 100),
        _x("cuda_runtime", "cudaMemcpyAsync", 1150, 5, correlation=10),
        _x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 1160, 1000, tid=7, correlation=10, bytes=2000),
        _x("cuda_runtime", "cudaMemcpyAsync", 1300, 5, correlation=11),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 1310, 500, tid=8, correlation=11, bytes=64),
        # a copy issued on another thread than the range: not the range's
        _x("cuda_runtime", "cudaMemcpyAsync", 250, 5, tid=2, correlation=12),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 260, 100, tid=8, correlation=12, bytes=8),
        _x("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 270, 100, tid=8, correlation=13, bytes=99999),
        # a runtime call recorded on another thread, linked by External id to its aten op in the range
        _x("cpu_op", "aten::copy_", 1320, 20, **{"External id": 77}),
        _x("cuda_runtime", "cudaMemcpyAsync", 1325, 5, tid=3, correlation=14, **{"External id": 77}),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 1330, 500, tid=8, correlation=14, bytes=32),
        # FSDP2's reduce-scatter copy-in: torch._chunk_cat uploads its block indices (kernel metadata)
        _x("cpu_op", "aten::_chunk_cat", 682, 16),
        _x("cpu_op", "aten::copy_", 685, 10, **{"External id": 78}),
        _x("cuda_runtime", "cudaMemcpyAsync", 690, 3, correlation=15, **{"External id": 78}),
        _x("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 695, 10, tid=7, correlation=15, bytes=16448),
        {"ph": "i", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "ts": 1, "args": {"bytes": 5}},
    ]
    return ev


def test_trace_attribution_on_a_canned_step():
    got = trace.analyse(canned_trace())
    assert got["d2h_bytes"] == 400 + 400 + 64 + 32 and got["d2h_pageable_bytes"] == 400 + 32
    assert got["d2h_ms"] == pytest.approx(8.0) and got["h2d_bytes"] == 0 and got["h2d_ms"] == 0
    assert got["param_h2d_bytes"] == 1000 + 2000 and got["param_h2d_ms"] == pytest.approx(3.0)
    assert got["param_d2h_bytes"] == 8
    assert got["meta_h2d_bytes"] == 16448  # chunk_cat's block indices: neither gradient nor parameter traffic
    assert got["reduce_scatter_ms"] == pytest.approx(1.5) and got["all_gather_ms"] == pytest.approx(0.5)
    assert got["all_reduce_ms"] == pytest.approx(0.25) and got["nccl_ms"] == pytest.approx(2.25)
    assert got["cpu_add_ms"] == pytest.approx(0.25)
    # every kernel and copy above lies inside 20..4310 µs with no gap: busy 4.29 ms
    assert got["gpu_busy_ms"] == pytest.approx(4.29)


def test_gpu_busy_counts_overlaps_once_and_gaps_never():
    # [0, 10) and [5, 15) overlap (15 µs); [30, 40) after a gap; [32, 35) inside it; a zero-length one
    assert trace.busy_ms([(30, 10), (0, 10), (5, 10), (32, 3), (50, 0)]) == pytest.approx(0.025)
    assert trace.busy_ms([]) == 0.0
    ev = [_x("kernel", "k", 0, 10), _x("gpu_memset", "Memset (Device)", 100, 20), _x("cpu_op", "aten::add_", 0, 500)]
    assert trace.analyse(ev)["gpu_busy_ms"] == pytest.approx(0.03)  # the CPU op is not GPU work


def test_context_settings_and_time_domain():
    from shardaccum_real import cli, context
    merged = context.merge_settings([("fsdp2", {"reshard_after_forward": True, "offload_policy": "a"}),
                                     ("fsdp2", {"reshard_after_forward": True, "offload_policy": "b"})])
    assert merged == {"fsdp2": {"reshard_after_forward": True, "offload_policy": ["a", "b"]}}
    opts = cli.parse(["--system", "fsdp2", "--device", "cpu", "--out", "/tmp/x.json"])
    ctx = context.build(opts, 1, {"torch_version": "2.11.0"}, "lib.so", {"m": "file"}, [], "map", "allocated_bytes.peak")
    assert ctx["time_domain"].startswith("host wall-clock") and ctx["profiled_steps"] == "0"
    assert ctx["backend"] == "real" and ctx["tf32"] == "off" and ctx["torch_version"] == "2.11.0"
    assert ctx["pinned_stat_key"] == "torch.cuda.memory.host_memory_stats()['allocated_bytes.peak']"
    json.dumps(ctx, allow_nan=False)


def test_describe_runs_the_binary_and_reports_its_failure(tmp_path):
    bench = tmp_path / "fake_bench"
    doc = FIX / "layout_tiny_multi.json"
    bench.write_text(f"#!/bin/sh\n[ \"$1 $2 $3\" = '--describe-layout --model tiny-multi' ] && exec cat {doc}\n"
                     "echo \"--model $3: unknown model\" >&2; exit 2\n")
    bench.chmod(0o755)
    assert layout.describe(str(bench), "tiny-multi").units[1].params[2].name == "blk1.proj.bias"
    with pytest.raises(layout.LayoutError, match="exited 2: --model nope: unknown model"):
        layout.describe(str(bench), "nope")


def test_device_figures_are_net_of_what_earlier_cases_left():
    from shardaccum_real.output import net_of_leftover
    c = {"peak_device_bytes": 9_000, "device_baseline_bytes": 4_000, "d2h_bytes": 123}
    got = net_of_leftover(c, 3_000)
    assert got == {"peak_device_bytes": 6_000, "device_baseline_bytes": 1_000, "d2h_bytes": 123,
                   "device_leftover_bytes": 3_000}
    assert c["peak_device_bytes"] == 9_000  # the input is not changed
    assert net_of_leftover(c, None) == c  # on the CPU there is nothing to subtract
    assert net_of_leftover({"peak_device_bytes": 10}, 0)["device_leftover_bytes"] == 0
    # pinned host memory that earlier cases left (DeepSpeed's buffers) comes off the pinned peak alike
    got = net_of_leftover({"peak_pinned_bytes": 16_000, "peak_device_bytes": 50}, 10, 8_000)
    assert got == {"peak_pinned_bytes": 8_000, "pinned_leftover_bytes": 8_000, "peak_device_bytes": 40,
                   "device_leftover_bytes": 10}
    # the requested bytes (before the allocator's rounding) net of their own leftover, not the allocated one
    got = net_of_leftover({"peak_device_bytes": 9_216, "peak_device_requested_bytes": 9_000,
                           "device_baseline_requested_bytes": 4_000}, 1_024, None, 1_000)
    assert got == {"peak_device_bytes": 8_192, "device_leftover_bytes": 1_024, "peak_device_requested_bytes": 8_000,
                   "device_baseline_requested_bytes": 3_000, "device_leftover_requested_bytes": 1_000}


def test_files_named_by_flags_are_checked_before_torch(tmp_path):
    """A broken --layout-json, one that describes none of the models, and an --out that cannot be written
    are flag errors (exit 2, no traceback), not failures after every case has run."""
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    good = ROOT / "tests" / "fixtures" / "real" / "layout_uniform4x64K.json"
    (tmp_path / "adir").mkdir()
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something/1"}')
    for args, want in (
        (["--layout-json", str(bad), "--model", "uniform:4x64K"], "--layout-json"),
        (["--layout-json", str(deep), "--model", "uniform:4x64K"], f"--layout-json {deep}: nested too deep"),
        (["--layout-json", str(other), "--model", "uniform:4x64K"], f"--layout-json {other}: not a shardaccum.layout"),
        (["--layout-json", str(tmp_path / "adir"), "--model", "uniform:4x64K"], "a directory, not a file"),
        (["--layout-json", str(good), "--model", "uniform:4x64M"], "no --model names"),
        (["--out", str(tmp_path / "adir")], "is a folder"),
        (["--out", ""], "--out ''"),
        (["--offload", "all,cpu"], "must be alone"),
    ):
        r = run_cli(tmp_path, "--system", "fsdp2", *args)
        assert r.returncode == 2 and want in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    r = run_cli(tmp_path, "--system", "fsdp2", "--layout-json", str(good), "--model", "uniform:4x64K")
    assert "torch" in r.stderr and r.returncode == 1  # the flags pass; only torch is missing


def test_coverage_problems_find_gaps_overlaps_and_strays():
    """Missing pieces must not read correct: every unit covered exactly once, or a message why not."""
    from shardaccum_real.oracle import coverage_problems
    numels = {0: 10, 1: 7}
    assert coverage_problems([(0, 0, 4), (0, 4, 6), (1, 0, 7)], numels) == []
    assert coverage_problems([(1, 3, 4), (0, 5, 5), (1, 0, 3), (0, 0, 5)], numels) == []  # any order, any rank
    assert coverage_problems([], numels) == ["unit 0: elements [0, 10) are in no piece",
                                             "unit 1: elements [0, 7) are in no piece"]
    assert coverage_problems([(0, 0, 4), (0, 6, 4), (1, 0, 7)], numels) == ["unit 0: elements [4, 6) are in no piece"]
    assert coverage_problems([(0, 0, 6), (0, 4, 6), (1, 0, 7)], numels) == ["unit 0: elements [4, 6) are in two pieces"]
    assert coverage_problems([(0, 0, 11), (1, 0, 7)], numels) == ["unit 0: pieces reach element 11 of 10"]
    assert coverage_problems([(0, 0, 10), (1, 0, 7), (2, 0, 1)], numels) == [
        "a piece of unit 2, which the layout does not have"]


def test_the_json_is_an_ordinary_file_of_the_umask(tmp_path):
    """write_atomic goes through mkstemp (mode 0600): the result takes the umask's mode, as any file."""
    import os
    old = os.umask(0o022)
    try:
        output.write_atomic(str(tmp_path / "r.json"), {"context": {}, "benchmarks": []})
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644
    assert json.loads((tmp_path / "r.json").read_text()) == {"context": {}, "benchmarks": []}
