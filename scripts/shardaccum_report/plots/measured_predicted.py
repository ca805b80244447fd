"""Measured byte counters (peak memory, PCIe traffic, reduce-scatter input) per strategy and schedule,
one bar a case, with the model_* prediction marked only where it differs from the measurement."""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import analysis
from ..case import CaseKey, registry_of
from ..counters import Paired
from ..loading import Case
from .style import MEASURED, MISMATCH, NEUTRAL, WRONG, byte_scale, new_figure, save, styled

# (case key, counter) -> a short text drawn beside that bar (e.g. the PCIe diagnosis).
Notes = dict[tuple[CaseKey, str], str]


def mismatch_marks(cases: list[Case], pairs: tuple[Paired, ...]) -> set[tuple[CaseKey, str]]:
    """The (case, counter) bars that get a mismatch mark: measured and predicted differ by more than
    analysis.MISMATCH_TOLERANCE (the same rule as the report's text and tables)."""
    return {(c.key, p.counter) for c in cases for p in pairs if analysis.mismatched(c, p)}


def _write(ax, x: float, y: float, labels: list[tuple[str, str]]) -> None:
    """The labels one after another right of x, spaced in points (so they never run into each other)."""
    at = 7.0  # clear of a diamond at x
    for text, color in labels:
        ax.annotate(text, (x, y), xytext=(at, 0), textcoords="offset points", va="center", ha="left",
                    fontsize=7.5, color=color, fontweight="bold", annotation_clip=False)
        at += 5.0 * len(text) + 6


@styled
def plot_measured_predicted(cases: list[Case], pairs: tuple[Paired, ...], path: Path, title: str,
                            notes: Notes | None = None) -> Path | None:
    """One row per pair (e.g. peak device, peak pinned), one panel per schedule, one bar per strategy:
    the measured bytes per step and rank (binary units). Where the model_* prediction differs by more
    than 1%, an orange diamond sits at the prediction and the deviation is written; a prediction that
    agrees is not drawn (the legend says so). Wrong results are labelled in vermillion, with the
    text of `notes` (the diagnosis) where it has one for that bar. Pairs that no case carries are left out; returns None when none is carried."""
    notes = notes or {}
    pairs = tuple(p for p in pairs if any(c.value(p.counter) is not None or c.value(p.model) is not None
                                          for c in cases))
    if not pairs:
        return None
    marks = mismatch_marks(cases, pairs)
    per_schedule = analysis.by_schedule(cases)
    strategies = analysis.strategies_of(cases)
    row = {s: i for i, s in enumerate(strategies)}
    n = len(per_schedule)
    noted = any(k[1] in {p.counter for p in pairs} for k in notes)
    fig = new_figure((4.4 if noted else 3.3) * n + 3.0, (0.26 * len(strategies) + 1.3) * len(pairs) + 1.2)
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
                wrong = c.status == "wrong"
                if measured is not None:
                    ax.barh(y, measured / scale, height=0.7, color=MEASURED,
                            edgecolor=WRONG if wrong else "none", linewidth=1.2 if wrong else 0)
                right = max(measured or 0.0, predicted or 0.0) / scale
                labels = []
                if measured is None and predicted is None:
                    labels.append(("no data", NEUTRAL))
                elif measured is None:
                    labels.append(("not measured", NEUTRAL))
                elif not measured and not predicted:
                    labels.append(("0", NEUTRAL))  # a real zero, not a missing bar
                if (c.key, pair.counter) in marks:
                    d = analysis.deviation(c, pair)
                    ax.plot(predicted / scale, y, marker="D", color=MISMATCH, markersize=7, linestyle="",
                            markeredgecolor="black", markeredgewidth=0.6, zorder=4)
                    labels.append(("≠ model " + ("+inf" if math.isinf(d) else f"{100 * d:+.0f}%"), MISMATCH))
                elif measured is not None and predicted is None:
                    labels.append(("no model", NEUTRAL))
                if (c.key, pair.counter) in notes:  # the diagnosis says why it is WRONG, in one text
                    labels.append((f"WRONG: {notes[(c.key, pair.counter)]}", WRONG))
                elif wrong:
                    labels.append(("WRONG", WRONG))
                _write(ax, right, y, labels)
            ax.set_title(f"{pair.label}\n{registry_of(cases).schedule_display(schedule)}", fontsize=10)
            ax.set_xlabel(f"{unit} per rank and step")
            ax.grid(axis="y", visible=False)
        grid[r][0].set_xlim(0, span * 1.3)
        grid[r][0].set_yticks(range(len(strategies)), [s.display for s in strategies])
        grid[r][0].set_ylim(len(strategies) - 0.5, -0.5)
    handles = [Patch(color=MEASURED, label="measured (= predicted within 1% where not marked)"),
               Line2D([], [], color=MISMATCH, marker="D", linestyle="", markeredgecolor="black",
                      label=f"predicted, where measured ≠ predicted ({len(marks)} bar{'s' if len(marks) != 1 else ''})"),
               Patch(facecolor="white", edgecolor=WRONG, label="WRONG result")]
    if noted:
        handles.append(Patch(facecolor="white", edgecolor="none", label="WRONG: why (the diagnosis, from the bytes)"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3)
    fig.suptitle(f"{', '.join(p.label for p in pairs)} — {title}")
    return save(fig, path)
