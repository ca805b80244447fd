"""Step time per strategy and schedule as stacked bars of phases (ms)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import analysis
from ..case import registry_of
from ..counters import OTHER, PHASES, STEP
from ..loading import Case
from ..spread import fastest_with_ties, step_spread
from .style import ERROR, TIE, WRONG, new_figure, save, styled


def fastest_labels(group: list[Case]) -> dict:
    """{case key: label} for one schedule's fastest correct case and the cases tied with it: 'fastest'
    alone, or 'tie for fastest' on each of them when spreads overlap (no ranking among them)."""
    best, ties = fastest_with_ties(group)
    if best is None:
        return {}
    if not ties:
        return {best.key: "fastest" if step_spread(best) is not None else "fastest (no spread shown)"}
    return {c.key: "tie for fastest" for c in [best] + ties}


@styled
def plot_step_phases(cases: list[Case], path: Path, title: str, time_label: str) -> Path | None:
    """One panel per schedule, one horizontal bar per strategy: backward, reduce-scatter, accumulate,
    H2D, D2H, CPU add, finalize and other (= step − phases, clipped at 0), in ms per step; a black
    tick marks step_ms (phases on separate streams overlap, so a stack can pass it), a whisker over it
    the spread over steps and repetitions (spread.py). The fastest correct case is labelled, or every
    case tied with it 'tie for fastest'. Wrong results are outlined and labelled in vermillion, failed
    cases say 'error'. Returns None without step_ms."""
    if not any(c.value(STEP) is not None for c in cases):
        return None
    per_schedule = analysis.by_schedule(cases)
    strategies = analysis.strategies_of(cases)
    row = {s: i for i, s in enumerate(strategies)}
    phases = [p for p in PHASES if any(c.value(p.counter) is not None for c in cases)] + [OTHER]
    top = max(max(c.value(STEP) or 0.0, sum(v or 0.0 for v in analysis.phase_breakdown(c).values()),
                  getattr(step_spread(c), "high", 0.0)) for c in cases)
    top = top or 1.0

    n = len(per_schedule)
    fig = new_figure(3.4 * n + 3.0, 0.34 * len(strategies) + 2.4)
    axes = fig.subplots(1, n, sharey=True, sharex=True, squeeze=False)[0]
    for ax, (schedule, group) in zip(axes, per_schedule.items()):
        fastest = fastest_labels(group)
        for c in group:
            y = row[c.key.strategy]
            if c.status == "error":
                ax.text(top * 0.01, y, "error (no times)", va="center", ha="left", color=ERROR, style="italic",
                        fontsize=8.5)
                continue
            parts = analysis.phase_breakdown(c)
            left = 0.0
            wrong = c.status == "wrong"
            for p in phases:
                v = parts[p.counter]
                if not v:
                    continue
                ax.barh(y, v, left=left, height=0.72, color=p.color, edgecolor=WRONG if wrong else "white",
                        linewidth=1.4 if wrong else 0.4)
                left += v
            step = c.value(STEP)
            if step is not None:
                ax.plot([step, step], [y - 0.42, y + 0.42], color="black", linewidth=1.8, solid_capstyle="butt")
            spread = step_spread(c)
            if spread is not None:
                ax.errorbar(step, y, xerr=[[step - spread.low], [spread.high - step]], fmt="none", ecolor="black",
                            elinewidth=1, capsize=3, zorder=4)
            right = max(left, step or 0.0, spread.high if spread else 0.0) + top * 0.015
            for text in (["WRONG"] if wrong else []) + ([fastest[c.key]] if c.key in fastest else []):
                color = WRONG if text == "WRONG" else TIE if text.startswith("tie") else "black"
                ax.text(right, y, text, va="center", ha="left", color=color, fontsize=8, fontweight="bold")
                right += top * (0.03 + 0.013 * len(text))
        ax.set_title(registry_of(cases).schedule_display(schedule))
        ax.set_xlabel(f"ms per step ({time_label})")
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(range(len(strategies)), [s.display for s in strategies])
    axes[0].set_ylim(len(strategies) - 0.5, -0.5)
    axes[0].set_xlim(0, top * 1.35)
    handles = [Patch(color=p.color, label=p.label) for p in phases]
    handles.append(Line2D([], [], color="black", linewidth=1.8, label="step time (step_ms)"))
    handles.append(Line2D([], [], color="black", marker="|", markersize=8, linewidth=1,
                          label="spread over steps and repetitions"))
    handles.append(Patch(facecolor="white", edgecolor=WRONG, linewidth=1.4, label="WRONG result"))
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 5))
    fig.suptitle(f"Step time by phase — {title}\n(median over repetitions; {time_label})")
    return save(fig, path)
