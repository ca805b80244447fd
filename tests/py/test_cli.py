"""The command lines: help texts, and clear errors (exit 2, the file named, no traceback)."""

from __future__ import annotations

import pytest
from conftest import run_script
from shardaccum_report.cli import guard


@pytest.mark.parametrize("script, words", [
    ("report.py", ["RUN.json", "--name", "--out-dir", "exit status", "host wall-clock"]),
    ("compare.py", ["BASE.json", "CAND.json", "--threshold", "--metric", "--out", "Mann-Whitney", "exit status"]),
])
def test_help_explains_usage_and_exit_status(script, words):
    proc = run_script(script, "--help")
    assert proc.returncode == 0
    for word in words:
        assert word in proc.stdout, word


@pytest.mark.parametrize("content, message", [
    ('{"context": {"backend": "host"}, "benchmarks": [{"name": "accum/model:m"', "not valid JSON"),
    ("", "empty file"),
    ('{"context": {"backend": "host"}}', "no 'benchmarks' list"),
    ('{"context": {}, "benchmarks": []}', "'benchmarks' is empty"),
])
def test_report_on_bad_input_exits_2_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "run.json"
    bad.write_text(content)
    out = tmp_path / "reports"
    proc = run_script("report.py", bad, "--name", "x", "--out-dir", out)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"report.py: error: {bad}: ")
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (out / "x").exists()


def test_report_on_a_missing_file_exits_2(tmp_path):
    proc = run_script("report.py", tmp_path / "absent.json", "--name", "x", "--out-dir", tmp_path)
    assert proc.returncode == 2 and "absent.json: no such file" in proc.stderr


def test_report_without_name_is_a_usage_error(tmp_path):
    proc = run_script("report.py", tmp_path / "a.json")
    assert proc.returncode == 2 and "--name" in proc.stderr


def test_a_reader_that_goes_away_is_not_an_error_of_the_input(capsys):
    # `compare.py ... | head`: the write fails with EPIPE; the tool stops quietly (141, as a shell tool),
    # not "error: Broken pipe" with the bad-input status 2.
    def body() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert guard("compare.py", body) == 141
    assert capsys.readouterr().err == ""
