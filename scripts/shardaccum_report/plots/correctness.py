"""The correctness matrix: strategies × schedules, each cell correct / wrong / error with max_rel_err."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.patches import Patch

from .. import analysis
from ..case import registry_of
from ..loading import Case
from ..tables import fmt_err
from .style import CORRECT, ERROR, UNKNOWN, WRONG, new_figure, save, styled

_COLORS = {"correct": CORRECT, "wrong": WRONG, "error": ERROR, "unknown": UNKNOWN, "missing": "#FFFFFF"}


@styled
def plot_correctness(cases: list[Case], path: Path, title: str) -> Path:
    """A grid of coloured cells (green correct, red WRONG, grey error, yellow no oracle, white not run),
    each labelled with max_rel_err = ‖out − ref‖ / ‖ref‖ (dimensionless)."""
    schedules = list(analysis.by_schedule(cases))
    strategies = analysis.strategies_of(cases)
    cell = {(c.key.strategy, c.key.schedule): c for c in cases}
    rgb = np.ones((len(strategies), len(schedules), 3))
    fig = new_figure(2.0 * len(schedules) + 3.4, 0.42 * len(strategies) + 2.0)
    ax = fig.subplots()
    for i, s in enumerate(strategies):
        for j, sched in enumerate(schedules):
            c = cell.get((s, sched))
            status = "missing" if c is None else c.status
            rgb[i, j] = to_rgb(_COLORS[status])
            if c is None:
                text = "not run"
            elif status == "error":
                text = "error"
            else:
                text = ("WRONG " if status == "wrong" else "") + fmt_err(c.max_rel_err)
            ax.text(j, i, text, ha="center", va="center", fontsize=8.5,
                    color="white" if status in ("wrong", "error") else "black",
                    fontweight="bold" if status == "wrong" else "normal")
    ax.imshow(rgb, aspect="auto", interpolation="nearest")
    registry = registry_of(cases)
    ax.set_xticks(range(len(schedules)), [registry.schedule_display(s).replace(" (", "\n(") for s in schedules])
    ax.set_yticks(range(len(strategies)), [s.display for s in strategies])
    ax.xaxis.tick_top()
    ax.set_xticks(np.arange(-0.5, len(schedules)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(strategies)), minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.grid(which="major", visible=False)
    ax.tick_params(which="both", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    present = {c.status for c in cases} | ({"missing"} if len(cell) < len(strategies) * len(schedules) else set())
    names = {"correct": "correct", "wrong": "WRONG", "error": "error (case failed)", "unknown": "no oracle",
             "missing": "not run"}
    handles = [Patch(facecolor=_COLORS[k], edgecolor="#8C8C8C", label=names[k]) for k in names if k in present]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles))
    fig.suptitle(f"Correctness — {title}\ncell: max_rel_err = ‖out − ref‖ / ‖ref‖ over the rank's shard")
    return save(fig, path)
