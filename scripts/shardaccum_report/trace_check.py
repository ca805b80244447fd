"""check_trace.py's logic: each traced step's `gpu step` span against an independent clock (the
CUPTI records of that case and step, joined with its host tasks) and against the run's step_ms.

The trace format is profiling/trace.* (issue 15): per rank (pid), a `gpu step` complete event per
traced step, named `step N CASE`, args {case, step, step_ms}; CUPTI records (cat `memcpy`/`kernel`,
args {case, step}) on `CUPTI <stream>` tracks; host tasks (cat `host`) on the `host tasks` track.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .case import parse_case_name
from .errors import InputError
from .loading import RunFile, load_run_file
from .strict_json import json_type_name
from .trace import _read, event_number

GPU_STEP = "gpu step"
CUPTI_CATS = ("memcpy", "kernel")
HOST_TASKS_TRACK = "host tasks"
HOST_CAT = "host"
TOLERANCE = 0.02      # relative, of the reference
FLOOR_MS = 0.05       # absolute: below it a difference is the clocks' resolution (CUDA events, µs trace)


@dataclass
class StepCheck:
    """One case's traced step: its span (max over ranks), the independent clock and the suite's figure.

    clock_diff is the worst rank's |span - clock| / clock; suite_diff is |span - suite| / suite where
    suite is the run's step_ms interval [step_ms_min, step_ms_max] (0 inside it)."""

    case: str
    step: int
    span_ms: float
    clock_ms: float | None = None
    clock_diff: float | None = None
    suite_ms: float | None = None
    suite_diff: float | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def within(value: float, ref: float) -> bool:
    """|value - ref| within TOLERANCE of ref, or within FLOOR_MS for tiny steps."""
    return abs(value - ref) <= max(TOLERANCE * abs(ref), FLOOR_MS)


_number = event_number  # trace.py's: one reading of ts and dur


def _events(path: Path) -> tuple[list[tuple[int, str, dict]], dict]:
    """(index, track, event) of every complete event, and otherData. InputError when not a trace."""
    where = str(path)
    data = _read(path)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise InputError(where, "no 'traceEvents' list: not a Perfetto/Chrome trace JSON of shardaccum_bench --trace")
    other = data.get("otherData") if isinstance(data.get("otherData"), dict) else {}
    tracks: dict[tuple[object, object], str] = {}
    complete = []
    for i, e in enumerate(data["traceEvents"]):
        if not isinstance(e, dict):
            raise InputError(where, f"traceEvents[{i}] is a JSON {json_type_name(e)}, expected an object")
        if e.get("ph") == "M" and e.get("name") == "thread_name" and isinstance(e.get("args"), dict):
            tracks[(e.get("pid"), e.get("tid"))] = str(e["args"].get("name"))
        elif e.get("ph") == "X":
            complete.append((i, e))
    return [(i, tracks.get((e.get("pid"), e.get("tid")), ""), e) for i, e in complete], other


def check_run_id(run: RunFile, other: dict, trace_path: str) -> None:
    """InputError unless the trace's otherData run_id is the run JSON's (identity.py's rule)."""
    rid, tid = run.context.get("run_id"), other.get("run_id")
    if not tid or not rid or str(tid) != rid:
        raise InputError(trace_path, f"run_id mismatch: the trace's {tid or 'none'}, {run.path}'s "
                                     f"{rid or 'none'}: the trace is not of this run (give the run's own trace)")


def _suite_interval(run: RunFile) -> dict[str, tuple[float, float, float]]:
    """{case name: (low, median, high)} of step_ms over the run's measured steps and repetitions."""
    found = {}
    for key, case in run.cases.items():
        median = case.value("step_ms")
        if median is None:
            continue
        lows, highs = case.samples("step_ms_min"), case.samples("step_ms_max")
        found[key.name] = (min(lows) if lows else median, median, max(highs) if highs else median)
    return found


