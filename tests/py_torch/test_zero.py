"""DeepSpeed ZeRO-3 and ZeRO-2 through the runner on the CPU (DeepSpeed's CPU accelerator, gloo): both
runnable schedules, offload none/cpu/cpu-pageable, accumulate correctly at world 1; the oracle sees a
gradient read from the wrong place; a rank-2 torchrun over odd shapes lands every partition where the
oracle expects it. Skips without torch or deepspeed (pip install deepspeed==0.19.8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

from conftest import FIX, REAL  # noqa: E402
from shardaccum_real import cases, cli, dtypes, layout, runner  # noqa: E402

TINY = layout.load_file(str(FIX / "layout_tiny_multi.json"))
FP32 = dtypes.parse("fp32-fp32-fp32")


def _opts(system):
    return cli.parse(["--system", system, "--device", "cpu", "--steps", "2", "--warmup", "1"])


def _case(system, schedule, offload):
    return cases.Case(system, "tiny-multi", 1, schedule, offload, "fp32-fp32-fp32", 0)


@pytest.mark.parametrize("offload", ["none", "cpu", "cpu-pageable"])
@pytest.mark.parametrize("schedule", ["SSSS", "nnnS"])
@pytest.mark.parametrize("system", ["zero3", "zero2"])
def test_zero_accumulates_correctly(cpu_device, fake_gen, system, schedule, offload):
    settings = []
    counters, _ = runner.run_case(_case(system, schedule, offload), TINY, FP32, _opts(system), fake_gen, cpu_device,
                                  0, 1, settings)
    assert counters["correct"] == 1 and counters["max_rel_err"] == 0.0
    (name, s), = settings
    assert name == system and s["stage"] == int(system[-1])
    assert s["gradient_accumulation_steps"] == (1 if schedule == "nnnS" else 4)
    assert s["offload_optimizer"] == ("none" if offload == "none" else
                                      {"device": "cpu", "pin_memory": offload == "cpu"})
    assert isinstance(s["overlap_comm"], bool) and s["reduce_bucket_size"] > 0


def test_oracle_sees_a_wrong_value_in_what_deepspeed_accumulated(cpu_device, fake_gen, monkeypatch):
    """One element off by one in the pieces read back must read WRONG: the check reads what DeepSpeed
    accumulated (a shifted read is a coverage error: test_missing_pieces_are_an_error_not_correct)."""
    from shardaccum_real.systems.zero import Zero
    orig = Zero.pieces

    def off_by_one(self, rank):
        out = [(u, f, t.clone()) for u, f, t in orig(self, rank)]
        out[0][2].view(-1)[0] += 1.0
        return out

    monkeypatch.setattr(Zero, "pieces", off_by_one)
    counters, _ = runner.run_case(_case("zero3", "SSSS", "cpu"), TINY, FP32, _opts("zero3"), fake_gen, cpu_device,
                                  0, 1, [])
    assert counters["correct"] == 0 and counters["max_rel_err"] > 0


def test_torchrun_world_2_zero_partitions_land_where_the_oracle_expects(tmp_path):
    """Two ranks on gloo, both stages: ZeRO-3's per-parameter partitions and ZeRO-2's flat-group fragments
    over odd shapes, with the suite's generator and oracle (libshardaccum_gen)."""
    lib = os.environ.get("SHARDACCUM_GEN_LIB")
    if not lib:
        pytest.skip("SHARDACCUM_GEN_LIB (build-host/capi/libshardaccum_gen.so) not set")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                              "MASTER_PORT")}
    env.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    for system in ("zero3", "zero2"):
        out = tmp_path / f"{system}.json"
        r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                            str(REAL / "run.py"), "--system", system, "--device", "cpu", "--model", "tiny-multi",
                            "--layout-json", str(FIX / "layout_tiny_multi.json"), "--offload", "all",
                            "--out", str(out)], capture_output=True, text=True, env=env, timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        doc = json.loads(out.read_text())
        b = doc["benchmarks"]
        assert len(b) == 6 and all(x["correct"] == 1 and "/world:2/" in x["name"] for x in b), b
        assert len(doc["context"]["skipped_cases"]) == 6  # nSnS and SnSS on each offload


def test_missing_pieces_are_an_error_not_correct(cpu_device, fake_gen, monkeypatch):
    """A system whose gradient reads back as no pieces was not checked: an error case, never correct."""
    from shardaccum_real.systems.zero import Zero
    monkeypatch.setattr(Zero, "pieces", lambda self, rank: [])
    with pytest.raises(RuntimeError, match="do not cover the layout"):
        runner.run_case(_case("zero2", "SSSS", "none"), TINY, FP32, _opts("zero2"), fake_gen, cpu_device, 0, 1, [])
