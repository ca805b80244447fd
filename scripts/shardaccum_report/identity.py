"""Which run a trace belongs to: shardaccum_bench writes one run_id (a UUID per run, bench/run_id.hpp)
into the JSON context and the trace's otherData; a report draws a trace only beside its own run, so a
trace.json left over from another run is never shown as this run's timeline."""

from __future__ import annotations

from .loading import Run
from .trace import Trace


def trace_run_id(trace: Trace) -> str | None:
    """The trace's otherData run_id, or None when it has none (a trace of an older binary)."""
    value = trace.other.get("run_id")
    return str(value) if isinstance(value, str) and value else None


def why_not_drawn(trace: Trace, run: Run) -> str | None:
    """None when the trace's run_id is one of the run JSON files' run_ids; otherwise why it is not drawn."""
    ids = [f.context.get("run_id") for f in run.files if f.context.get("run_id")]
    tid = trace_run_id(trace)
    how = "rerun shardaccum_bench with --trace (scripts/run.sh does) to get the run's own trace"
    if tid is None:
        return (f"{trace.path}: not drawn: the trace has no run_id, so nothing shows it is of this run "
                f"(a trace of a binary older than run ids); {how}")
    if not ids:
        return (f"{trace.path}: not drawn: the run JSON has no run_id to match the trace's ({tid}) against "
                f"(a run of a binary older than run ids); {how}")
    if tid not in ids:
        return (f"{trace.path}: not drawn: it is of another run (its run_id {tid}, the run JSON's "
                f"{', '.join(ids)}); {how}")
    return None