def check(run_path: str | Path, trace_path: str | Path) -> list[StepCheck]:
    """The checks of every case and traced step, in trace order. Raises InputError for a bad file, a
    run_id mismatch, a trace without `gpu step` events, or a trace without CUPTI kernel records."""
    run = load_run_file(run_path)
    events, other = _events(Path(trace_path))
    where = str(trace_path)
    check_run_id(run, other, where)
    names = {k.name: k for k in run.cases}
    suite = _suite_interval(run)

    # Per (case, step): spans per rank of the gpu step, of CUPTI records and of host tasks (µs).
    spans: dict[tuple[str, int], dict[object, tuple[float, float]]] = {}
    suite_of_step: dict[tuple[str, int], dict[object, float]] = {}  # args.step_ms per rank
    clock: dict[tuple[str, int], dict[object, list[float]]] = {}
    kernels = cupti = 0
    for i, track, e in events:
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        case, step = args.get("case"), args.get("step")
        cat = e.get("cat")
        if cat not in (GPU_STEP, HOST_CAT) + CUPTI_CATS or not isinstance(case, str) or not isinstance(step, int):
            continue
        ts, dur = _number(e, "ts", where, i), max(0.0, _number(e, "dur", where, i))
        key, pid = (case, step), e.get("pid")
        if cat == GPU_STEP:
            if pid in spans.get(key, {}):
                raise InputError(where, f"case {case!r} step {step} of rank {pid} is traced twice (benchmark "
                                        "repetitions number their steps from 0 again): trace one repetition")
            spans.setdefault(key, {})[pid] = (ts, ts + dur)
            if isinstance(args.get("step_ms"), (int, float)):
                suite_of_step.setdefault(key, {})[pid] = float(args["step_ms"])
            continue
        if cat == HOST_CAT and track != HOST_TASKS_TRACK:
            continue
        if cat in CUPTI_CATS:
            cupti += 1
            kernels += cat == "kernel"
        lo_hi = clock.setdefault(key, {}).setdefault(pid, [ts, ts + dur])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], ts), max(lo_hi[1], ts + dur)
    if not spans:
        raise InputError(where, f"no '{GPU_STEP}' events: a trace of a binary before GPU step tracks "
                                "(issue 15), or of no case")
    if kernels == 0 and other.get("backend") == "host":
        raise InputError(where, "no CUPTI records: a host-backend trace has no GPU clock to check against; "
                                "check_trace needs a cuda run with --cupti kernels (and --trace)")
    if kernels == 0:
        what = "no CUPTI records" if cupti == 0 else f"{cupti} CUPTI memcpy records but no kernel records"
        raise InputError(where, f"{what}: the independent clock is missing; rerun shardaccum_bench with "
                                "--cupti kernels (and --trace)")

    checks = []
    for key, per_rank in spans.items():
        case, step = key
        span = max((hi - lo) / 1e3 for lo, hi in per_rank.values())
        c = StepCheck(case, step, span)
        ranks_clock = clock.get(key, {})
        diffs = []
        for pid, (lo, hi) in per_rank.items():
            if pid not in ranks_clock:
                c.problems.append(f"rank {pid}: no CUPTI record or host task of this step")
                continue
            theirs = (ranks_clock[pid][1] - ranks_clock[pid][0]) / 1e3
            mine = (hi - lo) / 1e3
            diffs.append((abs(mine - theirs) / theirs if theirs else float("inf"), theirs, mine, pid))
            if not within(mine, theirs):
                c.problems.append(f"rank {pid}: gpu step {mine:.3f} ms, CUPTI + host tasks {theirs:.3f} ms")
        if diffs:
            worst = max(diffs)
            c.clock_diff, c.clock_ms = worst[0], worst[1]
        for pid, own in suite_of_step.get(key, {}).items():
            mine = (per_rank[pid][1] - per_rank[pid][0]) / 1e3
            if not within(mine, own):
                c.problems.append(f"rank {pid}: gpu step {mine:.3f} ms, its args.step_ms {own:.3f} ms")
        c.problems += _against_suite(c, names, suite)
        checks.append(c)
    return checks


def _against_suite(c: StepCheck, names, suite) -> list[str]:
    """The span against the run's step_ms interval of the case."""
    problems = []
    key = _run_name(c.case, names)
    if key is None or key not in suite:
        return problems + ["not in RUN.json (or no step_ms there)"]
    low, median, high = suite[key]
    c.suite_ms = median
    nearest = min(max(c.span_ms, low), high)
    c.suite_diff = abs(c.span_ms - nearest) / nearest if nearest else float("inf")
    if not within(c.span_ms, nearest):
        problems.append(f"gpu step {c.span_ms:.3f} ms outside RUN.json's step_ms "
                        f"[{low:.3f}, {high:.3f}] ms (median {median:.3f})")
    return problems


def _run_name(case: str, names: dict) -> str | None:
    """The RUN.json name of a trace case name (the same string, or the same parsed case)."""
    if case in names:
        return case
    for name, key in names.items():
        try:
            if parse_case_name(case, key.registry) == key:
                return name
        except ValueError:
            return None
    return None


def untraced(run_path: str | Path, checks: list[StepCheck]) -> list[str]:
    """RUN.json's cases (names) that no check is of: failed cases, or a trace of fewer cases."""
    names = {k.name: k for k in load_run_file(run_path).cases}
    seen = {_run_name(c.case, names) for c in checks}
    return [n for n in names if n not in seen]


def table(checks: list[StepCheck]) -> str:
    """The checks as a Markdown table, one row per case and step."""
    def pct(v):
        return "–" if v is None else f"{100 * v:.2f}%"

    def ms(v):
        return "–" if v is None else f"{v:.3f}"
    lines = ["| case | step | gpu step ms | CUPTI+host ms | diff | RUN step_ms | diff | verdict |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in checks:
        lines.append(f"| {c.case} | {c.step} | {ms(c.span_ms)} | {ms(c.clock_ms)} | {pct(c.clock_diff)} | "
                     f"{ms(c.suite_ms)} | {pct(c.suite_diff)} | {'ok' if c.ok else 'FAIL'} |")
    return "\n".join(lines)
