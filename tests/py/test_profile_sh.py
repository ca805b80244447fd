"""scripts/profile.sh's checks without a GPU: a stand-in nsys (profile / export / stats) and a
stand-in shardaccum_bench, in a copy of scripts/ (profile.sh writes under its root's reports/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import SCRIPTS
from nsys_fixture import CASE, EXPECTED, bench_json, one_step

FAKE_BENCH = """\
#!/usr/bin/env bash
# Stand-in shardaccum_bench: --list names CASE; a run writes the bench JSON from $FAKE_BENCH_JSON.
for a in "$@"; do
  case "$a" in
    --list) echo "1 cases on backend cuda"; echo "{case}"; exit 0 ;;
    --benchmark_out=*) cp "$FAKE_BENCH_JSON" "${{a#--benchmark_out=}}" ;;
  esac
done
"""
FAKE_NSYS = """\
#!/usr/bin/env bash
# Stand-in nsys: profile runs the command and writes the report; export copies $FAKE_SQLITE.
cmd=$1; shift
case "$cmd" in
  --version) echo "fake nsys" ;;
  profile)
    while [[ "$1" == -* ]]; do
      case "$1" in -o) out=$2; shift 2 ;; -t|--force-overwrite) shift 2 ;; *) shift ;; esac
    done
    "$@" || exit $?
    echo rep > "$out.nsys-rep" ;;
  export)
    while [[ $# -gt 1 ]]; do [[ "$1" == -o ]] && out=$2; shift; done
    cp "$FAKE_SQLITE" "$out" ;;
  stats) while [[ $# -gt 1 ]]; do [[ "$1" == -o ]] && out=$2; shift; done
    printf 'Operation,Total (MB)\\n' > "${out}_cuda_gpu_mem_size_sum.csv" ;;
esac
"""


@pytest.fixture
def tree(tmp_path):
    """A copy of scripts/ with the stand-ins; returns (root, env)."""
    root = tmp_path / "repo"
    shutil.copytree(SCRIPTS, root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in (("bench", FAKE_BENCH.format(case=CASE)), ("nsys", FAKE_NSYS)):
        p = tmp_path / name
        p.write_text(text)
        p.chmod(0o755)
    db = one_step(tmp_path / "p.sqlite").close()
    env = dict(os.environ, NSYS=str(tmp_path / "nsys"), FAKE_SQLITE=str(db),
               PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")
    return root, env, tmp_path


def _profile(root, env):
    return subprocess.run(["bash", str(root / "scripts" / "profile.sh"), "--filter", "accum", "--name", "t",
                           "--bench", str(root.parent / "bench")], capture_output=True, text=True, env=env,
                          timeout=120)


def _bench(tmp_path, **suite):
    doc_path = bench_json(tmp_path / "suite.json", **suite)
    doc = json.loads(doc_path.read_text())
    # The bytes check: the fixture's copies launched in the step are one 1024-byte H2D and one D2H.
    doc["benchmarks"][0].update(h2d_bytes=1024, d2h_bytes=1024)
    doc_path.write_text(json.dumps(doc))
    return str(doc_path)


def test_profile_writes_times_json_with_every_figure_and_passes(tree):
    root, env, tmp = tree
    env["FAKE_BENCH_JSON"] = _bench(tmp)
    proc = _profile(root, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads((root / "reports" / "profiles" / "t.times.json").read_text())
    assert [r["figure"] for r in rows] == ["nccl", "backward", "h2d", "d2h", "cpu_add", "step"]
    assert all(r["ok"] and r["case"] == CASE for r in rows)
    assert "-> MATCH" in proc.stdout and "times: 6 of 6 figures" in proc.stdout


def test_profile_exits_4_when_a_time_is_off(tree):
    root, env, tmp = tree
    env["FAKE_BENCH_JSON"] = _bench(tmp, backward=EXPECTED["backward"] * 1.1)
    proc = _profile(root, env)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "disagree on a time" in proc.stderr
    rows = json.loads((root / "reports" / "profiles" / "t.times.json").read_text())
    assert [r["figure"] for r in rows if not r["ok"]] == ["backward"]


def test_help_names_the_time_check_and_its_exit_status():
    out = subprocess.run(["bash", str(SCRIPTS / "profile.sh"), "--help"], capture_output=True, text=True).stdout
    for words in ("NAME.times.json", "5%", "0.2 ms", "shardaccum_nccl_gate", "4 the bytes\nMATCH but a time is off"):
        assert words in out, words
