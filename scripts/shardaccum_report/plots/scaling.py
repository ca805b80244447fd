"""Step time against K (micro-batches per step) or world size, one line per strategy."""

from __future__ import annotations

from pathlib import Path

from ..analysis import ScalingFigure
from .style import WRONG, new_figure, save, strategy_color, strategy_legend, strategy_marker, styled, wrong_handle


@styled
def plot_scaling(fig_data: ScalingFigure, path: Path, time_label: str) -> Path:
    """One panel per schedule (family for K, literal schedule for world size): step time in ms
    against the axis; colour = offload, marker and line style = binding/mode, wrong points red crosses."""
    xs = fig_data.xs
    n = len(fig_data.panels)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = new_figure(5.0 * cols + 2.6, 3.8 * rows + 0.8)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    strategies = set()
    axis_label = "K (micro-batches per step)" if fig_data.axis == "k" else "world size (ranks)"
    for ax, (panel, series) in zip(axes, fig_data.panels.items()):
        for strategy, points in sorted(series.items(), key=lambda kv: kv[0].sort_key):
            strategies.add(strategy)
            marker, ls = strategy_marker(strategy)
            ax.plot([p.x for p in points], [p.step_ms for p in points], marker=marker, linestyle=ls,
                    color=strategy_color(strategy), markersize=6, linewidth=1.4, alpha=0.9)
            wrong = [p for p in points if p.status == "wrong"]
            if wrong:
                ax.plot([p.x for p in wrong], [p.step_ms for p in wrong], marker="X", color=WRONG,
                        markersize=9, linestyle="", zorder=4)
        ax.set_title(panel)
        ax.set_xticks(xs)
        ax.set_xlabel(axis_label)
        ax.set_ylabel(f"step time (ms, {time_label})")
        ax.set_ylim(bottom=0)
    handles = strategy_legend(sorted(strategies, key=lambda s: s.sort_key), lines=True) + [wrong_handle()]
    fig.legend(handles=handles, loc="outside right center")
    what = "K" if fig_data.axis == "k" else "world size"
    fig.suptitle(f"Scaling with {what} — {fig_data.title}")
    return save(fig, path)
