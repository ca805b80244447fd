"""scripts/check_trace.py: a traced GPU step against CUPTI + host tasks and the run's step_ms."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_script
from trace_fixtures import case_names, run_doc, step_events, trace_doc, write


def _two_cases(tmp_path, cupti_ms=None, run_ms=None, cupti=True, trace_id=None, ranks=(0,)):
    a, b = case_names(2)
    events = []
    for pid in ranks:
        events += step_events(a, 1, 1000.0, 12.0, pid=pid, cupti=cupti)
        events += step_events(b, 1, 50000.0, 40.0, pid=pid, cupti=cupti, cupti_ms=cupti_ms)
    trace = trace_doc(events, **({} if trace_id is None else {"run_id": trace_id}), ranks=ranks)
    return (a, b), write(tmp_path, trace, run_doc({a: 12.0, b: 40.0 if run_ms is None else run_ms}))


def test_agreeing_trace_passes_and_prints_a_row_per_step(tmp_path):
    (a, b), (run, trace) = _two_cases(tmp_path, ranks=(0, 1))
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 0, proc.stderr
    assert f"| {a} | 1 | 12.000 | 12.000 |" in proc.stdout
    assert f"| {b} | 1 | 40.000 | 40.000 |" in proc.stdout
    assert "2 of 2 traced steps agree" in proc.stdout


def test_step_3_percent_off_the_cupti_clock_fails_naming_the_case(tmp_path):
    (a, b), (run, trace) = _two_cases(tmp_path, cupti_ms=40.0 / 1.03)
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 1
    assert f"{b} step 1 differs" in proc.stderr and "CUPTI + host tasks" in proc.stderr
    assert f"{a} step" not in proc.stderr


def test_step_3_percent_off_run_step_ms_fails_naming_the_case(tmp_path):
    (a, b), (run, trace) = _two_cases(tmp_path, run_ms=40.0 * 1.03)
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 1
    assert f"{b} step 1 differs" in proc.stderr and "RUN.json's step_ms" in proc.stderr
    assert f"{a} step" not in proc.stderr


def test_within_2_percent_passes(tmp_path):
    _, (run, trace) = _two_cases(tmp_path, cupti_ms=40.0 / 1.015, run_ms=40.0 * 1.015)
    assert run_script("check_trace.py", run, trace).returncode == 0


def test_trace_without_cupti_records_says_to_run_with_cupti_kernels(tmp_path):
    _, (run, trace) = _two_cases(tmp_path, cupti=False)
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 2
    assert "no CUPTI records" in proc.stderr and "--cupti kernels" in proc.stderr


def test_run_id_mismatch_is_bad_input(tmp_path):
    _, (run, trace) = _two_cases(tmp_path, trace_id="00000000-0000-0000-0000-000000000000")
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 2 and "run_id mismatch" in proc.stderr


def test_missing_file_and_not_a_trace_are_bad_input(tmp_path):
    _, (run, trace) = _two_cases(tmp_path)
    proc = run_script("check_trace.py", run, tmp_path / "absent.json")
    assert proc.returncode == 2 and "no such file" in proc.stderr
    trace.write_text('{"events": []}')
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 2 and "not a Perfetto/Chrome trace" in proc.stderr


def test_help_states_tolerance_floor_and_exit_codes():
    proc = run_script("check_trace.py", "--help")
    assert proc.returncode == 0
    for words in ("2%", "0.05 ms", "--cupti kernels", "exit status", "run_id"):
        assert words in proc.stdout, words


def test_gpu_step_3_percent_off_its_own_step_ms_fails(tmp_path):
    a, b = case_names(2)
    events = step_events(a, 1, 1000.0, 12.0) + step_events(b, 1, 50000.0, 40.0, step_ms=40.0 * 1.03)
    run, trace = write(tmp_path, trace_doc(events), run_doc({a: 12.0, b: 40.0}))
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 1
    assert f"{b} step 1 differs: rank 0: gpu step 40.000 ms, its args.step_ms 41.200 ms" in proc.stderr


def test_a_run_case_without_a_traced_step_is_named_not_failed(tmp_path):
    a, b = case_names(2)
    run, trace = write(tmp_path, trace_doc(step_events(a, 1, 1000.0, 12.0)), run_doc({a: 12.0, b: 40.0}))
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 0, proc.stderr
    assert f"1 case(s) of RUN.json have no traced step (not checked): {b}" in proc.stdout


def test_a_host_backend_trace_says_check_trace_needs_a_cuda_run(tmp_path):
    """The host backend has no CUPTI: 'rerun with --cupti kernels' would not help there."""
    _, (run, trace) = _two_cases(tmp_path, cupti=False)
    doc = json.loads(Path(trace).read_text())
    doc["otherData"]["backend"] = "host"
    Path(trace).write_text(json.dumps(doc))
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 2
    assert "host-backend trace" in proc.stderr and "cuda run" in proc.stderr


def test_a_gzip_trace_is_read_as_the_committed_reference_traces_are(tmp_path):
    import gzip
    _, (run, trace) = _two_cases(tmp_path)
    gz = Path(str(trace) + ".gz")
    gz.write_bytes(gzip.compress(Path(trace).read_bytes()))
    proc = run_script("check_trace.py", run, gz)
    assert proc.returncode == 0, proc.stderr
    gz.write_bytes(gzip.compress(Path(trace).read_bytes())[:40])  # cut short
    proc = run_script("check_trace.py", run, gz)
    assert proc.returncode == 2 and "damaged gzip" in proc.stderr


def test_a_step_traced_twice_is_bad_input_not_a_wrong_span(tmp_path):
    """Benchmark repetitions number their steps from 0 again: two spans under one (case, step)."""
    a, b = case_names(2)
    events = step_events(a, 1, 1000.0, 12.0) + step_events(a, 1, 5000.0, 12.0)
    run, trace = write(tmp_path, trace_doc(events), run_doc({a: 12.0, b: 40.0}))
    proc = run_script("check_trace.py", run, trace)
    assert proc.returncode == 2 and "traced twice" in proc.stderr and "repetition" in proc.stderr
