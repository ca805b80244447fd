"""Outputs that would destroy inputs are refused (issue 11, item 3): compare.py --out naming either
input, through any spelling of the path, a symlink or a hard link, and a report folder that holds an
input it would not carry over. Exit 2 before anything is written; the input's bytes unchanged."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, HOST_FIXTURE, SCRIPTS, run_script
from shardaccum_report import atomic


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


@pytest.mark.parametrize("inside", ["README.md", "validation.json"])
def test_report_folder_holding_an_input_it_would_remove_is_refused(tmp_path, inside):
    folder = tmp_path / "reports" / "r"
    run = folder / inside
    run.parent.mkdir(parents=True)
    shutil.copy(HOST_FIXTURE, run)
    proc = run_script("report.py", run, "--name", "r", "--out-dir", tmp_path / "reports")
    _refused(proc, "--name/--out-dir", run)
    assert run.read_bytes() == HOST_FIXTURE.read_bytes()
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["r"]


def test_report_keeps_the_folders_beside_it_and_the_inputs_in_them(tmp_path):
    # A report folder's subfolders (profiles, checks, logs) are evidence kept with it: regenerating the
    # report keeps them byte for byte, inputs among them (a trace in a subfolder).
    folder = tmp_path / "reports" / "r"
    (folder / "t" / "deep").mkdir(parents=True)
    trace = shutil.copy(FIXTURES / "host_trace" / "trace.json", folder / "t" / "trace.json")
    (folder / "t" / "deep" / "profile.csv").write_text("kernel,ms\ngemm,1.5\n")
    (folder / "notes.txt").write_text("kept\n")
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    proc = run_script("report.py", HOST_FIXTURE, "--trace", trace, "--name", "r", "--out-dir", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert {k: after.get(k) for k in before} == before
    assert (folder / "README.md").is_file()
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["r"]  # no temporary left


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


def test_a_report_drops_its_previous_validation_json(tmp_path):
    # validation.json is the report's own (written with a "Presets against the real systems" section):
    # a report without that section must not keep the one of runs no longer given.
    folder = tmp_path / "reports" / "r"
    folder.mkdir(parents=True)
    (folder / "validation.json").write_text("[]\n")
    (folder / "old.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    proc = run_script("report.py", HOST_FIXTURE, "--name", "r", "--out-dir", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    assert not (folder / "validation.json").exists() and not (folder / "old.png").exists()


def test_a_kept_file_named_as_an_input_given_from_elsewhere_is_named(tmp_path):
    # scripts/run.sh's advice after a failed report: report.py reports/.NAME.partial.PID/.../run.json
    # --name NAME. The folder's older run.json stays, and the warning says it is not this report's.
    folder = tmp_path / "reports" / "r"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}\n")
    fresh = tmp_path / "partial" / "run.json"
    fresh.parent.mkdir()
    shutil.copy(HOST_FIXTURE, fresh)
    proc = run_script("report.py", fresh, "--name", "r", "--out-dir", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {folder / 'run.json'} stays from the folder's previous report" in proc.stderr, proc.stderr
    assert str(fresh) in proc.stderr
    assert (folder / "run.json").read_text() == "{}\n"
    # Made from its own run.json, nothing is said.
    shutil.copy(HOST_FIXTURE, folder / "run.json")
    proc = run_script("report.py", folder / "run.json", "--name", "r", "--out-dir", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    assert "stays from the folder's previous report" not in proc.stderr


def test_a_report_stopped_by_sigterm_leaves_no_temporary_and_the_old_report(tmp_path):
    # SIGTERM (a scheduler's stop, `timeout`) is cleaned up as Ctrl-C is: the half-written temporary
    # folder goes, the older report stays, and the exit status says terminated (143).
    out_dir = tmp_path / "reports"
    (out_dir / "r").mkdir(parents=True)
    (out_dir / "r" / "README.md").write_text("old\n")
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "report.py"), str(HOST_FIXTURE), "--name", "r",
                             "--out-dir", str(out_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        tmp = [p for p in out_dir.iterdir() if p.name.startswith(".r.tmp-")]
        if tmp and any(tmp[0].iterdir()):  # writing its plots
            proc.send_signal(signal.SIGTERM)
            break
        time.sleep(0.01)
    else:
        proc.kill()
        pytest.skip("the report finished before a temporary folder was seen")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, (proc.returncode, err[-2000:])
    assert "error: terminated" in err and "Traceback" not in err
    assert sorted(p.name for p in out_dir.iterdir()) == ["r"]
    assert (out_dir / "r" / "README.md").read_text() == "old\n"


def test_a_folder_named_like_a_plot_is_kept(tmp_path):
    # Only files are the report's own: a folder whose name ends in .png holds evidence like any other.
    folder = tmp_path / "reports" / "r"
    (folder / "x.png").mkdir(parents=True)
    (folder / "x.png" / "inside.txt").write_text("data\n")
    proc = run_script("report.py", HOST_FIXTURE, "--name", "r", "--out-dir", tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    assert (folder / "x.png" / "inside.txt").read_text() == "data\n"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, OSError])
def test_a_swap_interrupted_between_its_renames_puts_the_old_report_back(tmp_path, monkeypatch, interrupt):
    target = tmp_path / "r"
    target.mkdir()
    (target / "README.md").write_text("old\n")
    calls = []
    real_rename = os.rename

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # target -> old done; tmp -> target interrupted
            raise interrupt()
        real_rename(src, dst)

    monkeypatch.setattr(atomic.os, "rename", rename)
    with pytest.raises(interrupt):
        with atomic.atomic_directory(target) as tmp:
            (tmp / "README.md").write_text("new\n")
    monkeypatch.setattr(atomic.os, "rename", real_rename)
    assert (target / "README.md").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no .r.tmp-* or .r.old-* left
