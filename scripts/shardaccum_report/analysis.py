"""Quantities derived from cases, shared by tables and plots: phase breakdowns, measured against
predicted, the memory/step-time Pareto front, scaling series, and notes on missing counters."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .case import CaseKey, Strategy
from .counters import CEILING_FRACTIONS, OTHER, PHASES, STEP, Paired
from .loading import Case

# Measured and predicted bytes further apart than this are flagged (CUPTI may count a little more).
MISMATCH_TOLERANCE = 0.01


def phase_breakdown(case: Case) -> dict[str, float | None]:
    """Milliseconds per phase counter (None when missing), plus 'other' = step − phases, clipped at 0.

    'other' is None when step_ms is missing. Phases on separate streams overlap, so their sum can
    exceed the step time; 'other' is then 0.
    """
    values: dict[str, float | None] = {p.counter: case.value(p.counter) for p in PHASES}
    step = case.value(STEP)
    known = sum(v for v in values.values() if v is not None)
    values[OTHER.counter] = None if step is None else max(0.0, step - known)
    return values


def deviation(case: Case, pair: Paired) -> float | None:
    """measured / predicted − 1 for a byte pair; 0 when both are 0, inf when only the prediction is 0,
    None when either is missing."""
    measured, predicted = case.value(pair.counter), case.value(pair.model)
    if measured is None or predicted is None:
        return None
    if predicted == 0:
        return 0.0 if measured == 0 else math.inf
    return measured / predicted - 1.0


def mismatched(case: Case, pair: Paired) -> bool:
    """Whether measured and predicted bytes differ by more than MISMATCH_TOLERANCE."""
    d = deviation(case, pair)
    return d is not None and abs(d) > MISMATCH_TOLERANCE


@dataclass(frozen=True)
class ParetoPoint:
    """A correct case as a choice: its peak device memory (bytes) and step time (ms)."""

    case: Case
    memory_bytes: float
    step_ms: float


def pareto_front(cases: list[Case], memory_counter: str = "peak_device_bytes") -> list[ParetoPoint]:
    """Correct cases that no other correct case beats on both memory and step time, by memory.

    Wrong and failed cases are never on the front: a wrong gradient is no choice at any budget.
    """
    points = [ParetoPoint(c, c.value(memory_counter), c.value(STEP)) for c in cases if c.status == "correct"]
    points = [p for p in points if p.memory_bytes is not None and p.step_ms is not None]
    points.sort(key=lambda p: (p.memory_bytes, p.step_ms, p.case.key.strategy.sort_key))
    front, best = [], math.inf
    for p in points:
        if p.step_ms < best:
            front.append(p)
            best = p.step_ms
    return front


def by_schedule(cases: list[Case]) -> dict[str, list[Case]]:
    """Cases by schedule, schedules in report order, cases in strategy order."""
    out: dict[str, list[Case]] = {}
    for c in sorted(cases, key=lambda c: (c.key.registry.schedule_sort_key(c.key.schedule), c.key.strategy.sort_key)):
        out.setdefault(c.key.schedule, []).append(c)
    return out


def strategies_of(cases: list[Case]) -> list[Strategy]:
    """The distinct strategies of some cases, in report order."""
    return sorted({c.key.strategy for c in cases}, key=lambda s: s.sort_key)


@dataclass(frozen=True)
class ScalingPoint:
    x: int
    step_ms: float
    status: str


@dataclass
class ScalingFigure:
    """Step time against K or world size for one model and dtype: panels of strategy series."""

    axis: str                      # 'k' or 'world'
    title: str
    slug: str
    panels: dict[str, dict[Strategy, list[ScalingPoint]]]

    @property
    def xs(self) -> list[int]:
        return sorted({p.x for panel in self.panels.values() for s in panel.values() for p in s})


def scaling_figures(cases: list[Case], axis: str) -> list[ScalingFigure]:
    """Series for scaling with K (axis 'k', panels by canonical schedule family) or world size
    (axis 'world', panels by literal schedule), only where at least two values of the axis exist.

    Raises ValueError for another axis.
    """
    if axis not in ("k", "world"):
        raise ValueError(f"scaling axis must be 'k' or 'world', got {axis!r}")
    figures: dict[tuple, ScalingFigure] = {}
    for c in cases:
        key: CaseKey = c.key
        step = c.value(STEP)
        if step is None:
            continue
        if axis == "k":
            panel = key.registry.schedule_family(key.schedule)
            if panel == "other":
                continue
            fig_key = (key.model, f"w{key.world}", key.dtype, key.extra)
            title = f"{key.model} · world {key.world} · {key.dtype}"
            x = key.k
        else:
            panel, x = key.schedule, key.world
            fig_key = (key.model, f"k{key.k}", key.dtype, key.extra)
            title = f"{key.model} · K {key.k} · {key.dtype}"
        fig = figures.setdefault(fig_key, ScalingFigure(axis, title, _slug(fig_key), {}))
        fig.panels.setdefault(panel, {}).setdefault(key.strategy, []).append(ScalingPoint(x, step, c.status))
    out = []
    for fig in figures.values():
        if len(fig.xs) < 2:
            continue
        for panel in fig.panels.values():
            for series in panel.values():
                series.sort(key=lambda p: p.x)
        out.append(fig)
    return sorted(out, key=lambda f: f.slug)


def _slug(parts: tuple) -> str:
    """A file-name-safe join of (model, 'w2' or 'k4', dtype, extra axes), e.g. 'uniform-8x1M_w2_fp32-fp32-fp32'."""
    flat = []
    for p in parts:
        flat += [f"{a}-{b}" for a, b in p] if isinstance(p, tuple) else [str(p)]
    return "_".join("".join(ch if ch.isalnum() or ch in ".-" else "-" for ch in s) for s in flat)


def missing_notes(cases: list[Case], counters: list[str]) -> list[str]:
    """Sentences on counters absent from all or some cases that ran (failed cases are left out)."""
    ran = [c for c in cases if c.error is None]
    notes = []
    for counter in counters:
        lacking = sum(1 for c in ran if c.value(counter) is None)
        if ran and lacking == len(ran):
            notes.append(f"`{counter}` is in none of the cases: not shown.")
        elif lacking:
            notes.append(f"`{counter}` is missing from {lacking} of {len(ran)} cases (shown as –).")
    return notes


def missing_fraction_notes(cases: list[Case]) -> list[str]:
    """Like missing_notes for *_frac_ceiling counters, counting only cases whose phase ran (time > 0)."""
    notes = []
    for f in CEILING_FRACTIONS:
        ran = [c for c in cases if c.error is None and (c.value(f.phase) or 0) > 0]
        lacking = sum(1 for c in ran if c.value(f.counter) is None)
        if ran and lacking == len(ran):
            notes.append(f"`{f.counter}` is in none of the {len(ran)} cases that ran {f.label}: not shown.")
        elif lacking:
            notes.append(f"`{f.counter}` is missing from {lacking} of the {len(ran)} cases that ran {f.label} "
                         "(shown as –).")
    return notes


# Counters whose 0 on a WRONG offloaded case, where the same strategy with another mode moves bytes and
# is correct, means the case never brought its saved shard into the add: label (the diagnosis' bar).
# Both are drawn on the H2D bar, which is 0 for such a case (room for the text).
_BLIND_COUNTERS = (("h2d_bytes", "no H2D", "h2d_bytes"), ("cpu_add_bytes", "no CPU add", "h2d_bytes"))


def blind_diagnosis(cases: list[Case]) -> dict[tuple[CaseKey, str], str]:
    """{(case key, counter drawn): text} for WRONG cases with an offload whose H2D (or CPU add) bytes
    are 0 while a correct case of the same schedule, binding, offload and division but another mode
    moves some: the mode never saw the saved shard on the host (docs/DESIGN.md §3, FSDP1's `shape`).
    The text names the mode that does see it and its bytes, e.g. 'no H2D (flag moves 17.4 GiB): never
    saw the saved shard'."""
    out = {}
    for c in cases:
        if c.status != "wrong" or c.key.strategy.offload == c.key.registry.axis("offload").default:
            continue
        for counter, what, drawn_on in _BLIND_COUNTERS:
            if c.value(counter) != 0:
                continue
            seeing = [o for o in cases if o.status == "correct" and o.key.schedule == c.key.schedule
                      and o.key.group == c.key.group and o.key.strategy.mode != c.key.strategy.mode
                      and (o.key.strategy.binding, o.key.strategy.offload, o.key.strategy.division)
                      == (c.key.strategy.binding, c.key.strategy.offload, c.key.strategy.division)
                      and (o.value(counter) or 0) > 0]
            if seeing:
                o = min(seeing, key=lambda o: o.key.strategy.sort_key)
                out[(c.key, drawn_on)] = (f"{what} ({o.key.strategy.mode} moves {_binary(o.value(counter))}): "
                                          "never saw the saved shard")
                break
    return out


def _binary(n: float) -> str:
    for power, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 2 ** power:
            return f"{n / 2 ** power:.3g} {unit}"
    return f"{n:.0f} B"
