"""Reading the Perfetto/Chrome trace of ``shardaccum_bench --trace FILE.json`` (profiling/trace.hpp).

The trace holds "ph":"X" complete events (ts and dur in microseconds) and "M" metadata that names
each process ("rank N") and each track ("phases", "host", "compute stream", "comm stream",
"copy stream"). On the phases track, steps ("step N <case name>", cat "step") hold micro-batches
("micro-batch I S|n"), units ("unit U NAME") and phases ("backward", "reduce_scatter", ...); the
other tracks hold the backend's ops (host) or CUPTI's kernels and copies (cuda). Every event's args
carry "case", the benchmark case name. Only measured steps are recorded (no warm-up).

What the report needs of it is one step per case, in ms from the step's start. A trace with GPU
step tracks (issue 15: cat "gpu step" events named "step N <case>" spanning the step's GPU ops and
host tasks; ops on the "compute stream", "comm stream", "copy stream" and "host tasks" tracks with
args case and step) gives the median traced step of rank 0 on the GPU's time, with that step's ops.
An older trace gives the first measured step of rank 0 (its host `step` range, in host time), with
every event of that rank inside it.
"""

from __future__ import annotations

import bisect
import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from . import strict_json
from .case import CaseKey, parse_case_name
from .registry import Registry
from .errors import InputError

PHASES_TRACK = "phases"
HOST_TRACK = "host"
# Lanes of the suite's tracks in reading order (profiling/trace.cpp); other tracks follow by name.
TRACK_ORDER = (PHASES_TRACK, HOST_TRACK, "compute stream", "comm stream", "copy stream")
GPU_STEP = "gpu step"
# The lanes of a GPU step (profiling/trace.*): the backend's ops per stream, then the host tasks.
GPU_TRACKS = ("compute stream", "comm stream", "copy stream", "host tasks")
# The pipelined offloads' second copy stream: a lane only in the steps that use it.
H2D_TRACK = "h2d stream"
_HOW_TO_MAKE = "shardaccum_bench --trace FILE.json (or scripts/run.sh, which writes reports/NAME/trace.json)"
_STEP_NAME = re.compile(r"step (\d+)(?: (.*))?$")


@dataclass(frozen=True)
class Event:
    """One complete event of a step, times in ms from the step's start."""

    track: str
    name: str
    cat: str
    start_ms: float
    dur_ms: float
    args: dict

    @property
    def end_ms(self) -> float:
        return self.start_ms + self.dur_ms


@dataclass
class StepTimeline:
    """The first measured step of one case on one rank, and every event of that rank inside it."""

    case_name: str
    key: CaseKey | None     # None when the case name is not an 'accum/' name this tool can parse
    rank: int
    step: int
    dur_ms: float
    events: list[Event] = field(default_factory=list)
    gpu: bool = False       # a `gpu step` (GPU time, stream lanes), not the host's step range
    traced_steps: int = 1   # how many steps of this case and rank the trace holds (the median is drawn)

    @property
    def end_ms(self) -> float:
        """The step's end or the last event's end, whichever is later (GPU work may outlast the range)."""
        return max([self.dur_ms] + [e.end_ms for e in self.events])

    def on(self, track: str, cat: str | None = None) -> list[Event]:
        return [e for e in self.events if e.track == track and (cat is None or e.cat == cat)]


@dataclass
class Trace:
    """The steps of one trace file: one StepTimeline per case, in the order the cases ran."""

    path: str
    other: dict
    steps: dict[str, StepTimeline]
    notes: list[str] = field(default_factory=list)

    @property
    def backend(self) -> str | None:
        value = self.other.get("backend")
        return str(value) if value else None

    @property
    def time_label(self) -> str:
        """How to name the trace's times: host wall-clock on the host backend, else the trace's own words."""
        if self.backend == "host":
            return "host wall-clock, not GPU time"
        domain = self.other.get("time_domain")
        return str(domain) if domain else "time domain unknown"

    def by_key(self) -> dict[CaseKey, StepTimeline]:
        return {s.key: s for s in self.steps.values() if s.key is not None}


def event_number(e: dict, key: str, where: str, i: int) -> float:
    """Event `i`'s `key` (ts, dur: µs) as a float. InputError naming the event when it is missing, not a
    number or not strict JSON (NaN, a string)."""
    try:
        value = strict_json.number(e.get(key))
    except ValueError as err:
        raise InputError(where, f"traceEvents[{i}] ({e.get('name')!r}): '{key}' = {err}") from None
    if value is None:
        raise InputError(where, f"traceEvents[{i}] ({e.get('name')!r}): '{key}' is not a number")
    return float(value)


