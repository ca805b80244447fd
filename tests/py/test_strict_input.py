"""Strict JSON input (issue 11, items 1 and 10): null is a missing value; NaN/Infinity tokens,
nesting too deep to parse and numbers beyond any the suite writes are bad input (exit 2, the file and
what is wrong named), never an internal error (exit 3) or a value silently taken."""

from __future__ import annotations

import json
import math

import pytest
from conftest import FIXTURES, HOST_FIXTURE, MODEL, entries_of, fixture_doc, run_script, section, table_row, write_doc


CASE = f"accum/model:{MODEL}/world:2/schedule:SSSS/binding:data-free/offload:gpu-add/mode:flag/dtype:fp32-fp32-fp32"
ZERO3 = "data-free/gpu-add/flag (zero3)"
MISSING = "–"
RUN, TRACE = FIXTURES / "host_trace" / "run.json", FIXTURES / "host_trace" / "trace.json"


def _null(doc: dict, name: str, *counters: str) -> dict:
    """Sets the counters of every entry (repetitions and aggregates) of one case to null."""
    entries = entries_of(doc, name, run_type=None)
    assert entries
    for e in entries:
        for counter in counters:
            assert counter in e
            e[counter] = None
    return doc


def test_the_committed_fixtures_are_strict_json():
    def refuse(token):
        raise AssertionError(f"{HOST_FIXTURE}: token {token}")
    json.loads(HOST_FIXTURE.read_text(), parse_constant=refuse)


def test_null_counters_are_shown_missing_not_zero(tmp_path):
    doc = _null(fixture_doc(), CASE, "step_ms", "peak_device_bytes", "max_rel_err")
    run = write_doc(doc, tmp_path / "nulls.json")
    proc = run_script("report.py", run, "--name", "n", "--out-dir", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "out" / "n" / "README.md").read_text(encoding="utf-8")
    phases = table_row(section(text, "### Step time by phase"), "SSSS", ZERO3)
    assert phases[2] == MISSING and phases[-1] == MISSING
    memory = table_row(section(text, "### Peak memory"), "SSSS", ZERO3)
    assert memory[2] == MISSING and memory[3] != MISSING  # the predicted value is still there


