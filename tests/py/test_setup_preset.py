"""Which CMake preset scripts/run.sh and scripts/test.sh build (scripts/common.sh sa_pick_preset):
`host` (build-host/, no nvcc pass) on a machine with no visible GPU, `default` (build/) with a GPU,
--cuda or SHARDACCUM_PRESET=default. The GPU is faked both ways: an nvidia-smi on PATH that lists
one GPU or none, and SA_NVIDIA_DEV for the /dev/nvidia0 check."""

from __future__ import annotations

import os
import subprocess

import pytest

from bench_build import ROOT

GPU_LINE = "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)"


@pytest.fixture
def machine(tmp_path):
    """env(gpu_listed, dev_node, **extra): an environment where nvidia-smi lists one GPU or none and
    the device node exists or not; SHARDACCUM_PRESET unset unless given."""
    def env(gpu_listed: bool, dev_node: bool, **extra: str) -> dict:
        bin_dir = tmp_path / ("bin-gpu" if gpu_listed else "bin-none")
        bin_dir.mkdir(exist_ok=True)
        smi = bin_dir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\necho '{GPU_LINE}'\n" if gpu_listed
                       else "#!/bin/sh\necho 'No devices were found'\nexit 6\n")
        smi.chmod(0o755)
        node = tmp_path / "nvidia0"
        if dev_node:
            node.touch()
        elif node.exists():
            node.unlink()
        e = {k: v for k, v in os.environ.items() if k != "SHARDACCUM_PRESET"}
        e.update(PATH=f"{bin_dir}:{os.environ['PATH']}", SA_NVIDIA_DEV=str(node), **extra)
        return e
    return env


def pick(env: dict, cuda: str = "0") -> subprocess.CompletedProcess:
    """Sources scripts/common.sh and runs sa_pick_preset CUDA; stdout ends with 'PRESET BUILD_DIR'."""
    script = 'source scripts/common.sh; sa_pick_preset "$1"; echo "$SA_PRESET ${SA_BUILD_DIR#"$SA_ROOT/"}"'
    return subprocess.run(["bash", "-c", script, "pick", cuda], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60)


def picked(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()[-1]


def test_no_visible_gpu_builds_the_host_preset(machine):
    proc = pick(machine(gpu_listed=False, dev_node=False))
    assert picked(proc) == "host build-host"
    assert "no GPU visible" in proc.stdout and "--cuda" in proc.stdout  # says why, and how to get CUDA


@pytest.mark.parametrize("gpu_listed, dev_node", [(True, False), (False, True), (True, True)])
def test_a_visible_gpu_builds_the_default_preset(machine, gpu_listed, dev_node):
    proc = pick(machine(gpu_listed=gpu_listed, dev_node=dev_node))
    assert picked(proc) == "default build"
    assert "a GPU is visible" in proc.stdout


def test_cuda_asked_builds_the_default_preset_with_no_gpu(machine):
    proc = pick(machine(gpu_listed=False, dev_node=False), cuda="1")
    assert picked(proc) == "default build"
    assert "(--cuda)" in proc.stdout


@pytest.mark.parametrize("preset, folder", [("default", "build"), ("host", "build-host"), ("debug", "build-debug")])
def test_shardaccum_preset_wins_over_the_gpu_check(machine, preset, folder):
    for gpu in (False, True):
        assert picked(pick(machine(gpu_listed=gpu, dev_node=gpu, SHARDACCUM_PRESET=preset))) == f"{preset} {folder}"


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
def test_both_scripts_take_cuda_and_refuse_it_against_another_preset(machine, script):
    """--cuda reaches sa_pick_preset in both scripts: against SHARDACCUM_PRESET=host it is a usage
    error (exit 2) before anything is built."""
    env = machine(gpu_listed=False, dev_node=False, SHARDACCUM_PRESET="host")
    proc = subprocess.run(["bash", str(ROOT / "scripts" / script), "--no-install", "--cuda"], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--cuda needs the preset default, not SHARDACCUM_PRESET=host" in proc.stderr
    assert "building" not in proc.stdout


def test_run_sh_with_no_gpu_uses_build_host(machine):
    """The whole path of run.sh on a machine with no GPU: it builds (here: finds up to date) build-host/
    and lists the cases with its binary, without touching build/."""
    exe = ROOT / "build-host" / "bench" / "shardaccum_bench"
    if not ((ROOT / "build-host" / "build.ninja").is_file() and exe.is_file()):
        pytest.skip("build-host/ is not built (cmake --preset host && cmake --build --preset host)")
    env = machine(gpu_listed=False, dev_node=False)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "run.sh"), "--no-install", "--", "--list",
                           "--model", "uniform:2x1K", "--schedule", "sync", "--offload", "none", "--binding", "data",
                           "--mode", "flag"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "preset host (no GPU visible)" in proc.stdout
    assert "cmake --build --preset host" in proc.stdout
    assert "--preset default" not in proc.stdout
    assert "accum/model:uniform:2x1K/" in proc.stdout
