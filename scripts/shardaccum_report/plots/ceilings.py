"""Each phase's bandwidth as a fraction of the ceiling measured in the same run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import colormaps

from .. import analysis
from ..case import registry_of
from ..counters import CEILING_FRACTIONS, CeilingFraction
from ..loading import Case
from .style import new_figure, save, styled


def column_label(f: CeilingFraction, ceilings: dict[str, float]) -> str:
    """A column's name under the heat map: the phase and its ceiling in GB/s, or both ceilings of a
    fraction weighed by time (the CPU add alone and beside D2Hs)."""
    gbps, alone = ceilings.get(f.ceiling_key), ceilings.get(f.alone_key) if f.alone_key else None
    if gbps and alone:
        return f"{f.label}\n{alone:,.0f} alone,\n{gbps:,.0f} beside D2H GB/s"
    return f"{f.label}\n{gbps:,.0f} GB/s" if gbps else f.label


@styled
def plot_ceilings(cases: list[Case], ceilings: dict[str, float], path: Path, title: str) -> Path | None:
    """One heat map per schedule: strategies × phases (H2D, D2H, accumulate, CPU add, the CPU add against the
    host memory it shared, reduce-scatter),
    each cell the fraction (0..1, shown in %) of its ceiling in GB/s, named under the column.
    Phases a case did not run are grey '–'. Returns None when no case has a *_frac_ceiling counter."""
    fracs = [f for f in CEILING_FRACTIONS if any(c.value(f.counter) is not None for c in cases)]
    if not fracs:
        return None
    per_schedule = analysis.by_schedule(cases)
    strategies = analysis.strategies_of(cases)
    row = {s: i for i, s in enumerate(strategies)}
    cmap = colormaps["viridis"].with_extremes(bad="#EEEEEE")
    n = len(per_schedule)
    fig = new_figure(0.75 * len(fracs) * n + 4.2, 0.36 * len(strategies) + 2.6)
    axes = fig.subplots(1, n, sharey=True, squeeze=False)[0]
    labels = [column_label(f, ceilings) for f in fracs]
    image = None
    for ax, (schedule, group) in zip(axes, per_schedule.items()):
        grid = np.full((len(strategies), len(fracs)), np.nan)
        for c in group:
            for j, f in enumerate(fracs):
                v = c.value(f.counter)
                if v is not None:
                    grid[row[c.key.strategy], j] = v
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto",
                          interpolation="nearest")
        failed = {row[c.key.strategy] for c in group if c.status == "error"}
        for i in failed:
            ax.text((len(fracs) - 1) / 2, i, "error (case failed)", ha="center", va="center", fontsize=8,
                    color="#555555", style="italic")
        for (i, j), v in np.ndenumerate(grid):
            if i in failed:
                continue
            text = "–" if np.isnan(v) else f"{100 * v:.0f}%"
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="#555555" if np.isnan(v) else ("white" if v < 0.6 else "black"))
        ax.set_xticks(range(len(fracs)), labels, rotation=90, fontsize=8.5)
        ax.set_title(registry_of(cases).schedule_display(schedule).replace(" (", "\n("), fontsize=10)
        ax.grid(False)
        ax.tick_params(length=0)
    axes[0].set_yticks(range(len(strategies)), [s.display for s in strategies])
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="fraction of the measured ceiling")
    fig.suptitle(f"Phases against their measured ceilings — {title}")
    return save(fig, path)