def test_compare_skips_a_null_metric_of_the_baseline(tmp_path):
    base = write_doc(_null(fixture_doc(), CASE, "step_ms"), tmp_path / "base.json")
    proc = run_script("compare.py", base, HOST_FIXTURE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = table_row(section(proc.stdout, "## All cases"), "SSSS", ZERO3)
    assert row[2] == MISSING and row[4] == MISSING  # no baseline value, no ratio (not 0, not inf)


def _bad(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _assert_bad_input(proc, path, *words):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert f"error: {path}: " in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_a_nan_token_is_bad_input(tmp_path, token):
    text = json.dumps(fixture_doc(), indent=2)
    name = entries_of(fixture_doc(), CASE)[0]["name"]
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if name in line)
    at = next(i for i in range(at, len(lines)) if '"step_ms"' in lines[i])
    key, value = lines[at].split(":", 1)
    lines[at] = f"{key}: {token}" + ("," if value.rstrip().endswith(",") else "")
    bad = _bad(tmp_path, "nan.json", "\n".join(lines))
    proc = run_script("report.py", bad, "--name", "x", "--out-dir", tmp_path / "out")
    _assert_bad_input(proc, bad, f"token {token} at line {at + 1}", "null")
    assert not (tmp_path / "out").exists()
    _assert_bad_input(run_script("compare.py", HOST_FIXTURE, bad), bad, f"token {token}")


def test_a_nan_token_in_a_trace_is_bad_input(tmp_path):
    bad = _bad(tmp_path, "trace.json", '{"traceEvents": [{"name": "step 1 a", "ph": "X", "ts": NaN, "dur": 2}]}')
    proc = run_script("report.py", HOST_FIXTURE, "--trace", bad, "--name", "x", "--out-dir", tmp_path / "out")
    _assert_bad_input(proc, bad, "token NaN")


DEPTH = 100_000


@pytest.mark.parametrize("opening, closing", [("[", "]"), ('{"a":', "}")])
def test_json_nested_100k_deep_is_bad_input(tmp_path, opening, closing):
    bad = _bad(tmp_path, "deep.json", opening * DEPTH + "1" + closing * DEPTH)
    _assert_bad_input(run_script("report.py", bad, "--name", "x", "--out-dir", tmp_path / "out"), bad, "nested too deep")
    _assert_bad_input(run_script("compare.py", bad, HOST_FIXTURE), bad, "nested too deep")
    _assert_bad_input(run_script("report.py", HOST_FIXTURE, "--trace", bad, "--name", "x", "--out-dir",
                                 tmp_path / "out"), bad, "nested too deep")
    assert not (tmp_path / "out").exists()


def test_a_deep_value_inside_a_counter_file_is_bad_input(tmp_path):
    doc = fixture_doc()
    doc["context"]["machine"] = "@"
    text = json.dumps(doc).replace('"@"', "[" * DEPTH + "]" * DEPTH)
    bad = _bad(tmp_path, "deep-context.json", text)
    _assert_bad_input(run_script("compare.py", HOST_FIXTURE, bad), bad, "nested too deep")


@pytest.mark.parametrize("value", ["1e308", "-1e308", "1" + "0" * 400])
def test_a_counter_beyond_any_the_suite_writes_is_bad_input(tmp_path, value):
    # 1e308 is finite but the median of two repetitions, (a + b) / 2, overflows to inf; an integer
    # of 400 digits cannot even become a float: both were "internal error", exit 3.
    doc = fixture_doc()
    for e in entries_of(doc, CASE):
        e["step_ms"] = "@"
    bad = _bad(tmp_path, "big.json", json.dumps(doc).replace('"@"', value))
    name = entries_of(doc, CASE)[0]["name"]
    proc = run_script("report.py", bad, "--name", "x", "--out-dir", tmp_path / "out")
    _assert_bad_input(proc, bad, name, "'step_ms' = ", "beyond any value the suite writes")
    assert not (tmp_path / "out").exists()
    _assert_bad_input(run_script("compare.py", HOST_FIXTURE, bad), bad, "'step_ms' = ")
    _assert_bad_input(run_script("compare.py", bad, HOST_FIXTURE), bad, "'step_ms' = ")


def test_a_trace_time_beyond_range_is_bad_input(tmp_path):
    doc = json.loads(TRACE.read_text())
    step = next(e for e in doc["traceEvents"] if e.get("cat") == "step")
    step["ts"] = step["dur"] = "@"
    bad = _bad(tmp_path, "trace.json", json.dumps(doc).replace('"@"', "1e308"))
    proc = run_script("report.py", RUN, "--trace", bad, "--name", "x", "--out-dir", tmp_path / "out")
    _assert_bad_input(proc, bad, "'ts' = ", "beyond any value")


def test_large_counters_within_range_are_reported(tmp_path):
    # At the bound, every sum and product the tools form stays finite: the report is written.
    from shardaccum_report.strict_json import MAX_MAGNITUDE
    doc = fixture_doc()
    for e in entries_of(doc, CASE, run_type=None):
        e["peak_device_bytes"] = MAX_MAGNITUDE
    run = write_doc(doc, tmp_path / "large.json")
    proc = run_script("report.py", run, "--name", "l", "--out-dir", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (tmp_path / "out" / "l" / "README.md").read_text(encoding="utf-8")
    memory = table_row(section(text, "### Peak memory"), "SSSS", ZERO3)
    assert memory[2] == f"{round(MAX_MAGNITUDE):,}"
    assert math.isfinite(float(memory[2].replace(",", "")))


def test_a_negative_counter_is_bad_input(tmp_path):
    """compare.py passed a candidate whose step_ms was -5 (exit 0, "faster"): no figure the suite
    writes is negative, so it is bad input, exit 2, naming the file and the field."""
    doc = json.loads(HOST_FIXTURE.read_text())
    entry = next(b for b in doc["benchmarks"] if "step_ms" in b)
    entry["step_ms"] = -5
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps(doc))
    proc = run_script("compare.py", HOST_FIXTURE, cand)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert str(cand) in proc.stderr and "'step_ms' = -5 is negative" in proc.stderr


def test_an_integer_of_thousands_of_digits_is_bad_input_in_every_tool(tmp_path):
    # Python's int() refuses more than 4300 digits with its own ValueError: that was a traceback (exit 3)
    # in report.py, compare.py and merge.py, and exit 1 ("a step differs") in check_trace.py.
    doc = fixture_doc()
    for e in entries_of(doc, CASE):
        e["step_ms"] = "@"
    bad = _bad(tmp_path, "huge.json", json.dumps(doc).replace('"@"', "9" * 5000))
    for proc in (run_script("report.py", bad, "--name", "x", "--out-dir", tmp_path / "out"),
                 run_script("compare.py", HOST_FIXTURE, bad),
                 run_script("merge.py", bad, "--out", tmp_path / "m.json"),
                 run_script("check_trace.py", bad, bad)):
        _assert_bad_input(proc, bad, "an integer of 5000 digits")
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.json").exists()


def test_a_device_file_is_bad_input_in_every_tool_before_it_is_read(tmp_path):
    # /dev/zero never ends: read to its end it took all memory (merge.py was killed, rc 137).
    dev = "/dev/zero"
    for proc in (run_script("report.py", dev, "--name", "x", "--out-dir", tmp_path / "out"),
                 run_script("report.py", HOST_FIXTURE, "--trace", dev, "--name", "x", "--out-dir", tmp_path / "out"),
                 run_script("compare.py", HOST_FIXTURE, dev),
                 run_script("merge.py", dev, "--out", tmp_path / "m.json")):
        assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])
        assert f"{dev}: is not a regular file (a device or a pipe)" in proc.stderr, proc.stderr[-500:]
    assert not (tmp_path / "out").exists() and not (tmp_path / "m.json").exists()