def _read(path: Path) -> object:
    where = str(path)
    strict_json.refuse_special_file(path, "a Perfetto/Chrome trace JSON (.json or .json.gz)")
    try:
        raw = path.read_bytes()
        # gzip (the committed reference traces are trace.json.gz; Perfetto opens them too).
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise InputError(where, "is a damaged gzip file, expected a Perfetto/Chrome trace JSON (.json or .json.gz)") from None
    except FileNotFoundError:
        raise InputError(where, "no such file (the trace given with --trace)") from None
    except IsADirectoryError:
        raise InputError(where, "is a directory, expected a trace JSON file") from None
    except UnicodeDecodeError:
        raise InputError(where, "is not UTF-8 text, expected a Perfetto/Chrome trace JSON") from None
    except OSError as e:
        raise InputError(where, f"cannot read: {e.strerror or e}") from None
    if not text.strip():
        raise InputError(where, f"empty file, expected a Perfetto/Chrome trace JSON (written by {_HOW_TO_MAKE})")
    return strict_json.loads(text, where, f"the trace written by {_HOW_TO_MAKE}")


def _rank_of(process_name: object, pid: object) -> int | None:
    m = re.fullmatch(r"rank (\d+)", str(process_name or ""))
    if m:
        return int(m.group(1))
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def load_trace(path: str | Path, registry: Registry | None = None) -> Trace:
    """Reads a trace file and picks each case's first measured step of rank 0 (of the lowest rank
    when rank 0 has none). Case names are read by `registry` (the run's; None: the committed one).

    Raises InputError naming the file when it cannot be read, is empty, is not valid JSON, has no
    'traceEvents' list, has a complete event without numeric ts/dur, or has no step event at all.
    Steps whose case name cannot be parsed are kept (key None) and drawn under their raw name.
    """
    path = Path(path)
    where = str(path)
    data = _read(path)
    if isinstance(data, list):  # Chrome's JSON Array Format: the events alone
        events, other = data, {}
    elif isinstance(data, dict):
        if not isinstance(data.get("traceEvents"), list):
            raise InputError(where, f"no 'traceEvents' list: not a Perfetto/Chrome trace JSON (written by "
                                    f"{_HOW_TO_MAKE})")
        events = data["traceEvents"]
        other = data.get("otherData") if isinstance(data.get("otherData"), dict) else {}
    else:
        raise InputError(where, f"top level is a JSON {strict_json.json_type_name(data)}, expected an object with "
                                "'traceEvents' (a Perfetto/Chrome trace)")

    process: dict[object, object] = {}
    thread: dict[tuple[object, object], str] = {}
    complete: list[tuple[int, dict]] = []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise InputError(where, f"traceEvents[{i}] is a JSON {strict_json.json_type_name(e)}, expected an object")
        ph = e.get("ph")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if ph == "M":
            if e.get("name") == "process_name":
                process[e.get("pid")] = args.get("name")
            elif e.get("name") == "thread_name":
                thread[(e.get("pid"), e.get("tid"))] = str(args.get("name"))
        elif ph == "X":
            for key in ("ts", "dur"):
                event_number(e, key, where, i)
            complete.append((i, e))

    if any(e.get("cat") == GPU_STEP for _, e in complete):
        return _gpu_steps(where, other, process, thread, complete, registry)

    # Per rank, the events as (start, end, track, event) in µs.
    per_rank: dict[int, list[tuple[float, float, str, dict]]] = {}
    steps: list[tuple[int, int, float, float, str]] = []  # (rank, step, ts, dur, case)
    for i, e in complete:
        rank = _rank_of(process.get(e.get("pid")), e.get("pid"))
        if rank is None:
            raise InputError(where, f"traceEvents[{i}] ({e.get('name')!r}): 'pid' is not a rank number")
        track = thread.get((e.get("pid"), e.get("tid")), f"track {e.get('tid')}")
        ts, dur = float(e["ts"]), max(0.0, float(e["dur"]))
        per_rank.setdefault(rank, []).append((ts, ts + dur, track, e))
        name = str(e.get("name", ""))
        m = _STEP_NAME.match(name)
        if m and (e.get("cat") == "step" or track == PHASES_TRACK):
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            case = args.get("case") or m.group(2)
            if case:
                steps.append((rank, int(m.group(1)), ts, dur, str(case)))
    if not steps:
        raise InputError(where, f"no step events ('step N <case>', cat 'step', on the '{PHASES_TRACK}' track) among "
                                f"{len(complete)} complete events: not a trace of shardaccum_bench cases "
                                f"({_HOW_TO_MAKE})")

    chosen: dict[str, tuple[int, int, float, float]] = {}
    order: dict[str, float] = {}
    for rank, step, ts, dur, case in steps:
        order[case] = min(order.get(case, ts), ts)
        best = chosen.get(case)
        if best is None or (rank, step, ts) < best[:3]:
            chosen[case] = (rank, step, ts, dur)
    starts: dict[int, list[float]] = {}
    for rank in per_rank:
        per_rank[rank].sort(key=lambda item: item[0])
        starts[rank] = [item[0] for item in per_rank[rank]]

    trace = Trace(where, other, {})
    not_rank0 = []
    for case in sorted(chosen, key=order.__getitem__):
        rank, step, t0, dur = chosen[case]
        if rank != 0:
            not_rank0.append(case)
        try:
            key = parse_case_name(case, registry)
        except ValueError:
            key = None
        timeline = StepTimeline(case, key, rank, step, dur / 1e3)
        t1 = t0 + dur
        # The step's events start inside it: its ranges nest in it and its GPU work is launched in it.
        for start, end, track, e in per_rank[rank][bisect.bisect_left(starts[rank], t0):]:
            if start > t1 or (start == t1 and end > start):
                break
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            if args.get("case") not in (None, case):
                continue  # another case's event (cases run one after another; this should not happen)
            if e.get("cat") == "step" and track == PHASES_TRACK:
                continue  # the step itself: its extent is the timeline's
            timeline.events.append(Event(track, str(e.get("name", "")), str(e.get("cat", "")),
                                         (start - t0) / 1e3, (end - start) / 1e3, args))
        trace.steps[case] = timeline
    if not_rank0:
        trace.notes.append(f"{where}: rank 0 has no step of {len(not_rank0)} case(s); their lowest rank is drawn")
    return trace


