"""Outputs that would destroy inputs are refused (issue 11, item 3): compare.py --out naming either
input, through any spelling of the path, a symlink or a hard link, and a report folder that holds an
input it would not carry over. Exit 2 before anything is written; the input's bytes unchanged."""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import FIXTURES, HOST_FIXTURE, run_script


@pytest.fixture()
def pair(tmp_path):
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    shutil.copy(HOST_FIXTURE, base)
    shutil.copy(HOST_FIXTURE, cand)
    return tmp_path, base, cand


def _refused(proc, flag: str, given):
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert f"error: {flag}" in proc.stderr and str(given) in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
@pytest.mark.parametrize("which", ["baseline", "candidate"])
def test_compare_out_naming_an_input_is_refused(pair, spelling, which):
    tmp_path, base, cand = pair
    target = base if which == "baseline" else cand
    out = {"same": target, "dotted": tmp_path / "sub" / ".." / target.name}.get(spelling)
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        out = tmp_path / "link.md"
        out.symlink_to(target)
    elif spelling == "hardlink":
        out = tmp_path / "hard.md"
        os.link(target, out)
    before = HOST_FIXTURE.read_bytes()
    proc = run_script("compare.py", base, cand, "--out", out, cwd=tmp_path)
    _refused(proc, "--out", target)
    assert base.read_bytes() == before and cand.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left


def test_compare_out_elsewhere_is_written(pair):
    tmp_path, base, cand = pair
    proc = run_script("compare.py", base, cand, "--out", tmp_path / "cmp.md")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cmp.md").read_text().startswith("# shardaccum compare")


@pytest.mark.parametrize("inside", ["README.md", "sub/run.json"])
def test_report_folder_holding_an_input_it_would_remove_is_refused(tmp_path, inside):
    folder = tmp_path / "reports" / "r"
    run = folder / inside
    run.parent.mkdir(parents=True)
    shutil.copy(HOST_FIXTURE, run)
    proc = run_script("report.py", run, "--name", "r", "--out-dir", tmp_path / "reports")
    _refused(proc, "--name/--out-dir", run)
    assert run.read_bytes() == HOST_FIXTURE.read_bytes()
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["r"]


def test_report_trace_inside_the_folder_it_would_remove_is_refused(tmp_path):
    folder = tmp_path / "reports" / "r"
    (folder / "t").mkdir(parents=True)
    trace = shutil.copy(FIXTURES / "host_trace" / "trace.json", folder / "t" / "trace.json")
    proc = run_script("report.py", HOST_FIXTURE, "--trace", trace, "--name", "r", "--out-dir", tmp_path / "reports")
    _refused(proc, "--name/--out-dir", trace)
    assert os.path.exists(trace)


def test_report_folder_as_the_input_file_is_refused(tmp_path):
    run = shutil.copy(HOST_FIXTURE, tmp_path / "run.json")
    proc = run_script("report.py", run, "--name", "run.json", "--out-dir", tmp_path)
    _refused(proc, "--name/--out-dir", run)
    assert open(run, "rb").read() == HOST_FIXTURE.read_bytes()


def test_report_beside_its_run_json_keeps_it(tmp_path):
    # scripts/run.sh's layout: reports/NAME/run.json is carried over into the new report.
    folder = tmp_path / "reports" / "r"
    folder.mkdir(parents=True)
    run = shutil.copy(HOST_FIXTURE, folder / "run.json")
    proc = run_script("report.py", run, "--name", "r", "--out-dir", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    assert open(run, "rb").read() == HOST_FIXTURE.read_bytes() and (folder / "README.md").is_file()


def test_compare_out_through_links_writes_their_end_and_keeps_them(pair):
    """--out through a chain of links replaces the file at its end; a link into /proc (what
    /dev/stdout is) is written in place: renaming over it replaced /dev/stdout itself when run as root."""
    tmp_path, base, cand = pair
    (tmp_path / "final.md").write_text("old")
    (tmp_path / "l2.md").symlink_to(tmp_path / "final.md")
    (tmp_path / "l1.md").symlink_to("l2.md")
    proc = run_script("compare.py", base, cand, "--out", tmp_path / "l1.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "l1.md").is_symlink() and (tmp_path / "l2.md").is_symlink()
    assert (tmp_path / "final.md").read_text().startswith("# shardaccum compare")
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    proc = run_script("compare.py", base, cand, "--out", tmp_path / "stdout", cwd=tmp_path, own_process=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "stdout").is_symlink()
    assert "# shardaccum compare" in proc.stdout


@pytest.mark.parametrize("tool", ["compare.py", "merge.py"])
def test_out_naming_a_directory_is_refused_naming_the_flag(tmp_path, tool):
    """--out DIR used to fail on the temporary file's name ("... .tmp-XXXX: Is a directory")."""
    args = [HOST_FIXTURE, HOST_FIXTURE] if tool == "compare.py" else [HOST_FIXTURE]
    proc = run_script(tool, *args, "--out", tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "--out" in proc.stderr and "is a directory" in proc.stderr
