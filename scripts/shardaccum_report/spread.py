"""Spread of a case's step time over steps and repetitions, ties within it, and the accumulation cost.

The spread is what the JSON holds, nothing estimated: the per-repetition `step_ms` values and the
`step_ms_min`/`step_ms_max` counters (the fastest and slowest measured step; written by the suite
and by bench/real/run.py). Two cases whose spreads overlap are a tie: no ranking is claimed between
them. The accumulation cost is bench/real/run.py's cost A (docs/DESIGN.md §9): step − the step of the
same strategy less its offload, on n^(K-1)S, in the same group.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .case import CaseKey
from .counters import STEP
from .loading import Case

STEP_MIN = "step_ms_min"
STEP_MAX = "step_ms_max"


@dataclass(frozen=True)
class Spread:
    """The lowest and highest step time the JSON shows for a case (ms), and where they come from:
    'steps' (step_ms_min/max counters), 'repetitions' (two or more step_ms values), or both."""

    low: float
    high: float
    sources: tuple[str, ...]

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high


def step_spread(case: Case) -> Spread | None:
    """The case's spread, or None when the JSON shows none: one repetition without step_ms_min/max, a
    failed case, or Google Benchmark's aggregates only, whose mean and median of each repetition's
    fastest and slowest step are not the fastest and slowest step (a range between them would be
    narrower than the steps' and claim ranks they do not support)."""
    lows, highs = case.samples(STEP_MIN), case.samples(STEP_MAX)
    reps = case.samples(STEP)
    sources = (("steps",) if lows and highs else ()) + (("repetitions",) if len(reps) >= 2 else ())
    if not sources:
        return None
    values = reps + (lows + highs if "steps" in sources else [])
    return Spread(min(values), max(values), sources)


def tied(a: Case, b: Case) -> bool:
    """Whether two cases' step times are a tie: both spreads known and overlapping."""
    sa, sb = step_spread(a), step_spread(b)
    return sa is not None and sb is not None and sa.overlaps(sb)


def fastest_with_ties(cases: list[Case]) -> tuple[Case | None, list[Case]]:
    """The fastest correct case by median step_ms, and the other correct cases tied with it."""
    correct = [c for c in cases if c.status == "correct" and c.value(STEP) is not None]
    best = min(correct, key=lambda c: (c.value(STEP), c.key.strategy.sort_key), default=None)
    if best is None:
        return None, []
    return best, [c for c in correct if c is not best and tied(best, c)]


def baseline_key(key: CaseKey) -> CaseKey:
    """The key of the case a cost is measured against: the same group, binding, mode and division,
    offload at the registry's default (none), schedule n^(K-1)S."""
    offload = key.registry.axis("offload").default
    strategy = dataclasses.replace(key.strategy, offload=offload)
    return dataclasses.replace(key, schedule="n" * (key.k - 1) + "S", strategy=strategy)


@dataclass(frozen=True)
class AccumCost:
    """A case's accumulation cost (ms; may be below 0: noise, or a faster schedule) and its range
    from both spreads (None when neither case shows a spread)."""

    case: Case
    baseline: Case
    cost_ms: float
    low: float | None
    high: float | None

    @property
    def is_baseline(self) -> bool:
        return self.case is self.baseline

    @property
    def tie(self) -> bool:
        """The cost is not told apart from 0: its range holds 0 (the baseline itself is no tie)."""
        return not self.is_baseline and self.low is not None and self.low <= 0 <= self.high


def accumulation_costs(cases: list[Case]) -> dict[CaseKey, AccumCost | None]:
    """Every case's cost against its baseline among `cases`; None where the case or its baseline has
    no step_ms (not run, failed). The range is [low − baseline high, high − baseline low], a side
    without a spread counting as its median."""
    by_key = {c.key: c for c in cases}
    out: dict[CaseKey, AccumCost | None] = {}
    for c in cases:
        base = by_key.get(baseline_key(c.key))
        step = c.value(STEP)
        base_step = base.value(STEP) if base is not None else None
        if step is None or base_step is None:
            out[c.key] = None
            continue
        sc, sb = step_spread(c), step_spread(base)
        low = high = None
        if c is not base and (sc is not None or sb is not None):
            c_low, c_high = (sc.low, sc.high) if sc else (step, step)
            b_low, b_high = (sb.low, sb.high) if sb else (base_step, base_step)
            low, high = c_low - b_high, c_high - b_low
        out[c.key] = AccumCost(c, base, step - base_step, low, high)
    return out
