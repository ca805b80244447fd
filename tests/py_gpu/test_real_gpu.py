"""The real runner on one GPU (world 1): FSDP2 and FSDP1, the four canonical schedules, offload cpu and
none, fp32, on uniform:4x1M (4 units of one [8192, 128] weight) from a canned --describe-layout
document. Skips without CUDA torch; fails, saying how to build it, without a CUDA libshardaccum_gen.so.

Run on the GPU machine (from the repository root, after `cmake --preset default && cmake --build
--preset default -j`):  python3 -m pytest tests/py_gpu -q   (bench/real/README.md)

Expectations, from the torch 2.11 sources:
- correct everywhere except FSDP1 with offload and more than one S (pytorch#73784: _offload_grad
  copies each S's gradient over flat_param._cpu_grad): WRONG, near sqrt(3/4) on SSSS.
- gradient D2H per step (inside the post-backward ranges): FSDP2 offload: one whole shard (world 1: every
  element, fp32) per S micro-batch (foreach_reduce's .to("cpu")); the first into pinned memory
  (non_blocking, grad None), every later one blocking into a fresh pageable tensor (to_accumulate_grad),
  so d2h_pageable_bytes = (s - 1) * P * 4. FSDP1 offload: _cpu_grad.copy_ into pinned memory per S:
  s * P * 4, none pageable. Offload none: no gradient D2H. No gradient H2D anywhere.
- parameter H2D with offload: FSDP2 copies every parameter at each unshard (FSDPParam.all_gather_inputs:
  at least once a micro-batch); FSDP1 at least once a step; without offload none. (When gradient D2H
  reads 0 and param_d2h_bytes the expected bytes, the attribution to post-backward ranges failed.)"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "real" / "run.py"
FIX = ROOT / "tests" / "fixtures" / "real"
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: the real runner's GPU tests need one", allow_module_level=True)

P = 4 * 1024 * 1024  # uniform:4x1M elements
SCHEDULES = {"nnnS": 1, "SSSS": 4, "nSnS": 2, "SnSS": 3}


def _lib() -> str:
    sys.path.insert(0, str(ROOT / "bench" / "real"))
    from shardaccum_real import genlib
    lib = genlib.load()  # GenLibError names how to build it
    assert lib.has_cuda(), f"{lib.path} was built without CUDA: cmake --preset default && cmake --build --preset default"
    return str(lib.path)


def _run(tmp_path_factory, system: str, *extra: str) -> dict:
    out = tmp_path_factory.mktemp(system) / "r.json"
    cmd = [sys.executable, str(RUN), "--system", system, "--model", "uniform:4x1M", "--layout-json",
           str(FIX / "layout_uniform4x1M.json"), "--schedule", "all", "--offload", "cpu,none", "--steps", "2",
           "--warmup", "1", "--out", str(out), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, SHARDACCUM_GEN_LIB=_lib()))
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr[-4000:]}"
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def fsdp2(tmp_path_factory):
    return _run(tmp_path_factory, "fsdp2")


@pytest.fixture(scope="module")
def fsdp1(tmp_path_factory):
    return _run(tmp_path_factory, "fsdp1")


def _by(doc: dict) -> dict:
    return {(b["name"].split("/schedule:")[1].split("/")[0], b["name"].split("/offload:")[1].split("/")[0]): b
            for b in doc["benchmarks"]}


def _common(doc: dict, system: str) -> None:
    assert len(doc["benchmarks"]) == 8 and not any(b.get("error_occurred") for b in doc["benchmarks"])
    ctx = doc["context"]
    assert ctx["backend"] == "real" and ctx["time_domain"].endswith("GPU time") and ctx["gpu"] != ""
    assert ctx["pinned_stat_key"].endswith("['allocated_bytes.peak']") and system in json.loads(ctx["systems"])
    for off in ("cpu", "none"):  # a case must not leave its memory to the next (FSDP1's hooks keep objects alive)
        base = {b["device_baseline_bytes"] for (s, o), b in _by(doc).items() if o == off}
        assert len(base) == 1, f"{system} offload {off}: device_baseline_bytes differ across cases: {sorted(base)}"
    for (s, o), b in _by(doc).items():
        assert b["k"] == 4 and b["world_size"] == 1 and b["iterations"] == 2, b["name"]
        assert b["h2d_bytes"] == 0, b["name"]
        assert b["peak_device_bytes"] >= b["device_baseline_bytes"] >= 0 and b["peak_device_bytes"] > 0, b["name"]
        assert "accum_cost_a_ms" in b and "accum_cost_b_ms" in b, b["name"]
        if o == "cpu":
            assert b["param_h2d_bytes"] >= P * 4 and b["peak_pinned_bytes"] >= P * 4, b["name"]
        else:  # no gradient copies, no parameter copies (at most stray small transfers)
            assert b["d2h_bytes"] == 0 and b["param_h2d_bytes"] < P, b["name"]


def test_fsdp2_world1(fsdp2):
    _common(fsdp2, "fsdp2")
    for (s, o), b in _by(fsdp2).items():
        assert b["correct"] == 1 and b["label"] == "real fsdp2; correct", b["name"]
        if o == "cpu":
            assert b["param_h2d_bytes"] >= 4 * P * 4, b["name"]  # each forward's unshard copies every parameter
            assert b["d2h_bytes"] == SCHEDULES[s] * P * 4, (b["name"], b["d2h_bytes"], b["param_d2h_bytes"])
            assert b["d2h_pageable_bytes"] == (SCHEDULES[s] - 1) * P * 4, b["name"]
            assert b["cpu_add_ms"] > 0 if SCHEDULES[s] > 1 else b["cpu_add_ms"] == 0, b["name"]


def test_fsdp1_world1(fsdp1):
    _common(fsdp1, "fsdp1")
    assert json.loads(fsdp1["context"]["systems"])["fsdp1"]["sharding_strategy"] == (
        "NO_SHARD at world size 1 (FSDP1 switches FULL_SHARD to NO_SHARD)")
    for (s, o), b in _by(fsdp1).items():
        wrong = o == "cpu" and SCHEDULES[s] > 1
        assert b["correct"] == (0 if wrong else 1), b["name"]
        if o == "cpu":
            assert b["d2h_bytes"] == SCHEDULES[s] * P * 4, (b["name"], b["d2h_bytes"], b["param_d2h_bytes"])
            assert b["d2h_pageable_bytes"] == 0, b["name"]
    assert math.isclose(_by(fsdp1)[("SSSS", "cpu")]["max_rel_err"], math.sqrt(0.75), rel_tol=0.05)


def test_fsdp2_tokens_and_bf16(tmp_path_factory):
    """GEMMs (--tokens) and a mixed-precision triple stay correct; the name carries /tokens:T."""
    doc = _run(tmp_path_factory, "fsdp2", "--tokens", "64", "--dtype", "bf16-bf16-fp32", "--schedule", "SSSS,nnnS")
    assert len(doc["benchmarks"]) == 4
    for b in doc["benchmarks"]:
        assert b["name"].endswith("/dtype:bf16-bf16-fp32/tokens:64") and b["correct"] == 1 and b["tokens"] == 64


def test_torchrun_world_1(tmp_path):
    """The same runner under torchrun (one process): the env launch path on the GPU."""
    out = tmp_path / "t.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1", str(RUN), "--system", "fsdp2",
           "--model", "uniform:4x1M", "--layout-json", str(FIX / "layout_uniform4x1M.json"), "--schedule", "SSSS",
           "--offload", "cpu", "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=dict(os.environ, SHARDACCUM_GEN_LIB=_lib()))
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr[-4000:]}"
    (b,) = json.loads(out.read_text())["benchmarks"]
    assert b["correct"] == 1 and b["d2h_bytes"] == 4 * P * 4 and b["d2h_pageable_bytes"] == 3 * P * 4
