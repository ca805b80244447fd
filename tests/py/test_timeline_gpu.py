"""Timelines of traces with GPU step tracks (issue 15): the median step of each case on the GPU's
time, lanes compute / comm / copy / host tasks, each case on its own axis; older traces drawn as
before and said so. Hand-built traces in the contract's format (trace_fixtures.py)."""

from __future__ import annotations

import pytest
from conftest import section
from trace_fixtures import case_names, run_doc, step_events, trace_doc, write

from shardaccum_report.plots import timeline as timeline_module
from shardaccum_report.report import build_report
from shardaccum_report.trace import GPU_TRACKS, load_trace

OLD_TRACE = __import__("test_timeline").TRACE
GROUP = "## uniform:8x64K · world 2 · K 4 · fp32-fp32-fp32"


def _gpu_trace(tmp_path, short=(10.0, 12.0, 30.0), long_ms=1200.0):
    """Case a: three steps (median 12 ms); case b: one 1200 ms step (an outlier beside a)."""
    a, b = case_names(2)
    events, t = [], 1000.0
    for n, ms in enumerate(short, start=1):
        events += step_events(a, n, t, ms)
        t += ms * 1e3 + 500
    events += step_events(b, 1, t + 1e4, long_ms)
    run, trace = write(tmp_path, trace_doc(events), run_doc({a: 12.0, b: long_ms}))
    return (a, b), run, trace


def test_the_median_step_and_only_its_gpu_ops(tmp_path):
    (a, b), _, trace = _gpu_trace(tmp_path)
    steps = load_trace(trace).steps
    st = steps[a]
    assert st.gpu and st.step == 2 and st.traced_steps == 3 and st.dur_ms == pytest.approx(12.0)
    assert {e.track for e in st.events} == set(GPU_TRACKS)  # no CUPTI, no host phases
    assert {e.args["step"] for e in st.events} == {2}
    assert min(e.start_ms for e in st.events) == pytest.approx(0.0)
    assert max(e.end_ms for e in st.events) == pytest.approx(12.0)
    assert steps[b].dur_ms == pytest.approx(1200.0)


def _figure(monkeypatch, tmp_path, trace_path, run_path):
    """Builds the report and returns the timeline Figure(s) plot_timeline drew."""
    figures = []

    def keep(fig, path):
        figures.append(fig)
        path.write_bytes(b"\x89PNG\r\n\x1a\n")
        return path
    monkeypatch.setattr(timeline_module, "save", keep)
    readme = build_report([run_path], "t", tmp_path / "reports", traces=[trace_path])
    return figures, readme.read_text(encoding="utf-8")


def _row_axes(fig):
    return [ax for sub in fig.subfigs for ax in sub.axes]


def test_gpu_steps_get_readable_lanes_and_an_axis_each(tmp_path, monkeypatch):
    (a, b), run, trace = _gpu_trace(tmp_path)
    figures, text = _figure(monkeypatch, tmp_path, trace, run)
    (fig,) = figures
    axes = _row_axes(fig)
    assert len(axes) == 2
    for ax in axes:
        assert [t.get_text() for t in ax.get_yticklabels()] == ["compute", "comm", "copy", "host tasks"]
    spans = sorted(ax.get_xlim()[1] for ax in axes)
    # The 12 ms step keeps its own scale beside the 1200 ms one.
    assert spans[0] == pytest.approx(12.0 * 1.01) and spans[1] == pytest.approx(1200.0 * 1.01)
    assert "median traced step" in fig._suptitle.get_text()
    part = section(section(text, GROUP), "### Timeline of one step")
    assert "median traced step of rank 0 from the backend's stream tracks" in part and "own time axis" in part


def test_one_traced_step_per_case_is_not_called_a_median(tmp_path, monkeypatch):
    """run.sh traces one step per case (--trace-steps 1): the title said 'the median step' of it."""
    _, run, trace = _gpu_trace(tmp_path, short=(12.0,))
    figures, text = _figure(monkeypatch, tmp_path, trace, run)
    (fig,) = figures
    title = fig._suptitle.get_text()
    assert title.startswith("Timeline of one step") and "the traced step of each case" in title
    assert "median" not in title
    assert "the traced step of rank 0" in section(section(text, GROUP), "### Timeline of one step")


def test_an_old_trace_is_drawn_as_before_and_says_so(tmp_path, monkeypatch):
    run = OLD_TRACE.parent / "run.json"
    figures, text = _figure(monkeypatch, tmp_path, OLD_TRACE, run)
    (fig,) = figures
    axes = _row_axes(fig)
    assert len({ax.get_xlim() for ax in axes}) <= 2  # one shared axis per schedule panel
    assert timeline_module.OLD_TRACE_NOTE in fig._suptitle.get_text()
    assert "micro-batches" in [t.get_text() for t in axes[0].get_yticklabels()]
    assert "has no GPU stream tracks" in text


def test_the_step_phase_caption_explains_other(tmp_path):
    (a, b), run, _ = _gpu_trace(tmp_path)
    readme = build_report([run], "p", tmp_path / "reports")
    part = section(section(readme.read_text(encoding="utf-8"), GROUP), "### Step time by phase")
    assert "*Other* is the step time no phase covers" in part and "waits" in part


def test_an_h2d_stream_gets_its_own_lane_after_copy(tmp_path, monkeypatch):
    """gpu-add-pipelined's second copy stream: loaded with the step and drawn beside copy."""
    (a,) = case_names(1)
    h2d = {"ph": "X", "pid": 0, "tid": 9, "name": "h2d", "cat": "gpu op", "ts": 1000.0 + 6e3, "dur": 2e3,
           "args": {"case": a, "step": 1, "source": "CUDA events"}}
    doc = trace_doc(step_events(a, 1, 1000.0, 12.0) + [h2d])
    doc["traceEvents"].append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 9, "args": {"name": "h2d stream"}})
    run, trace = write(tmp_path, doc, run_doc({a: 12.0}))
    assert "h2d stream" in {e.track for e in load_trace(trace).steps[a].events}
    figures, _ = _figure(monkeypatch, tmp_path, trace, run)
    (fig,) = figures
    for ax in _row_axes(fig):
        assert [t.get_text() for t in ax.get_yticklabels()] == ["compute", "comm", "copy", "h2d", "host tasks"]
