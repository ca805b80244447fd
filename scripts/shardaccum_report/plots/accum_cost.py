"""Each strategy's accumulation cost against n^(K-1)S without offload (spread.accumulation_costs),
one panel per schedule, with the range the spreads allow and ties drawn as ties."""

from __future__ import annotations

from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import analysis
from ..case import registry_of
from ..loading import Case
from ..spread import AccumCost, accumulation_costs
from .style import NEUTRAL, TIE, WRONG, new_figure, save, strategy_color, strategy_legend, styled

TIE_LABEL = "tie"  # the text a tied bar carries (tests look for it)
# A case whose strategy with offload none on n^(K-1)S is not among the cases (spread.baseline_key).
NO_BASELINE = "no baseline in this run"


def bar_labels(cost: AccumCost | None, case: Case) -> list[tuple[str, str]]:
    """The texts beside a case's bar, with their colours: 'baseline', 'tie', 'WRONG', 'no baseline'."""
    labels = []
    if cost is None:
        labels.append((NO_BASELINE if case.error is None else "error", NEUTRAL))
    elif cost.is_baseline:
        labels.append(("baseline (0 by definition)", NEUTRAL))
    elif cost.tie:
        labels.append((TIE_LABEL, TIE))
    if case.status == "wrong":
        labels.append(("WRONG", WRONG))
    return labels


@styled
def plot_accum_cost(cases: list[Case], path: Path, title: str, time_label: str) -> Path | None:
    """Horizontal bars of cost = step_ms − the baseline's step_ms (ms per step; below 0 is possible),
    colour = offload, a whisker over the range both spreads allow; a cost whose range holds 0 is a
    tie (hatched, labelled 'tie': no cost is claimed). Returns None when no case has a baseline."""
    costs = accumulation_costs(cases)
    known = [v for v in costs.values() if v is not None]
    if not any(not v.is_baseline for v in known):
        return None
    per_schedule = analysis.by_schedule(cases)
    strategies = analysis.strategies_of(cases)
    row = {s: i for i, s in enumerate(strategies)}
    ends = [x for v in known for x in (v.cost_ms, v.low, v.high) if x is not None]
    lo, hi = min(ends + [0.0]), max(ends + [0.0])
    span = (hi - lo) or 1.0
    n = len(per_schedule)
    fig = new_figure(3.6 * n + 3.0, 0.3 * len(strategies) + 2.4)
    axes = fig.subplots(1, n, sharey=True, sharex=True, squeeze=False)[0]
    for ax, (schedule, group) in zip(axes, per_schedule.items()):
        for c in group:
            y, cost = row[c.key.strategy], costs.get(c.key)
            if cost is not None and not cost.is_baseline:
                ax.barh(y, cost.cost_ms, height=0.7, color="white" if cost.tie else strategy_color(c.key.strategy),
                        edgecolor=TIE if cost.tie else (WRONG if c.status == "wrong" else "none"),
                        hatch="///" if cost.tie else None, linewidth=1.2)
                if cost.low is not None:
                    ax.errorbar(cost.cost_ms, y, xerr=[[cost.cost_ms - cost.low], [cost.high - cost.cost_ms]],
                                fmt="none", ecolor="black", elinewidth=1, capsize=2.5)
            right = max(0.0, cost.cost_ms, cost.high or 0.0) if cost is not None else 0.0
            previous = None  # each further text placed after the previous one's drawn extent
            for text, color in bar_labels(cost, c):
                style = dict(va="center", ha="left", fontsize=7.5, color=color, fontweight="bold")
                if previous is None:
                    previous = ax.text(right + span * 0.02, y, text, **style)
                else:
                    previous = ax.annotate(text, xy=(1, 0.5), xycoords=previous, xytext=(4, 0),
                                           textcoords="offset points", **style)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_title(registry_of(cases).schedule_display(schedule))
        ax.set_xlabel("accumulation cost (ms per step)")
        ax.grid(axis="y", visible=False)
    axes[0].set_yticks(range(len(strategies)), [s.display for s in strategies])
    axes[0].set_ylim(len(strategies) - 0.5, -0.5)
    axes[0].set_xlim(lo - span * 0.05, hi + span * 0.4)
    # the offloads of the bars drawn: one whose every case lacks a baseline has no colour to explain
    drawn = {f"offload {c.key.strategy.offload}" for c in cases
             if (v := costs.get(c.key)) is not None and not v.is_baseline}
    handles = [h for h in strategy_legend(strategies) if h.get_label() in drawn]
    handles += [Line2D([], [], color="black", marker="|", linestyle="-", label="range the spreads allow"),
                Patch(facecolor="white", edgecolor=TIE, hatch="///", label="tie: the range holds 0 (no cost claimed)"),
                Patch(facecolor="white", edgecolor=WRONG, linewidth=1.2, label="WRONG result")]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 4))
    k = max((c.key.k for c in cases), default=1)
    fig.suptitle(f"Accumulation cost — {title}\nstep − step of the same strategy with offload none on "
                 f"{'n' * (k - 1)}S ({time_label})")
    return save(fig, path)