def _gpu_steps(where: str, other: dict, process: dict, thread: dict, complete: list[tuple[int, dict]],
               registry: Registry | None) -> Trace:
    """The median `gpu step` of each case on its lowest rank (rank 0), with that step's ops and host
    tasks (args case and step) on GPU_TRACKS, in ms from the gpu step's start."""
    steps: dict[str, dict[int, list[tuple[float, float, int]]]] = {}  # case: rank: [(dur, ts, step)]
    ops: dict[tuple[str, int, int], list[tuple[str, dict]]] = {}      # (case, rank, step): [(track, e)]
    order: dict[str, float] = {}
    for i, e in complete:
        rank = _rank_of(process.get(e.get("pid")), e.get("pid"))
        if rank is None:
            raise InputError(where, f"traceEvents[{i}] ({e.get('name')!r}): 'pid' is not a rank number")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        case, step = args.get("case"), args.get("step")
        m = _STEP_NAME.match(str(e.get("name", "")))
        if e.get("cat") == GPU_STEP and m:
            case = str(case or m.group(2))
            step = step if isinstance(step, int) else int(m.group(1))
            steps.setdefault(case, {}).setdefault(rank, []).append((float(e["dur"]), float(e["ts"]), step))
            order[case] = min(order.get(case, float(e["ts"])), float(e["ts"]))
            continue
        track = thread.get((e.get("pid"), e.get("tid")), "")
        if (track in GPU_TRACKS or track == H2D_TRACK) and isinstance(case, str) and isinstance(step, int):
            ops.setdefault((case, rank, step), []).append((track, e))
    trace = Trace(where, other, {})
    not_rank0 = []
    for case in sorted(steps, key=order.__getitem__):
        rank = min(steps[case])
        if rank != 0:
            not_rank0.append(case)
        ranked = sorted(steps[case][rank])
        dur, t0, step = ranked[(len(ranked) - 1) // 2]  # the median step (the lower one of an even count)
        try:
            key = parse_case_name(case, registry)
        except ValueError:
            key = None
        timeline = StepTimeline(case, key, rank, step, max(0.0, dur) / 1e3, gpu=True, traced_steps=len(ranked))
        for track, e in sorted(ops.get((case, rank, step), []), key=lambda te: float(te[1]["ts"])):
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            timeline.events.append(Event(track, str(e.get("name", "")), str(e.get("cat", "")),
                                         (float(e["ts"]) - t0) / 1e3, max(0.0, float(e["dur"])) / 1e3, args))
        trace.steps[case] = timeline
    if not_rank0:
        trace.notes.append(f"{where}: rank 0 has no GPU step of {len(not_rank0)} case(s); their lowest rank is drawn")
    return trace


def track_order(tracks: set[str]) -> list[str]:
    """The suite's tracks in reading order (phases, host, compute, comm, copy), then others by name."""
    known = [t for t in TRACK_ORDER if t in tracks]
    return known + sorted(tracks - set(TRACK_ORDER))


@dataclass
class TraceSet:
    """The traces a report draws from (none, one, or several joined), and whether it was found beside the input."""

    traces: list[Trace] = field(default_factory=list)
    found_beside_input: bool = False
    notes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # traces of another run: why each is not drawn

    def __post_init__(self) -> None:
        self.steps: dict[str, StepTimeline] = {}
        for t in self.traces:
            for case, step in t.steps.items():
                if case in self.steps:
                    self.notes.append(f"{t.path}: case {case} is also in an earlier trace; the earlier one is drawn")
                    continue
                self.steps[case] = step
            self.notes += t.notes

    def __bool__(self) -> bool:
        return bool(self.traces)

    @property
    def paths(self) -> list[str]:
        return [t.path for t in self.traces]

    @property
    def time_label(self) -> str:
        labels = list(dict.fromkeys(t.time_label for t in self.traces))
        return "; ".join(labels) if labels else "time domain unknown"

    @property
    def backends(self) -> set[str]:
        return {t.backend for t in self.traces if t.backend}
