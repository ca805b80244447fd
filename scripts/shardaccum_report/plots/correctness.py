"""The correctness matrix (strategies × schedules, each cell correct / wrong / error with max_rel_err)
beside each case's max_rel_err against the oracle's bound err_bound on a log axis."""

from __future__ import annotations

from pathlib import Path

import math

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import analysis
from ..case import registry_of
from ..counters import ERR_BOUND
from ..loading import Case
from ..tables import fmt_err
from .style import BOUND, CORRECT, ERROR, MARKER_PALETTE, UNKNOWN, WRONG, new_figure, save, styled

_COLORS = {"correct": CORRECT, "wrong": WRONG, "error": ERROR, "unknown": UNKNOWN, "missing": "#FFFFFF"}


@styled
def plot_correctness(cases: list[Case], path: Path, title: str) -> Path:
    """Left, a grid of coloured cells (sky blue correct, vermillion WRONG, grey error, yellow no oracle,
    white not run), each labelled with max_rel_err = ‖out − ref‖ / ‖ref‖ (dimensionless). Right, the
    same errors on a log axis, a marker per schedule, against each case's err_bound (a black tick;
    an error of 0 sits at the axis' left edge, drawn hollow)."""
    schedules = list(analysis.by_schedule(cases))
    strategies = analysis.strategies_of(cases)
    cell = {(c.key.strategy, c.key.schedule): c for c in cases}
    rgb = np.ones((len(strategies), len(schedules), 3))
    fig = new_figure(2.0 * len(schedules) + 8.0, 0.42 * len(strategies) + 2.0)
    ax, err_ax = fig.subplots(1, 2, sharey=True, width_ratios=[2.0 * len(schedules), 4.6])
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
    handles += _draw_errors(err_ax, cases, schedules, {s: i for i, s in enumerate(strategies)})
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 6))
    fig.suptitle(f"Correctness — {title}\ncell: max_rel_err = ‖out − ref‖ / ‖ref‖ over the rank's shard; "
                 "right: the same against the oracle's bound err_bound")
    return save(fig, path)


def _draw_errors(ax, cases: list[Case], schedules: list[str], row: dict) -> list:
    """max_rel_err against err_bound per case on a log x axis; returns the legend handles it adds."""
    errs = [c.max_rel_err for c in cases if c.max_rel_err is not None and math.isfinite(c.max_rel_err)]
    bounds = [c.value(ERR_BOUND) for c in cases if c.value(ERR_BOUND)]
    positive = [v for v in errs + bounds if v > 0]
    floor = min(positive) / 30 if positive else 1e-9  # where an error of exactly 0 is drawn
    registry = registry_of(cases)
    handles = []
    for j, sched in enumerate(schedules):
        marker = MARKER_PALETTE[j % len(MARKER_PALETTE)][0]
        offset = (j - (len(schedules) - 1) / 2) * 0.16  # schedules side by side in a row
        for c in (c for c in cases if c.key.schedule == sched):
            y = row[c.key.strategy] + offset
            bound = c.value(ERR_BOUND)
            if bound:
                ax.plot([bound, bound], [y - 0.08, y + 0.08], color=BOUND, linewidth=2, solid_capstyle="butt")
            err = c.max_rel_err
            if err is None or c.status == "error":
                continue
            x = err if math.isfinite(err) and err > 0 else (floor if err == 0 else max(positive, default=1.0) * 10)
            color = WRONG if c.status == "wrong" else CORRECT
            ax.plot(x, y, marker=marker, linestyle="", markersize=6, color=color,
                    markerfacecolor="none" if err == 0 else color, markeredgewidth=1.2)
        handles.append(Line2D([], [], marker=marker, linestyle="", color="#555555", markerfacecolor="none",
                              label=registry.schedule_display(sched)))
    ax.set_xscale("log")
    top = max(positive, default=1.0) * 30
    ax.set_xlim(floor / 3, top)
    ax.axvline(floor, color="#BBBBBB", linewidth=0.8, linestyle=":")
    # The floor is labelled 0 (an exact zero has no place on a log axis); decades too near it are left out.
    decades = [10.0 ** e for e in range(math.ceil(math.log10(floor * 10)), math.floor(math.log10(top)) + 1, 2)]
    ax.set_xticks([floor] + decades, ["0"] + [f"$10^{{{round(math.log10(d))}}}$" for d in decades])
    ax.set_xlabel("max_rel_err (log; hollow at the left edge: exactly 0)")
    ax.grid(axis="y", visible=False)
    ax.tick_params(axis="y", length=0)
    handles.append(Line2D([], [], color=BOUND, linewidth=2, marker="|", linestyle="", markersize=9,
                          label="err_bound (correct when max_rel_err ≤ it)"))
    return handles
