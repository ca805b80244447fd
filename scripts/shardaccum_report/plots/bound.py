"""Each case's step time over its bound (bound_ratio, docs/DESIGN.md §6): how far it is from the least
time its own bytes and FLOPs take at the ceilings the same run measured."""

from __future__ import annotations

from pathlib import Path

from .. import analysis
from ..case import registry_of
from ..loading import Case
from .style import new_figure, save, strategy_color, styled

BOUND_MS, BOUND_RATIO = "bound_ms", "bound_ratio"


def bounded(cases: list[Case]) -> list[Case]:
    """The cases that have both bound_ms and bound_ratio (a run with ceilings)."""
    return [c for c in cases if c.value(BOUND_MS) is not None and c.value(BOUND_RATIO) is not None]


@styled
def plot_bound_ratio(cases: list[Case], path: Path, title: str) -> Path | None:
    """One panel per schedule, one horizontal bar per strategy: bound_ratio (step_ms / bound_ms) on an
    axis from 1 (at the bound), each bar annotated with its ratio and the term that sets the bound
    (bound_by). Returns None when no case has bound_ms."""
    drawn = bounded(cases)
    if not drawn:
        return None
    per_schedule = analysis.by_schedule(drawn)
    strategies = analysis.strategies_of(drawn)
    row = {s: i for i, s in enumerate(strategies)}
    top = max(c.value(BOUND_RATIO) for c in drawn)
    n = len(per_schedule)
    fig = new_figure(4.4 * n + 3.5, 0.36 * len(strategies) + 2.2)
    axes = fig.subplots(1, n, sharey=True, squeeze=False)[0]
    for ax, (schedule, group) in zip(axes, per_schedule.items()):
        for c in group:
            ratio = c.value(BOUND_RATIO)
            i = row[c.key.strategy]
            # From 1: a bar's length is the time above the bound.
            ax.barh(i, ratio - 1, left=1, color=strategy_color(c.key.strategy), height=0.7)
            ax.text(ratio, i, f" {ratio:.2f}× · {c.bound_by or 'term unknown'}", va="center", fontsize=7.5)
        ax.set_xlim(1, 1 + (max(top, 1.05) - 1) * 1.6)  # room for the annotations
        ax.set_xlabel("step_ms / bound_ms")
        ax.set_title(registry_of(drawn).schedule_display(schedule).replace(" (", "\n("), fontsize=10)
    axes[0].set_yticks(range(len(strategies)), [s.display for s in strategies])
    axes[0].invert_yaxis()
    fig.suptitle(f"Step time against the bound — {title}")
    return save(fig, path)
