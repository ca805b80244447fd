"""scripts/run_real.sh: the real systems beside a suite run. CI has no GPU and no torch, so what is
tested here is what needs neither: its arguments, and that with no CUDA torch it says so and exits 3
(run.sh then goes on without the real systems) instead of failing or writing half a result."""

from __future__ import annotations

import os
import subprocess
import sys

from bench_build import ROOT

SCRIPT = ROOT / "scripts" / "run_real.sh"
FIXTURE = ROOT / "tests" / "fixtures" / "host_w2_uniform8x64K.json"


def _run(*args, python=sys.executable):
    env = dict(os.environ, SHARDACCUM_TORCH_PYTHON=str(python))
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60)


def test_help_names_the_exit_codes():
    r = _run("--help")
    assert r.returncode == 0
    assert "exit status" in r.stdout and "3 no Python with a CUDA torch" in r.stdout


def test_bad_arguments_exit_2_naming_what_is_wrong(tmp_path):
    r = _run(str(FIXTURE))
    assert r.returncode == 2 and "give RUN.json and OUT_DIR" in r.stderr
    r = _run("--nope", str(FIXTURE), str(tmp_path))
    assert r.returncode == 2 and "unknown option '--nope'" in r.stderr
    r = _run("--bench", str(tmp_path / "absent"), str(FIXTURE), str(tmp_path))
    assert r.returncode == 2 and "--bench" in r.stderr
    r = _run("--bench", "/bin/true", str(tmp_path / "absent.json"), str(tmp_path))
    assert r.returncode == 2 and "RUN.json" in r.stderr


def test_without_a_cuda_torch_it_says_so_and_exits_3_writing_nothing(tmp_path):
    out = tmp_path / "out"
    r = _run("--bench", "/bin/true", str(FIXTURE), str(out))
    assert r.returncode == 3, r.stderr
    assert "no CUDA torch" in r.stdout
    assert not list(out.glob("real-*.json"))


def test_a_run_json_that_is_not_a_suite_run_is_bad_input_before_torch_is_looked_for(tmp_path):
    real = ROOT / "reports" / "h200-reference" / "real-fsdp2-gpt2-xl.json"
    (tmp_path / "nl.json").write_text("\n")
    (tmp_path / "empty_obj.json").write_text("{}")
    for run_json, want in ((tmp_path / "nl.json", "not readable JSON"), (tmp_path / "empty_obj.json", "not a suite run"),
                           (real, "not a suite run")):
        r = _run("--bench", "/bin/true", str(run_json), str(tmp_path / "out"))
        assert r.returncode == 2 and want in r.stderr, (run_json, r.stderr)
    r = _run("--systems", "fsdp3", "--bench", "/bin/true", str(FIXTURE), str(tmp_path / "out"))
    assert r.returncode == 2 and "'fsdp3'" in r.stderr
    assert not (tmp_path / "out").exists()  # nothing made for a run that did not start
