"""Measured beside predicted byte counters (peak memory, PCIe traffic) per strategy and schedule."""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.patches import Patch

from .. import analysis
from ..case import registry_of
from ..counters import Paired
from ..loading import Case
from .style import MEASURED, MISMATCH, PREDICTED, WRONG, byte_scale, new_figure, save, styled


@styled
def plot_measured_predicted(cases: list[Case], pairs: tuple[Paired, ...], path: Path, title: str) -> Path | None:
    """One row per pair (e.g. peak device, peak pinned), one panel per schedule: for each strategy a
    solid bar (measured) above a hatched one (the model_* prediction), in binary units of bytes per
    step and rank. Deviations beyond 1% are labelled in orange, wrong results in red.
    Pairs that no case carries are left out; returns None when none is carried."""
    pairs = tuple(p for p in pairs if any(c.value(p.counter) is not None or c.value(p.model) is not None
                                          for c in cases))
    if not pairs:
        return None
    per_schedule = analysis.by_schedule(cases)
    strategies = analysis.strategies_of(cases)
    row = {s: i for i, s in enumerate(strategies)}
    n = len(per_schedule)
    fig = new_figure(3.3 * n + 3.0, (0.36 * len(strategies) + 1.3) * len(pairs) + 1.2)
    grid = fig.subplots(len(pairs), n, sharey=True, squeeze=False)
    for r, pair in enumerate(pairs):
        values = [v for c in cases for v in (c.value(pair.counter), c.value(pair.model)) if v is not None]
        top = max(values, default=0.0)
        scale, unit = byte_scale(top)
        span = top / scale if top > 0 else 1.0  # the axis length in `unit`
        for ax in grid[r][1:]:
            ax.sharex(grid[r][0])  # one scale per row, so schedules compare at a glance
        for ax, (schedule, group) in zip(grid[r], per_schedule.items()):
            for c in group:
                y = row[c.key.strategy]
                measured, predicted = c.value(pair.counter), c.value(pair.model)
                if measured is not None:
                    ax.barh(y - 0.19, measured / scale, height=0.38, color=MEASURED)
                if predicted is not None:
                    ax.barh(y + 0.19, predicted / scale, height=0.38, color=PREDICTED, hatch="///",
                            edgecolor="#8C8C8C", linewidth=0.5)
                right = max(measured or 0.0, predicted or 0.0) / scale + span * 0.02
                labels = []
                if measured is None and predicted is None:
                    labels.append(("no data", "#8C8C8C"))
                elif not measured and not predicted:
                    labels.append(("0", "#8C8C8C"))  # a real zero, not a missing bar
                if analysis.mismatched(c, pair):
                    d = analysis.deviation(c, pair)
                    labels.append(("+inf" if math.isinf(d) else f"{100 * d:+.0f}%", MISMATCH))
                if c.status == "wrong":
                    labels.append(("WRONG", WRONG))
                for text, color in labels:
                    ax.text(right, y, text, va="center", ha="left", fontsize=8, color=color, fontweight="bold")
                    right += span * (0.06 + 0.025 * len(text))
            ax.set_title(f"{pair.label}\n{registry_of(cases).schedule_display(schedule)}", fontsize=10)
            ax.set_xlabel(f"{unit} per rank and step")
            ax.grid(axis="y", visible=False)
        grid[r][0].set_xlim(0, span * 1.3)
        grid[r][0].set_yticks(range(len(strategies)), [s.display for s in strategies])
        grid[r][0].set_ylim(len(strategies) - 0.5, -0.5)
    handles = [Patch(color=MEASURED, label="measured"),
               Patch(facecolor=PREDICTED, hatch="///", edgecolor="#8C8C8C", label="predicted (model_*)"),
               Patch(color=MISMATCH, label="measured ≠ predicted (> 1%)"),
               Patch(color=WRONG, label="WRONG result")]
    fig.legend(handles=handles, loc="outside lower center", ncol=4)
    fig.suptitle(f"{' and '.join(p.label for p in pairs)}, measured beside predicted — {title}")
    return save(fig, path)
