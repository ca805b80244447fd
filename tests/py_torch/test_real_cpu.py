"""The runner's torch side on the CPU (FSDP2, gloo, world 1): gradients reach FSDP through the custom
autograd Function, each canonical schedule with offload none and cpu accumulates correctly, the
oracle sees an overwritten accumulation (the pytorch#73784 behaviour planted), each rank's pieces
cover the unit, and run.py --device cpu writes the JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")  # CI has no torch: everything here skips there

from conftest import FIX, REAL, FakeGen  # noqa: E402
from shardaccum_real import cases, cli, dtypes, layout, runner  # noqa: E402
from shardaccum_real.model import StepState, Workload  # noqa: E402

TINY = layout.load_file(str(FIX / "layout_tiny_multi.json"))


def _opts(*extra):
    return cli.parse(["--system", "fsdp2", "--device", "cpu", "--steps", "2", "--warmup", "1", *extra])


def _case(schedule, offload, dtype="fp32-fp32-fp32", tokens=0, system="fsdp2"):
    return cases.Case(system, "tiny-multi", 1, schedule, offload, dtype, tokens)


@pytest.mark.parametrize("tokens", [0, 3])
def test_backward_gives_each_parameter_the_generator_values(fake_gen, tokens):
    state = StepState(1, 0, 1, 0, 4, lambda n: n)
    wl = Workload(TINY, state, fake_gen.fill, torch.float32, torch.device("cpu"), tokens)
    state.step, state.mb = 3, 2
    wl(torch.ones(1, requires_grad=True)).sum().backward()
    for um in wl.units:
        for attr, p in um.described:
            want = FakeGen.values(state.key(um.unit), p.offset, p.numel).float().view(p.shape)
            assert torch.equal(getattr(um, attr).grad, want), p.name


@pytest.mark.parametrize("offload", ["none", "cpu"])
@pytest.mark.parametrize("schedule", ["nnnS", "SSSS", "nSnS", "SnSS"])
def test_fsdp2_accumulates_correctly(cpu_device, fake_gen, schedule, offload):
    counters, _ = runner.run_case(_case(schedule, offload), TINY, dtypes.parse("fp32-fp32-fp32"), _opts(), fake_gen,
                                  cpu_device, 0, 1, [])
    assert counters["correct"] == 1 and counters["max_rel_err"] == 0.0
    assert counters["step_ms"] > 0 and counters["step_ms_min"] <= counters["step_ms_median"] <= counters["step_ms_max"]
    assert "peak_device_bytes" not in counters and "d2h_bytes" not in counters  # not measured on the CPU


@pytest.mark.parametrize("schedule", ["nnnS", "SSSS", "nSnS", "SnSS"])
def test_fsdp1_accumulates_correctly_without_offload(cpu_device, fake_gen, schedule):
    """FSDP1 on the CPU (device_id=cpu; NO_SHARD at world 1): its flat parameter's pieces, in the layout's
    order, hold the accumulated generator values. Offload needs CUDA (pinned memory): the GPU tests."""
    counters, _ = runner.run_case(_case(schedule, "none", system="fsdp1"), TINY, dtypes.parse("fp32-fp32-fp32"),
                                  _opts(), fake_gen, cpu_device, 0, 1, [])
    assert counters["correct"] == 1 and counters["max_rel_err"] == 0.0


def test_oracle_sees_an_overwritten_accumulation(cpu_device, fake_gen, monkeypatch):
    """Dropping the saved gradient before every S (what FSDP1 does with offload) must read WRONG."""
    from shardaccum_real.systems.fsdp2 import FSDP2
    orig = FSDP2.micro_batch

    def overwrite(self, sync):
        if sync:
            self.zero_grad()
        return orig(self, sync)

    monkeypatch.setattr(FSDP2, "micro_batch", overwrite)
    counters, _ = runner.run_case(_case("SSSS", "none"), TINY, dtypes.parse("fp32-fp32-fp32"), _opts(), fake_gen,
                                  cpu_device, 0, 1, [])
    assert counters["correct"] == 0 and counters["max_rel_err"] > 0.3
    counters, _ = runner.run_case(_case("nnnS", "none"), TINY, dtypes.parse("fp32-fp32-fp32"), _opts(), fake_gen,
                                  cpu_device, 0, 1, [])
    assert counters["correct"] == 1  # one S: nothing to lose


def test_fsdp2_pieces_cover_every_unit_element(cpu_device, fake_gen):
    from shardaccum_real.systems.fsdp2 import FSDP2
    state = StepState(1, 0, 1, 0, 4, lambda n: n)
    wl = Workload(TINY, state, fake_gen.fill, torch.float32, cpu_device)
    sys_ = FSDP2(wl, dtypes.plan("fsdp2", dtypes.parse("fp32-fp32-fp32")), "none", cpu_device, 1)
    wl(torch.ones(1, requires_grad=True)).sum().backward()
    pieces = sys_.pieces(0)
    for u in TINY.units:
        runs = sorted((f, t.numel()) for i, f, t in pieces if i == u.index)
        assert runs == [(p.offset, p.numel) for p in u.params]


def test_refused_dtype_is_an_error_case(cpu_device, fake_gen):
    with pytest.raises(dtypes.Refused):
        runner.run_case(_case("SSSS", "none", "bf16-fp32-fp32"), TINY, dtypes.parse("bf16-fp32-fp32"), _opts(),
                        fake_gen, cpu_device, 0, 1, [])


def _lib():
    from shardaccum_real import genlib
    try:
        return genlib.find()
    except genlib.GenLibError as e:
        pytest.skip(f"no libshardaccum_gen.so: {e}")


def test_suite_generator_and_oracle_on_fsdp2(cpu_device):
    """The real generator and oracle (libshardaccum_gen): correct on every schedule, bf16 included."""
    from shardaccum_real.gradsource import SuiteGen
    gen = SuiteGen(str(_lib()))
    for dt in ("fp32-fp32-fp32", "bf16-bf16-fp32", "bf16-bf16-bf16"):
        for s in ("SSSS", "nSnS"):
            c, _ = runner.run_case(_case(s, "cpu", dt), TINY, dtypes.parse(dt), _opts(), gen, cpu_device, 0, 1, [])
            assert c["correct"] == 1 and c["max_rel_err"] <= c["err_bound"], (dt, s, c)


def test_run_py_cpu_writes_the_json(tmp_path):
    lib = _lib()
    out = tmp_path / "r.json"
    # Not this session's process group: a plain run sets its own rendezvous.
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                              "MASTER_PORT")}
    env["SHARDACCUM_GEN_LIB"] = str(lib)
    r = subprocess.run([sys.executable, str(REAL / "run.py"), "--system", "fsdp2", "--device", "cpu", "--model",
                        "tiny-multi", "--layout-json", str(FIX / "layout_tiny_multi.json"), "--dtype",
                        "fp32-fp32-fp32,bf16-fp32-fp32", "--out", str(out)], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 1, r.stderr  # the refused triple's cases errored: exit 1, the JSON written
    doc = json.loads(out.read_text())
    b = doc["benchmarks"]
    assert len(b) == 16 and doc["context"]["time_domain"].startswith("host wall-clock")
    ok = [x for x in b if "bf16-fp32-fp32" not in x["name"]]
    assert all(x["correct"] == 1 and x["label"] == "real fsdp2; correct" for x in ok)
    assert all(x["error_occurred"] and "Refused" in x["error_message"] for x in b if x not in ok)
    ssss = next(x for x in ok if "schedule:SSSS/offload:cpu" in x["name"])
    assert "accum_cost_a_ms" in ssss and "accum_cost_b_ms" in ssss
    assert "case 16/16" in r.stderr


def test_torchrun_world_2_shards_odd_shapes_correctly(tmp_path):
    """Two ranks on gloo: every dim-0 chunk (rows 6, 3, 11 and 1-D 7, 9 over 2 ranks) lands where the
    oracle expects it, on every schedule, offload and triple."""
    lib = _lib()
    out = tmp_path / "w2.json"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                              "MASTER_PORT")}
    env.update(SHARDACCUM_GEN_LIB=str(lib), NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
               NVSHMEM_DISABLE_NVLS="1")
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(REAL / "run.py"),
                        "--system", "fsdp2", "--device", "cpu", "--model", "tiny-multi", "--layout-json",
                        str(FIX / "layout_tiny_multi.json"), "--dtype", "all", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    b = json.loads(out.read_text())["benchmarks"]
    assert len(b) == 24 and all(x["correct"] == 1 and "/world:2/" in x["name"] for x in b)


def test_run_case_leaves_no_fsdp1_flat_parameter_alive(cpu_device, fake_gen):
    """What a case allocated must not stay for the next case's peak (measure.release_storage)."""
    import gc
    runner.run_case(_case("SSSS", "none", system="fsdp1"), TINY, dtypes.parse("fp32-fp32-fp32"), _opts(), fake_gen,
                    cpu_device, 0, 1, [])
    gc.collect()
    # by type name: FlatParameter's metaclass __instancecheck__ is not safe on every object gc returns
    alive = [o for o in gc.get_objects() if type(o).__name__ == "FlatParameter"]
    assert not alive, f"{len(alive)} FSDP1 flat parameters outlived their case"
